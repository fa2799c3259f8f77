"""The local run store: ``runs/<YYYY-MM-DD>-<variant>-<key>-<seq>/``.

Each directory holds ``run.json`` (a :class:`~variantctl.runs.run.RunRecord`),
``server.log`` (the host's log, copied), ``launch.sh`` (the uploaded script) and
the benchmark results and profile files measured on that server, each listed by
name in ``run.json``. The run id ``<key>-<seq>`` ends the directory name, so
finding every run of one configuration reads directory names only. Every file
is written through the Target contract's one atomic writer
(:meth:`LocalTarget.write_atomic`: temp file in the same directory, fsync of file
and directory, rename), the same one the ledger, the state cache and the SFTP
writer use.

The store is the one reader and writer of what it holds: launches (run.json),
measurements (``bench-<stamp>.json``), profiles (``profile-<stamp>.json``),
sweep states (``sweeps/NAME.json``) and their locks (``sweeps/NAME.lock``). A
command builds one store and passes it down; the writers of one run go through its
handle (:meth:`RunStore.open_run`, ``runs/handle.py``: a lock per run directory,
atomic run.json). Listing reads the index it keeps (``index.jsonl``,
``runs/index.py``), a cache rebuilt from the run files. Stored files are untrusted: each is read
only as a regular file (not a link out of its directory, a FIFO or a device),
under a size cap, and validated into a frozen value; anything else is a
:class:`~variantctl.jsonfields.StoredFileError` naming the file and the field
(exit 2). A name a record lists is one plain name inside the run directory.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from variantctl.errors import NotFoundError, VariantctlError
from variantctl.jsonfields import Fields, StoredFileError
from variantctl.jsontypes import JsonMapping, JsonObject
from variantctl.runs.record import safe_name
from variantctl.runs.run import RUN_ID, RunFileError, RunRecord
from variantctl.targets.local import LocalTarget

if TYPE_CHECKING:
    from variantctl.runs.handle import RunHandle
    from variantctl.runs.index import Entry, Stamp
    from variantctl.runs.profilefile import StoredProfile
    from variantctl.runs.sweepstate import SweepDoc

#: at most this much of a run.json is read (they are tens of KiB)
MAX_RUN_JSON = 16 << 20
#: a bench result is a few MiB at most (every request's chunk offsets)
MAX_BENCH_JSON = 256 << 20
#: a profile file holds every raw event of its levels
MAX_PROFILE_JSON = 512 << 20
#: a sweep state is a few KiB per point
MAX_SWEEP_STATE = 64 << 20
#: the profile files of a schema 2 run.json (which did not list them), as
#: ``bench --profile`` named them then (no ``Z``) and as it names them now
_LEGACY_PROFILE = re.compile(r"profile-[0-9]{8}T[0-9]{6}Z?(-[0-9]+)?\.json")
_DIR = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})-(?P<variant>.+)-(?P<id>" + RUN_ID.pattern + ")")


class BenchDocument(Protocol):
    """A benchmark result as the store keeps it (``bench/model.BenchResult``: the result
    model lives with the load generator, which this package must not import, even for
    its type)."""

    def to_json(self) -> JsonObject: ...


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
        #: the one writer of the store's files (the Target contract's, on this machine)
        self.files = LocalTarget()
        #: the last scan of the store's directory and its mtime (find() per run of a
        #: trend scanned thousands of entries each time)
        self._dirs: tuple[int, tuple[RunDir, ...]] | None = None

    # -- listing ---------------------------------------------------------------

    def dirs(self) -> list[RunDir]:
        """Every run directory, oldest first (by date, then sequence)."""
        try:
            changed = os.stat(self.root).st_mtime_ns
            cached = self._dirs
            # the store's directory is unchanged (no run added or removed) since the last
            # scan; a change within the clock's tick of that scan is not trusted
            if (cached is not None and cached[0] == changed
                    and time.time_ns() - changed > 1_000_000_000):
                return list(cached[1])
            entries = list(os.scandir(self.root))
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for e in entries:
            m = _DIR.fullmatch(e.name)
            # the entry's own type (no link followed, and no stat where d_type says it)
            if m is None or not e.is_dir(follow_symlinks=False):
                continue
            out.append(RunDir(self.root / e.name, m.group("id"), m.group("key"),
                              int(m.group("seq")), m.group("variant")))
        ordered = sorted(out, key=lambda d: (d.path.name[:10], d.key, d.seq))
        self._dirs = (changed, tuple(ordered))
        return ordered

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

    def summaries(self) -> Iterator[tuple[RunDir, JsonObject]]:
        """The listing's row of every run (``runs``), in :meth:`records`' order, one at a
        time, with its directory (:meth:`listed`)."""
        return ((self._run_dir(name), row) for name, row in self.listed())

    def listed(self) -> Iterator[tuple[str, JsonObject]]:
        """Each run's directory name and listing row (``runs --json``), in :meth:`records`'
        order, one at a time: from the store's index (:mod:`variantctl.runs.index`) where
        the run.json is the one the row was made from, else read and validated (a damaged
        one: its error, never indexed); the index is rewritten when a row changed."""
        from variantctl.runs import index

        # str(root / name) for each name, without a Path per run (a tenth of the time of
        # listing ten thousand): a name is one component, so the text only appends it
        prefix = str(self.root / "_")[:-1]
        for entry in index.listing(self):
            row = entry.row
            if entry.damaged:
                yield entry.name, row
            else:
                yield entry.name, {"run_id": row.get("run_id"), "key": row.get("key"),
                                   "dir": prefix + entry.name, **row}

    # the listing index's reads and writes (runs/index.py holds what they mean)

    def run_names(self) -> dict[str, int]:
        """The name of every run directory, each mapped to 0 (for the listing to fill in);
        no :class:`RunDir` is made (the listing holds one entry per run)."""
        try:
            scan = os.scandir(self.root)
        except (FileNotFoundError, NotADirectoryError):
            return {}
        with scan:
            # as dirs() takes them: the name, and the entry's own type (no link followed)
            return {e.name: 0 for e in scan
                    if _DIR.fullmatch(e.name) and e.is_dir(follow_symlinks=False)}

    def _run_dir(self, name: str) -> RunDir:
        m = _DIR.fullmatch(name)
        assert m is not None, name  # a name run_names() gave
        return RunDir(self.root / name, m.group("id"), m.group("key"), int(m.group("seq")),
                      m.group("variant"))

    def run_json_stamp(self, name: str) -> Stamp | None:
        """The identity of run ``name``'s run.json (None: not a regular file)."""
        try:
            st = os.stat(f"{self.root}/{name}/run.json", follow_symlinks=False)
        except (OSError, ValueError):
            return None
        return ((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                if stat.S_ISREG(st.st_mode) else None)

    def listing_entry(self, name: str) -> Entry:
        """Run ``name``'s listing row made from its run.json (stat first: a run.json
        replaced while read is read again by the next listing)."""
        from variantctl.runs.index import Entry, summary_row

        d = self._run_dir(name)
        stamp = self.run_json_stamp(name)
        try:
            row = summary_row(self.read(d.path))
        except RunFileError as exc:
            return Entry(name, None, {"run_id": d.run_id, "dir": str(d.path),
                                      "variant": d.variant, "error": exc.to_json()},
                         damaged=True)
        return Entry(name, stamp, row)

    def open_index(self) -> IO[bytes] | None:
        """The index file, open (None: none, or not a regular file of at most MAX_INDEX
        bytes; it is rebuilt)."""
        from variantctl.runs.index import INDEX_NAME, MAX_INDEX

        try:
            return os.fdopen(open_bounded(self.root, INDEX_NAME, MAX_INDEX), "rb")
        except (FileNotFoundError, StoredFileError):
            return None

    def write_index(self, lines: Iterable[bytes]) -> None:
        """Replace the index, unless another listing is writing it (it is a cache)."""
        from variantctl.runs.index import INDEX_NAME, LOCK_NAME

        try:
            with self.files.lock(str(self.root / LOCK_NAME), timeout=0.0):
                self.files.write_atomic_from(str(self.root / INDEX_NAME), lines)
        except VariantctlError:
            pass  # busy, read-only or full: the listing is complete without it

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
        """The run's record; a schema 2 record gets the profile files beside it listed
        (it did not list them itself)."""
        data = read_json(run_dir, "run.json", MAX_RUN_JSON, missing=(
            "missing (the run was interrupted before it was recorded)"))
        record = RunRecord.from_json(data, source=str(run_dir / "run.json"))
        if record.schema < 3:
            record = replace(record, profiles=_legacy_profiles(run_dir))
        return record

    def open_run(self, run: str | Path | RunDir) -> RunHandle:
        """The run to write (its id, a unique prefix of it, or its directory in this
        store): a command opens it once and writes its verdict, benchmarks and profiles
        through the handle (one writer of run.json, under the run's lock)."""
        from variantctl.runs.handle import RunHandle

        if isinstance(run, RunDir):
            return RunHandle(self, run)
        if isinstance(run, str):
            return RunHandle(self, self.find(run))
        m = _DIR.fullmatch(run.name)
        if (m is None or run.is_symlink() or not run.is_dir()
                or run.resolve().parent != self.root.resolve()):
            raise NotFoundError(f"{run}: not a run directory of {self.root}")
        return RunHandle(self, RunDir(run, m.group("id"), m.group("key"), int(m.group("seq")),
                                      m.group("variant")))

    def write(self, run_dir: Path, record: RunRecord) -> Path:
        """run.json, always in the current schema, through the run's handle (its lock;
        benchmarks and profiles already listed are kept)."""
        return self.open_run(run_dir).record_verdict(record)

    def bench_document(self, run_dir: Path, name: str) -> Fields:
        """One benchmark file the run lists (``bench-<stamp>.json``), read bounded, for
        its typed reader (:func:`variantctl.bench.stored.read_benchmark`: the result
        model lives with the load generator, which this package must not import)."""
        return Fields(read_json(run_dir, name, MAX_BENCH_JSON), str(run_dir / name))

    def read_profile(self, run_dir: Path, name: str) -> StoredProfile:
        """One profile file the run lists, validated (``profile-<stamp>.json``)."""
        from variantctl.runs.profilefile import StoredProfile

        data = read_json(run_dir, name, MAX_PROFILE_JSON)
        return StoredProfile.from_json(name, data, source=str(run_dir / name))

    def write_file(self, run_dir: Path, name: str, data: bytes) -> Path:
        """Another file of the run (``server.log``, ``launch.sh``, ``bench-….json``)."""
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"not a file name: {name!r}")
        path = run_dir / name
        self.files.write_atomic(str(path), data)
        return path

    def attach_benchmark(self, run_dir: Path, result: BenchDocument, when: datetime, *,
                         death: JsonMapping | None = None) -> Path:
        """Store a benchmark measured on this run's server (``bench-<stamp>[-n].json``,
        with the server's death when it died during it) and list it in run.json, so a
        launch and its benchmarks are one record (:meth:`RunHandle.attach_benchmark`)."""
        data = result.to_json()
        if death is not None:
            data["server_death"] = dict(death)
        return self.open_run(run_dir).attach_benchmark(data, when)

    def attach_profile(self, run_dir: Path, doc: JsonMapping, when: datetime) -> Path:
        """Store a profile in the run and list it in run.json
        (:meth:`RunHandle.attach_profile`)."""
        return self.open_run(run_dir).attach_profile(doc, when)

    # -- sweep states --------------------------------------------------------

    def sweep_state_path(self, sweep: str) -> Path:
        """``runs/sweeps/NAME.json``."""
        return self.root / "sweeps" / f"{sweep}.json"

    @contextmanager
    def sweep_lock(self, sweep: str, *, started_at: str) -> Iterator[None]:
        """Hold ``runs/sweeps/NAME.lock`` for the block: one run of a sweep at a time
        (a second is refused, exit 3, naming the holder's pid and host)."""
        from variantctl.runs.sweeplock import hold_sweep_lock

        with hold_sweep_lock(self.files, self.root / "sweeps" / f"{sweep}.lock", sweep,
                             started_at=started_at):
            yield

    def read_sweep_state(self, path: Path) -> SweepDoc | None:
        """A sweep's state, validated (None when there is none). A state file in this
        store's ``sweeps/`` is not read through a link; a path the user named may be one."""
        from variantctl.runs.sweepstate import SweepDoc

        follow = path.parent != self.root / "sweeps"
        try:
            data = read_json(path.parent, path.name, MAX_SWEEP_STATE, follow=follow)
        except FileNotFoundError:
            return None
        return SweepDoc.from_json(data, source=str(path))

    def write_sweep_state(self, path: Path, doc: JsonMapping) -> Path:
        """A sweep's state document (``sweeps/NAME.json``; shape in docs/sweep.md, read
        back as :class:`~variantctl.runs.sweepstate.SweepDoc`), replaced at once through
        the one atomic writer: a killed variantctl leaves the last state written whole."""
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"
        self.files.write_atomic(str(path), text.encode())
        return path

    # -- tune states ---------------------------------------------------------

    def tune_state_path(self, tune: str) -> Path:
        """``runs/tunes/NAME.json``: whether tune NAME's last run finished (``tune
        --resume``; shape in docs/tune.md)."""
        return self.root / "tunes" / f"{tune}.json"

    def read_tune_state(self, tune: str) -> JsonMapping | None:
        """Tune ``tune``'s state document (None when it never ran); a damaged one is a
        :class:`StoredFileError` naming the file."""
        path = self.tune_state_path(tune)
        try:
            data = read_json(path.parent, path.name, MAX_SWEEP_STATE)
        except FileNotFoundError:
            return None
        if not isinstance(data, dict):
            raise StoredFileError(f"{path}: not a JSON object")
        out: JsonMapping = data
        return out

    def write_tune_state(self, tune: str, doc: JsonMapping) -> Path:
        """Replace tune ``tune``'s state at once (a killed variantctl leaves the last
        state written whole)."""
        path = self.tune_state_path(tune)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"
        self.files.write_atomic(str(path), text.encode())
        return path


