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

Loading the file runs its code, like any Python module you install.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import libcst as cst

from variantctl.config.patchsets import Operation
from variantctl.patching.states import APPLIED, DRIFTED, ERROR, PRISTINE


class CustomOpError(Exception):
    """A custom transformer is missing, broken or cannot do what was asked."""


_LOADED: dict[tuple[str, str], type[Any]] = {}


def load_class(op: Operation) -> type[Any]:
    """The transformer class of a custom operation (each file is imported once)."""
    assert op.custom_file is not None and op.custom_class is not None
    key = (op.custom_file, op.custom_class)
    if key in _LOADED:
        return _LOADED[key]
    name = f"variantctl_custom_{abs(hash(op.custom_file))}"
    spec = importlib.util.spec_from_file_location(name, op.custom_file)
    if spec is None or spec.loader is None:
        raise CustomOpError(f"cannot load {op.custom_file}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as exc:
        raise CustomOpError(f"{op.custom_file} failed to import: {type(exc).__name__}: {exc}"
                            ) from None
    cls = getattr(mod, op.custom_class, None)
    if not (isinstance(cls, type) and issubclass(cls, cst.CSTTransformer)):
        raise CustomOpError(f"{op.custom_file} has no libcst.CSTTransformer subclass "
                            f"{op.custom_class!r}")
    if not callable(getattr(cls, "detect", None)):
        raise CustomOpError(f"{op.custom_class} must define detect(self, module) -> state")
    _LOADED[key] = cls
    return cls


def detect(op: Operation, module: cst.Module) -> tuple[str, str]:
    """(state, reason) reported by the custom transformer."""
    try:
        cls = load_class(op)
        result = cls().detect(module)
    except CustomOpError as exc:
        return ERROR, str(exc)
    except Exception as exc:
        return ERROR, f"{op.custom_class}.detect failed: {type(exc).__name__}: {exc}"
    state, reason = (result if isinstance(result, tuple) else (result, ""))
    if state not in (PRISTINE, APPLIED, DRIFTED):
        return ERROR, f"{op.custom_class}.detect returned {state!r}"
    return str(state), str(reason)


def has_inverse(op: Operation) -> bool:
    try:
        return getattr(load_class(op), "inverse", None) is not None
    except CustomOpError:
        return False


def transform(op: Operation, module: cst.Module, *, reverse: bool) -> cst.Module:
    """Run the transformer (or its ``inverse``) over the module."""
    cls: type[Any] | None = load_class(op)
    if reverse:
        cls = getattr(cls, "inverse", None)
        if cls is None:
            raise CustomOpError(f"{op.custom_class} has no `inverse`; only a backup can undo it")
    assert cls is not None
    try:
        out = module.visit(cls())
    except Exception as exc:
        raise CustomOpError(f"{op.custom_class} failed: {type(exc).__name__}: {exc}") from None
    assert isinstance(out, cst.Module)
    return out
