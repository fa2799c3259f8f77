"""A server record belongs to one project (issue 19.7): two projects sharing a host's
workdir share its records, but never write through another's — ``watch``, a bench's
result and a sweep's reattach/leftover stop refuse or leave alone a record another
project wrote, so nothing lands in that project's ``runs/``."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from tests.ssh.launchkit import make_project
from tests.support.sshd import free_port
from variantctl.exitcodes import ExitCode
from variantctl.hostmodel import Host
from variantctl.launch.servers import layout_for, list_records, project_id, save_record
from variantctl.runs.record import ServerRecord
from variantctl.sweeps.executor import stop_leftovers
from variantctl.targets.local import LocalTarget
from variantctl.targets.process import identify, is_alive, spawn_detached

HOSTS = ["local", pytest.param("gpu1", marks=pytest.mark.ssh)]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("host", HOSTS)
def test_watch_from_another_project_never_archives_into_the_launching_one(
        run_cli, tmp_path: Path, request: pytest.FixtureRequest, host: str) -> None:  # type: ignore[no-untyped-def]
    lab = request.getfixturevalue("ssh_lab") if host != "local" else None
    a = make_project(tmp_path / "a", lab)
    b = make_project(tmp_path / "b", lab)
    # B's hosts use A's work directories: the two projects share the hosts' records
    hosts_b = b / "variants" / "hosts.yaml"
    hosts_b.write_text(hosts_b.read_text().replace(str(b / "work-"), str(a / "work-")))
    res = run_cli(["launch", "fake-healthy", "--host", host, "--port", str(free_port()),
                   "--no-wait"], project=a)
    assert res.code == 0, res.output
    try:
        before = _files(a / "runs")
        w = run_cli(["watch", "fake-healthy", "--host", host], project=b)
        assert w.code == ExitCode.CONFLICT, w.output
        assert "launched by another project" in w.stderr and str(a / "runs") in w.stderr
        assert "Traceback" not in w.output
        assert _files(a / "runs") == before
        assert not (b / "runs").exists()
        # the launching project watches it as usual
        mine = run_cli(["watch", "fake-healthy", "--host", host], project=a)
        assert mine.code == 0 and "READY" in mine.stdout, mine.output
    finally:
        run_cli(["stop", "--all", "--host", host], project=a)


def test_a_sweep_leaves_another_projects_leftover_alone(tmp_path: Path) -> None:
    target = LocalTarget("h1")
    host = Host(name="h1", workdir=str(tmp_path / "work"))
    layout = layout_for(target, host)
    for d in (layout.logs, layout.run, layout.scripts):
        target.makedirs(d)
    script = Path(layout.scripts) / "s.sh"
    script.write_text("#!/bin/sh\nexec sleep 60\n")
    name = "cpu-eager@t-01"
    pid = spawn_detached(target, str(script), log_path=str(Path(layout.logs) / "x.log"),
                         pid_path=layout.pid_file(name))
    ident = identify(target, pid)
    save_record(target, layout, ServerRecord(
        variant=name, host="h1", pid=pid, port=1, log="", script=str(script),
        pid_file=layout.pid_file(name), started_at="", boot_id=ident.boot_id,
        proc_start=ident.start, project=project_id(tmp_path / "other" / "runs")))
    notes: list[str] = []
    try:
        left = stop_leftovers(target, host, "t", grace=1, runs_root=tmp_path / "mine" / "runs",
                              note=notes.append)
        assert left == [] and is_alive(target, pid)
        assert [r.variant for r in list_records(target, layout)] == [name]
        assert notes and "launched by another project" in notes[0]
    finally:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
