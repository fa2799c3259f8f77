"""The pure engine: libcst operations, structural matching, state detection, reversibility."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.unit.patching.conftest import CASES, EAGER, REPO
from variantctl.config.patchsets import load_patchset, load_patchset_file
from variantctl.errors import ConfigError
from variantctl.patching.engine import analyze
from variantctl.patching.model import Operation, Patchset
from variantctl.patching.plan import SourceFile, plan_apply, plan_revert


@pytest.fixture(scope="module")
def eager() -> Patchset:
    return load_patchset(REPO / "patchsets", "eager-allreduce")


@pytest.mark.parametrize("case", CASES)
def test_apply_gives_the_upstream_file_byte_for_byte(eager: Patchset, case: str) -> None:
    before = (EAGER / case / "before.py").read_bytes()
    after = (EAGER / case / "after.py").read_bytes()
    result = analyze(eager.operations, before, with_lines=True)
    assert result.state == "pristine"
    assert result.new_data == after
    assert result.changed == ("enforce-eager", "custom-all-reduce")
    # the lines reported are the lines of the two keyword arguments
    lines = before.decode().splitlines()
    keyword = {"enforce-eager": "enforce_eager", "custom-all-reduce": "disable_custom_all_reduce"}
    for op in result.ops:
        assert op.line is not None
        assert lines[op.line - 1].strip().startswith(f"{keyword[op.op_id]}=")


@pytest.mark.parametrize("case", CASES)
def test_after_is_detected_as_applied_and_left_alone(eager: Patchset, case: str) -> None:
    after = (EAGER / case / "after.py").read_bytes()
    result = analyze(eager.operations, after)
    assert result.state == "applied"
    assert result.new_data is None


@pytest.mark.parametrize("case", ["v055_engine_config", "v062_model_config"])
def test_inverse_transform_restores_the_vendor_file(eager: Patchset, case: str) -> None:
    before = (EAGER / case / "before.py").read_bytes()
    after = (EAGER / case / "after.py").read_bytes()
    result = analyze(eager.operations, after, reverse=True)
    assert result.state == "applied"
    assert result.new_data == before


def test_traps_only_the_two_keywords_change(eager: Patchset) -> None:
    before = (EAGER / "traps" / "before.py").read_text()
    new = analyze(eager.operations, before.encode()).new_data
    assert new is not None
    text = new.decode()
    # the string literal, comment, helper outside EngineArgs, dict(...) and the subclass's
    # ParallelConfig all keep their `=True`
    assert "Set 'enforce_eager=True' to hide this." in text
    assert "# enforce_eager=True,   (an old line, commented out)" in text
    assert "return ModelConfig(model=target.model, enforce_eager=True)" in text
    assert "flags = dict(enforce_eager=True)" in text
    assert "parallel_config = ParallelConfig(disable_custom_all_reduce=True)" in text
    assert "enforce_eager=self.enforce_eager,  # CoreX: no CUDA graphs on BI-V100" in text
    changed = [(a, b) for a, b in zip(before.splitlines(), text.splitlines(), strict=True)
               if a != b]
    assert len(changed) == 2


def _with(data: str, old: str, new: str) -> bytes:
    assert data.count(old) == 1, old
    return data.replace(old, new).encode()


def test_partial_when_only_one_value_is_hard_coded(eager: Patchset) -> None:
    after = (EAGER / "v062_model_config" / "after.py").read_text()
    partial = _with(after, "enforce_eager=self.enforce_eager,", "enforce_eager=True,")
    result = analyze(eager.operations, partial)
    assert result.state == "partial"
    assert [o.state for o in result.ops] == ["pristine", "applied"]
    # apply completes it
    assert result.new_data == after.encode()


def test_drifted_value_names_line_and_found_expression(eager: Patchset) -> None:
    before = (EAGER / "v062_model_config" / "before.py").read_text()
    drifted = _with(before, "enforce_eager=True,", "enforce_eager=False,")
    result = analyze(eager.operations, drifted)
    assert result.state == "drifted"
    op = result.op("enforce-eager")
    assert op.state == "drifted"
    assert op.found[0].code == "False"
    line = drifted.decode().splitlines().index("            enforce_eager=False,") + 1
    assert op.line == line
    assert result.op("custom-all-reduce").state == "pristine"


def test_two_matches_are_drifted(eager: Patchset) -> None:
    before = (EAGER / "v062_model_config" / "before.py").read_text()
    twice = _with(before, "    def create_engine_config(self) -> EngineConfig:\n",
                  "    def create_engine_config(self) -> EngineConfig:\n"
                  "        spare = ModelConfig(enforce_eager=True)\n")
    result = analyze(eager.operations, twice)
    op = result.op("enforce-eager")
    assert op.state == "drifted"
    assert "found `from` 2x" in op.reason
    assert result.state == "drifted"
    srcs = [SourceFile("/r", "vllm.engine.arg_utils", "/r/x.py", twice)]
    assert plan_apply(eager, srcs).files[0].action == "refuse"


def test_missing_call_is_drifted_not_found(eager: Patchset) -> None:
    before = (EAGER / "v062_model_config" / "before.py").read_text()
    gone = _with(before, "            enforce_eager=True,\n", "")
    op = analyze(eager.operations, gone).op("enforce-eager")
    assert op.state == "drifted" and op.reason == "not found"


def test_expressions_compare_by_syntax_not_text(eager: Patchset) -> None:
    before = (EAGER / "v062_model_config" / "before.py").read_text()
    odd = _with(before, "enforce_eager=True,", "enforce_eager=(\n                True  # x\n"
                "            ),")
    result = analyze(eager.operations, odd)
    assert result.op("enforce-eager").state == "pristine"
    assert result.new_data is not None
    assert b"enforce_eager=self.enforce_eager," in result.new_data


def test_syntax_error_and_non_utf8_are_errors_with_line(eager: Patchset) -> None:
    bad = b"class EngineArgs:\n    def f(self):\n        return (\n"
    r = analyze(eager.operations, bad)
    assert r.state == "error" and r.error and "syntax error" in r.error
    r = analyze(eager.operations, b"x = 1\ny = '\xff'\n")
    assert r.state == "error" and r.error == "not valid UTF-8 (byte 0xff on line 2)"
    assert r.error_line == 2


def test_identical_copies_are_analysed_once(eager: Patchset, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    import variantctl.patching.engine as engine

    calls: list[int] = []
    real = engine.analyze

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "analyze", counting)
    before = (EAGER / "v062_model_config" / "before.py").read_bytes()
    other = (EAGER / "v055_engine_config" / "before.py").read_bytes()
    srcs = [SourceFile(f"/r{i}", "vllm.engine.arg_utils", f"/r{i}/x.py", d)
            for i, d in enumerate([before, before, other, before])]
    plan = plan_apply(eager, srcs)
    assert len(calls) == 2
    assert [f.action for f in plan.files] == ["write"] * 4
    back = plan_revert(eager, [SourceFile("/r", "vllm.engine.arg_utils", "/r/x.py",
                                          plan.files[0].analysis.new_data or b"")])
    assert back.files[0].new_data == before


# -- the other declarative operations ------------------------------------------------

OPS_MODULE = '''\
import os

TIMEOUT = 30
MODE: str = "fast"


class Engine:
    retries = 3

    def __init__(self, workers=4, *, backend="nccl"):
        self.workers = workers
        self.backend = backend
        self.limit = workers * 2 + 1

    def run(self, n):
        TIMEOUT = 5  # a local of the same name: not module scope
        return helper(n * 2 + 1, TIMEOUT)


def helper(a, b):
    return a * 2 + 1
'''


def _ps(tmp_path: Path, body: str) -> Patchset:
    path = tmp_path / "ops.yaml"
    path.write_text("name: ops\nmodule: pkg.mod\noperations:\n" + body)
    return load_patchset_file(path)


def test_set_assignment_at_module_class_and_function_scope(tmp_path: Path) -> None:
    ps = _ps(tmp_path, """\
  - {id: mod, op: set-assignment, target: TIMEOUT, from: "30", to: "60"}
  - {id: ann, op: set-assignment, target: MODE, from: "'fast'", to: "'safe'"}
  - {id: cls, op: set-assignment, target: retries, scope: Engine, from: "3", to: "5"}
  - {id: fn, op: set-assignment, target: self.limit, scope: Engine.__init__,
     from: "workers * 2 + 1", to: "workers * 4"}
