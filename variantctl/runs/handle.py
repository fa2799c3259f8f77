"""One open run of the store: the one writer of its ``run.json`` and of the files it lists.

A launch, a ``bench`` and a ``profile`` may write the same run at once (two benches
against one server, a bench while ``watch`` records the verdict). Each writer of a run
goes through its :class:`RunHandle` (``RunStore.open_run``), which serialises them with
a lock per run directory (``<run>/run.lock``: ``flock`` on the local filesystem the store
lives on, which the kernel releases when the holder dies, so a killed writer never
keeps it) and, under that lock:

- picks the next free ``bench-<stamp>[-n].json`` name and creates the file with the
  Target contract's ``write_new`` (a hard link of a complete temp file: never an
  overwrite, even by a writer that ignored the lock);
- reads ``run.json``, adds the name and replaces the file atomically (temp file,
  fsync, rename) — so no writer's entry is lost and none is listed twice;
- a verdict written by the launch keeps the benchmarks and profiles already listed
  on disk (a bench attached while the launch was watching stays in the record).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Protocol

from variantctl.errors import TargetError, VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.jsontypes import JsonMapping
from variantctl.runs.record import stamp_of
from variantctl.runs.run import RUN_SCHEMA, RunFileError, RunRecord
from variantctl.targets.local import LocalTarget


class StoreFiles(Protocol):
    """What a handle needs of its :class:`~variantctl.runs.store.RunStore` (declared here,
    so this module does not import the store that opens it)."""

    files: LocalTarget

    def read(self, run_dir: Path) -> RunRecord: ...

    def write_file(self, run_dir: Path, name: str, data: bytes) -> Path: ...


class RunPlace(Protocol):
    """Where the run is: its directory and id (a ``runs/store.RunDir``)."""

    @property
    def path(self) -> Path: ...

    @property
    def run_id(self) -> str: ...

#: the per-run lock file (beside run.json; never a file a record lists)
LOCK_NAME = "run.lock"
#: how long a writer waits for another writer of the same run (they hold it for one
#: small read and two writes: milliseconds, seconds on a very slow disk)
LOCK_WAIT_S = 120.0


class RunHandle:
    """One run directory of a :class:`~variantctl.runs.store.RunStore`, opened once per
    command: every write of the run goes through it."""

    def __init__(self, store: StoreFiles, run: RunPlace):
        self.store = store
        self.run = run

    @property
    def path(self) -> Path:
        return self.run.path

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the run's lock for the block (waits for another writer of this run)."""
        path = self.path / LOCK_NAME
        try:
            with self.store.files.lock(str(path), timeout=LOCK_WAIT_S):
                yield
        except TargetError as exc:
            if exc.kind != "busy":
                raise
            raise VariantctlError(
                f"{self.path}: another variantctl has held the run's lock for "
                f"{LOCK_WAIT_S:.0f} s ({path})",
                hint="a stuck `bench` or `launch` on this run: end it and try again",
                exit_code=ExitCode.CONFLICT) from None

    def read(self) -> RunRecord:
        """The run's record (validated; a :class:`RunFileError` when damaged)."""
        return self.store.read(self.path)

    def record_verdict(self, record: RunRecord) -> Path:
        """Write ``run.json`` (the launch's record and verdict), keeping every benchmark
        and profile already listed on disk."""
        with self.locked():
            try:
                on_disk: RunRecord | None = self.read()
            except (RunFileError, FileNotFoundError):
                on_disk = None  # nothing (or nothing readable) to keep
            if on_disk is not None:
                record = replace(
                    record,
                    benchmarks=_union(on_disk.benchmarks, record.benchmarks),
                    profiles=_union(on_disk.profiles, record.profiles))
            return self._write_record(record)

    def write_file(self, name: str, data: bytes) -> Path:
        """Another file of the run (``server.log``, ``launch.sh``), replaced atomically."""
        return self.store.write_file(self.path, name, data)

    def attach_benchmark(self, result: JsonMapping, when: datetime) -> Path:
        """Store a benchmark document (``bench-<stamp>[-n].json``) and list it in
        run.json; the file's path."""
        text = json.dumps(dict(result), indent=2, default=str, ensure_ascii=False) + "\n"
        return self._attach("bench", when, text.encode())

    def attach_profile(self, doc: JsonMapping, when: datetime) -> Path:
        """Store a profile's raw events and breakdowns (``profile-<stamp>[-n].json``, the
        bench files' stamp and same-second rule) and list it in run.json."""
        data = (json.dumps(dict(doc), separators=(",", ":"), default=str) + "\n").encode()
        return self._attach("profile", when, data)

    def _attach(self, kind: str, when: datetime, data: bytes) -> Path:
        stamp = stamp_of(when)
        with self.locked():
            n = 1
            while True:
                name = f"{kind}-{stamp}.json" if n == 1 else f"{kind}-{stamp}-{n}.json"
                path = self.path / name
                try:
                    self.store.files.write_new(str(path), data)
                    break
                except TargetError as exc:
                    if exc.kind != "exists":
                        raise
                    n += 1  # the same second (or a name a writer took without the lock)
            try:
                record = self.read()
            except RunFileError:
                return path  # kept beside it; the damaged record is reported by `runs`
            if kind == "bench":
                record = replace(record, benchmarks=_union(record.benchmarks, (name,)))
            else:
                record = replace(record, profiles=_union(record.profiles, (name,)))
            try:
                self._write_record(record)
            except BaseException:
                # not listed, so not stored: no file the record does not know of
                path.unlink(missing_ok=True)
                raise
            return path

    def _write_record(self, record: RunRecord) -> Path:
        """run.json, always in the current schema (the caller holds the lock)."""
        path = self.path / "run.json"
        doc = replace(record, schema=RUN_SCHEMA).to_json()
        text = json.dumps(doc, indent=2, default=str, ensure_ascii=False)
        self.store.files.write_atomic(str(path), (text + "\n").encode())
        return path


def _union(first: tuple[str, ...], more: tuple[str, ...]) -> tuple[str, ...]:
    """``first`` then the names of ``more`` it lacks, each once."""
    return tuple(dict.fromkeys((*first, *more)))

