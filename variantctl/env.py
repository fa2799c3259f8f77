"""The Environment passed to every command (consoles, clock, paths).

Commands never reach for globals: tests build an Environment pointing at temp
directories and run the CLI in-process (the httpie pattern).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from variantctl.errors import VariantctlError

if TYPE_CHECKING:
    from rich.console import Console

PROJECT_ENV = "VARIANTCTL_PROJECT"
CACHE_ENV = "VARIANTCTL_CACHE"
#: extra signature directories (``os.pathsep``-separated) every diagnosing command reads
SIGNATURES_ENV = "VARIANTCTL_SIGNATURES"


def _default_cache_dir() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "variantctl"


def find_project_dir(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``patchsets/`` or ``variants/``.

    There is deliberately no fallback (there used to be one, to the checkout
    variantctl was installed from): a project is where runs are archived and
    patches recorded, so a command run outside any project must say so rather
    than archive a user's launch into the tool's own source tree. Everything
    that ships with the tool itself (the log signature catalog, ``local``) is
    package data and needs no project.
    """
    return next((c for c in (start, *start.parents) if is_project_dir(c)), None)


def is_project_dir(path: Path) -> bool:
    """Whether ``path`` looks like a variantctl project (``patchsets/`` or ``variants/``)."""
    return (path / "patchsets").is_dir() or (path / "variants").is_dir()


def _make_console(stream: object) -> Console:
    from rich.console import Console

    # Piped output (grep, less, CI logs) would be squeezed to rich's default 80
    # columns; tables and messages read better unwrapped, so use a wide page
    # unless COLUMNS says otherwise.
    isatty = getattr(stream, "isatty", None)
    width = None if (callable(isatty) and isatty()) or os.environ.get("COLUMNS") else 160
    return Console(file=stream, width=width, soft_wrap=False)  # type: ignore[arg-type]


def redraws(console: Console) -> bool:
    """Whether progress may redraw in place on ``console``: only on a real terminal.

    ``FORCE_COLOR`` (CI systems set it, so do people piping into ``less -R``) makes rich
    treat any stream as a terminal. Colour in a pipe is harmless; a spinner redrawn
    there writes every frame into the log as one endless line.
    """
    if not console.is_terminal or console.is_dumb_terminal:
        return False
    isatty = getattr(console.file, "isatty", None)
    return bool(callable(isatty) and isatty())


@dataclass
class Environment:
    """Everything a command may touch outside its arguments."""

    stdout: Console
    stderr: Console
    cwd: Path
    project_dir: Path | None
    cache_dir: Path
    clock: Callable[[], float] = time.monotonic
    now: Callable[[], datetime] = field(default=lambda: datetime.now(timezone.utc))
    debug: bool = False
    #: ``--project`` or ``VARIANTCTL_PROJECT`` when one of them named ``project_dir``
    #: (checked by :meth:`check_project`); None when it was discovered or set by a test
    project_named_by: str | None = None
    #: extra signature directories (``VARIANTCTL_SIGNATURES``), relative to ``cwd``
    signature_dirs: tuple[Path, ...] = ()

    @classmethod
    def from_process(cls, project: Path | None = None) -> Environment:
        """The environment of a real CLI invocation."""
        cwd = Path.cwd()
        return cls(
            stdout=_make_console(sys.stdout),
            stderr=_make_console(sys.stderr),
            cwd=cwd,
            project_dir=project.resolve() if project else find_project_dir(cwd),
            cache_dir=_default_cache_dir(),
            debug=bool(os.environ.get("VARIANTCTL_DEBUG")),
            signature_dirs=tuple(Path(d).expanduser() for d in
                                 os.environ.get(SIGNATURES_ENV, "").split(os.pathsep) if d),
        )

    def check_project(self) -> None:
        """Refuse a project directory named explicitly that is missing or no project.

        An explicit directory is never created or guessed at: a typo in ``--project``
        would otherwise look like an empty project (``stop`` finding nothing to stop).
        """
        if self.project_named_by is None or self.project_dir is None:
            return
        where = f"{self.project_named_by} {self.project_dir}"
        if not self.project_dir.is_dir():
            raise VariantctlError(
                f"{where}: no such directory",
                hint="name a directory holding patchsets/ or variants/",
            )
        if not is_project_dir(self.project_dir):
            raise VariantctlError(
                f"{where}: not a variantctl project (it holds neither patchsets/ nor "
                "variants/)",
                hint="create variants/ (and variants/hosts.yaml) or patchsets/ there first",
            )

    def project(self) -> Path:
        """The project directory, or a clear error when there is none."""
        if self.project_dir is None:
            raise VariantctlError(
                f"no variantctl project found at or above {self.cwd}",
                hint=f"run inside a directory holding patchsets/ or variants/, "
                f"or pass --project DIR (or set {PROJECT_ENV})",
            )
        return self.project_dir

    @property
    def patchsets_dir(self) -> Path:
        return self.project() / "patchsets"

    @property
    def variants_dir(self) -> Path:
        return self.project() / "variants"

    @property
    def runs_dir(self) -> Path:
        return self.project() / "runs"
