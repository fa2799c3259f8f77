"""Gather a report's input from the local run store and a sweep's state file.

The one effectful module of the report package: it reads, through the run store,
each run's record and the benchmark and profile files it lists, a sweep's state
(``runs/sweeps/NAME.json``, docs/sweep.md "The state file"), and models'
``config.json`` on this machine. Everything it returns is a value for
:func:`variantctl.report.build.build`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from variantctl.bench.model import BenchResult
from variantctl.bench.stored import read_benchmark
from variantctl.errors import NotFoundError, VariantctlError
from variantctl.hostmodel import GpuSpec
from variantctl.jsonfields import StoredFileError
from variantctl.jsontypes import JsonMapping
from variantctl.report.model import ModelShape, Peaks, PlannedSkip, RunInput
from variantctl.report.roofline import parse_model_shape
from variantctl.runs.store import RunDir, RunStore, read_bounded
from variantctl.runs.sweepstate import PointEntry, SkipEntry, StoppedEarly

#: a model's config.json is a few KiB
MAX_MODEL_CONFIG = 4 << 20


def load_run(store: RunStore, run_id: str | RunDir, label: str | None = None,
             settings: str = "", note: str = "") -> RunInput:
    """One run (id or unique prefix, or its directory already found), every benchmark
    file and profile file its run.json lists.

    A benchmark file that is missing or damaged does not stop the report: it is named
    (file and field) in :attr:`RunInput.unreadable` and shown as a note; so is a
    damaged profile file's breakdown left out.
    """
    d = run_id if isinstance(run_id, RunDir) else store.find(run_id)
    record = store.read(d.path)
    results: list[tuple[str, BenchResult]] = []
    bad: list[str] = []
    for name in record.benchmarks:
        try:
            results.append((name, read_benchmark(store, d.path, name).result))
        except FileNotFoundError:
            bad.append(f"{d.path / name}: missing")
        except VariantctlError as exc:
            bad.append(exc.message)
    profiles: list[JsonMapping] = []
    for name in record.profiles:
        try:
            stored = store.read_profile(d.path, name)
        except FileNotFoundError:
            continue  # named by the `profile` command; a report shows what is there
        except VariantctlError:
            continue
        profiles.extend({"level": lv.label, **lv.breakdown} for lv in stored.levels
                        if lv.breakdown is not None)
    return RunInput(record, tuple(results), tuple(bad), label, settings, note,
                    profiles=tuple(profiles))


def load_runs(store: RunStore, run_dirs: Sequence[RunDir]
              ) -> tuple[list[RunInput], list[str]]:
    """Each run of a listing (``runs trend``: its directories, found once, not once per
    run); a damaged one — its record, or a benchmark file it lists — is left out and
    named (``RUN: file: field …``) in the second list, never dropped silently."""
    runs: list[RunInput] = []
    damaged: list[str] = []
    for d in run_dirs:
        try:
            run = load_run(store, d)
        except StoredFileError as exc:
            damaged.append(f"{d.run_id}: {exc.message}")
            continue
        if run.unreadable:
            damaged.append(f"{d.run_id}: {run.unreadable[0]}")
            continue
        runs.append(run)
    return runs, damaged


def sweep_state_path(runs_dir: Path, name_or_path: str) -> Path | None:
    """Where a sweep's state file is: a path to one, or ``runs/sweeps/NAME.json``."""
    direct = Path(name_or_path).expanduser()
    if direct.suffix == ".json" and (direct.exists() or direct.is_symlink()) \
            and not direct.is_dir():
        return direct  # a FIFO or a device too: the store refuses it, saying what it is
    named = runs_dir / "sweeps" / f"{name_or_path}.json"
    # anything there (a FIFO, a link) is the store's to refuse with its reason
    return named if "/" not in name_or_path and (named.exists() or named.is_symlink()) \
        else None


def load_sweep(store: RunStore, path: Path,
               remediation: Callable[[str], str] | None = None,
               ) -> tuple[str, list[RunInput], list[PlannedSkip]]:
    """A sweep's name, the runs of its points (in point order) and its skipped points.

    Points that ran have a run id (measured or failed starts); skipped points become
    :class:`PlannedSkip` values with the rule or the earlier run's evidence and fix;
    points that never finished (pending, interrupted, error) are listed as skipped
    with their status, so the report never hides a point of the grid.
    """
    doc = store.read_sweep_state(path)
    if doc is None:
        raise NotFoundError(f"{path}: no such sweep state file")
    runs: list[RunInput] = []
    skips: list[PlannedSkip] = []
    for i, p in enumerate(doc.points):
        name = p.name or f"point {i + 1}"
        status = p.status
        run_id = p.run_id
        if status in ("measured", "failed") and run_id:
            try:
                runs.append(load_run(store, run_id, label=name, settings=_values(p),
                                     note=_stopped(name, p.stopped_early)))
            except NotFoundError:
                skips.append(PlannedSkip(name, status, message=f"run {run_id} is no longer "
                                         "in the run store", run_id=run_id))
            continue
        if status == "skipped" and p.skip is not None:
            skips.append(_skip_of(store, name, p.skip, remediation))
            continue
        skips.append(PlannedSkip(name, status or "unknown", signature=p.signature,
                                 message=p.message or f"point {status}", run_id=run_id))
    return doc.sweep or path.stem, runs, skips


def _stopped(name: str, stop: StoppedEarly | None) -> str:
    """``stopped_early`` of a point as a sentence, "" when the ladder ran to its end."""
    if stop is None:
        return ""
    where = f"c={stop.concurrency}" + (f" ({stop.prompt})" if stop.prompt else "")
    return f"{name}: a stop rule ended the ladder at {where}: {stop.reason}"


def _values(point: PointEntry) -> str:
    """A point's grid values as ``args.max-num-seqs=2, env.X=y`` (JSON scalars as YAML)."""
    return ", ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                     for k, v in point.values.items())


def _skip_of(store: RunStore, name: str, skip: SkipEntry,
             remediation: Callable[[str], str] | None) -> PlannedSkip:
    reason, signature, run_id = skip.reason, skip.signature, skip.run_id
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
    return PlannedSkip(name, reason, signature=signature, rule=skip.rule,
                       message=skip.message, remediation=fix,
                       evidence=evidence, run_id=run_id)


def model_shapes(runs: Sequence[RunInput]) -> dict[str, ModelShape]:
    """Run id -> the shape of its model, where the model directory is on this machine."""
    out: dict[str, ModelShape] = {}
    for r in runs:
        model = r.record.variant.get("model")
        if not isinstance(model, str) or r.record.host.get("ssh"):
            continue  # a remote host's model is not read over SSH for a report
        path = Path(model).expanduser() / "config.json"
        try:  # the record names the directory: a regular file, bounded, or nothing
            text = read_bounded(path.parent, path.name, MAX_MODEL_CONFIG,
                                follow=True).decode("utf-8")
        except (OSError, UnicodeDecodeError, VariantctlError):
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