def _legacy_profiles(run_dir: Path) -> tuple[str, ...]:
    """The profile files of a schema 2 record (the one place the store lists a directory
    for names a record does not give)."""
    try:
        names = os.listdir(run_dir)
    except OSError:
        return ()
    return tuple(sorted(n for n in names if _LEGACY_PROFILE.fullmatch(n)))


def read_json(directory: Path, name: str, cap: int, *, missing: str | None = None,
              follow: bool = False) -> Any:
    """The JSON document in ``directory/name`` read by :func:`read_bounded`.

    A missing file raises :class:`FileNotFoundError` unless ``missing`` says what
    that means (then it is a :class:`StoredFileError`); anything else wrong is a
    :class:`StoredFileError` naming the file.
    """
    path = directory / name
    try:
        data = read_bounded(directory, name, cap, follow=follow)
    except FileNotFoundError:
        if missing is None:
            raise
        raise StoredFileError(f"{path}: {missing}") from None
    import orjson

    try:
        # orjson parses a bench file of 130 KB in a sixth of the stdlib's time (1.03 vs
        # 0.16 ms; `runs trend` reads 1,000 of them). It accepts only strict JSON: what it
        # refuses (NaN and Infinity, a lone surrogate, bad UTF-8, nesting past 1,024)
        # goes to the stdlib below, which reads the first two as it always has and names
        # the rest in the same error as before. One value reads differently: an integer
        # past 64 bits (no writer of ours makes one) becomes the nearest float.
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise StoredFileError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise StoredFileError(f"{path}: not valid JSON (nested too deeply)") from None
    except ValueError as exc:
        raise StoredFileError(f"{path}: not valid JSON ({exc})") from None


