"""Frozen models of a started server and of an archived run (run.json).

Pure: no file or process access. ``to_dict``/``from_dict`` give the JSON form.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

RUN_SCHEMA = 1

#: a safe component for file names on the host (variant names already match this)
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(name: str) -> str:
    return _SAFE.sub("_", name) or "_"


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


def stamp_of(when: datetime) -> str:
    """``20260714T101500Z``: sortable, safe in file names."""
    return when.strftime("%Y%m%dT%H%M%SZ")


@dataclass(frozen=True)
class ServerRecord:
    """A server variantctl started on a host (``<workdir>/run/<variant>.json``)."""

    variant: str
    host: str
    pid: int
    port: int
    log: str
    script: str
    pid_file: str
    started_at: str
    #: local archive directory of the launch, if any
    run_dir: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ServerRecord:
        return cls(
            variant=str(data["variant"]),
            host=str(data["host"]),
            pid=int(data["pid"]),
            port=int(data["port"]),
            log=str(data["log"]),
            script=str(data["script"]),
            pid_file=str(data["pid_file"]),
            started_at=str(data["started_at"]),
            run_dir=None if data.get("run_dir") is None else str(data["run_dir"]),
        )


@dataclass(frozen=True)
class RunRecord:
    """Everything ``runs/<date>-<variant>-<n>/run.json`` holds."""

    run_id: str
    variant: Mapping[str, Any]
    host: Mapping[str, Any]
    script: str
    server: Mapping[str, Any]
    patches: Mapping[str, Any]
    verdict: Mapping[str, Any]
    facts: Mapping[str, Any]
    expect: Mapping[str, Any]
    timings: Mapping[str, Any]
    preflight: Sequence[Mapping[str, Any]] = field(default_factory=list)
    stopped: Mapping[str, Any] | None = None
    log_file: str | None = None
    schema: int = RUN_SCHEMA

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "run_id": self.run_id,
            "variant": dict(self.variant),
            "host": dict(self.host),
            "script": self.script,
            "server": dict(self.server),
            "patches": dict(self.patches),
            "preflight": [dict(p) for p in self.preflight],
            "verdict": dict(self.verdict),
            "facts": dict(self.facts),
            "expect": dict(self.expect),
            "timings": dict(self.timings),
            "stopped": None if self.stopped is None else dict(self.stopped),
            "log_file": self.log_file,
        }
