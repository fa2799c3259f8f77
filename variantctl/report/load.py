"""Gather a report's input from the local run store and a sweep's state file.

The one effectful module of the report package: it reads ``runs/`` (run.json and
the ``bench-*.json`` beside it), a sweep's ``runs/sweeps/NAME.json`` (docs/sweep.md,
"The state file") and models' ``config.json`` on this machine. Everything it
returns is a value for :func:`variantctl.report.build.build`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from variantctl.bench.model import BenchResult
from variantctl.errors import NotFoundError, VariantctlError
from variantctl.hostmodel import GpuSpec
from variantctl.report.model import ModelShape, Peaks, PlannedSkip, RunInput
from variantctl.report.roofline import parse_model_shape
from variantctl.runs.store import RunStore

SWEEP_SCHEMA = "variantctl.sweep/1"
#: a bench result is a few MiB at most (every request's chunk offsets)
MAX_BENCH_JSON = 256 << 20


def load_run(store: RunStore, run_id: str, label: str | None = None,
             settings: str = "", note: str = "") -> RunInput:
    """One run (id or unique prefix) and every benchmark file its run.json lists.

    A benchmark file that is missing or unreadable does not stop the report: it is
    named in :attr:`RunInput.unreadable` and shown as a note.
    """
    d = store.find(run_id)
    record = store.read(d.path)
    results: list[tuple[str, BenchResult]] = []
    bad: list[str] = []
    for name in record.benchmarks:
        path = d.path / name
        try:
            if path.stat().st_size > MAX_BENCH_JSON:
                raise ValueError("too large for a benchmark result")
            results.append((name, BenchResult.from_json(json.loads(path.read_text("utf-8")))))
        except FileNotFoundError:
            bad.append(f"{path}: missing")
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError,
                VariantctlError) as exc:
            bad.append(f"{path}: {exc}")
    from variantctl.report.profile import load_profiles

    return RunInput(record, tuple(results), tuple(bad), label, settings, note,
                    profiles=tuple(load_profiles(d.path)))


def sweep_state_path(runs_dir: Path, name_or_path: str) -> Path | None:
    """Where a sweep's state file is: a path to one, or ``runs/sweeps/NAME.json``."""
    direct = Path(name_or_path).expanduser()
    if direct.suffix == ".json" and direct.is_file():
        return direct
    named = runs_dir / "sweeps" / f"{name_or_path}.json"
    return named if "/" not in name_or_path and named.is_file() else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def load_sweep(store: RunStore, path: Path,
               remediation: Callable[[str], str] | None = None,
               ) -> tuple[str, list[RunInput], list[PlannedSkip]]:
    """A sweep's name, the runs of its points (in point order) and its skipped points.

    Points that ran have a run id (measured or failed starts); skipped points become
    :class:`PlannedSkip` values with the rule or the earlier run's evidence and fix;
    points that never finished (pending, interrupted, error) are listed as skipped
    with their status, so the report never hides a point of the grid.
    """
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise VariantctlError(f"{path}: cannot be read as a sweep state file ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SWEEP_SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise VariantctlError(f"{path}: not a {SWEEP_SCHEMA} state file (schema: {got!r})")
    points = data.get("points")
    if not isinstance(points, list):
        raise VariantctlError(f"{path}: field 'points' should be a list")
    runs: list[RunInput] = []
    skips: list[PlannedSkip] = []
    for i, p in enumerate(points):
        if not isinstance(p, dict):
            raise VariantctlError(f"{path}: points[{i}] should be an object")
        name = _text(p.get("name")) or f"point {i + 1}"
        status = _text(p.get("status"))
        run_id = p.get("run_id") if isinstance(p.get("run_id"), str) else None
        if status in ("measured", "failed") and run_id:
            try:
                runs.append(load_run(store, run_id, label=name, settings=_values(p),
                                     note=_stopped(name, p.get("stopped_early"))))
            except NotFoundError:
                skips.append(PlannedSkip(name, status, message=f"run {run_id} is no longer "
                                         "in the run store", run_id=run_id))
            continue
        skip = p.get("skip") if isinstance(p.get("skip"), dict) else None
        if status == "skipped" and skip is not None:
            skips.append(_skip_of(store, name, skip, remediation))
            continue
        skips.append(PlannedSkip(name, status or "unknown", signature=p.get("signature"),
                                 message=_text(p.get("message")) or f"point {status}",
                                 run_id=run_id))
    return _text(data.get("sweep")) or path.stem, runs, skips


def _stopped(name: str, stop: Any) -> str:
    """``stopped_early`` of a point as a sentence, "" when the ladder ran to its end."""
    if not isinstance(stop, dict):
        return ""
    where = f"c={stop.get('concurrency')}" + (f" ({stop['prompt']})" if stop.get("prompt")
                                              else "")
    return f"{name}: a stop rule ended the ladder at {where}: {_text(stop.get('reason'))}"


def _values(point: Mapping[str, Any]) -> str:
    """A point's grid values as ``args.max-num-seqs=2, env.X=y`` (JSON scalars as YAML)."""
    values = point.get("values")
    if not isinstance(values, dict):
        return ""
    return ", ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                     for k, v in values.items())


def _skip_of(store: RunStore, name: str, skip: Mapping[str, Any],
             remediation: Callable[[str], str] | None) -> PlannedSkip:
    reason = _text(skip.get("reason")) or "skipped"
    signature = skip.get("signature") if isinstance(skip.get("signature"), str) else None
    run_id = skip.get("run_id") if isinstance(skip.get("run_id"), str) else None
    evidence, fix = "", ""
    if reason == "history" and run_id:
        # the evidence and fix of the run that failed before, from its record
        try:
            v = store.read(store.find(run_id).path).verdict
            evidence = next((f"log:{e.line}: {e.text}" for e in v.evidence), "")
            fix = v.remediation
        except VariantctlError:
            pass
    if not fix and signature and remediation is not None:
        fix = remediation(signature)
    return PlannedSkip(name, reason, signature=signature,
                       rule=skip.get("rule") if isinstance(skip.get("rule"), str) else None,
                       message=_text(skip.get("message")), remediation=fix,
                       evidence=evidence, run_id=run_id)


def model_shapes(runs: Sequence[RunInput]) -> dict[str, ModelShape]:
    """Run id -> the shape of its model, where the model directory is on this machine."""
    out: dict[str, ModelShape] = {}
    for r in runs:
        model = r.record.variant.get("model")
        if not isinstance(model, str) or r.record.host.get("ssh"):
            continue  # a remote host's model is not read over SSH for a report
        path = Path(model).expanduser() / "config.json"
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        args = r.record.variant.get("args")
        dtype = args.get("dtype") if isinstance(args, Mapping) else None
        shape = parse_model_shape(text, str(path), dtype if isinstance(dtype, str) else None)
        if shape is not None:
            out[r.run_id] = shape
    return out


def peaks_of(gpu_specs: Mapping[str, GpuSpec | None]) -> dict[str, Peaks]:
    """Host name -> Peaks, for hosts whose ``gpu:`` declares both peaks."""
    out = {}
    for host, spec in gpu_specs.items():
        if spec is not None and spec.peak_bandwidth_gbs and spec.peak_tflops:
            out[host] = Peaks(spec.peak_bandwidth_gbs, spec.peak_tflops, spec.count or 1,
                              spec.name)
    return out
