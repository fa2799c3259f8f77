"""The signature catalog: the shipped YAML plus user directories, loaded once per set.

Reading is :mod:`variantctl.config.signatures`' job (config is the only package that
reads files); this module caches the frozen :class:`~variantctl.logs.model.Catalog`
per tuple of directories, so a long-lived process (a sweep) parses it once.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from variantctl.logs.model import Catalog


def default_catalog(extra_dirs: Sequence[Path] = ()) -> Catalog:
    """The shipped catalog plus the signature files in ``extra_dirs`` (cached per tuple of
    directories). Raises ConfigError (file:line) for a broken signature file."""
    return _load(tuple(Path(d) for d in extra_dirs))


@lru_cache(maxsize=16)
def _load(dirs: tuple[Path, ...]) -> Catalog:
    from variantctl.config.signatures import load_catalog

    return load_catalog(dirs)
