"""PURE: the ``instrument`` operation — profile points as a reversible source patch.

For each listed function (``Class.method``, ``function``; ``if``/``try`` blocks
add no level, as for the other operations) the transform adds one decorator,
innermost (right above the ``def``, so ``@staticmethod``, ``@torch.inference_mode()``
and friends keep wrapping what they wrapped)::

    @_variantctl_profile("GPUModelRunner.execute_model")
    def execute_model(self, ...):

and, once per module, right after the docstring and ``from __future__`` imports,
the recorder: a small function :data:`DECORATOR` plus the source text of
:mod:`variantctl.runtime.profile_recorder` as a string constant. Inlining (rather than
writing a recorder module next to the patched file) keeps the patch one file per
module: the transaction, backups, ledger, drift detection and rollback of every
other operation cover it unchanged, and a rollback cannot leave a stray file
behind. vLLM's process needs nothing from variantctl: the first patched module
imported executes the string into a module registered in ``sys.modules``, the
others reuse it, so there is one buffer per process. With ``VARIANTCTL_PROFILE``
unset the decorator returns the function itself (the string is not even
executed).

State (one instrument operation per module, enforced by the loader): the recorder
block absent and no listed function decorated = ``pristine``; the block present
and every listed function decorated (with the same options) = ``applied``;
anything else — a mix, a listed function missing from this release — is
``drifted`` with the reason (the missing points named). Each listed function is
reported as a :class:`~variantctl.patching.states.Found` (``from`` = plain,
``to`` = instrumented, ``other`` = not in this file) with its ``def`` line, which
is what ``status`` shows as "the points this release has".
"""

from __future__ import annotations

from importlib import resources

import libcst as cst

from variantctl.patching.model import Operation
from variantctl.patching.scopes import Candidate, scopes
from variantctl.patching.states import APPLIED, DRIFTED, PRISTINE
from variantctl.profilevar import PROFILE_ENV

#: the decorator every profile point gets, defined by the inlined block
DECORATOR = "_variantctl_profile"
#: the module-level constant holding the recorder's source
RUNTIME_CONST = "_VARIANTCTL_PROFILE_RUNTIME"
#: the environment variable the recorder reads (see variantctl/runtime/profile_recorder.py)
ENV = PROFILE_ENV

_BLOCK_TEMPLATE = '''
# variantctl instrument: profile points, active only when VARIANTCTL_PROFILE=DIR is set
# in the process's environment; `variantctl rollback` removes this block and the
# @_variantctl_profile(...) decorators.
def _variantctl_profile(name, sync=False):
    import os
    if not os.environ.get("VARIANTCTL_PROFILE"):
        return lambda fn: fn
    import sys
    runtime = sys.modules.get("{runtime_name}")
    if runtime is None:
        import types
        runtime = types.ModuleType("{runtime_name}")
        exec(compile(_VARIANTCTL_PROFILE_RUNTIME, "<variantctl profile runtime>", "exec"),
             runtime.__dict__)
        runtime = sys.modules.setdefault("{runtime_name}", runtime)
    return runtime.point(name, sync)


_VARIANTCTL_PROFILE_RUNTIME = r\'\'\'{source}\'\'\'
'''

_BLOCK: list[cst.BaseStatement] | None = None


def recorder_source() -> str:
    """The text of the runtime recorder that is inlined into patched files."""
    # package data, read like any resource (the recorder runs in vLLM, never here)
    return resources.files("variantctl.runtime").joinpath("profile_recorder.py").read_text(
        "utf-8")


def block_statements() -> list[cst.BaseStatement]:
    """The two module-level statements inserted once per patched module."""
    global _BLOCK
    if _BLOCK is None:
        source = recorder_source()
        # the source sits in a raw triple-quoted string: it must not end it early
        assert "'''" not in source and not source.endswith("\\"), "the recorder breaks the block"
        from variantctl.runtime.profile_recorder import RUNTIME_NAME

        text = _BLOCK_TEMPLATE.replace("{runtime_name}", RUNTIME_NAME).replace(
            "{source}", source)
        # parsed after a placeholder statement, so the leading comment belongs to the
        # def (a file's first comments would go to the parsed module's header)
        _BLOCK = list(cst.parse_module("pass\n" + text).body[1:])
    return _BLOCK


# -- finding ------------------------------------------------------------------


def _is_block(stmt: cst.CSTNode) -> bool:
    if isinstance(stmt, cst.FunctionDef):
        return stmt.name.value == DECORATOR
    if isinstance(stmt, cst.SimpleStatementLine):
        return any(isinstance(s, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == RUNTIME_CONST for t in s.targets)
            for s in stmt.body)
    return False


