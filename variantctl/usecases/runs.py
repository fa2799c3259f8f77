"""``runs``, ``runs show``, ``runs trend``, ``compare``, ``profile`` and ``report``:
what the run store holds, read and checked (the store alone reads the files)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from variantctl.env import Environment
from variantctl.errors import VariantctlError
from variantctl.project.loaded import Project

#: where to look when ``runs trend`` finds no run of its target
HINT_TREND = ("variantctl runs lists the runs: VARIANT column, or the 10-hex key before "
              "the run id's '-N'")
#: a run whose benchmark file is damaged cannot be compared
HINT_COMPARE = "run {run}'s benchmark file is damaged; compare needs every one it lists"

if TYPE_CHECKING:
    from variantctl.interop.export import Exported
    from variantctl.interop.importrun import ImportedRun
    from variantctl.report.compare import Comparison
    from variantctl.report.model import ReportInput
    from variantctl.report.trend import Trend
    from variantctl.runs.profilefile import StoredProfile
    from variantctl.runs.run import RunRecord
    from variantctl.runs.store import RunDir


def list_runs(env: Environment, *, variant: str | None, verdict: str | None
              ) -> tuple[Path, Iterator[dict[str, Any]]]:
    """The store's root and one summary row per run (``runs --json``'s objects), those
    of ``variant`` and ``verdict`` when given: made one at a time as they are taken
    (ten thousand runs are never held at once)."""
    from variantctl.runs.store import RunStore

    store = RunStore(env.runs_dir)
    rows = (row for _, row in store.listed())  # from the store's listing index
    return store.root, (r for r in rows
                        if (variant is None or r["variant"] == variant)
                        and (verdict is None or r.get("verdict") == verdict))


def show_run(env: Environment, run_id: str) -> tuple[RunDir, RunRecord]:
    """The run ``run_id`` (an id or unique prefix) and its record."""
    from variantctl.runs.store import RunStore

    store = RunStore(env.runs_dir)
    d = store.find(run_id)
    return d, store.read(d.path)


def trend_of(env: Environment, target: str, metric: str) -> Trend:
    """The runs of configuration key (or variant) ``target``, figure by figure."""
    from variantctl.errors import NotFoundError
    from variantctl.report.load import load_runs
    from variantctl.report.trend import trend as make_trend
    from variantctl.runs.store import RunStore

    store = RunStore(env.runs_dir)
    ids = [d.run_id for d in store.of_key(target)]
    if not ids:
        # a damaged record has no variant name: its directory's says whose it was
        ids = [d.run_id for d, row in store.summaries() if row.get("variant") == target]
    if not ids:
        raise NotFoundError(f"no run of variant or configuration key {target!r} in "
                            f"{store.root}",
                            hint=HINT_TREND)
    # each id's directory as store.find gives it (the first of that id), looked up in
    # one pass: find() per run scanned every directory of the store each time
    first: dict[str, RunDir] = {}
    for d in store.dirs():
        first.setdefault(d.run_id, d)
    # a year of runs is a million request objects, none in a reference cycle: the
    # cyclic collector would only walk the growing graph again and again
    with _paused_gc():
        runs, damaged = load_runs(store, [first[i] if i in first else store.find(i)
                                          for i in ids])
        return make_trend(runs, metric, damaged)


@contextmanager
def _paused_gc() -> Iterator[None]:
    """The cyclic garbage collector off for the block (restored as it was).

    What the block made is still young to the collector, and the first allocation after
    it is back on would walk all of it (0.1–0.3 s for a 1,000-run trend): a freeze and
    unfreeze moves it to the oldest generation as it is, unwalked."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if was:
            gc.enable()


def compare_runs(project: Project, run_a: str, run_b: str) -> Comparison:
    """Two runs' benchmarks compared, beside what differs between them (a secret that
    differs is said to, with its values masked: the project's secret rule)."""
    from variantctl.jsonfields import StoredFileError
    from variantctl.report.compare import compare
    from variantctl.report.load import load_run
    from variantctl.runs.store import RunStore

    store = RunStore(project.env.runs_dir)
    a, b = load_run(store, run_a), load_run(store, run_b)
    for run in (a, b):
        if run.unreadable:  # a comparison without its numbers would mislead
            raise StoredFileError(f"{run.unreadable[0]}",
                                  hint=HINT_COMPARE.format(run=run.run_id))
    return compare(a, b, project.secrets)


