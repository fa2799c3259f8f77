"""One run of a sweep at a time: the run store's lock beside a sweep's state file.

Two ``sweep NAME`` processes writing ``runs/sweeps/NAME.json`` at once corrupt it (a
measured point ends ``error`` and later runs skip it as failed before), so the run
holds ``runs/sweeps/NAME.lock`` (the Target lock: ``flock``, which the kernel releases
when the holder dies, so a killed run never keeps it) and writes who holds it; a second
run is refused with that holder's pid and host (exit 3). The store holds it
(:meth:`RunStore.sweep_lock`): the one writer of ``runs/``.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from variantctl.errors import TargetError, VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.targets.local import LocalTarget


@contextmanager
def hold_sweep_lock(files: LocalTarget, path: Path, sweep: str, *,
                    started_at: str) -> Iterator[None]:
    """Hold sweep ``sweep``'s lock file ``path`` for the block; refuse (exit 3) while
    another holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with files.lock(str(path)):
            holder = {"pid": os.getpid(), "host": socket.gethostname(),
                      "started_at": started_at}
            # the lock holds the file open; who holds it is written through a new handle
            # (O_NOFOLLOW as the lock's own open: never through a planted link)
            fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                os.ftruncate(fd, 0)
                os.write(fd, (json.dumps(holder) + "\n").encode())
            finally:
                os.close(fd)
            yield
    except TargetError as exc:
        if exc.kind != "busy":
            raise
        raise VariantctlError(
            f"sweep {sweep} is already running ({_holder(path)}); two runs would both "
            f"write {path.with_suffix('.json')}",
            hint="wait for it to finish, or stop it (Ctrl-C, or kill that pid); "
            "then `variantctl sweep " + sweep + " --resume` continues",
            exit_code=ExitCode.CONFLICT) from None


def _holder(path: Path) -> str:
    """``pid 123 on host gpu-box, since …`` from the lock file (as well as it can be read)."""
    try:
        raw = path.read_text(encoding="utf-8", errors="replace")[:4096].strip()
    except OSError:
        return "holder unknown"
    try:
        data = json.loads(raw)
    except ValueError:
        return f"pid {raw}" if raw.isdigit() else "holder unknown"
    if not isinstance(data, dict):
        return "holder unknown"
    since = f", since {data['started_at']}" if data.get("started_at") else ""
    return f"pid {data.get('pid')} on host {data.get('host')}{since}"
