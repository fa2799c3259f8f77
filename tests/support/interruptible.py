"""A ``variantctl`` child process that Ctrl-C reaches, whatever ran the tests.

POSIX has a non-interactive shell start a background job (``sh -c 'make test &'``,
a job ``xargs -P`` runs) with SIGINT and SIGQUIT ignored, children inherit that, and Python
installs its KeyboardInterrupt handler only where SIGINT is not ignored. A test that
interrupts a ``python -m variantctl`` it spawned then saw the sweep run to its end
(exit 0 where 130 was meant): the test's environment, not variantctl. The child
restores the default before it runs the CLI, as a terminal's foreground job has it.
"""

from __future__ import annotations

import sys

_MAIN = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
         "runpy.run_module('variantctl', run_name='__main__', alter_sys=True)")


def variantctl_argv(*args: str) -> list[str]:
    """``python -m variantctl ARGS`` with SIGINT raising KeyboardInterrupt."""
    return [sys.executable, "-c", _MAIN, *args]
