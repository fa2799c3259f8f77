"""``bench --profile``: a server with profile points on, their events per level, the breakdown.

EFFECTFUL (through the Target, so local and SSH hosts are alike):

- :func:`profile_dir` / :func:`server_profile_dir` — where a variant's server
  writes its profile files, and whether a running server was started with
  ``VARIANTCTL_PROFILE`` (the relaunch itself is ``usecases/profiled.py``'s: it
  loads the variant catalog, which only a use case does);
- :class:`Collector` — before each level remembers how far every
  ``prof-<pid>.jsonl`` file in that directory goes; after the level waits for the
  recorder's periodic flush and reads only what was appended, so each level gets
  exactly its own events (no clock comparison between this machine and the host);
- :func:`summaries` — the per-level breakdowns (:mod:`variantctl.bench.profiledata`);
  the raw events are recorded as ``profile-<stamp>.json`` in the launch's run by
  :func:`variantctl.bench.step.record_profile`, and the Chrome trace written when asked for.

The instrumentation itself is a patchset (``profile-decode-v1``,
``profile-decode-v0``): without it applied on the host, the directory stays
empty and the breakdown says so.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from variantctl.bench.profiledata import Event, breakdown, chrome_trace, parse_lines
from variantctl.errors import TargetError, VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.hostmodel import Host
from variantctl.jsontypes import JsonMapping, JsonObject
from variantctl.profilevar import PROFILE_ENV
from variantctl.runs.record import ServerRecord
from variantctl.targets.base import Target

ENV = PROFILE_ENV
#: the recorder flushes every 0.5 s (FLUSH_INTERVAL_S in runtime/profile_recorder.py)
SETTLE_S = 1.2
_FILE_RE = re.compile(r"prof-(\d+)\.jsonl")
_CHUNK = 1 << 20


def profile_dir(target: Target, host: Host, variant: str) -> str:
    """Where the variant's server writes its profile files on the host."""
    from variantctl.launch.servers import resolve_workdir

    safe = re.sub(r"[^A-Za-z0-9_.@-]", "_", variant)
    return f"{resolve_workdir(target, host).rstrip('/')}/profile/{safe}"


def server_profile_dir(target: Target, record: ServerRecord) -> str | None:
    """The ``VARIANTCTL_PROFILE`` the server's launch script exports (None: not profiled)."""
    try:
        script = target.read_bytes(record.script).decode("utf-8", "replace")
    except TargetError:
        return None
    for line in script.splitlines():
        if line.startswith(f"export {ENV}="):
            try:
                words = shlex.split(line[len("export "):])
            except ValueError:
                return None
            value = words[0].split("=", 1)[1] if words else ""
            return value or None
    return None


def empty_hint(label: str, directory: str) -> str:
    """Why a profiled run may have no events (bench --profile and profile: true say it)."""
    return (f"{label}: no profile events in {directory}: is a profile-decode patchset applied "
            "to the vLLM this server imports? (variantctl status profile-decode-v1)")


@dataclass
class LevelEvents:
    label: str
    concurrency: int
    repeat: int
    events: list[Event]
    dropped: int = 0


@dataclass
class Collector:
    """Reads each level's new events from the host's profile directory."""

    target: Target
    directory: str
    settle_s: float = SETTLE_S
    sleep: Callable[[float], None] = time.sleep
    offsets: dict[str, int] = field(default_factory=dict)
    levels: list[LevelEvents] = field(default_factory=list)

    def _files(self) -> list[str]:
        try:
            names = self.target.listdir(self.directory)
        except TargetError as exc:
            if exc.kind == "not-found":
                return []
            raise
        return sorted(n for n in names if _FILE_RE.fullmatch(n))

    def mark(self) -> None:
        """Before a level: every complete line written so far belongs to earlier levels
        (or to the warm-up); a line still being written is this level's."""
        for name in self._files():
            path = f"{self.directory}/{name}"
            if name not in self.offsets:
                st = self.target.stat(path)
                self.offsets[name] = st.size if st is not None else 0
                continue
            self.offsets[name] += len(self._complete(path, self.offsets[name]))

    def _complete(self, path: str, start: int) -> bytes:
        """The complete lines of ``path`` from ``start`` on."""
        data = b""
        while True:
            chunk = self.target.read_from(path, start + len(data), _CHUNK)
            data += chunk
            if len(chunk) < _CHUNK:
                break
        return data[: data.rfind(b"\n") + 1]

    def collect(self, concurrency: int, repeat: int) -> LevelEvents:
        """After a level: the events appended since :meth:`mark`."""
        self.sleep(self.settle_s)
        events: list[Event] = []
        dropped = 0
        for name in self._files():
            m = _FILE_RE.fullmatch(name)
            assert m is not None
            path = f"{self.directory}/{name}"
            start = self.offsets.get(name, 0)
            complete = self._complete(path, start)  # a line being written waits
            self.offsets[name] = start + len(complete)
            parsed = parse_lines(complete.decode("utf-8", "replace"), int(m.group(1)))
            events.extend(parsed.events)
            dropped += parsed.dropped
        label = f"c{concurrency}" + (f"-r{repeat + 1}" if repeat else "")
        level = LevelEvents(label, concurrency, repeat, events, dropped)
        self.levels.append(level)
        return level


def summaries(collector: Collector) -> list[JsonObject]:
    """One breakdown per level, labelled."""
    return [{"level": lv.label, "concurrency": lv.concurrency, "repeat": lv.repeat,
             **breakdown(lv.events, dropped=lv.dropped)} for lv in collector.levels]


def raw_document(collector: Collector, variant: str, when: str) -> JsonObject:
    """What goes into the run record: breakdowns and every raw event."""
    return {"schema": "variantctl.profile-run/1", "variant": variant, "when": when,
            "directory": collector.directory, "levels": [
                {"label": lv.label, "concurrency": lv.concurrency, "repeat": lv.repeat,
                 "dropped": lv.dropped, "events": [e.to_json() for e in lv.events],
                 "breakdown": breakdown(lv.events, dropped=lv.dropped)}
                for lv in collector.levels]}


def trace_from_document(doc: dict[str, Any]) -> JsonObject:  # doc: a stored file, as read
    """The Chrome trace of a stored ``profile-*.json``."""
    return chrome_trace([(lv["label"], [Event.from_json(e) for e in lv["events"]])
                         for lv in doc.get("levels", [])])


def write_trace(collector: Collector, path: Path) -> None:
    """``--profile-trace FILE``: the Chrome trace of this run's levels."""
    trace = chrome_trace([(lv.label, lv.events) for lv in collector.levels])
    write_trace_file(path, trace, "--profile-trace")


def write_trace_file(path: Path, trace: JsonMapping, option: str) -> None:
    """Write a Chrome trace atomically; an OSError is one error naming ``option``."""
    from variantctl.runs.store import write_local_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_local_atomic(path, (json.dumps(trace) + "\n").encode())
    except OSError as exc:
        raise VariantctlError(f"{option} {path}: {exc.strerror or exc}",
                              exit_code=ExitCode.FAILED) from None