""")
    r = analyze(ps.operations, OPS_MODULE.encode())
    assert r.state == "pristine", r.ops
    new = (r.new_data or b"").decode()
    assert "TIMEOUT = 60\n" in new and "TIMEOUT = 5  # a local" in new
    assert 'MODE: str = "safe"' not in new and "MODE: str = 'safe'" in new
    assert "    retries = 5\n" in new
    assert "self.limit = workers * 4\n" in new
    assert "return a * 2 + 1" in new  # the same expression elsewhere is untouched
    back = analyze(ps.operations, new.encode(), reverse=True)
    assert back.state == "applied"
    assert (back.new_data or b"").decode().replace("'fast'", '"fast"') == OPS_MODULE


def test_set_default(tmp_path: Path) -> None:
    ps = _ps(tmp_path, """\
  - {id: w, op: set-default, function: Engine.__init__, param: workers, from: "4", to: "8"}
  - {id: b, op: set-default, function: Engine.__init__, param: backend,
     from: "'nccl'", to: "'gloo'"}
""")
    r = analyze(ps.operations, OPS_MODULE.encode())
    assert r.state == "pristine"
    assert b"def __init__(self, workers=8, *, backend='gloo'):" in (r.new_data or b"")


def test_replace_expression_in_scope_keeps_precedence(tmp_path: Path) -> None:
    ps = _ps(tmp_path, """\
  - id: e
    op: replace-expression
    within: Engine.run
    from: n * 2 + 1
    to: n + 1 if n else 0
