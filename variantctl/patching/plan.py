"""PURE: plan an apply or a revert over many roots; identical contents are analysed once.

``plan_apply(patchset, sources)`` decides, per file, whether to write, skip
(already applied) or refuse (drifted), and carries the new bytes. Nothing is
read or written here: ``variantctl.targets.patchrun`` supplies the bytes and
executes the plan.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from variantctl.patching.model import Patchset
from variantctl.patching.states import (
    APPLIED,
    DRIFTED,
    ERROR,
    PARTIAL,
    PRISTINE,
    FileAnalysis,
)

WRITE = "write"
NOOP = "noop"
REFUSE = "refuse"
FAIL = "error"


@dataclass(frozen=True)
class SourceFile:
    """One copy of a target module: where it is and its bytes."""

    root: str
    module: str
    path: str
    data: bytes


@dataclass(frozen=True)
class FilePlan:
    source: SourceFile
    analysis: FileAnalysis
    action: str
    message: str

    @property
    def new_data(self) -> bytes | None:
        return self.analysis.new_data if self.action == WRITE else None


@dataclass(frozen=True)
class Plan:
    patchset: Patchset
    reverse: bool
    files: tuple[FilePlan, ...]

    @property
    def writes(self) -> tuple[FilePlan, ...]:
        return tuple(f for f in self.files if f.action == WRITE)



def module_relpath(module: str) -> str:
    """``vllm.engine.arg_utils`` -> ``vllm/engine/arg_utils.py`` (names are validated
    identifiers, so the path cannot leave its root)."""
    return "/".join(module.split(".")) + ".py"


def module_path(root: str, module: str) -> str:
    return posixpath.join(root, module_relpath(module))


def backup_name(template: str, path: str, when: datetime, patchset: str) -> str:
    """The backup path next to ``path``, e.g. ``arg_utils.py.bak_20260714_eager_allreduce``."""
    slug = patchset.replace("-", "_").replace(".", "_")
    name = template.format(file=posixpath.basename(path), date=when.strftime("%Y%m%d"),
                           name=patchset, slug=slug)
    return posixpath.join(posixpath.dirname(path), name)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def analyze_all(
    patchset: Patchset, sources: Sequence[SourceFile], *, reverse: bool = False,
    with_lines: bool = False,
) -> dict[tuple[str, str], FileAnalysis]:
    """Analysis per (module, sha256 of content): each distinct content is parsed once."""
    out: dict[tuple[str, str], FileAnalysis] = {}
    if not sources:
        return out  # and libcst is never imported
    from variantctl.patching.engine import analyze

    for src in sources:
        key = (src.module, _sha(src.data))
        if key not in out:
            out[key] = analyze(patchset.ops_for(src.module), src.data, display=src.path,
                               reverse=reverse, with_lines=with_lines)
    return out


def _decide(analysis: FileAnalysis, reverse: bool) -> tuple[str, str]:
    state = analysis.state
    if state == ERROR:
        reasons = [f"{o.op_id}: {o.reason}" for o in analysis.ops if o.state == ERROR]
        return FAIL, analysis.error or "; ".join(reasons) or "cannot analyse"
    if state == DRIFTED:
        bad = [o for o in analysis.ops if o.state == DRIFTED]
        where = "; ".join(f"{o.op_id}: {o.reason}" + (f" (line {o.line})" if o.line else "")
                          for o in bad)
        return REFUSE, f"drifted: {where}"
    done, todo = (PRISTINE, APPLIED) if reverse else (APPLIED, PRISTINE)
    if state == done:
        return NOOP, "already rolled back" if reverse else "already applied"
    if state == todo:
        return WRITE, "roll back" if reverse else "apply"
    assert state == PARTIAL
    return WRITE, ("revert the applied operations of a partial file" if reverse
                   else "complete a partially applied file")


def plan(patchset: Patchset, sources: Sequence[SourceFile], *, reverse: bool = False) -> Plan:
    """What an apply (or, with ``reverse``, an inverse-transform rollback) would do."""
    analyses = analyze_all(patchset, sources, reverse=reverse)
    files = []
    for src in sources:
        a = analyses[(src.module, _sha(src.data))]
        action, message = _decide(a, reverse)
        files.append(FilePlan(src, a, action, message))
    return Plan(patchset, reverse, tuple(files))


def plan_apply(patchset: Patchset, sources: Sequence[SourceFile]) -> Plan:
    """Plan applying ``patchset`` to every source."""
    return plan(patchset, sources, reverse=False)


def plan_revert(patchset: Patchset, sources: Sequence[SourceFile]) -> Plan:
    """Plan the inverse transform (rollback without a usable backup)."""
    return plan(patchset, sources, reverse=True)


def unified_diff(before: bytes, after: bytes, path: str) -> str:
    """The unified diff of two versions of a file (3 lines of context)."""
    import difflib

    a = before.decode("utf-8", "replace").splitlines(keepends=True)
    b = after.decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, f"a/{path.lstrip('/')}", f"b/{path.lstrip('/')}"))
