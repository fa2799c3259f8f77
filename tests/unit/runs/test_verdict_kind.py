"""The launch verdict is an enum end to end: stored and printed as the plain strings it
always was, mapped to exit codes by the enum, and a stored verdict outside the set is an
error naming the file and the field (issue 27.5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from variantctl.exitcodes import ExitCode
from variantctl.logs.verdict import VerdictKind
from variantctl.runs.run import RunFileError, RunRecord, RunVerdict

FIXTURE = (Path(__file__).resolve().parents[2]
           / "fixtures/store-v2/runs/2026-07-14-cpu-base-aaaaaaaaaa-1/run.json")


def test_the_kind_is_its_plain_string_in_json_and_text() -> None:
    assert json.dumps({"verdict": VerdictKind.HANG}) == '{"verdict": "hang"}'
    assert f"ended {VerdictKind.TIMEOUT}" == "ended timeout"
    assert str(VerdictKind.READY) == "ready" and VerdictKind.READY == "ready"


@pytest.mark.parametrize(("kind", "expect_ok", "code"), [
    (VerdictKind.READY, True, ExitCode.OK), (VerdictKind.READY, False, ExitCode.FAILED),
    (VerdictKind.STARTED, True, ExitCode.OK), (VerdictKind.FAILED, True, ExitCode.FAILED),
    (VerdictKind.EXITED, True, ExitCode.FAILED), (VerdictKind.HANG, True, ExitCode.HANG),
    (VerdictKind.TIMEOUT, True, ExitCode.TIMEOUT),
])
def test_exit_codes_come_from_the_kind(kind: VerdictKind, expect_ok: bool,
                                       code: ExitCode) -> None:
    assert kind.exit_code(expect_ok=expect_ok) == code


def test_a_stored_verdict_reads_as_the_enum_and_writes_back_the_same() -> None:
    data = json.loads(FIXTURE.read_text())
    rec = RunRecord.from_json(data, source=str(FIXTURE))
    assert isinstance(rec.verdict.kind, VerdictKind)
    assert rec.verdict.to_json() == data["verdict"]
    # a plain string given to the value becomes the member
    assert RunVerdict(kind="exited").kind is VerdictKind.EXITED  # type: ignore[arg-type]


def test_a_stored_verdict_outside_the_set_names_the_file_and_field() -> None:
    data = json.loads(FIXTURE.read_text())
    data["verdict"]["verdict"] = "melted"
    with pytest.raises(RunFileError) as err:
        RunRecord.from_json(data, source=str(FIXTURE))
    assert str(FIXTURE) in err.value.message and "'verdict.verdict'" in err.value.message
    assert "'melted' is not a verdict" in err.value.message
