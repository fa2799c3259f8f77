"""Custom transformers cannot lie (issue 8, family 7).

Before: a transformer module raising ``SystemExit(0)`` made ``apply`` and
``status --json`` exit 0 with no output, and a ``detect()`` raising showed an
empty reason. Now importing (at patchset load) turns anything raised into a
ConfigError naming the file (exit 2), and detect/transform raising is an error
naming file, class and method (exit 1); nothing is written either way.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.unit.patching.conftest import root_args, snapshot

TARGET = b"def helper(a):\n    return a\n"

PATCHSET = """\
name: cx
module: vllm.engine.arg_utils
operations:
  - {id: c, op: custom, file: tr.py, class: T}
"""


def _transformer(project: Path, *, top: str = "", detect: str = "return 'pristine'",
                 leave: str = "return updated") -> None:
    (project / "patchsets" / "cx.yaml").write_text(PATCHSET)
    (project / "patchsets" / "tr.py").write_text(textwrap.dedent(f"""\
        import libcst as cst
        {top}

        class T(cst.CSTTransformer):
            def detect(self, module):
                {detect}

            def leave_Name(self, original, updated):
                {leave}
        """))


COMMANDS = [["status", "cx"], ["status", "cx", "--json"], ["apply", "cx"],
            ["apply", "cx", "--json"]]


def _check(run_cli: Any, project: Path, roots: list[Path], code: int, *needles: str) -> None:
    start = snapshot(roots)
    for args in COMMANDS:
        res = run_cli([*args, *root_args(roots)], project=project)
        assert res.code == code, (args, res.output)
        flat = " ".join(res.stderr.split())  # the console may wrap a long line
        assert flat.startswith("error: "), (args, res.output)
        for needle in needles:
            assert needle in flat, (args, needle, res.output)
        if "--json" in args and res.stdout.strip():
            json.loads(res.stdout)  # whatever --json prints stays valid JSON
        assert snapshot(roots) == start


@pytest.mark.parametrize("top,what", [
    ("raise SystemExit(0)", "SystemExit: 0"),
    ("raise SystemExit('bye')", "SystemExit: bye"),
    ("raise ValueError()", "ValueError (no message)"),
    ("import no_such_module_here", "ModuleNotFoundError: No module named"),
])
def test_a_module_that_raises_at_import_is_bad_input(
        project: Path, make_roots: Any, run_cli: Any, top: str, what: str) -> None:
    _transformer(project, top=top)
    roots = make_roots(TARGET, n=1)
    _check(run_cli, project, roots, 2, "patchsets/cx.yaml:4:31: operations[0].file: ",
           "patchsets/tr.py failed to import (line 2): " + what)


def test_a_missing_class_is_bad_input(project: Path, make_roots: Any, run_cli: Any) -> None:
    _transformer(project)
    (project / "patchsets" / "cx.yaml").write_text(PATCHSET.replace("class: T", "class: U"))
    _check(run_cli, project, make_roots(TARGET, n=1), 2,
           "has no libcst.CSTTransformer subclass 'U'")


@pytest.mark.parametrize("detect,leave,what", [
    ("raise ValueError()", "return updated", "T.detect raised ValueError (no message)"),
    ("raise SystemExit(0)", "return updated", "T.detect raised SystemExit: 0"),
    ("print('noise'); raise SystemExit(0)", "return updated", "T.detect raised SystemExit: 0"),
    ("return 'pristine'", "raise SystemExit(0)", "T.leave_Name raised SystemExit: 0"),
    ("return 'pristine'", "raise KeyError('k')", "T.leave_Name raised KeyError: 'k'"),
])
def test_custom_code_raising_at_run_is_a_named_failure(
        project: Path, make_roots: Any, run_cli: Any, detect: str, leave: str,
        what: str) -> None:
    _transformer(project, detect=detect, leave=leave)
    roots = make_roots(TARGET, n=1)
    line = 6 if "detect" in what else 9
    _check(run_cli, project, roots, 1, f"patchsets/tr.py:{line}: {what} on {roots[0]}/",
           "hint: operation c (")
    # the failed apply left no transaction behind: a fixed transformer just works
    assert not (roots[0] / ".variantctl" / "journal.json").exists()
    _transformer(project, detect="return 'applied'")
    res = run_cli(["apply", "cx", *root_args(roots)], project=project)
    assert res.code == 0, res.output


@pytest.mark.parametrize("detect,what", [
    ("return 42", "T.detect returned 42; expected 'pristine', 'applied' or 'drifted'"),
    ("return ('applied', 'x', 'y')", "T.detect returned ('applied', 'x', 'y')"),
    ("return ('applied', None)", "T.detect returned ('applied', None)"),
])
def test_a_detect_answer_that_is_no_state_is_a_named_failure(
        project: Path, make_roots: Any, run_cli: Any, detect: str, what: str) -> None:
    _transformer(project, detect=detect)
    _check(run_cli, project, make_roots(TARGET, n=1), 1, what)


def test_print_in_custom_code_does_not_corrupt_json(
        project: Path, make_roots: Any, run_cli: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # custom code prints to the process's real stdout, where a --json result goes
    _transformer(project, top="print('hello from import')",
                 detect="print('hello from detect'); return 'pristine'")
    roots = make_roots(TARGET, n=1)
    res = run_cli(["status", "cx", "--json", *root_args(roots)], project=project)
    assert res.code == 0, res.output
    assert json.loads(res.stdout)
    captured = capsys.readouterr()
    assert "hello from" not in captured.out
    assert "hello from import" in captured.err and "hello from detect" in captured.err
