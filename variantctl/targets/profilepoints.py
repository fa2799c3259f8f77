"""Which profile points of an ``instrument`` patchset a host's vLLM has (read-only).

``check`` uses it to warn, before any launch, when a variant ``requires`` a
profile patchset whose points the host's vLLM lacks (a release without
``MultiStepModelRunner``, a V0 patchset on a V1 build): applying it would be
refused as drifted, and a bench ``--profile`` would find no events. It reads
the copies the patch engine would patch (``site_roots``, else the host Python's
``sys.path``) and runs the same state detection as ``status``; it writes
nothing, takes no lock and repairs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from variantctl.errors import TargetError, VariantctlError
from variantctl.hostmodel import Host
from variantctl.patching.model import Patchset
from variantctl.targets.base import Target


@dataclass(frozen=True)
class Missing:
    """Points of one module that one root lacks (``points`` empty: the whole module)."""

    root: str
    module: str
    points: tuple[str, ...]
    reason: str


def missing_points(target: Target, host: Host, patchset: Patchset) -> list[Missing]:
    """Every instrumented module/point of ``patchset`` absent from a root of ``host``."""
    from variantctl.patching.engine import analyze
    from variantctl.patching.plan import module_path
    from variantctl.targets.roots import resolve_roots

    ops = [op for op in patchset.operations if op.kind == "instrument"]
    if not ops:
        return []
    try:
        roots = resolve_roots(target, host, patchset.modules)
    except (TargetError, VariantctlError) as exc:
        return [Missing("", patchset.modules[0], (), exc.message)]
    out: list[Missing] = []
    for root in roots:
        for op in ops:
            path = module_path(root, op.module)
            try:
                data = target.read_bytes(path)
            except TargetError:
                out.append(Missing(root, op.module, op.functions, f"{path} not found"))
                continue
            analysis = analyze([op], data, display=path)
            if not analysis.ops:  # not UTF-8, a syntax error
                out.append(Missing(root, op.module, op.functions,
                                   f"{path}: {analysis.error or analysis.state}"))
                continue
            (state,) = analysis.ops
            found = {f.code for f in state.found}
            lacking = tuple(f for f in op.functions if f not in found)
            if lacking:
                out.append(Missing(root, op.module, lacking, f"not in {path}"))
    return out
