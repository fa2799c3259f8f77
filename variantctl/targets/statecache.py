"""A JSON file under the local cache dir remembering status answers by content hash.

Keyed by ``sha256(file):patchset fingerprint:module``, so a file that has not
changed since the last ``status`` is answered without parsing it (and without
importing libcst). The cache is local even for remote hosts: the key is the
content, not the path. The answers are the patching engine's, so the file belongs to
one engine: it records the engine's fingerprint (the source of ``variantctl.patching``
and the version) and a cache written by another variantctl is ignored — an upgrade that
changes how a state is decided cannot be answered by the old decision.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from variantctl.errors import TargetError
from variantctl.patching.states import OpState

MAX_ENTRIES = 512

_ENGINE: str | None = None


def engine_fingerprint() -> str:
    """sha256 of variantctl's version and the patching package's source (computed once;
    a few small files)."""
    global _ENGINE
    if _ENGINE is None:
        import variantctl
        import variantctl.patching

        _ENGINE = source_fingerprint(variantctl.__version__,
                                     Path(variantctl.patching.__file__).parent)
    return _ENGINE


def source_fingerprint(version: str, package: Path) -> str:
    """sha256 of ``version`` and every ``*.py`` of ``package`` (names and contents)."""
    h = hashlib.sha256(version.encode())
    for path in sorted(package.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class CachedState:
    """One status answer: the file's state, why it could not be analysed (and where),
    and the state of each operation."""

    state: str
    error: str | None
    error_line: int | None
    ops: tuple[OpState, ...]

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "error": self.error, "error_line": self.error_line,
                "ops": [o.to_json() for o in self.ops]}

    @classmethod
    def from_json(cls, data: object) -> CachedState | None:
        """The answer a cache entry holds; None (a miss, the file is parsed again) for an
        entry of another shape: the cache only saves time, it never fails a status."""
        if not isinstance(data, dict):
            return None
        state, error, line, ops = (data.get("state"), data.get("error"),
                                   data.get("error_line"), data.get("ops"))
        if not (isinstance(state, str) and (error is None or isinstance(error, str))
                and (line is None or type(line) is int) and isinstance(ops, list)
                and all(isinstance(o, dict) for o in ops)):
            return None
        try:
            return cls(state, error, line, tuple(OpState.from_json(o) for o in ops))
        except (KeyError, TypeError, ValueError):
            return None


class StateCache:
    """Maps (content sha256, patchset fingerprint, module) to a state answer.

    This one keeps nothing (``status`` without a cache); :class:`JsonStateCache`
    persists the answers.
    """

    def get(self, key: str) -> CachedState | None:
        return None

    def put(self, key: str, value: CachedState) -> None:
        return None


class JsonStateCache(StateCache):
    def __init__(self, path: Path, *, engine: str | None = None):
        self.path = path
        self.engine = engine if engine is not None else engine_fingerprint()
        self._data: dict[str, Any] | None = None
        self._dirty = False
        # `status --hosts a,b` consults one cache from several threads
        self._lock = threading.RLock()

    def _load(self) -> dict[str, Any]:
        with self._lock:
            return self._load_unlocked()

    def _load_unlocked(self) -> dict[str, Any]:
        if self._data is None:
            try:
                loaded = json.loads(self.path.read_text("utf-8"))
            except (OSError, ValueError):
                loaded = None
            entries = loaded.get("entries") if isinstance(loaded, dict) and loaded.get(
                "engine") == self.engine else None
            # another engine's answers (or an older flat file): start afresh
            self._data = entries if isinstance(entries, dict) else {}
        return self._data

    def get(self, key: str) -> CachedState | None:
        return CachedState.from_json(self._load().get(key))

    def put(self, key: str, value: CachedState) -> None:
        with self._lock:
            data = self._load_unlocked()
            data[key] = value.to_json()
            while len(data) > MAX_ENTRIES:
                data.pop(next(iter(data)))
            self._dirty = True

    def save(self) -> None:
        """Write the cache through the one atomic-write helper (the Target contract's
        ``write_atomic``: temp file beside it, fsync of file and directory, rename; a
        link at the path is refused, never replaced). A cache that cannot be written is
        simply not kept: it only saves parsing time."""
        # imported here: the executor that patches may be an SshTarget, and
        # `patchrun` (which imports this module) should not pay for the local one
        from variantctl.targets.local import LocalTarget

        with self._lock:
            if not self._dirty or self._data is None:
                return
            data = json.dumps({"engine": self.engine, "entries": self._data}).encode("utf-8")
            local = LocalTarget()
            try:
                local.makedirs(str(self.path.parent))
                local.write_atomic(str(self.path), data)
            except TargetError:
                return
            self._dirty = False
