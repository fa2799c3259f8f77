"""``bench`` and ``sweep`` agree on a SIGINT inherited as ignored (issue 32): it stays
ignored (the POSIX convention for a background job of a shell without job control), where
``bench`` used to install its Ctrl-C handler over it and, on its way out, leave Python's
KeyboardInterrupt handler behind."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator

import pytest

from variantctl.bench.session import _install_sigint, _restore_sigint


@pytest.fixture
def ignored() -> Iterator[None]:
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def test_an_inherited_ignored_sigint_stays_ignored(ignored: None) -> None:
    loop = asyncio.new_event_loop()
    try:
        _install_sigint(loop, asyncio.Event())
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        _restore_sigint(loop)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        loop.close()


def test_a_default_sigint_gets_the_ctrl_c_handler() -> None:
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    loop = asyncio.new_event_loop()
    try:
        _install_sigint(loop, asyncio.Event())
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        _restore_sigint(loop)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        loop.close()
        signal.signal(signal.SIGINT, old)
