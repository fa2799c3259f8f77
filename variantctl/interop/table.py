"""Rows of stored benchmarks as a table: per level or per request (PURE).

A *level* row is one concurrency of one benchmark with its repeats folded, exactly the
point the report and ``compare`` show (``report.series.Point``): the settings that vary
between the exported runs as ``setting.<key>`` columns, and every headline figure
(``bench.uncertainty.HEADLINES``) with its 95 % interval and the n it rests on. A
*request* row is one request as the client saw it. The column names are stable and
documented in docs/report.md ("Export"); a column's type never depends on the data.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from variantctl.bench.uncertainty import HEADLINES, FigureCI
from variantctl.report.labels import settings_of, varying
from variantctl.report.model import RunInput
from variantctl.report.series import Series, bench_label, series_of
from variantctl.secretmask import DEFAULT, MASK, SecretRule

#: a cell: what a column of one of the four kinds holds (None: no value)
Cell = str | int | float | bool | None

#: column -> kind (``text``, ``int``, ``float``, ``bool``): the fixed columns of a level row
LEVEL_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "text"), ("variant", "text"), ("label", "text"), ("bench_file", "text"),
    ("bench", "text"), ("imported_from", "text"), ("concurrency", "int"),
    ("repeats", "int"), ("requests", "int"), ("completed", "int"), ("failed", "int"),
    ("success_pct", "float"), ("partial", "bool"),
)
#: each headline figure ``H`` gives these columns (``H`` itself is the estimate)
FIGURE_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("", "float"), ("_ci_lo", "float"), ("_ci_hi", "float"), ("_n", "int"),
    ("_method", "text"),
)
#: the columns of a request row
REQUEST_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "text"), ("variant", "text"), ("bench_file", "text"),
    ("imported_from", "text"), ("concurrency", "int"), ("repeat", "int"), ("index", "int"),
    ("ok", "bool"), ("send_s", "float"), ("first_token_s", "float"), ("end_s", "float"),
    ("queue_s", "float"), ("ttft_ms", "float"), ("e2el_ms", "float"),
    ("prompt_tokens", "int"), ("output_tokens", "int"), ("cached_tokens", "int"),
    ("error", "text"), ("error_detail", "text"),
)
#: the prefix of the columns of the settings that vary between the exported runs
SETTING_PREFIX = "setting."


@dataclass(frozen=True)
class Table:
    """Named, typed columns and the rows (each a tuple in column order)."""

    columns: tuple[tuple[str, str], ...]
    rows: tuple[tuple[Cell, ...], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)


def _finite(value: float) -> float | None:
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def _setting(value: object) -> str | None:
    """A setting as text (one kind per column whatever the runs hold): a string as it is,
    anything else as JSON (``true``, ``2``, ``["a", "b"]``); None when the run lacks it."""
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def imported_from(s: Series) -> str | None:
    """``vllm 0.6.3`` for a benchmark brought in by ``runs import``, else None."""
    imp = s.result.imported
    return None if imp is None else f"{imp.tool} {imp.version}"


def _figure_cells(f: FigureCI | None) -> tuple[Cell, ...]:
    if f is None:
        return (None, None, None, None, None)
    iv = f.interval
    return (_finite(iv.estimate), _finite(iv.lo), _finite(iv.hi), f.n, f.method)


def level_table(runs: Sequence[RunInput], secrets: SecretRule = DEFAULT) -> Table:
    """One row per point of every benchmark of ``runs``, in the report's order; a secret
    setting's value (:mod:`variantctl.secretmask`) is ``***`` in its column and labels."""
    keys = varying(runs)
    columns = (LEVEL_COLUMNS + tuple((SETTING_PREFIX + k, "text") for k in keys)
               + tuple((h + sfx, kind) for h in HEADLINES for sfx, kind in FIGURE_SUFFIXES))
    rows: list[tuple[Cell, ...]] = []
    for s in series_of(runs, secrets):
        flat = settings_of(s.run)
        settings = tuple(MASK if secrets.is_secret_setting(k) and flat.get(k) is not None
                         else _setting(secrets.mask_value(flat.get(k))) for k in keys)
        for p in s.points:
            total = p.completed + p.failed
            fixed: tuple[Cell, ...] = (
                s.run.run_id, s.run.record.variant_name, s.label, s.file,
                bench_label(s.result), imported_from(s), p.concurrency, len(p.levels),
                sum(len(lv.requests) for lv in p.levels), p.completed, p.failed,
                100.0 * p.completed / total if total else None, p.partial)
            figures = tuple(c for h in HEADLINES for c in _figure_cells(p.intervals.get(h)))
            rows.append(fixed + settings + figures)
    return Table(columns, tuple(rows))


def _after(send: float | None, offset: float, known: bool) -> float | None:
    """``send + offset`` (seconds from the level's start), None when either is unknown."""
    return None if send is None or not known else send + offset


def request_table(runs: Sequence[RunInput]) -> Table:
    """One row per request of every level of every benchmark of ``runs``: when it was sent,
    its first token and its end (seconds from its level's start), tokens and error."""
    rows: list[tuple[Cell, ...]] = []
    for s in series_of(runs):
        source = imported_from(s)
        for lv in s.result.levels:
            for r in lv.requests:
                got_first = r.ok or bool(r.chunk_offsets_s)
                # an imported file may not say when a request was sent (vLLM 0.6): empty
                send = _finite(r.start_s)
                rows.append((
                    s.run.run_id, s.run.record.variant_name, s.file, source,
                    lv.concurrency, lv.repeat, r.index, r.ok, send,
                    _after(send, r.ttft_s, got_first), _after(send, r.latency_s, True),
                    r.queue_s,
                    r.ttft_s * 1000.0 if got_first else None,
                    r.latency_s * 1000.0 if r.ok else None, r.prompt_tokens,
                    r.output_tokens, r.cached_tokens, r.error, r.error_detail))
    return Table(REQUEST_COLUMNS, tuple(rows))