def read_bounded(directory: Path, name: str, cap: int, *, follow: bool = False) -> bytes:
    """The bytes of the regular file ``name`` in ``directory``, at most ``cap`` of them
    (opened by :func:`open_bounded`).

    ``name`` must be one plain file name (a record's name for a file never leaves its
    directory). Without ``follow`` the file is opened relative to the directory and not
    through a link; a FIFO, a device, a socket or a directory is refused before it is
    read (opened non-blocking, so a FIFO never hangs the reader), and a file larger
    than ``cap`` is refused without being read whole. :class:`FileNotFoundError` when
    it is not there; :class:`StoredFileError` for the rest.
    """
    path = directory / name
    fd = open_bounded(directory, name, cap, follow=follow)
    try:
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > cap:
                raise StoredFileError(f"{path}: more than {cap} bytes, larger than such a "
                                      "file can be; not read")
        return b"".join(chunks)
    except OSError as exc:
        raise StoredFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def open_bounded(directory: Path, name: str, cap: int, *, follow: bool = False) -> int:
    """The regular file ``name`` in ``directory`` opened for reading (a descriptor the
    caller closes), checked as :func:`read_bounded` says; for a file read as a stream."""
    path = directory / name
    if "/" in name or "\0" in name or name in ("", ".", ".."):
        raise StoredFileError(f"{path}: {name!r} is not a file name in {directory}")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        dir_fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise StoredFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=follow)
            _check_regular(path, st, cap)
            fd = os.open(name, flags | (0 if follow else os.O_NOFOLLOW), dir_fd=dir_fd)
        except FileNotFoundError:
            raise
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise StoredFileError(f"{path}: is a symbolic link (a stored file is read "
                                      "only as a regular file in its directory)") from None
            raise StoredFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(dir_fd)
    try:
        _check_regular(path, os.fstat(fd), cap)  # what was opened, not what was looked at
    except OSError as exc:
        os.close(fd)
        raise StoredFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_regular(path: Path, st: os.stat_result, cap: int) -> None:
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        raise StoredFileError(f"{path}: is a symbolic link (a stored file is read only as "
                              "a regular file in its directory)")
    if not stat.S_ISREG(mode):
        what = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode)
                or stat.S_ISBLK(mode) else "a directory" if stat.S_ISDIR(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "not a plain file")
        raise StoredFileError(f"{path}: is {what}, not a regular file; not read")
    if st.st_size > cap:
        raise StoredFileError(f"{path}: {st.st_size} bytes, more than such a file can be "
                              f"({cap}); not read")


def write_local_atomic(path: Path, data: bytes) -> None:
    """Replace a local file atomically (the Target contract's writer, on this machine)."""
    LocalTarget().write_atomic(str(path), data)
