"""The escape hatch: a libcst transformer class in a Python file next to the patchset.

The class is a ``libcst.CSTTransformer`` subclass (instantiated without
arguments) that also says what state a module is in, so status, apply and
rollback work for it like for the declarative operations::

    import libcst as cst

    class RenameFlag(cst.CSTTransformer):
        def detect(self, module: cst.Module) -> str:
            # "pristine", "applied" or "drifted" (optionally a (state, reason) tuple)
            ...

        def leave_Name(self, original, updated): ...

        # optional: a transformer class that undoes this one; without it a
        # rollback can only restore the backup (`rollback --force` refuses)
        inverse = UnrenameFlag

Loading the file runs its code, like any Python module you install. The
patchset loader imports it (:mod:`variantctl.config.customcode`), so a module
that raises anything at import, ``SystemExit`` included, or lacks the class, is
a ConfigError (exit 2) naming the file and line. Here, a ``detect``, transform
or ``inverse`` that raises, or returns something that is not a state or a
module, is a :class:`CustomCodeError` (exit 1) naming the file, the class and
the method, and the run stops before anything is written: user code can never
end variantctl silently or make a broken check look like a state. While custom
code runs, its ``print`` output goes to stderr so that ``--json`` stays valid.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import libcst as cst

from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.patching.model import Operation
from variantctl.patching.states import APPLIED, DRIFTED, PRISTINE
from variantctl.patching.userhooks import CustomOpError, describe, guarded, where

__all__ = ["CustomCodeError", "CustomOpError", "detect", "has_inverse", "load_class",
           "transform"]

T = TypeVar("T")


class CustomCodeError(VariantctlError):
    """A custom transformer's code raised, or returned nonsense, while it ran (exit 1)."""

    exit_code = ExitCode.FAILED


def load_class(op: Operation) -> type[Any]:
    """The transformer class of a custom operation, imported when its patchset was loaded
    (config/customcode.py); CustomOpError if it was not."""
    if op.custom_impl is None:
        raise CustomOpError(f"{op.custom_file}: transformer class {op.custom_class} was not "
                            "loaded with its patchset")
    cls: type[Any] = op.custom_impl
    return cls


def _loaded(op: Operation) -> type[Any]:
    try:
        return load_class(op)
    except CustomOpError as exc:  # the loader checked it; the file changed since
        raise CustomCodeError(str(exc), hint=f"operation {op.id} ({op.where})") from None


def _run(op: Operation, cls_name: str, method: str | None, display: str | None,
         fn: Callable[[], T]) -> T:
    """Call user code; anything it raises becomes a CustomCodeError naming file and method.

    ``method`` is the one variantctl called (``detect``), or None for a transform,
    where the innermost frame in the file names the visitor method that raised.
    """
    try:
        with guarded():
            return fn()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit too: user code must not end the run silently
        assert op.custom_file is not None
        line, func = where(exc.__traceback__, op.custom_file)
        at = f":{line}" if line else ""
        if method is None:
            label = f"{cls_name}.{func}" if func else f"{cls_name} (transform)"
        else:
            label = f"{cls_name}.{method}" + (f" (in {func})" if func and func != method else "")
        on = f" on {display}" if display else ""
        raise CustomCodeError(
            f"{op.custom_file}{at}: {label} raised {describe(exc)}{on}",
            hint=f"operation {op.id} ({op.where}); nothing was changed") from None


def detect(op: Operation, module: cst.Module, *, display: str | None = None) -> tuple[str, str]:
    """(state, reason) reported by the custom transformer.

    CustomCodeError if detect raises or answers something other than a state.
    """
    cls = _loaded(op)
    result = _run(op, cls.__name__, "detect", display, lambda: cls().detect(module))
    state, reason = (result if isinstance(result, tuple) and len(result) == 2
                     else (result, ""))
    if state not in (PRISTINE, APPLIED, DRIFTED) or not isinstance(reason, str):
        raise CustomCodeError(
            f"{op.custom_file}: {op.custom_class}.detect returned {result!r}; expected "
            f"'pristine', 'applied' or 'drifted' (or a (state, reason) tuple)",
            hint=f"operation {op.id} ({op.where}); nothing was changed")
    return str(state), reason


def has_inverse(op: Operation) -> bool:
    try:
        return getattr(load_class(op), "inverse", None) is not None
    except CustomOpError:
        return False


def transform(op: Operation, module: cst.Module, *, reverse: bool,
              display: str | None = None) -> cst.Module:
    """Run the transformer (or its ``inverse``) over the module.

    CustomOpError if there is no ``inverse`` to run; CustomCodeError if the
    transformer raises or does not produce a module.
    """
    cls: type[Any] | None = _loaded(op)
    if reverse:
        cls = getattr(cls, "inverse", None)
        if cls is None:
            raise CustomOpError(f"{op.custom_class} has no `inverse`; only a backup can undo it")
    assert cls is not None
    visitor: type[Any] = cls
    out = _run(op, visitor.__name__, None, display, lambda: module.visit(visitor()))
    if not isinstance(out, cst.Module):
        raise CustomCodeError(f"{op.custom_file}: {visitor.__name__} produced "
                              f"{type(out).__name__}, not a module",
                              hint=f"operation {op.id} ({op.where})")
    return out