def _our_decorator(dec: cst.Decorator) -> tuple[str, bool] | None:
    """(point name, sync) when ``dec`` is ``@_variantctl_profile("NAME"[, sync=...])``."""
    call = dec.decorator
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name)
            and call.func.value == DECORATOR):
        return None
    name = ""
    sync = False
    for arg in call.args:
        if arg.keyword is None and isinstance(arg.value, cst.SimpleString):
            name = str(arg.value.evaluated_value)
        elif arg.keyword is not None and arg.keyword.value == "sync":
            sync = isinstance(arg.value, cst.Name) and arg.value.value == "True"
    return name, sync


def detect(op: Operation, module: cst.Module) -> tuple[str, str, list[Candidate]]:
    """(state, reason, one candidate per listed function found) of ``op`` in ``module``."""
    has_block = [_is_block(s) for s in module.body]
    n_block = sum(has_block)
    wanted = set(op.functions)
    cands: list[Candidate] = []
    seen: set[str] = set()
    wrong: list[str] = []
    for qual, node, chain in scopes(module):
        if qual not in wanted or not isinstance(node, cst.FunctionDef):
            continue
        seen.add(qual)
        ours = [d for d in (_our_decorator(x) for x in node.decorators) if d is not None]
        if not ours:
            kind = "from"
        elif ours == [(qual, op.sync)]:
            kind = "to"
        else:
            kind = "other"
            wrong.append(qual)
        cands.append(Candidate(node.name, (*chain, node), kind, qual))
    missing = [f for f in op.functions if f not in seen]
    kinds = {c.kind for c in cands}
    if missing:
        return DRIFTED, "not in this file: " + ", ".join(missing), cands
    if wrong:
        return DRIFTED, ("instrumented with other options: " + ", ".join(wrong)), cands
    if kinds == {"from"} and n_block == 0:
        return PRISTINE, "", cands
    if kinds == {"to"} and n_block == 2:
        return APPLIED, "", cands
    if n_block not in (0, 2):
        return DRIFTED, "the inlined recorder block is incomplete", cands
    plain = [c.code for c in cands if c.kind == "from"]
    if n_block == 2 and plain:
        return DRIFTED, "recorder present but not instrumented: " + ", ".join(plain), cands
    done = [c.code for c in cands if c.kind == "to"]
    if n_block == 0 and done:
        return DRIFTED, "instrumented without the recorder block: " + ", ".join(done), cands
    return DRIFTED, "partly instrumented", cands


# -- transforming -------------------------------------------------------------


def _insert_at(body: tuple[cst.BaseStatement, ...] | list[cst.BaseStatement]) -> int:
    """Index after the module docstring and ``from __future__`` imports."""
    i = 0
    if body and isinstance(body[0], cst.SimpleStatementLine) and len(body[0].body) == 1:
        first = body[0].body[0]
        if isinstance(first, cst.Expr) and isinstance(first.value, cst.BaseString):
            i = 1
    while i < len(body):
        stmt = body[i]
        if not (isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(s, cst.ImportFrom) and isinstance(s.module, cst.Name)
            and s.module.value == "__future__" for s in stmt.body
        )):
            break
        i += 1
    return i


def decorator_for(qual: str, sync: bool) -> cst.Decorator:
    extra = ", sync=True" if sync else ""
    return cst.Decorator(decorator=cst.parse_expression(f'{DECORATOR}("{qual}"{extra})'))


class _Decorate(cst.CSTTransformer):
    def __init__(self, op: Operation, reverse: bool):
        super().__init__()
        self.op, self.reverse = op, reverse
        self.wanted = set(op.functions)
        self.prefix: list[str] = []

    def _qual(self, name: str) -> str:
        return ".".join([*self.prefix, name])

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.prefix.append(node.name.value)
        return True

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        self.prefix.pop()
        return updated

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.prefix.append(node.name.value)
        return True

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef
                          ) -> cst.FunctionDef:
        self.prefix.pop()
        qual = self._qual(updated.name.value)
        if qual not in self.wanted:
            return updated
        kept = [d for d in updated.decorators if _our_decorator(d) is None]
        if self.reverse:
            return updated.with_changes(decorators=kept)
        return updated.with_changes(decorators=[*kept, decorator_for(qual, self.op.sync)])


def transform(op: Operation, module: cst.Module, *, reverse: bool = False,
              display: str = "") -> cst.Module:
    """Instrument the listed functions and inline the recorder (``reverse``: undo both)."""
    new = module.visit(_Decorate(op, reverse))
    assert isinstance(new, cst.Module)
    body: list[cst.BaseStatement] = [s for s in new.body if not _is_block(s)]
    if not reverse:
        at = _insert_at(body)
        body[at:at] = block_statements()
    return new.with_changes(body=body)
