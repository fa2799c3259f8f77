"""Access to the signature catalog: the shipped YAML plus user directories, loaded once.

The YAML is read by :mod:`variantctl.config.signatures` (the only place YAML is
read); this module only caches the frozen result per set of directories.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from variantctl.logs.model import Catalog, Context, Phase, Signature

__all__ = ["Catalog", "Context", "Phase", "Signature", "default_catalog"]


def default_catalog(extra_dirs: Sequence[Path] = ()) -> Catalog:
    """The shipped catalog plus the signature files in ``extra_dirs`` (cached per tuple of
    resolved directories). Raises ConfigError (file:line) for a broken signature file."""
    return _load(tuple(Path(d) for d in extra_dirs))


@lru_cache(maxsize=16)
def _load(dirs: tuple[Path, ...]) -> Catalog:
    from variantctl.config.signatures import load_catalog

    return load_catalog(dirs)
