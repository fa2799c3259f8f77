"""Open the executor for a host: LocalTarget for hosts without ssh, SshTarget otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from variantctl.config.hosts import Host
from variantctl.errors import TargetError
from variantctl.targets.base import Target
from variantctl.targets.local import LocalTarget


@contextmanager
def open_target(host: Host) -> Iterator[Target]:
    """One connection per host per command; closed when the context ends."""
    if host.ssh is None:
        yield LocalTarget(host.name)
        return
    raise TargetError("SSH hosts are not supported yet", kind="unreachable", host=host.name)
