"""A JSON file under the local cache dir remembering status answers by content hash.

Keyed by ``sha256(file):patchset fingerprint:module``, so a file that has not
changed since the last ``status`` is answered without parsing it (and without
importing libcst). The cache is local even for remote hosts: the key is the
content, not the path.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from variantctl.targets.patchrun import StateCache

MAX_ENTRIES = 512


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
        """Write the cache atomically; a cache that cannot be written is simply not kept."""
        if not self._dirty or self._data is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".status-cache.")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self._data, fh)
            os.replace(tmp, self.path)
        except OSError:
            return
        self._dirty = False
