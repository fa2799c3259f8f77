"""``logs -f`` follows a log rotated by copytruncate (issue 19.10): the file shrinks,
following starts again at 0 and says so, and what is written after the rotation is
printed (locally and over the real OpenSSH lab)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ssh.launchkit import make_project
from tests.support.sshd import free_port

HOSTS = ["local", pytest.param("gpu1", marks=pytest.mark.ssh)]


def _wait_for(path: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 30
              ) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in path.read_text(errors="replace"):
            return
        assert proc.poll() is None, path.read_text()
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never appeared in {path}: {path.read_text()!r}")


@pytest.mark.parametrize("host", HOSTS)
def test_follow_survives_copytruncate(run_cli, tmp_path: Path, request: pytest.FixtureRequest,  # type: ignore[no-untyped-def]
                                      host: str) -> None:
    lab = request.getfixturevalue("ssh_lab") if host != "local" else None
    project = make_project(tmp_path / "proj", lab)
    res = run_cli(["launch", "fake-healthy", "--host", host, "--port", str(free_port())],
                  project=project)
    assert res.code == 0, res.output
    record = json.loads((project / f"work-{host}" / "run" / "fake-healthy.json").read_text())
    log = Path(record["log"])
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("wb") as o, err.open("wb") as e:
        follower = subprocess.Popen(
            [sys.executable, "-m", "variantctl", "--project", str(project), "logs",
             "fake-healthy", "--host", host, "-f"], stdout=o, stderr=e)
    try:
        _wait_for(out, "Uvicorn running", follower)
        # logrotate's copytruncate: copy the log away, cut it to 0; the server goes on
        shutil.copy(log, log.with_suffix(".log.1"))
        with log.open("r+b") as fh:
            fh.truncate(0)
        _wait_for(err, "was truncated (log rotation?): following it from its start",
                  follower)
        with log.open("ab") as fh:
            fh.write(b"INFO after the rotation: a new line\n")
        _wait_for(out, "INFO after the rotation: a new line", follower)
    finally:
        stop = run_cli(["stop", "fake-healthy", "--host", host, "--grace", "2"],
                       project=project)
        follower.wait(30)
    assert stop.code == 0, stop.output
    assert follower.returncode == 0, err.read_text()
