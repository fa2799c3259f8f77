"""What running user code (a custom transformer) needs: its errors, named and contained.

Pure helpers shared by the loader (:mod:`variantctl.config.customcode`, which reads
and imports the file) and the runner (:mod:`variantctl.patching.custom`).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from types import TracebackType


class CustomOpError(Exception):
    """A custom transformer is missing, broken or cannot do what was asked."""




def describe(exc: BaseException) -> str:
    """``ValueError: boom``; ``ValueError (no message)`` rather than an empty reason."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else f"{type(exc).__name__} (no message)"


def where(tb: TracebackType | None, file: str) -> tuple[int | None, str | None]:
    """(line, function) of the innermost traceback frame that lies in ``file``."""
    line: int | None = None
    func: str | None = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == file:  # the name the file was compiled under
            line, func = tb.tb_lineno, code.co_name
        tb = tb.tb_next
    return line, func


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """Run user code with its ``print`` output sent to stderr (stdout may carry --json)."""
    with contextlib.redirect_stdout(sys.stderr):
        yield
