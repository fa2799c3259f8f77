"""``variantctl runs export``: stored runs as CSV, JSON Lines or Parquet, written atomically.

The rows are :mod:`variantctl.interop.table`'s; this module gathers the runs through the
report's loader (the run store reads them), encodes the table and writes the file
through the one atomic writer, so a reader never sees half a file and an export that
fails leaves the old file as it was. CSV and JSON Lines need only the standard library;
Parquet needs pyarrow, the optional extra ``variantctl[parquet]``.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from variantctl.errors import NotFoundError, VariantctlError
from variantctl.interop.table import Cell, Table, level_table, request_table
from variantctl.report.model import RunInput
from variantctl.runs.store import RunStore
from variantctl.secretmask import DEFAULT, SecretRule

FORMATS = ("csv", "jsonl", "parquet")
PER = ("level", "request")
#: what a spreadsheet runs as a formula when a cell starts with it (OWASP's list: the
#: four operators, and tab and carriage return, which some programs strip first)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: a cell that is a number as text (``-1``, ``+2.5e3``): a number to a spreadsheet, not a
#: formula, so it is left as it is
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


@dataclass(frozen=True)
class Exported:
    """What ``runs export`` wrote."""

    path: Path
    format: str
    per: str
    rows: int
    columns: tuple[str, ...]


def gather(store: RunStore, run_ids: Sequence[str], sweep: str | None) -> list[RunInput]:
    """The runs named (ids or unique prefixes) and the runs of the sweep, in that order."""
    from variantctl.report.load import load_run, load_sweep, sweep_state_path

    runs: list[RunInput] = []
    if sweep is not None:
        path = sweep_state_path(store.root, sweep)
        if path is None:
            raise NotFoundError(f"no sweep {sweep!r} in {store.root / 'sweeps'}",
                                hint="a sweep is its state file runs/sweeps/NAME.json "
                                     "or that file's path")
        runs += load_sweep(store, path)[1]
    runs += [load_run(store, run_id) for run_id in run_ids]
    if not runs:
        raise VariantctlError("nothing to export: name runs (ids or prefixes) or --sweep NAME")
    return runs


def csv_cell(value: Cell) -> str | int | float:
    """A cell as the csv module writes it: a number as a number; text a spreadsheet would
    run as a formula (``=HYPERLINK(…)``, ``@SUM(…)``, ``-2+3``) led by ``'`` so it shows
    as the text it is. None is the empty cell."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return value
    if value.startswith(_FORMULA_START) and _NUMBER.fullmatch(value) is None:
        return "'" + value
    return value


def encode_csv(table: Table) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([csv_cell(name) for name in table.names])
    for row in table.rows:
        w.writerow([csv_cell(c) for c in row])
    return buf.getvalue().encode("utf-8")


def encode_jsonl(table: Table) -> bytes:
    names = table.names
    lines = [json.dumps(dict(zip(names, row, strict=True)), ensure_ascii=False, allow_nan=False)
             for row in table.rows]
    return ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")


def missing_pyarrow() -> VariantctlError:
    return VariantctlError(
        "--format parquet needs pyarrow, which is not installed",
        hint="install the extra: pip install 'variantctl[parquet]' (or pipx inject "
             "variantctl pyarrow); csv and jsonl need nothing more",
        kind="missing-extra")


def encode_parquet(table: Table) -> bytes:
    """The table as one Parquet file, each column typed by its declared kind (a column of
    nulls keeps its type)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise missing_pyarrow() from None
    kinds = {"text": pa.string(), "int": pa.int64(), "float": pa.float64(),
             "bool": pa.bool_()}
    schema = pa.schema([(name, kinds[kind]) for name, kind in table.columns])
    arrays = [pa.array([row[i] for row in table.rows], type=schema.field(i).type)
              for i in range(len(table.columns))]
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_arrays(arrays, schema=schema), sink)
    data: bytes = sink.getvalue().to_pybytes()
    return data


_ENCODERS = {"csv": encode_csv, "jsonl": encode_jsonl, "parquet": encode_parquet}


def export(store: RunStore, run_ids: Sequence[str], sweep: str | None, *, fmt: str,
           per: str, out: Path, secrets: SecretRule = DEFAULT) -> Exported:
    """Write the table of the runs to ``out``, replaced at once (nothing half-written); a
    secret's value is never written (``***``: the file is for sharing)."""
    from variantctl.report.write import write_shared

    if fmt == "parquet":  # said before the runs are read: the fix is an install
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise missing_pyarrow() from None
    runs = gather(store, run_ids, sweep)
    table = level_table(runs, secrets) if per == "level" else request_table(runs)
    data = _ENCODERS[fmt](table)
    if out.is_dir():
        raise VariantctlError(f"--out {out}: is a directory, expected a file name")
    if not out.parent.is_dir():
        raise NotFoundError(f"--out {out}: no directory {out.parent}")
    write_shared(out, data)
    return Exported(out, fmt, per, len(table.rows), table.names)
