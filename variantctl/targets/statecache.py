"""A JSON file under the local cache dir remembering status answers by content hash.

Keyed by ``sha256(file):patchset fingerprint:module``, so a file that has not
changed since the last ``status`` is answered without parsing it (and without
importing libcst). The cache is local even for remote hosts: the key is the
content, not the path.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from variantctl.errors import TargetError

MAX_ENTRIES = 512


class StateCache:
    """Maps (content sha256, patchset fingerprint, module) to a state answer.

    This one keeps nothing (``status`` without a cache); :class:`JsonStateCache`
    persists the answers.
    """

    def get(self, key: str) -> dict[str, Any] | None:
        return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        return None


class JsonStateCache(StateCache):
    def __init__(self, path: Path):
        self.path = path
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
                self._data = loaded if isinstance(loaded, dict) else {}
            except (OSError, ValueError):
                self._data = {}
        return self._data

    def get(self, key: str) -> dict[str, Any] | None:
        value = self._load().get(key)
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            data = self._load_unlocked()
            data[key] = value
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
            data = json.dumps(self._data).encode("utf-8")
            local = LocalTarget()
            try:
                local.makedirs(str(self.path.parent))
                local.write_atomic(str(self.path), data)
            except TargetError:
                return
            self._dirty = False
