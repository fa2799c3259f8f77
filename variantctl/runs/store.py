"""The local run store: ``runs/<YYYY-MM-DD>-<variant>-<key>-<seq>/``.

Each directory holds ``run.json`` (a :class:`~variantctl.runs.run.RunRecord`),
``server.log`` (the host's log, copied), ``launch.sh`` (the uploaded script) and
the benchmark results measured on that server. The run id ``<key>-<seq>`` ends
the directory name, so finding every run of one configuration reads directory
names only. Every file is written through the Target contract's one atomic
writer (:meth:`LocalTarget.write_atomic`: temp file in the same directory, fsync
of file and directory, rename), the same one the ledger, the state cache and the
SFTP writer use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from variantctl.errors import NotFoundError
from variantctl.runs.record import safe_name
from variantctl.runs.run import RUN_ID, RunFileError, RunRecord
from variantctl.targets.local import LocalTarget

#: at most this much of a run.json is read (they are tens of KiB)
MAX_RUN_JSON = 16 << 20
_DIR = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})-(?P<variant>.+)-(?P<id>" + RUN_ID.pattern + ")")


@dataclass(frozen=True)
class RunDir:
    """One run's directory and its id (from the name, before run.json is read)."""

    path: Path
    run_id: str
    key: str
    seq: int
    variant: str


class RunStore:
    def __init__(self, root: Path):
        self.root = root
        self._files = LocalTarget()

    # -- listing ---------------------------------------------------------------

    def dirs(self) -> list[RunDir]:
        """Every run directory, oldest first (by date, then sequence)."""
        if not self.root.is_dir():
            return []
        out = []
        for p in self.root.iterdir():
            m = _DIR.fullmatch(p.name)
            if m is None or p.is_symlink() or not p.is_dir():
                continue
            out.append(RunDir(p, m.group("id"), m.group("key"), int(m.group("seq")),
                              m.group("variant")))
        return sorted(out, key=lambda d: (d.path.name[:10], d.key, d.seq))

    def of_key(self, key: str) -> list[RunDir]:
        """The runs of one configuration, in sequence order."""
        return sorted((d for d in self.dirs() if d.key == key), key=lambda d: d.seq)

    def find(self, run_id: str) -> RunDir:
        """The run with id ``run_id`` (or a unique prefix of it)."""
        dirs = self.dirs()
        exact = [d for d in dirs if d.run_id == run_id]
        if exact:
            return exact[0]
        matches = [d for d in dirs if d.run_id.startswith(run_id)] if run_id else []
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise NotFoundError(f"run id {run_id!r} is ambiguous: "
                                + ", ".join(d.run_id for d in matches[:8]))
        raise NotFoundError(f"no run {run_id!r} in {self.root}",
                            hint="variantctl runs lists the archived runs")

    def records(self) -> list[tuple[RunDir, RunRecord | RunFileError]]:
        """Every run with its record (or the error that makes it unreadable), in the order
        they were created; unreadable ones last."""
        out: list[tuple[RunDir, RunRecord | RunFileError]] = []
        for d in self.dirs():
            try:
                out.append((d, self.read(d.path)))
            except RunFileError as exc:
                out.append((d, exc))
        def order(item: tuple[RunDir, RunRecord | RunFileError]) -> tuple[bool, str, int]:
            d, rec = item
            created = rec.created_at if isinstance(rec, RunRecord) else ""
            return (not isinstance(rec, RunRecord), created, d.seq)

        return sorted(out, key=order)

    # -- reading and writing -------------------------------------------------

    def create(self, *, key: str, variant: str, when: datetime) -> RunDir:
        """A new run directory with the next sequence number of ``key``."""
        self.root.mkdir(parents=True, exist_ok=True)
        seq = max((d.seq for d in self.of_key(key)), default=0) + 1
        while True:
            run_id = f"{key}-{seq}"
            path = self.root / f"{when.strftime('%Y-%m-%d')}-{safe_name(variant)}-{run_id}"
            try:
                path.mkdir()
            except FileExistsError:  # a parallel launch of the same configuration took it
                seq += 1
                continue
            return RunDir(path, run_id, key, seq, safe_name(variant))

    def read(self, run_dir: Path) -> RunRecord:
        path = run_dir / "run.json"
        try:
            size = path.stat().st_size
            if size > MAX_RUN_JSON:
                raise RunFileError(f"{path}: {size} bytes, more than a run.json can be")
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RunFileError(f"{path}: missing (the run was interrupted before it was "
                               "recorded)") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise RunFileError(f"{path}: cannot be read ({exc})") from None
        except ValueError as exc:
            raise RunFileError(f"{path}: not valid JSON ({exc})") from None
        return RunRecord.from_json(data, source=str(path))

    def write(self, run_dir: Path, record: RunRecord) -> Path:
        path = run_dir / "run.json"
        text = json.dumps(record.to_json(), indent=2, default=str, ensure_ascii=False)
        self._files.write_atomic(str(path), (text + "\n").encode())
        return path

    def write_file(self, run_dir: Path, name: str, data: bytes) -> Path:
        """Another file of the run (``server.log``, ``launch.sh``, ``bench-….json``)."""
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"not a file name: {name!r}")
        path = run_dir / name
        self._files.write_atomic(str(path), data)
        return path

    def attach_benchmark(self, run_dir: Path, data: Mapping[str, Any], when: datetime) -> Path:
        """Store a benchmark measured on this run's server (``bench-<stamp>[-n].json``) and
        list it in run.json, so a launch and its benchmarks are one record."""
        from variantctl.runs.record import stamp_of

        stamp = stamp_of(when)
        name, n = f"bench-{stamp}.json", 1
        while (run_dir / name).exists():  # two benchmarks in one second
            n += 1
            name = f"bench-{stamp}-{n}.json"
        text = json.dumps(dict(data), indent=2, default=str, ensure_ascii=False) + "\n"
        path = self.write_file(run_dir, name, text.encode())
        try:
            record = self.read(run_dir)
        except RunFileError:
            return path  # the result is kept beside it; the damaged record is reported by `runs`
        self.write(run_dir, replace(record, benchmarks=(*record.benchmarks, name)))
        return path


def write_local_atomic(path: Path, data: bytes) -> None:
    """Replace a local file atomically (the Target contract's writer, on this machine)."""
    LocalTarget().write_atomic(str(path), data)
