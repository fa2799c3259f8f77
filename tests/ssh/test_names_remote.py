"""Names are identities on a host too (issue 8, family 5): derived file names are
matched exactly, locally and over the real sshd (SFTP listdir on the host)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.ssh.launchkit import make_project

HOSTS = ["local", pytest.param("gpu1", marks=pytest.mark.ssh)]


@pytest.fixture
def project(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    lab = request.getfixturevalue("ssh_lab") if request.node.get_closest_marker("ssh") else None
    return make_project(tmp_path / "proj", lab)


@pytest.mark.parametrize("host", HOSTS)
def test_logs_shows_the_variants_own_log_not_a_longer_namesakes(
        run_cli: Any, project: Path, host: str) -> None:
    # before: a prefix match (`fake-healthy-*.log`) also took `fake-healthy-b`'s logs,
    # and `b` sorts after any timestamp, so the other variant's log was shown
    logs = project / f"work-{host}" / "logs"
    logs.mkdir(parents=True)
    (logs / "fake-healthy-20260101T000000Z.log").write_text("mine, older\n")
    (logs / "fake-healthy-20260102T000000Z.log").write_text("mine, newest\n")
    (logs / "fake-healthy-b-20260714T101500Z.log").write_text("another variant\n")
    res = run_cli(["logs", "fake-healthy", "--host", host], project=project)
    assert res.code == 0, res.output
    assert res.stdout == "mine, newest\n"
    (logs / "fake-healthy-20260101T000000Z.log").unlink()
    (logs / "fake-healthy-20260102T000000Z.log").unlink()
    res = run_cli(["logs", "fake-healthy", "--host", host], project=project)
    assert res.code == 2 and "no log of variant 'fake-healthy'" in res.output
