"""What the patch engine refuses on a target: links under a root, bookkeeping it cannot read.

A root is the directory the user named (or the host's Python listed); the root
itself may be reached through a link, but nothing *under* it that variantctl
writes, replaces or removes may be one: a link there would carry the write
outside the root (``<root>/vllm -> /elsewhere``, ``.variantctl -> /tmp/x``,
``.variantctl/lock -> ~/.bashrc``) or silently turn a link into a regular file.
Every path is checked component by component with ``lstat`` before it is used,
and the executors open files without following links as a second line.
"""

from __future__ import annotations

import posixpath
import re
import stat as statmod
from collections.abc import Iterable

from variantctl.errors import TargetError
from variantctl.exitcodes import ExitCode
from variantctl.targets.base import FileStat, Target

#: every temp file variantctl writes ends so (``.NAME.RANDOM.variantctl-tmp``)
TEMP_SUFFIX = ".variantctl-tmp"


class LinkRefused(TargetError):
    """A symbolic link (or a non-regular file) where variantctl would write: bad input,
    exit 2, the link named."""

    def __init__(self, path: str, *, host: str, what: str = "is a symbolic link",
                 hint: str | None = None):
        #: the refusal without the host/path prefix
        self.reason = f"{what}; variantctl never writes through links or outside the root"
        super().__init__(
            self.reason, kind="link", host=host, path=path,
            hint=hint or "patch the real file instead (name its directory with --root), "
            "or replace the link with a copy")
        self.exit_code = ExitCode.USAGE


class StateConflict(TargetError):
    """Bookkeeping (journal, ledger) that cannot be trusted: exit 3, nothing guessed.

    ``done`` holds what a recovery did repair before it stopped."""

    def __init__(self, message: str, *, host: str, path: str | None = None,
                 hint: str | None = None, done: Iterable[str] = ()):
        super().__init__(message, kind="conflict", host=host, path=path, hint=hint)
        self.exit_code = ExitCode.CONFLICT
        self.done = list(done)


def check_regular_or_absent(target: Target, path: str) -> FileStat | None:
    """``path`` is a regular file (returned) or absent (None); anything else is refused."""
    st = target.lstat(path)
    if st is None:
        return None
    if statmod.S_ISLNK(st.mode):
        raise LinkRefused(path, host=target.name)
    if not statmod.S_ISREG(st.mode):
        raise LinkRefused(path, host=target.name, what="is not a regular file")
    return st


def check_under_root(target: Target, root: str, rel: str, *, dirs_only: bool = False) -> None:
    """No component of ``root/rel`` below ``root`` is a symbolic link (missing ones are
    fine: they are created, or reported missing, later). With ``dirs_only`` the last
    component is a directory that may not exist yet."""
    parts = [p for p in rel.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise LinkRefused(posixpath.join(root, rel), host=target.name,
                          what="leaves its root (.. in the path)")
    cur = root
    for i, part in enumerate(parts):
        cur = posixpath.join(cur, part)
        st = target.lstat(cur)
        if st is None:
            return
        if statmod.S_ISLNK(st.mode):
            raise LinkRefused(cur, host=target.name)
        last = i == len(parts) - 1
        if (not last or dirs_only) and not statmod.S_ISDIR(st.mode):
            raise LinkRefused(cur, host=target.name, what="is not a directory")
        if last and not dirs_only and not statmod.S_ISREG(st.mode):
            raise LinkRefused(cur, host=target.name, what="is not a regular file")


def temp_pattern(path: str) -> re.Pattern[str]:
    """Names the executors give temp files for ``path`` (local mkstemp and SSH token)."""
    base = re.escape(posixpath.basename(path))
    return re.compile(rf"\.{base}\.[A-Za-z0-9_]+{re.escape(TEMP_SUFFIX)}")


def remove_stale_temps(target: Target, paths: Iterable[str]) -> list[str]:
    """Remove temp files an interrupted write of any of ``paths`` left beside it (the
    caller holds the root's lock, so no live variantctl is writing them). Returns the
    removed paths."""
    wanted: dict[str, list[re.Pattern[str]]] = {}
    for p in paths:
        wanted.setdefault(posixpath.dirname(p), []).append(temp_pattern(p))
    removed: list[str] = []
    for directory, patterns in sorted(wanted.items()):
        try:
            names = target.listdir(directory)
        except TargetError as exc:
            if exc.kind == "not-found":
                continue
            raise
        for name in names:
            if not any(pat.fullmatch(name) for pat in patterns):
                continue
            full = posixpath.join(directory, name)
            st = target.lstat(full)
            if st is None or not (statmod.S_ISREG(st.mode) or statmod.S_ISLNK(st.mode)):
                continue
            target.remove(full)  # unlink: a link is removed itself, never its target
            removed.append(full)
    return removed
