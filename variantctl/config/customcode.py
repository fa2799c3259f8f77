"""Import the Python file of a ``custom`` patch operation, so a broken one is bad input.

The patchset loader calls :func:`load_class` for every custom operation: the
file is compiled from the bytes read here (the same bytes the patchset's
fingerprint covers; no ``__pycache__`` is written next to the patchset, and no
stale bytecode can run) and executed once per file version. Anything raised
while importing, ``SystemExit`` included, becomes a :class:`CustomOpError`
naming the file and line; only ``KeyboardInterrupt`` passes through (the user
pressed Ctrl-C). ``print`` output of the module goes to stderr so that a
``--json`` result on stdout stays valid. Running the transformer is
:mod:`variantctl.patching.custom`.
"""

from __future__ import annotations

import hashlib
import sys
import types
from pathlib import Path
from typing import Any

from variantctl.patching.userhooks import CustomOpError, describe, guarded, where

#: (file, class, sha256 of the file) -> class; a changed file is imported afresh
_LOADED: dict[tuple[str, str, str], type[Any]] = {}


def load_class(file: str, class_name: str) -> type[Any]:
    """The transformer class ``class_name`` of ``file``; CustomOpError naming what is wrong."""
    import libcst as cst  # only patchsets with custom operations pay for it here

    try:
        source = Path(file).read_bytes()
    except OSError as exc:
        raise CustomOpError(f"{file}: cannot read: {exc.strerror}") from None
    digest = hashlib.sha256(source).hexdigest()
    key = (file, class_name, digest)
    if key in _LOADED:
        return _LOADED[key]
    name = "variantctl_custom_" + hashlib.sha256(f"{file}\0{digest}".encode()).hexdigest()[:16]
    mod = types.ModuleType(name)
    mod.__file__ = file
    sys.modules[name] = mod  # dataclasses and pickling look their module up here
    try:
        with guarded():
            code = compile(source, file, "exec", dont_inherit=True)
            exec(code, mod.__dict__)
    except KeyboardInterrupt:
        sys.modules.pop(name, None)
        raise
    except BaseException as exc:  # SystemExit too: importing must never end variantctl
        sys.modules.pop(name, None)
        line, _ = where(exc.__traceback__, file)
        if isinstance(exc, SyntaxError) and exc.lineno is not None:
            line = exc.lineno
        at = f" (line {line})" if line else ""
        raise CustomOpError(f"{file} failed to import{at}: {describe(exc)}") from None
    cls = getattr(mod, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, cst.CSTTransformer)):
        raise CustomOpError(f"{file} has no libcst.CSTTransformer subclass {class_name!r}")
    if not callable(getattr(cls, "detect", None)):
        raise CustomOpError(f"{class_name} must define detect(self, module) -> state")
    inverse = getattr(cls, "inverse", None)
    if inverse is not None and not (isinstance(inverse, type)
                                    and issubclass(inverse, cst.CSTTransformer)):
        raise CustomOpError(f"{class_name}.inverse must be a libcst.CSTTransformer "
                            f"subclass, got {inverse!r}")
    _LOADED[key] = cls
    return cls
