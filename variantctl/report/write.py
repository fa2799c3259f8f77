"""The report command's effectful half: gather the input, draw, write the files.

Kept out of the CLI module so the command stays thin; kept out of the pure modules
because it reads the run store and the project's hosts and writes files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from variantctl.env import Environment
from variantctl.errors import NotFoundError, VariantctlError
from variantctl.hostmodel import Host
from variantctl.logs.model import Catalog
from variantctl.report.model import PlannedSkip, ReportInput, RunInput
from variantctl.report.plots import PlotData
from variantctl.runs.record import safe_name, stamp_of
from variantctl.runs.store import RunStore, write_local_atomic
from variantctl.secretmask import DEFAULT, SecretRule

if TYPE_CHECKING:
    from variantctl.report.build import ReportDoc
    from variantctl.report.profile import StackedBars
    from variantctl.report.tuneplot import TuneCurve

#: every plot a report may draw (build.py), for clearing an earlier report's leftovers
_PLOT_NAMES = frozenset({"agg_tps.png", "tpot.png", "ttft_p90.png", "gpu_util.png",
                         "pareto.png", "trend.png", "tune.png"})


def _user_mode() -> int:
    """0o666 less the user's umask: the mode any program's new file gets (a report is read
    by colleagues and web servers; the atomic writer's temporary file is 0600)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return 0o666 & ~mask


def write_shared(path: Path, data: bytes) -> None:
    """Write atomically; a new file gets the user's umask, an existing one keeps its mode."""
    new = not path.exists()
    write_local_atomic(path, data)
    if new:
        path.chmod(_user_mode())


def _remediation(catalog: Catalog, signature: str) -> str:
    sig = catalog.get(signature)
    if sig is None or "{" in sig.remediation:
        # a template filled from the log's numbers ({model_len}); a predicted point has no
        # log, and its finding's message already says what to change
        return ""
    return sig.remediation


def gather(env: Environment, sources: Sequence[str], title: str | None, *,
           signatures: Catalog, hosts: Mapping[str, Host],
           secrets: SecretRule = DEFAULT, tune: str | None = None) -> tuple[ReportInput, str]:
    """The report's input from sweep names/state files and run ids (and the finished
    tune ``tune``'s result, from its state in the store), and a name for it.

    ``signatures`` (the command's one catalog, the project's own signatures included)
    names the remediation of a failed point; ``hosts`` give the GPUs' peaks.

    A source is a sweep when ``runs/sweeps/<it>.json`` (or the path itself) is a state
    file, else a run id or unique prefix; one that is neither is an error (exit 2).
    """
    from variantctl.report.load import (
        load_run,
        load_sweep,
        model_shapes,
        peaks_of,
        sweep_state_path,
    )

    store = RunStore(env.runs_dir)
    tuned = None
    if tune is not None:
        from variantctl.report.tuneresult import load_tune

        tuned = load_tune(store, tune, secrets)
    runs: list[RunInput] = []
    skips: list[PlannedSkip] = []
    sweeps: list[str] = []
    for src in sources:
        state = sweep_state_path(env.runs_dir, src)
        if state is not None:
            name, sweep_runs, sweep_skips = load_sweep(store, state,
                                                           partial(_remediation, signatures))
            sweeps.append(name)
            runs += sweep_runs
            skips += sweep_skips
            continue
        if not any(d.run_id.startswith(src) for d in store.dirs()) or not src:
            raise NotFoundError(
                f"{src!r} is neither a sweep (no {env.runs_dir / 'sweeps' / (src + '.json')})"
                f" nor a run in {store.root}",
                hint="variantctl runs lists the runs; a sweep writes its state file when "
                     "it starts")
        runs.append(load_run(store, src))
    seen: set[str] = set()
    unique = []
    for r in runs:  # a run named twice (or by two sweeps) is reported once
        if r.run_id not in seen:
            seen.add(r.run_id)
            unique.append(r)
    names = {str(r.record.host.get("name")) for r in unique}
    peaks = peaks_of({h: hosts[h].gpu for h in names if h in hosts})
    name = f"tune-{tuned.name}" if tuned is not None else sweeps[0] if len(sweeps) == 1 \
        else (unique[0].record.variant_name if len(unique) == 1 else "runs")
    data = ReportInput(
        title=title or (f"Tune {tuned.name}" if tuned is not None else _title(sweeps, unique)),
        runs=tuple(unique), skips=tuple(skips), sweep=", ".join(sweeps) or None,
        peaks=peaks, models=model_shapes(unique),
        created_at=env.now().strftime("%Y-%m-%d %H:%M UTC"), secrets=secrets, tune=tuned)
    return data, name


def _title(sweeps: Sequence[str], runs: Sequence[RunInput]) -> str:
    if sweeps:
        return ("Sweep " if len(sweeps) == 1 else "Sweeps ") + ", ".join(sweeps)
    names = list(dict.fromkeys(r.record.variant_name for r in runs))
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return f"Benchmark report: {shown}"


def write_report(env: Environment, data: ReportInput, fmt: str, out: Path | None,
                 name: str) -> tuple[ReportDoc, list[Path]]:
    """Write the report into ``out``: the report as built, and the files written (the
    report file first, then the plots)."""
    from variantctl.report.build import build

    doc = build(data)
    return doc, _write(env, doc, fmt, out, name)


def _draw(plots: Sequence[PlotData | StackedBars | TuneCurve]) -> dict[str, bytes]:
    """Each plot's PNG by name, in the order given. Drawn in this process: drawing them
    in forked workers measured no faster on a 2-core machine with other work on it."""
    import gc

    import matplotlib

    matplotlib.use("Agg", force=True)
    images = {}
    for p in plots:
        images[p.name] = _png(p)
        # a drawn figure is a web of reference cycles (figure, canvas, axes, artists):
        # freed now, not whenever the collector next runs, so the peak holds one
        # figure of 200 series, not six
        gc.collect()
    return images


def _png(plot: PlotData | StackedBars | TuneCurve) -> bytes:
    from variantctl.report.plots import render_png
    from variantctl.report.profile import render_stacked_png
    from variantctl.report.tuneplot import TuneCurve, render_tune_png

    if isinstance(plot, TuneCurve):
        return render_tune_png(plot)
    return render_png(plot) if isinstance(plot, PlotData) else render_stacked_png(plot)


def _write(env: Environment, doc: ReportDoc, fmt: str, out: Path | None,
           name: str) -> list[Path]:
    try:
        images = _draw([p for p in doc.plots if p.lines])
    except ImportError as exc:  # matplotlib is a dependency; a broken install says so
        raise VariantctlError(f"cannot draw the plots: {exc}",
                              hint="pip install matplotlib (variantctl's dependency)") from None
    out = out.expanduser() if out is not None else \
        env.project() / "reports" / f"{safe_name(name)}-{stamp_of(env.now())}"
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VariantctlError(f"{out}: cannot create the report directory ({exc.strerror})",
                              where=str(out)) from None
    written: list[Path] = []
    try:
        if fmt == "html":
            from variantctl.report.html import render_html

            path = out / "report.html"
            write_shared(path, render_html(doc, images).encode())
            return [path]
        from variantctl.report.markdown import render_markdown

        # plots first: a report.md never links to a PNG that is not there
        for stale in _PLOT_NAMES - images.keys():
            # an earlier report's plot this one does not have (no GPU data now)
            (out / stale).unlink(missing_ok=True)
        for image_name, png in images.items():
            write_shared(out / image_name, png)
            written.append(out / image_name)
        path = out / "report.md"
        write_shared(path, render_markdown(doc).encode())
    except OSError as exc:
        raise VariantctlError(f"{out}: cannot write the report ({exc})", where=str(out)) \
            from None
    return [path, *written]
