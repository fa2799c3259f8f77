"""The outcome values: the strings --json prints, keyword-only constructors, purity."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import REPO
from variantctl.patching.decide import BackupFacts, RollbackDecision, RollbackFacts
from variantctl.patching.outcomes import (
    Action,
    Command,
    FileOutcome,
    RunReport,
    root_state,
    roots_state,
)
from variantctl.patching.records import LedgerRecord, Method
from variantctl.targets.ledger import Journal, JournalFile
from variantctl.targets.transaction import Edit

#: every action string apply/rollback/status have ever printed in --json
JSON_ACTIONS = {"applied", "rolled-back", "unchanged", "would-apply", "would-roll-back",
                "refused", "error", "missing", "restored", "not-applied", "not-rolled-back",
                "status"}


def test_the_enums_are_the_strings_json_prints() -> None:
    assert {a.value for a in Action} == JSON_ACTIONS
    assert {c.value for c in Command} == {"apply", "rollback", "status"}
    assert {m.value for m in Method} == {"", "backup", "inverse-transform", "recovery"}
    out = FileOutcome(root="/r", module="m", path="/r/m.py", state="applied",
                      action=Action.ROLLED_BACK)
    report = RunReport(action=Command.ROLLBACK, patchset="p", host="local", roots=("/r",),
                       files=(out,))
    data = report.to_json()
    assert data["roots"] == ["/r"] and data["recovered"] == []  # JSON lists, as before
    assert type(data["action"]) is str and type(data["files"][0]["action"]) is str
    assert json.loads(json.dumps(data))["files"][0]["action"] == "rolled-back"
    assert f"{Action.NOT_APPLIED}|{Command.APPLY}|{Method.BACKUP}" == "not-applied|apply|backup"
    as_str: str = Action.UNCHANGED
    assert as_str == "unchanged"  # renderers and callers compare with strings


def one(root: str = "/r", state: str = "applied") -> FileOutcome:
    return FileOutcome(root=root, module="m", path=f"{root}/m.py", state=state,
                       action=Action.APPLIED)


@pytest.mark.parametrize(("cls", "args"), [
    (FileOutcome, ("/r", "m", "/r/m.py", "applied", Action.APPLIED)),
    (RunReport, (Command.APPLY, "p", "local", ("/r",))),
    (Edit, (one(), b"a", b"b", None, False)),
    (LedgerRecord, ("t", "apply", "p", "fp", "/r/m.py", "m", "a", "b", None, True, "t", "0",
                    "local")),
    (JournalFile, ("/r", "/r/m.py", "m", "a", "b", "a", None)),
    (Journal, ("t", "apply", "p", "fp", "t", "0", "local", ["/r"])),
    (BackupFacts, ("/r/m.py.bak", "a")),
    (RollbackFacts, ("a", "applied", None)),
    (RollbackDecision, (Action.REFUSED, "why")),
])
def test_constructors_take_no_positional_values(cls: Callable[..., Any],
                                                args: tuple[Any, ...]) -> None:
    """``Edit(out, before, after, None, False)`` said nothing about what False meant."""
    with pytest.raises(TypeError, match="positional"):
        cls(*args)


def test_a_roots_state_missing_then_error_win() -> None:
    assert root_state(["applied", "missing", "error"]) == "missing"
    assert root_state(["applied", "error"]) == "error"
    assert root_state(["applied", "pristine"]) == "partial"
    assert root_state(["applied", "applied"]) == "applied"
    files = [one(r, s) for r, s in (("/a", "applied"), ("/b", "pristine"), ("/b", "drifted"))]
    report = RunReport(action=Command.STATUS, patchset="p", host="h", roots=["/a", "/b", "/c"],
                       files=files)
    assert roots_state(report) == {"/a": "applied", "/b": "drifted", "/c": "pristine"}


PURE = ("variantctl/patching/outcomes.py", "variantctl/patching/decide.py",
        "variantctl/patching/records.py")
FORBIDDEN = ("os", "subprocess", "fabric", "paramiko", "socket", "shutil", "tempfile",
             "pathlib", "variantctl.targets", "variantctl.config.yamlload", "yaml", "libcst")


@pytest.mark.parametrize("path", PURE)
def test_the_decisions_and_outcomes_do_no_input_or_output(path: str) -> None:
    tree = ast.parse((REPO / path).read_text("utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    bad = sorted(m for m in imported
                 if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))
    assert not bad, f"{path} imports {bad}"
    assert "open(" not in (REPO / path).read_text("utf-8")


def test_outcomes_are_built_not_mutated() -> None:
    """A file outcome and a run report are frozen values: the executor replaces an
    outcome (applied -> restored) and builds the report once (issue 18.5)."""
    import dataclasses

    out = one()
    report = RunReport(action=Command.APPLY, patchset="p", host="local", roots=("/r",),
                       files=(out,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.action = Action.RESTORED  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.exit_code = 4  # type: ignore[misc]
    assert isinstance(report.files, tuple) and isinstance(report.recovered, tuple)
