"""The CLI group: fast start-up, error mapping, no tracebacks."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import CliResult


def test_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys\n"
        "from variantctl.cli import run\n"
        "try:\n    run(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('libcst', 'fabric', 'deepdiff', 'rich', 'paramiko', 'yaml')"
        " if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "HEAVY="


def test_unknown_command_is_usage_error(run_cli) -> None:  # type: ignore[no-untyped-def]
    r: CliResult = run_cli(["frobnicate"])
    assert r.code == 2
    assert "No such command 'frobnicate'" in r.stderr
    assert "Traceback" not in r.output


def test_version(run_cli, capsys) -> None:  # type: ignore[no-untyped-def]
    from variantctl import __version__

    r: CliResult = run_cli(["--version"], project=None)
    # click prints --version itself, straight to the process stdout
    assert (r.code, capsys.readouterr().out.strip()) == (0, f"variantctl, version {__version__}")


def test_missing_project_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from tests.conftest import make_env
    from variantctl.errors import VariantctlError

    env = make_env(None, tmp_path)
    with pytest.raises(VariantctlError, match="no variantctl project found") as exc:
        env.project()
    assert exc.value.hint is not None and "--project" in exc.value.hint


def test_every_registered_command_imports_and_has_help(run_cli, capsys) -> None:  # type: ignore[no-untyped-def]
    """The lazy registry names real modules: a typo there would only show when invoked."""
    from variantctl.cli import COMMANDS

    for name in COMMANDS:
        r: CliResult = run_cli([name, "--help"])
        assert r.code == 0, (name, r.output)
        # click prints help itself, straight to the process stdout
        assert f"Usage: variantctl {name}" in capsys.readouterr().out, name
