"""What one look at a started server tells (``Launcher.probe``): its own module, so the
launchers (``launcher.py``, ``slurm.py``) share it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Probe:
    """One look at a started server (one round trip where the launcher can)."""

    #: it still runs or waits to run (False: it ended, the record is stale)
    alive: bool
    #: HTTP status of /health where it runs (None: nothing answered or not asked)
    health: int | None = None
    #: why it has not started running yet (a SLURM PENDING reason), None once it runs
    waiting: str | None = None
    #: when /health answered 200 but the socket listening on the port is another
    #: process's (the server has not bound it, or failed to): who listens there. None
    #: when the server's own process listens, or the launcher cannot tell (a SLURM node)
    foreign_listener: str | None = None