""")
    r = analyze(ps.operations, OPS_MODULE.encode())
    assert r.state == "pristine"
    new = (r.new_data or b"").decode()
    assert "return helper(n + 1 if n else 0, TIMEOUT)" in new
    assert "return a * 2 + 1" in new
    assert analyze(ps.operations, new.encode()).state == "applied"
    # an operator context gets parentheses, so the meaning is kept
    ps2 = _ps(tmp_path, """\
  - {id: e, op: replace-expression, within: helper, from: a * 2, to: a + a}
""")
    new2 = (analyze(ps2.operations, OPS_MODULE.encode()).new_data or b"").decode()
    assert "return (a + a) + 1" in new2


def test_custom_transformer_with_state_and_inverse(tmp_path: Path) -> None:
    (tmp_path / "rename_helper.py").write_text('''\
import libcst as cst


class Back(cst.CSTTransformer):
    def leave_Name(self, original, updated):
        return updated.with_changes(value="helper") if updated.value == "helper2" else updated


class Rename(cst.CSTTransformer):
    inverse = Back

    def detect(self, module):
        code = module.code
        if "def helper2(" in code:
            return "applied"
        if "def helper(" in code:
            return "pristine"
        return ("drifted", "no helper function")

    def leave_Name(self, original, updated):
        return updated.with_changes(value="helper2") if updated.value == "helper" else updated
''')
    ps = _ps(tmp_path, "  - {id: c, op: custom, file: rename_helper.py, class: Rename}\n")
    r = analyze(ps.operations, OPS_MODULE.encode())
    assert r.state == "pristine"
    new = r.new_data or b""
    assert b"def helper2(a, b):" in new and b"return helper2(n" in new
    assert analyze(ps.operations, new).state == "applied"
    assert analyze(ps.operations, new, reverse=True).new_data == OPS_MODULE.encode()
    assert analyze(ps.operations, b"x = 1\n").op("c").reason == "no helper function"


def test_operation_describe_names_scope() -> None:
    op = Operation(id="x", kind="set-keyword", module="m", where="f:1", callee="C",
                   keyword="k", within=("A.b",), from_="1", to="2")
    assert op.describe == "C(k=…) in A.b"


@pytest.mark.parametrize("name,convert", [
    ("crlf", lambda b: b.replace(b"\n", b"\r\n")),
    ("bom", lambda b: b"\xef\xbb\xbf" + b),
])
def test_line_endings_and_bom_are_kept(eager: Patchset, name: str, convert: object) -> None:
    assert callable(convert)
    before = convert((EAGER / "v062_model_config" / "before.py").read_bytes())
    after = convert((EAGER / "v062_model_config" / "after.py").read_bytes())
    result = analyze(eager.operations, before)
    assert result.state == "pristine", name
    assert result.new_data == after


def test_broken_custom_transformer_is_an_error_not_a_crash(tmp_path: Path) -> None:
    # the patchset loader imports it: bad input at load (exit 2), before any file is read
    (tmp_path / "broken.py").write_text("import libcst as cst\nclass X(cst.CSTTransformer:\n")
    with pytest.raises(ConfigError) as exc:
        _ps(tmp_path, "  - {id: c, op: custom, file: broken.py, class: X}\n")
    assert "ops.yaml:4:31: operations[0].file: " in str(exc.value)
    assert "broken.py failed to import (line 2): SyntaxError" in str(exc.value)


def _full_codegen(ops: tuple[Operation, ...], data: bytes, monkeypatch: pytest.MonkeyPatch
                  ) -> bytes | None:
    """The same analysis with the statement splice switched off (whole-module codegen)."""
    from variantctl.patching import engine

    with monkeypatch.context() as m:
        m.setattr(engine, "_splice", lambda *a, **k: None)
        return analyze(ops, data).new_data


@contextmanager
def _spied_splice(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str | None]]:
    """Record what each call of the statement splice returned."""
    from variantctl.patching import engine

    calls: list[str | None] = []
    real = engine._splice

    def spy(*args: Any, **kwargs: Any) -> str | None:
        out = real(*args, **kwargs)
        calls.append(out)
        return out

    with monkeypatch.context() as m:
        m.setattr(engine, "_splice", spy)
        yield calls


SPLICE_SOURCE = (
    "class EngineArgs:\r\n"
    "\tdef create_model_config(self):\r\n"
    "\t\tif self.x:\r\n"
    "\t\t\t# a comment that stays\r\n"
    "\t\t\treturn ModelConfig(\r\n"
    "\t\t\t\tmodel=self.model,\r\n"
    "\t\t\t\tenforce_eager=True,  # vendor\r\n"
    "\t\t\t)\r\n"
    "\t\treturn ModelConfig(model=1, enforce_eager=True)\r\n"
)


def test_statement_splice_equals_whole_module_codegen(eager: Patchset, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Tabs, CRLF, nested blocks, comments: the splice gives the whole-module codegen's bytes."""
    (tmp_path / "p.yaml").write_text(
        "name: p\nmodule: m\noperations:\n"
        "  - {op: set-keyword, callee: ModelConfig, within: [EngineArgs.create_model_config],\n"
        "     keyword: enforce_eager, from: 'True', to: self.enforce_eager, count: 2}\n")
    ps = load_patchset_file(tmp_path / "p.yaml")
    data = SPLICE_SOURCE.encode()
    with _spied_splice(monkeypatch) as calls:
        spliced = analyze(ps.operations, data).new_data
    assert spliced is not None and calls and None not in calls  # the splice did the work
    assert spliced == _full_codegen(ps.operations, data, monkeypatch)
    assert spliced.count(b"enforce_eager=self.enforce_eager") == 2
    assert b"# a comment that stays\r\n" in spliced and b"# vendor\r\n" in spliced
    for case in CASES:
        before = (EAGER / case / "before.py").read_bytes()
        assert analyze(eager.operations, before).new_data == _full_codegen(
            eager.operations, before, monkeypatch)


def test_statement_splice_falls_back_when_the_statement_is_not_unique(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same statement text twice in the file: regenerate the module instead of guessing."""
    (tmp_path / "p.yaml").write_text(
        "name: p\nmodule: m\noperations:\n"
        "  - {op: set-keyword, callee: f, within: [b], keyword: k, from: '1', to: '2'}\n")
    ps = load_patchset_file(tmp_path / "p.yaml")
    src = "def a():\n    x = f(k=1)\n\n\ndef b():\n    x = f(k=1)\n"
    with _spied_splice(monkeypatch) as calls:
        result = analyze(ps.operations, src.encode())
    assert calls == [None]  # not unique: the splice declined
    assert result.new_data == b"def a():\n    x = f(k=1)\n\n\ndef b():\n    x = f(k=2)\n"
