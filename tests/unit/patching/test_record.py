"""patch record's pure core: a hand edit becomes structural operations that reproduce it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.patching.conftest import CASES, EAGER, REPO
from variantctl.config.patchsets import load_patchset, load_patchset_file
from variantctl.errors import ConfigError
from variantctl.patching.engine import analyze, normalise
from variantctl.patching.record import RecordError, record, render_yaml

SMALL = b"""import os

X = 1


class A:
    f: int = 3

    def m(self, a=1):
        y = foo(a, b=2)
        return y


def g():
    return 1
"""


def _save_and_load(tmp_path: Path, name: str, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, "utf-8")
    return load_patchset_file(path)


def _shape(op) -> tuple[str, str | None, str | None, str | None, str | None]:  # type: ignore[no-untyped-def]
    return (op.kind, op.callee, op.keyword, normalise(op.from_), normalise(op.to))


@pytest.mark.parametrize("case", CASES)
def test_the_seed_edit_records_as_the_shipped_patchset(case: str) -> None:
    shipped = load_patchset(REPO / "patchsets", "eager-allreduce")
    vendor = (EAGER / case / "before.py").read_bytes()
    edited = (EAGER / case / "after.py").read_bytes()
    rec = record("vllm.engine.arg_utils", vendor, edited)
    assert [_shape(op) for op in rec.operations] == [_shape(op) for op in shipped.operations]
    # the narrowest scope: the one method each call is in
    assert all(len(op.within) == 1 for op in rec.operations)


def test_each_kind_of_change_gets_its_narrowest_operation(tmp_path: Path) -> None:
    edited = (SMALL.replace(b"X = 1", b"X = 2").replace(b"f: int = 3", b"f: int = 4")
              .replace(b"a=1", b"a=5").replace(b"b=2", b"b=3")
              .replace(b"    return 1", b"    print('x')\n    return 1"))
    rec = record("m", SMALL, edited)
    got = [(op.kind, op.id, op.target or op.function or op.callee, op.scope or op.within)
           for op in rec.operations]
    assert got == [("set-assignment", "x", "X", ()), ("set-assignment", "f", "f", "A"),
                   ("set-default", "a", "A.m", ()), ("set-keyword", "b", "foo", ("A.m",)),
                   ("replace-function", "g", "g", ())]
    ps = _save_and_load(tmp_path, "mine", render_yaml("mine", rec, description="d",
                                                      source="x.py"))
    forward = analyze(ps.operations, SMALL)
    assert forward.state == "pristine" and forward.new_data == edited
    assert analyze(ps.operations, edited).state == "applied"
    assert not rec.reversible


def test_a_repeated_expression_widens_until_unique() -> None:
    old = b"def f():\n    a = g(1) + g(1)\n    return h(1)\n"
    new = b"def f():\n    a = g(1) + g(2)\n    return h(1)\n"
    (op,) = record("m", old, new).operations
    # `1` is everywhere, `g(1)` twice: the whole assigned value is the narrowest unique one
    assert (op.kind, op.target, op.scope, op.from_, op.to) == (
        "set-assignment", "a", "f", "g(1) + g(1)", "g(1) + g(2)")


def test_structural_recordings_roll_back_to_the_pristine_text() -> None:
    old = b"def f(x):\n    return x * 2  # double\n"
    new = b"def f(x):\n    return x * 3  # double\n"
    rec = record("m", old, new)
    assert rec.reversible
    assert analyze(rec.operations, new, reverse=True).new_data == old


def test_a_statement_added_in_a_method_replaces_that_method_only(tmp_path: Path) -> None:
    edited = SMALL.replace(b"        return y", b"        y += 1\n        return y")
    (op,) = record("m", SMALL, edited).operations
    assert (op.kind, op.function) == ("replace-function", "A.m")
    assert op.to.startswith("def m(self, a=1):\n")
    ps = _save_and_load(tmp_path, "m2", render_yaml("m2", record("m", SMALL, edited),
                                                    description="", source="x"))
    assert analyze(ps.operations, SMALL).new_data == edited
    # rolled back by the inverse transform it cannot be: only its backup undoes it
    back = analyze(ps.operations, edited, reverse=True)
    assert back.state == "error" and "backup" in (back.error or "")


def test_replace_function_drifts_on_another_version_of_the_function() -> None:
    edited = SMALL.replace(b"    return 1", b"    x = 1\n    return x")
    rec = record("m", SMALL, edited)
    other = SMALL.replace(b"def g():\n    return 1", b"def g():\n    return 7")
    a = analyze(rec.operations, other, with_lines=True)
    assert a.state == "drifted"
    assert a.ops[0].line == SMALL.decode().splitlines().index("def g():") + 1
    # reformatting the pristine function does not change its fingerprint
    spaced = SMALL.replace(b"    return 1", b"    return (1)  # one")
    assert analyze(rec.operations, spaced).state == "pristine"


@pytest.mark.parametrize(("edited", "message"), [
    (SMALL.replace(b"import os", b"import os\nimport sys"), "outside every function"),
    (SMALL.replace(b"def g():", b"# new comment\ndef g():"), "outside every function"),
    (SMALL.replace(b"def g", b"def h"), "not the same module: its top-level definition 'g'"),
    (SMALL.replace(b"class A:", b"class B:"), "top-level definition 'A'"),
    (SMALL, "no changes"),
    (SMALL.replace(b"return y", b"return y +"), "<edited>:11:"),
])
def test_what_cannot_be_recorded_is_refused_by_line(edited: bytes, message: str) -> None:
    with pytest.raises(RecordError) as exc:
        record("m", SMALL, edited)
    assert message in exc.value.message
    assert exc.value.exit_code == 2


def test_a_refusal_names_the_lines() -> None:
    with pytest.raises(RecordError) as exc:
        record("m", SMALL, SMALL.replace(b"import os", b"import os\nimport sys"))
    assert "pristine line 3 (edited: line 2)" in exc.value.message


def test_replace_function_is_validated_when_loaded(tmp_path: Path) -> None:
    base = ("name: bad\nmodule: m\noperations:\n  - op: replace-function\n"
            "    function: A.m\n")
    cases = {
        "from: nope\n    to: 'def m(): pass'\n": "fingerprint",
        'from: "sha256:0123456789abcdef"\n    to: "x = 1"\n': "one function",
        'from: "sha256:0123456789abcdef"\n    to: "def q(): pass"\n': "not 'm'",
    }
    for tail, message in cases.items():
        (tmp_path / "bad.yaml").write_text(base + "    " + tail)
        with pytest.raises(ConfigError) as exc:
            load_patchset_file(tmp_path / "bad.yaml")
        assert message in exc.value.message, tail
