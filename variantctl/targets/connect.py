"""Open the executor for a host: LocalTarget for hosts without ssh, SshTarget otherwise."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

from variantctl.errors import TargetError, VariantctlError
from variantctl.hostmodel import Host
from variantctl.targets.base import Target
from variantctl.targets.local import LocalTarget

T = TypeVar("T")


@contextmanager
def open_target(host: Host, *, connect_timeout: float | None = None) -> Iterator[Target]:
    """One connection per host per command; closed when the context ends.

    SSH failures raise :class:`TargetError` with kind ``unreachable``, ``auth`` or
    ``host-key`` naming the host.
    """
    if host.ssh is None:
        yield LocalTarget(host.name)
        return
    from variantctl.targets.ssh import DEFAULT_CONNECT_TIMEOUT, SshTarget

    target = SshTarget(host, connect_timeout=connect_timeout or DEFAULT_CONNECT_TIMEOUT)
    target.connect()
    try:
        yield target
    finally:
        target.close()


@dataclass(frozen=True)
class HostOutcome(Generic[T]):
    """What one host produced: a value, or the error that stopped it."""

    host: Host
    value: T | None = None
    error: VariantctlError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def on_hosts(
    hosts: Sequence[Host],
    work: Callable[[Host, Target], T],
    *,
    connect_timeout: float | None = None,
) -> list[HostOutcome[T]]:
    """Run ``work(host, target)`` on several hosts in parallel, one connection each.

    A host that fails (unreachable, auth, any VariantctlError) becomes an outcome
    with ``error``; the others carry on. Results keep the order of ``hosts``.
    """

    def one(host: Host) -> HostOutcome[T]:
        try:
            with open_target(host, connect_timeout=connect_timeout) as target:
                return HostOutcome(host, value=work(host, target))
        except VariantctlError as exc:
            return HostOutcome(host, error=exc)

    if len(hosts) <= 1:
        return [one(h) for h in hosts]
    with ThreadPoolExecutor(max_workers=min(8, len(hosts))) as pool:
        return list(pool.map(one, hosts))


__all__ = ["HostOutcome", "TargetError", "on_hosts", "open_target"]
