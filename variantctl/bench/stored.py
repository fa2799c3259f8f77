"""A benchmark stored in a run (``bench-<stamp>.json``), read back as a typed value.

The run store reads the file (bounded, a regular file in the run directory) and
this module builds the frozen result from it, validated: a damaged file is a
:class:`~variantctl.jsonfields.StoredFileError` naming the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from variantctl.bench.model import BenchResult
from variantctl.jsontypes import JsonMapping
from variantctl.runs.run import thaw
from variantctl.runs.store import RunStore


@dataclass(frozen=True)
class StoredBench:
    """One stored benchmark: its file name, the result and the server's death (the
    ``server_death`` of ``bench --json``) when the server died during it."""

    name: str
    result: BenchResult
    server_death: JsonMapping | None = None


def read_benchmark(store: RunStore, run_dir: Path, name: str) -> StoredBench:
    """The benchmark file ``name`` of the run in ``run_dir``, validated."""
    f = store.bench_document(run_dir, name)
    death = f.opt_mapping("server_death")
    return StoredBench(name, BenchResult.from_fields(f),
                       None if death is None else MappingProxyType(thaw(death)))
