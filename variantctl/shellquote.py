"""The one place shell words are quoted (SSH command lines, launch scripts, probes).

Pure. Every word goes through :func:`shlex.quote`; only a leading ``~`` / ``~/`` of a
path is left for the shell to expand (as ``"$HOME"``), since a remote path means the
remote user's home.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence


def quote(word: str) -> str:
    """One shell word, exactly as written."""
    return shlex.quote(word)


def quote_path(path: str) -> str:
    """Shell-quote a path, keeping a leading ``~`` / ``~/`` expandable."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def build_command(
    argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None
) -> str:
    """One POSIX shell command line running ``argv`` with ``env`` in ``cwd``.

    sshd drops most variables sent over the connection (AcceptEnv), so the
    environment is set inside the command line; every value is quoted.
    """
    parts: list[str] = []
    if cwd:
        parts.append(f"cd {quote_path(cwd)} &&")
    if env:
        parts.append("env")
        parts.extend(shlex.quote(f"{k}={v}") for k, v in env.items())
    if not argv:
        raise ValueError("empty argv")
    parts.append(quote_path(argv[0]))
    parts.extend(shlex.quote(a) for a in argv[1:])
    return " ".join(parts)
