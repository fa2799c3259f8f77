"""PURE: record a hand edit of a module as a patchset's structural operations.

Given the pristine text of a module (a backup the user kept, or the released file)
and the edited one, both are parsed with libcst and walked side by side. Every
difference is narrowed to the smallest expression that holds it, and each such
expression is expressed, narrowest first, as

- ``set-keyword`` (a keyword argument of a named call), ``set-default`` (a
  parameter's default), ``set-assignment`` (the value assigned to a name or
  ``self.attr``), each within the innermost class/function around it;
- ``replace-expression`` within that function;
- else the next enclosing expression is tried, up to the statement;

as long as the operation matches exactly once in the pristine text and reads as
applied in the edited one. A change no such operation holds (a statement added,
a body rewritten, whitespace between statements) is recorded as ``replace-function``
of the innermost function around it: its fingerprint as ``from``, its edited
source as ``to``. A change outside every function that is not an assignment's
value or similar (an import added at module level, a comment above a ``def``) is
refused with its lines, as is a backup of another module.

:func:`record` verifies its result before returning it: the operations applied
to the pristine text give the edited text byte for byte, and (for the structural
ones) the inverse gives the pristine text back; a ``replace-function`` is
undone from the backup, as custom code without an inverse is.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from variantctl.errors import VariantctlError
from variantctl.patching import funcprint
from variantctl.patching.engine import (
    Matcher,
    analyze,
    dotted,
    function_source,
    normalise,
    state_in,
)
from variantctl.patching.model import Operation
from variantctl.patching.scopes import Chain
from variantctl.patching.states import APPLIED, PRISTINE


class RecordError(VariantctlError):
    """A hand edit that cannot be recorded (bad input: exit 2)."""

    default_kind = "record"


class _NotExpressible(Exception):
    """A difference in a node that is not an expression (raised up to the nearest one)."""

    def __init__(self, node: cst.CSTNode, pair: tuple[cst.CSTNode, cst.CSTNode] | None = None):
        super().__init__()
        self.node = node
        #: the first differing items when a list of statements grew or shrank
        self.pair = pair


@dataclass(frozen=True)
class _Change:
    """One differing pair of nodes, with their ancestors (parallel chains)."""

    old: cst.CSTNode
    new: cst.CSTNode
    old_chain: Chain
    new_chain: Chain


@dataclass(frozen=True)
class Recording:
    """The operations that turn ``pristine`` into ``edited`` (verified)."""

    module: str
    operations: tuple[Operation, ...]

    @property
    def reversible(self) -> bool:
        """Every operation can be undone by its inverse (no ``replace-function``)."""
        return all(op.kind != "replace-function" for op in self.operations)


# -- parsing --------------------------------------------------------------------------


def _parse(text: str, what: str) -> cst.Module:
    try:
        ast.parse(text, what)
    except SyntaxError as exc:
        raise RecordError(f"{what}:{exc.lineno}:{exc.offset}: does not parse: {exc.msg}",
                          hint="fix the file so Python can import it, then record again",
                          where=f"{what}:{exc.lineno}") from None
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise RecordError(f"{what}:{exc.raw_line}:{exc.raw_column}: libcst cannot parse it: "
                          f"{str(exc.message).splitlines()[0]}", where=what) from None


def _decode(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise RecordError(f"{what}:{line}: not valid UTF-8", where=what) from None


# -- lines, for messages ---------------------------------------------------------------


class _Lines:
    """1-based lines of nodes of one module (position metadata, computed on demand)."""

    def __init__(self, module: cst.Module):
        self.module = module
        self._pos: dict[cst.CSTNode, object] | None = None
        self._wrapper: cst.MetadataWrapper | None = None

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        from libcst.metadata import PositionProvider

        if self._wrapper is None:
            # unsafe_skip_copy: the nodes we hold are the module's own
            self._wrapper = cst.MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._pos = dict(self._wrapper.resolve(PositionProvider))
        assert self._pos is not None
        pos = self._pos.get(node)
        if pos is None:
            return (0, 0)
        rng = pos  # CodeRange
        return (rng.start.line, rng.end.line)  # type: ignore[attr-defined]

    def text(self, node: cst.CSTNode) -> str:
        start, end = self.span(node)
        return f"line {start}" if start == end else f"lines {start}-{end}"


# -- walking both trees ----------------------------------------------------------------


def _diff(old: cst.CSTNode, new: cst.CSTNode, old_chain: Chain, new_chain: Chain
          ) -> list[_Change]:
    """The smallest differing expressions below a pair of nodes of the same shape.

    A difference in a non-expression node (a statement added, whitespace between
    tokens, an operator) raises :class:`_NotExpressible`, which the nearest enclosing
    expression turns into one change of its own.
    """
    if old.deep_equals(new):
        return []
    here_old, here_new = (*old_chain, old), (*new_chain, new)
    if isinstance(old, (cst.FunctionDef, cst.ClassDef)) and isinstance(
            new, (cst.FunctionDef, cst.ClassDef)) and (
            type(old) is not type(new) or old.name.value != new.name.value
            or not _same_items(old.leading_lines, new.leading_lines)):
        # renamed, or the comments above it changed: outside the function
        raise _NotExpressible(old, (old, new))
    try:
        if type(old) is not type(new):
            raise _NotExpressible(old)
        out: list[_Change] = []
        for f in dataclasses.fields(old):
            a, b = getattr(old, f.name), getattr(new, f.name)
            if isinstance(a, cst.CSTNode) and isinstance(b, cst.CSTNode):
                out += _diff(a, b, here_old, here_new)
            elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
                if len(a) != len(b):
                    raise _NotExpressible(old, _first_difference(a, b))
                for x, y in zip(a, b, strict=True):
                    if isinstance(x, cst.CSTNode) and isinstance(y, cst.CSTNode):
                        out += _diff(x, y, here_old, here_new)
                    elif x != y:
                        raise _NotExpressible(old)
            elif a != b:
                raise _NotExpressible(old)
        return out
    except _NotExpressible:
        if isinstance(old, cst.BaseExpression) and isinstance(new, cst.BaseExpression):
            return [_Change(old, new, old_chain, new_chain)]
        if isinstance(old, cst.FunctionDef):  # replaced whole (same name, checked above)
            return [_Change(old, new, old_chain, new_chain)]
        raise


def _same_items(a: Sequence[cst.CSTNode], b: Sequence[cst.CSTNode]) -> bool:
    return len(a) == len(b) and all(x.deep_equals(y) for x, y in zip(a, b, strict=True))


def _first_difference(a: Sequence[object], b: Sequence[object]
                      ) -> tuple[cst.CSTNode, cst.CSTNode] | None:
    """The first items of two lists of different lengths that differ (for messages)."""
    for x, y in zip(a, b, strict=False):
        if isinstance(x, cst.CSTNode) and isinstance(y, cst.CSTNode) and not x.deep_equals(y):
            return x, y
    x, y = (a[-1] if a else None), (b[-1] if b else None)
    if isinstance(x, cst.CSTNode) and isinstance(y, cst.CSTNode):
        return x, y
    return None


def _qual(chain: Chain) -> str:
    """The qualified name of the innermost class/function in ``chain`` ('' = module)."""
    return ".".join(n.name.value for n in chain if isinstance(n, (cst.ClassDef, cst.FunctionDef)))


def _innermost_function(chain: Chain) -> int | None:
    for i in range(len(chain) - 1, -1, -1):
        if isinstance(chain[i], cst.FunctionDef):
            return i
    return None


_STATEMENTS = (cst.BaseSmallStatement, cst.BaseStatement, cst.BaseSuite, cst.Module,
               cst.Param, cst.Parameters, cst.Decorator)


# -- expressing one change ------------------------------------------------------------


class _Ops:
    """Builds candidate operations and checks them on both modules."""

    def __init__(self, module: str, old: cst.Module, new: cst.Module):
        self.module = module
        self.old, self.new = old, new
        self.m_old, self.m_new = Matcher(old), Matcher(new)

    def holds(self, op: Operation) -> bool:
        """``op`` matches exactly as expected: pristine in the old text, applied in the new."""
        if op.from_ is not None and op.to is not None and op.kind != "replace-function":
            if normalise(op.from_) is None or normalise(op.to) is None:
                return False
            if normalise(op.from_) == normalise(op.to):
                return False
        return (state_in(self.old, op, self.m_old) == PRISTINE
                and state_in(self.new, op, self.m_new) == APPLIED)

    def op(self, kind: str, **fields: object) -> Operation:
        return Operation(id="", kind=kind, module=self.module, where="recorded",
                         **fields)  # type: ignore[arg-type]

    def express(self, change: _Change) -> Operation | None:
        """The narrowest operation for a change, walking up its enclosing expressions."""
        old, new = change.old, change.new
        old_chain, new_chain = change.old_chain, change.new_chain
        while isinstance(old, cst.BaseExpression) and isinstance(new, cst.BaseExpression):
            for op in self._forms(old, new, old_chain):
                if self.holds(op):
                    return op
            # up to the next enclosing expression (through an Arg, a slice…), never
            # past the statement
            i = len(old_chain) - 1
            while i >= 0 and not isinstance(old_chain[i], (cst.BaseExpression, *_STATEMENTS)):
                i -= 1
            if i < 0 or not isinstance(old_chain[i], cst.BaseExpression):
                return None
            old, new = old_chain[i], new_chain[i]
            old_chain, new_chain = old_chain[:i], new_chain[:i]
        return None

    def _forms(self, old: cst.BaseExpression, new: cst.BaseExpression, chain: Chain
               ) -> list[Operation]:
        src, dst = self.old.code_for_node(old).strip(), self.new.code_for_node(new).strip()
        scope = _qual(chain)
        within = (scope,) if scope else ()
        parent = chain[-1] if chain else None
        grand = chain[-2] if len(chain) > 1 else None
        out: list[Operation] = []
        if isinstance(parent, cst.Arg) and parent.keyword is not None and isinstance(
                grand, cst.Call) and parent.value is old:
            callee = dotted(grand.func)
            if callee is not None:
                out.append(self.op("set-keyword", callee=callee.rsplit(".", 1)[-1],
                                   keyword=parent.keyword.value, within=within,
                                   from_=src, to=dst))
        if isinstance(parent, cst.Param) and parent.default is old and scope:
            out.append(self.op("set-default", function=scope, param=parent.name.value,
                               from_=src, to=dst))
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is old:
            targets = ([t.target for t in parent.targets] if isinstance(parent, cst.Assign)
                       else [parent.target])
            names = [dotted(t) for t in targets]
            if len(names) == 1 and names[0] is not None:
                out.append(self.op("set-assignment", target=names[0], scope=scope,
                                   from_=src, to=dst))
        out.append(self.op("replace-expression", within=within, from_=src, to=dst))
        return out

    def whole(self, old: cst.FunctionDef, new: cst.FunctionDef, chain: Chain) -> Operation:
        qual = ".".join(filter(None, (_qual(chain), old.name.value)))
        old_fp = funcprint.fingerprint(function_source(self.old, old))
        return self.op("replace-function", function=qual, from_=old_fp,
                       to=function_source(self.new, new))


# -- recording ------------------------------------------------------------------------


def _same_module(old: cst.Module, new: cst.Module, lines_old: _Lines, lines_new: _Lines
                 ) -> None:
    """Refuse a backup of another module: name the first differing top-level definition."""

    def defs(m: cst.Module) -> list[cst.CSTNode]:
        return [s for s in m.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))]

    a, b = defs(old), defs(new)
    for x, y in zip(a, b, strict=False):
        if x.name.value != y.name.value:  # type: ignore[attr-defined]
            raise RecordError(
                f"the backup is not the same module: its top-level definition "
                f"{x.name.value!r} ({lines_old.text(x)}) is {y.name.value!r} "  # type: ignore[attr-defined]
                f"in the edited file ({lines_new.text(y)})",
                hint="give the pristine copy of this very module with --from")
    if len(a) != len(b):
        extra, side = (a[len(b)], "backup") if len(a) > len(b) else (b[len(a)], "edited file")
        raise RecordError(
            f"the backup is not the same module: the top-level definition "
            f"{extra.name.value!r} is only in the {side}",  # type: ignore[attr-defined]
            hint="give the pristine copy of this very module with --from")


def record(module: str, pristine: bytes, edited: bytes, *, pristine_name: str = "<pristine>",
           edited_name: str = "<edited>") -> Recording:
    """The verified operations that turn ``pristine`` into ``edited`` (RecordError if none)."""
    old_text, new_text = _decode(pristine, pristine_name), _decode(edited, edited_name)
    new = _parse(new_text, edited_name)
    old = _parse(old_text, pristine_name)
    lines_old, lines_new = _Lines(old), _Lines(new)
    _same_module(old, new, lines_old, lines_new)
    if pristine == edited:
        raise RecordError(f"{edited_name} has no changes: it is the same as {pristine_name}",
                          hint="edit the installed file first, or give the backup it was "
                               "copied from")
    if old.deep_equals(new):
        raise RecordError(f"{edited_name} differs from {pristine_name} only in bytes libcst "
                          "does not keep (encoding or line endings); nothing to record")
    builder = _Ops(module, old, new)
    try:
        changes = _diff(old, new, (), ())
    except _NotExpressible as exc:
        a, b = exc.pair if exc.pair is not None else (exc.node, None)
        raise _refuse(a, lines_old, lines_new, b) from None
    ops = _express_all(builder, old, new, changes, lines_old, lines_new)
    named = _number(ops)
    _verify(named, pristine, edited, edited_name)
    return Recording(module, tuple(named))


def _express_all(builder: _Ops, old: cst.Module, new: cst.Module, changes: list[_Change],
                 lines_old: _Lines, lines_new: _Lines) -> list[Operation]:
    # changes that no structural operation holds become their innermost function, whole;
    # a function replaced whole absorbs every other change inside it
    whole: dict[int, tuple[cst.FunctionDef, cst.FunctionDef, Chain]] = {}
    simple: list[tuple[_Change, Operation]] = []
    for change in changes:
        if isinstance(change.old, cst.FunctionDef):
            assert isinstance(change.new, cst.FunctionDef)
            whole[id(change.old)] = (change.old, change.new, change.old_chain)
            continue
        op = builder.express(change)
        if op is not None:
            simple.append((change, op))
            continue
        fn = _innermost_function(change.old_chain)
        if fn is None:
            raise _refuse(change.old, lines_old, lines_new, change.new)
        f_old, f_new = change.old_chain[fn], change.new_chain[fn]
        assert isinstance(f_old, cst.FunctionDef) and isinstance(f_new, cst.FunctionDef)
        whole[id(f_old)] = (f_old, f_new, change.old_chain[:fn])
    # an outer function replaced whole absorbs a replaced inner one
    outer = {k: v for k, v in whole.items()
             if not any(id(a) in whole for a in v[2])}
    out: list[Operation] = []
    emitted: set[int] = set()
    for change, op in simple:
        # the outermost function replaced whole around this change absorbs it
        top = next((id(a) for a in change.old_chain if id(a) in outer), None)
        if top is None:
            out.append(op)
        else:
            _emit_whole(builder, outer, top, out, emitted)
    for key in outer:
        _emit_whole(builder, outer, key, out, emitted)
    return _dedupe(out)


def _emit_whole(builder: _Ops, outer: dict[int, tuple[cst.FunctionDef, cst.FunctionDef, Chain]],
                key: int, out: list[Operation], emitted: set[int]) -> None:
    if key in emitted or key not in outer:
        return
    emitted.add(key)
    f_old, f_new, chain = outer[key]
    out.append(builder.whole(f_old, f_new, chain))


def _dedupe(ops: list[Operation]) -> list[Operation]:
    # one change of `True` in two keyword arguments of the same call gives the same
    # replace-expression twice; an operation matches all its occurrences once
    out: list[Operation] = []
    for op in ops:
        if op not in out:
            out.append(op)
    return out


def _refuse(node: cst.CSTNode, lines_old: _Lines, lines_new: _Lines,
            new_node: cst.CSTNode | None = None) -> RecordError:
    where = ("the comments and blank lines at the start or end of the file"
             if isinstance(node, cst.Module) else f"pristine {lines_old.text(node)}")
    there = f" (edited: {lines_new.text(new_node)})" if new_node is not None else ""
    return RecordError(
        f"cannot record a change outside every function at {where}{there}: no "
        "operation expresses it (set-keyword, set-assignment, set-default, "
        "replace-expression, replace-function)",
        hint="keep hand edits inside functions or to assigned values; module-level "
             "statements added or removed need a custom operation")


def _number(ops: Sequence[Operation]) -> list[Operation]:
    """Ids that say what each operation changes (``enforce-eager``), unique."""
    out: list[Operation] = []
    seen: set[str] = set()
    for op in ops:
        base = _slug(op.keyword or op.param or (op.target or "").rsplit(".", 1)[-1]
                     or (op.function or "").rsplit(".", 1)[-1] or "expression")
        name, n = base, 2
        while name in seen:
            name, n = f"{base}-{n}", n + 1
        seen.add(name)
        out.append(dataclasses.replace(op, id=name))
    return out


def _slug(text: str) -> str:
    import re

    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s or "op"


def _verify(ops: Sequence[Operation], pristine: bytes, edited: bytes, edited_name: str) -> None:
    forward = analyze(ops, pristine, display=edited_name)
    if forward.state != PRISTINE or forward.new_data != edited:
        raise RecordError(
            f"the recorded operations do not reproduce {edited_name} byte for byte "
            f"({forward.error or forward.state}); nothing written",
            hint="the edit touches text no operation keeps (e.g. whitespace between "
                 "statements outside a function)")
    if all(op.kind != "replace-function" for op in ops):
        back = analyze(ops, edited, reverse=True, display=edited_name)
        if back.state != APPLIED or back.new_data != pristine:
            raise RecordError(f"the recorded operations, rolled back, do not give the "
                              f"pristine text again ({back.error or back.state}); nothing "
                              "written")


# -- writing ---------------------------------------------------------------------------


def _scalar(text: str) -> str:
    # JSON strings are YAML flow scalars: exact for any text, one line
    return json.dumps(text, ensure_ascii=False)


def _block(text: str, indent: str) -> str:
    """A literal block scalar when the text survives one exactly, else a quoted string."""
    lines = text.split("\n")
    plain = (text.endswith("\n") and not text.endswith("\n\n") and "\r" not in text
             and "\t" not in text and not text.startswith(" ")
             and all(line == line.rstrip() for line in lines)
             and all(line.strip() for line in lines[:-1] if line)
             and all(ord(c) >= 0x20 for c in text.replace("\n", "")))
    if not plain:
        return _scalar(text)
    body = "".join(f"{indent}  {line}\n" if line else "\n" for line in lines[:-1])
    return "|\n" + body.rstrip("\n") + "\n"


def render_yaml(name: str, recording: Recording, *, description: str, source: str) -> str:
    """The patchset file for a recording (read back and checked by the caller)."""
    lines = [
        f"# Recorded by `variantctl patch record` from {source}.",
        "# Every operation was checked: applied to the pristine text it gives the edited",
        "# file byte for byte.",
        f"name: {_scalar(name)}",
        *([f"description: {_scalar(description)}"] if description else []),
        f"module: {recording.module}",
        "operations:",
    ]
    for op in recording.operations:
        lines.append(f"  - id: {op.id}")
        lines.append(f"    op: {op.kind}")
        if op.kind == "set-keyword":
            lines += [f"    callee: {op.callee}"]
            if op.within:
                lines.append(f"    within: [{', '.join(op.within)}]")
            lines.append(f"    keyword: {op.keyword}")
        elif op.kind == "set-assignment":
            lines.append(f"    target: {op.target}")
            if op.scope:
                lines.append(f"    scope: {op.scope}")
        elif op.kind == "set-default":
            lines += [f"    function: {op.function}", f"    param: {op.param}"]
        elif op.kind == "replace-expression":
            if op.within:
                lines.append(f"    within: [{', '.join(op.within)}]")
        elif op.kind == "replace-function":
            lines.append(f"    function: {op.function}")
        assert op.from_ is not None and op.to is not None
        lines.append(f"    from: {_scalar(op.from_)}")
        if op.kind == "replace-function":
            lines.append(f"    to: {_block(op.to, '    ').rstrip(chr(10))}")
        else:
            lines.append(f"    to: {_scalar(op.to)}")
    return "\n".join(lines) + "\n"
