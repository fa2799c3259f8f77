"""``watch`` never hides a broken catalog behind default timeouts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult


def test_watch_reports_a_broken_variant_file(
    run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / "variants").mkdir(parents=True)
    (project / "variants" / "v.yaml").write_text("startup:\n  ready_timeout: soon\n")
    res = run_cli(["watch", "v"], project=project)
    assert res.code == 2, res.output
    assert "v.yaml:2" in res.stderr
    assert res.stderr.startswith("error:")


def test_watch_of_a_variant_that_is_not_running(
    run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / "variants").mkdir(parents=True)
    (project / "variants" / "v.yaml").write_text("port: 18123\n")
    (project / "variants" / "hosts.yaml").write_text(
        f"local:\n  workdir: {tmp_path / 'work'}\n")
    res = run_cli(["watch", "v"], project=project)
    assert res.code == 2, res.output
    assert "v is not running on host local" in res.stderr
