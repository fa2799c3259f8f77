"""One writer at a time in the shared download cache (``$VARIANTCTL_CACHE/wheels``).

pytest-xdist runs modules in parallel workers, and several modules fetch the same
released wheel (``pip download``), extract a file and delete the wheel: without a lock
one worker could read a wheel another is still writing, or find it already deleted.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def wheel_cache_lock(wheels_dir: Path) -> Iterator[None]:
    """Hold the cache's lock (a flock, released by the kernel if the holder dies)."""
    wheels_dir.mkdir(parents=True, exist_ok=True)
    with open(wheels_dir / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
