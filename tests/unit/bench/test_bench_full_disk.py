"""A benchmark that cannot be stored (a full disk) still gives its figures: printed
(and in ``--json``), the error after them, exit 1 (issue 32 item 2). On the labelled
FAKE OpenAI server (tests/support/fake_openai_server.py)."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from tests.unit.bench.test_bench_cli import Run, bench, launch, project, run_dir
from variantctl.exitcodes import ExitCode
from variantctl.targets.base import error_from_oserror
from variantctl.targets.local import LocalTarget

__all__ = ["project"]  # the fixture, shared with the bench CLI tests


def test_a_full_disk_keeps_the_measured_results(run_cli: Run, project: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    launch(run_cli, project, "fake-openai")

    def full(self: LocalTarget, path: str, data: bytes, *, mode: int | None = None) -> None:
        raise error_from_oserror(OSError(errno.ENOSPC, "No space left on device"),
                                 host="local", path=path)

    monkeypatch.setattr(LocalTarget, "write_new", full)
    args = ("fake-openai", "--concurrency", "1", "--requests", "2", "--output-len", "4",
            "--warmup", "off")
    res = bench(run_cli, project, *args, "--json")
    assert res.code == ExitCode.FAILED, res.output
    doc = json.loads(res.stdout)
    assert doc["levels"][0]["metrics"]["completed"] == 2  # the figures, kept
    assert doc["stored"] is None and doc["store_error"]["kind"] == "no-space"
    res = bench(run_cli, project, *args)
    assert res.code == ExitCode.FAILED
    assert "fake-openai" in res.stdout  # the table
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("error: fake-openai: result not stored:") and "space" in last
    d = run_dir(project, "fake-openai")
    assert not list(d.glob("bench-*.json"))
    assert json.loads((d / "run.json").read_text())["benchmarks"] == []
