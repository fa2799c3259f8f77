"""Effects behind ``variantctl classify``: reading logs, loading a variant's expectations,
and the exit code by verdict kind."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from variantctl.env import Environment
from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.logs.expect import Mismatch
from variantctl.logs.result import Result

#: exit code per verdict kind; with several logs the most severe (first in this order) wins
KIND_EXIT = {
    "failed": ExitCode.FAILED,
    "hang": ExitCode.HANG,
    "unknown": ExitCode.UNKNOWN,
    "warning": ExitCode.OK,
    "ok": ExitCode.OK,
}
_SEVERITY = ("failed", "hang", "unknown", "warning", "ok")


def read_log(path: Path, display: str) -> str:
    """The log's text (undecodable bytes replaced); a clear error for a missing file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise VariantctlError(f"{display}: log file not found") from None
    except IsADirectoryError:
        raise VariantctlError(f"{display}: is a directory, expected a log file") from None
    except PermissionError:
        raise VariantctlError(f"{display}: permission denied") from None
    except OSError as exc:
        raise VariantctlError(f"{display}: cannot read: {exc.strerror}") from None
    return data.decode("utf-8", errors="replace")


def signature_dirs(env: Environment, given: Sequence[Path]) -> list[Path]:
    """The project's ``signatures/`` directory (when there is one) plus ``given`` ones."""
    dirs: list[Path] = []
    if env.project_dir is not None and (env.project_dir / "signatures").is_dir():
        dirs.append(env.project_dir / "signatures")
    dirs.extend(env.cwd / d for d in given)
    return dirs


def load_expectations(
    env: Environment, name: str
) -> tuple[Mapping[str, object], Mapping[str, object]]:
    """``(expect block, flags)`` of the resolved variant ``name``."""
    from variantctl.config.variants import load_catalog
    from variantctl.variants.resolve import resolve

    variant = resolve(load_catalog(env.variants_dir), name)
    return dict(variant.expect), dict(variant.args)


def exit_code(results: Sequence[tuple[str, Result, Sequence[Mismatch]]]) -> int:
    """The most severe verdict's exit code; expectation mismatches count as a failure."""
    if not results:
        return ExitCode.OK
    worst = min(results, key=lambda r: _SEVERITY.index(r[1].kind))[1].kind
    code = int(KIND_EXIT[worst])
    if code == ExitCode.OK and any(m for _, _, m in results):
        return int(ExitCode.FAILED)
    return code
