"""Frozen models of a started server (its record on the host) and the host's file layout.

Pure: no file or process access. ``to_dict``/``from_dict`` give the JSON form.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import asdict, dataclass
from datetime import datetime

from variantctl.jsontypes import JsonMapping, JsonObject

#: characters kept as they are in derived file names (what variant names may hold)
_KEEP = re.compile(r"[A-Za-z0-9_.-]")


def safe_name(name: str) -> str:
    """``name`` as one file-name component, injectively: distinct names, distinct files.

    Valid variant names (letters, digits, ``_ . -``, not starting with ``.`` or
    ``-``) come out unchanged, so existing pid files and records keep their
    names. Any other character, and a leading ``.`` or ``-``, becomes ``%XX``
    per UTF-8 byte; ``%`` itself is never kept, so the mapping can be undone and
    ``co l``, ``co_l`` and ``co;l`` can never share a pid file. The empty name is
    ``%``, which no other name produces.
    """
    if not name:
        return "%"
    out: list[str] = []
    for i, ch in enumerate(name):
        if _KEEP.fullmatch(ch) and not (i == 0 and ch in ".-"):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


@dataclass(frozen=True)
class HostLayout:
    """Where a host keeps variantctl's files, under its work directory."""

    workdir: str

    @property
    def logs(self) -> str:
        return posixpath.join(self.workdir, "logs")

    @property
    def run(self) -> str:
        return posixpath.join(self.workdir, "run")

    @property
    def scripts(self) -> str:
        return posixpath.join(self.workdir, "scripts")

    def record(self, variant: str) -> str:
        return posixpath.join(self.run, f"{safe_name(variant)}.json")

    def pid_file(self, variant: str) -> str:
        return posixpath.join(self.run, f"{safe_name(variant)}.pid")

    def log(self, variant: str, stamp: str) -> str:
        return posixpath.join(self.logs, f"{safe_name(variant)}-{stamp}.log")

    def script(self, variant: str, stamp: str) -> str:
        return posixpath.join(self.scripts, f"{safe_name(variant)}-{stamp}.sh")

    @staticmethod
    def is_log_of(variant: str, file_name: str) -> bool:
        """Whether ``file_name`` (in :attr:`logs`) is one of ``variant``'s logs.

        Matched exactly (name, stamp, ``.log``): a prefix test would hand variant
        ``a`` the logs of ``a-1``.
        """
        return _LOG_NAME.fullmatch(file_name) is not None and (
            file_name[: -len("-YYYYmmddTHHMMSSZ.log")] == safe_name(variant))


#: ``<safe name>-<stamp>.log``, as written by :meth:`HostLayout.log`
_LOG_NAME = re.compile(r".+-[0-9]{8}T[0-9]{6}Z\.log")


def stamp_of(when: datetime) -> str:
    """``20260714T101500Z``: sortable, safe in file names."""
    return when.strftime("%Y%m%dT%H%M%SZ")


@dataclass(frozen=True)
class ServerId:
    """What a launcher's ``start`` gives: a process id, or a SLURM job id."""

    pid: int | None = None
    job: str | None = None


@dataclass(frozen=True)
class ServerRecord:
    """A server variantctl started on a host (``<workdir>/run/<variant>.json``)."""

    variant: str
    host: str
    #: the server's process (group) id; None for a SLURM job, whose id is :attr:`job`
    pid: int | None
    port: int
    log: str
    script: str
    pid_file: str
    started_at: str
    #: local archive directory of the launch, if any
    run_dir: str | None = None
    #: the identity of the server process (a process launcher's record): the host's
    #: boot id when it started, None in a record without one (an older variantctl, or a
    #: SLURM job, whose id is the job's)
    boot_id: str | None = None
    #: its start time in clock ticks after boot (None with a boot id: it had ended
    #: already when it was recorded)
    proc_start: int | None = None
    #: the project (its directory) whose launch wrote the record; None in an older one
    project: str | None = None
    #: the SLURM job id of a SLURM launcher's record (its ``pid`` is None); a record
    #: written before it had this field kept the job id in ``pid``
    #: (:func:`variantctl.launch.slurm.job_id` reads both)
    job: str | None = None

    @property
    def ident(self) -> str:
        """``pid 4242`` or ``job 17``: what messages name the server by."""
        return f"job {self.job}" if self.job is not None else f"pid {self.pid}"

    def to_dict(self) -> JsonObject:
        """The JSON form: a process's record as it always was (no ``job`` key); a SLURM
        job's has ``"pid": null`` and ``"job": "<id>"``."""
        out: JsonObject = dict(asdict(self))
        if self.job is None:
            del out["job"]
        return out

    @classmethod
    def from_dict(cls, data: JsonMapping) -> ServerRecord:
        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else str(value)

        def number(key: str) -> int | None:
            value = data.get(key)
            if value is None:
                return None
            if isinstance(value, (int, float, str)):
                return int(value)
            raise ValueError(f"{key} should be an integer")

        def required(key: str) -> int:
            value = number(key)
            if value is None:
                raise KeyError(key)
            return value

        job = text("job")
        return cls(
            variant=str(data["variant"]),
            host=str(data["host"]),
            # a process's record needs its pid; a SLURM job's has none (or, written
            # before ``job`` existed, the job id: see the field)
            pid=required("pid") if job is None else number("pid"),
            port=required("port"),
            log=str(data["log"]),
            script=str(data["script"]),
            pid_file=str(data["pid_file"]),
            started_at=str(data["started_at"]),
            run_dir=text("run_dir"),
            boot_id=text("boot_id"),
            proc_start=number("proc_start"),
            project=text("project"),
            job=job,
        )