@dataclass(frozen=True)
class RunProfile:
    """The profile files a ``bench --profile`` stored in one run."""

    run_id: str
    variant: str
    files: tuple[StoredProfile, ...]

    @property
    def levels(self) -> list[dict[str, Any]]:
        """Every level of every file with its breakdown (what ``profile`` shows)."""
        return [{"file": p.name, "level": lv.label, **(lv.breakdown or {})}
                for p in self.files for lv in p.levels]


def run_profile(env: Environment, run_id: str, trace: Path | None = None) -> RunProfile:
    """Every profile file run ``run_id`` lists, read and validated; with ``trace``, their
    events written there as one Chrome trace (the error names ``--trace``)."""
    from variantctl.errors import NotFoundError
    from variantctl.jsonfields import StoredFileError
    from variantctl.runs.store import RunStore

    store = RunStore(env.runs_dir)
    d = store.find(run_id)
    record = store.read(d.path)
    if not record.profiles:
        raise NotFoundError(f"run {d.run_id} has no profile (its run.json lists no "
                            f"profile-*.json in {d.path})",
                            hint=f"variantctl bench {d.variant} --profile collects one")
    stored = []
    for name in record.profiles:
        try:
            stored.append(store.read_profile(d.path, name))
        except FileNotFoundError:
            raise StoredFileError(f"{d.path / name}: missing (listed in run.json)") from None
    if trace is not None:
        from variantctl.bench.profile import trace_from_document, write_trace_file

        merged = {"levels": [lv.to_json() for p in stored for lv in p.levels]}
        write_trace_file(trace, trace_from_document(merged), "--trace")
    return RunProfile(d.run_id, d.variant, tuple(stored))


def make_report(project: Project, sources: Sequence[str], fmt: str, out: Path | None,
                title: str | None, tune: str | None = None
                ) -> tuple[ReportInput, list[Path], tuple[str, ...]]:
    """The report of sweeps and runs ``sources`` (and of the finished tune ``tune``),
    written: its input, the files written (the report first, then its plots) and its
    summary lines (who won: the report's own, not made twice)."""
    from variantctl.report.write import gather, write_report

    if not sources and tune is None:
        raise VariantctlError("give a sweep, runs or --tune NAME to report",
                              hint="variantctl runs lists the runs")
    data, name = gather(project.env, sources, title, signatures=project.signatures,
                        hosts=project.hosts, secrets=project.secrets, tune=tune)
    doc, written = write_report(project.env, data, fmt, out, name)
    return data, written, doc.summary


def export_runs(project: Project, run_ids: Sequence[str], sweep: str | None, *, fmt: str,
                per: str, out: Path) -> Exported:
    """``runs export``: the runs' table written to ``out`` (secrets masked by the
    project's rule: an export is made to be shared)."""
    from variantctl.interop.export import export
    from variantctl.runs.store import RunStore

    return export(RunStore(project.env.runs_dir), run_ids, sweep, fmt=fmt, per=per,
                  out=out.expanduser(), secrets=project.secrets)


def import_result(project: Project, file: Path, tool: str, variant: str | None,
                  version: str | None) -> ImportedRun:
    """``runs import``: another tool's result file as a run with its benchmark; the
    project's definition of ``variant`` is recorded when it has one."""
    from variantctl.errors import NotFoundError
    from variantctl.interop.importrun import import_file
    from variantctl.runs.store import RunStore

    env = project.env
    resolved, host = None, None
    if variant is not None and env.project_dir is not None:
        try:
            resolved = project.resolve(variant)
        except NotFoundError:
            pass  # a name only: the variant is not (or no longer) the project's
        else:
            host = project.hosts.get(resolved.host)
    return import_file(RunStore(env.runs_dir), file.expanduser(), tool, name=variant,
                       variant=resolved, host=host, version=version, now=env.now())
