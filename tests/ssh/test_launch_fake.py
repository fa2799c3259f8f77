"""launch / watch / ps / stop / logs with the FAKE GPU-era server, locally and over SSH.

The fake prints real vLLM 0.6.3-era log lines (see tests/support/fake_gpu_server.py);
verdicts come from the real streaming classifier.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.ssh.launchkit import machine_stall, make_project, mark_time, run_json
from tests.support.sshd import SshLab, free_port
from variantctl.exitcodes import ExitCode
from variantctl.runs.store import RunStore
from variantctl.targets.local import LocalTarget
from variantctl.targets.process import group_members, port_in_use

HOSTS = ["local", pytest.param("gpu1", marks=pytest.mark.ssh)]


@pytest.fixture
def stall(request: pytest.FixtureRequest) -> float:
    """The hang tests' ``--stall``, from this machine's load now (launchkit.machine_stall)."""
    lab = request.getfixturevalue("ssh_lab") if request.node.get_closest_marker("ssh") else None
    return machine_stall(lab)


@pytest.fixture
def project(tmp_path: Path, request: pytest.FixtureRequest, stall: float) -> Path:
    """gpu1/gpu2 exist only for SSH-marked tests (the unit tier starts no sshd).
    ``fake-slow-config`` computes silently for three stall times."""
    lab = request.getfixturevalue("ssh_lab") if request.node.get_closest_marker("ssh") else None
    return make_project(tmp_path / "proj", lab, busy=3 * stall)


def launch(run_cli, project: Path, variant: str, host: str, *extra: str) -> tuple[CliResult, int]:  # type: ignore[no-untyped-def]
    port = free_port()
    res = run_cli(["launch", variant, "--host", host, "--port", str(port), "--grace", "3",
                   *extra], project=project)
    return res, port


def assert_gone(data: dict, port: int) -> None:  # type: ignore[type-arg]
    local = LocalTarget()
    assert group_members(local, data["server"]["pid"]) == []
    assert not port_in_use(local, port)


@pytest.mark.parametrize("host", HOSTS)
def test_xformers_multistep_fails_fast(run_cli, project: Path, host: str) -> None:  # type: ignore[no-untyped-def]
    res, port = launch(run_cli, project, "fake-xformers-multistep", host)
    assert res.code == ExitCode.FAILED, res.output
    assert "FAILED" in res.stdout
    assert "xformers" in res.stdout.lower()
    assert "Multi-Step not supported for attention backend: xformers" in res.stdout
    # the verdict is printed first, the (slower) stop after it
    assert res.stdout.index("FAILED") < res.stdout.index("stopped the server")
    data = run_json(project, "fake-xformers-multistep")
    assert data["verdict"]["verdict"] == "failed"
    assert data["verdict"]["signature"]
    latency = data["timings"]["verdict_printed_at"] - mark_time(project, "xformers-multistep")
    assert latency <= 2.0, f"verdict {latency:.2f}s after the decisive line"
    assert data["stopped"]["ok"] is True
    assert data["host"]["name"] == host
    assert_gone(data, port)
    run_dir = Path(data["server"]["run_dir"])
    assert "Using XFormers backend." in (run_dir / "server.log").read_text()
    assert (run_dir / "launch.sh").read_text().startswith("#!/bin/sh")
    assert data["facts"]["config"]["enforce_eager"] is True
    # the record is gone: ps shows nothing
    ps = run_cli(["ps", "--host", host, "--json"], project=project)
    assert ps.code == 0 and json.loads(ps.stdout)["servers"] == []


@pytest.mark.ssh
def test_flashinfer_fails_fast_over_ssh(run_cli, project: Path) -> None:  # type: ignore[no-untyped-def]
    res, port = launch(run_cli, project, "fake-flashinfer", "gpu1", "--json")
    assert res.code == ExitCode.FAILED, res.output
    out = json.loads(res.stdout)
    assert out["verdict"] == "failed"
    assert any("NoneType" in e["text"] for e in out["evidence"])
    data = run_json(project, "fake-flashinfer")
    assert data["timings"]["verdict_printed_at"] - mark_time(project, "flashinfer") <= 2.0
    assert_gone(data, port)


@pytest.mark.parametrize("host", HOSTS)
def test_graph_capture_hang(run_cli, project: Path, host: str, stall: float) -> None:  # type: ignore[no-untyped-def]
    res, port = launch(run_cli, project, "fake-graph-hang", host, "--stall", str(stall))
    assert res.code == ExitCode.HANG, res.output
    assert "HANG" in res.stdout
    data = run_json(project, "fake-graph-hang")
    assert data["verdict"]["verdict"] == "hang"
    assert data["verdict"]["phase"]
    waited = data["timings"]["verdict_printed_at"] - mark_time(project, "graph-hang")
    assert stall <= waited <= 3 * stall  # the stall, plus polling on a loaded machine
    assert data["stopped"]["ok"]
    assert_gone(data, port)


@pytest.mark.parametrize("host", HOSTS)
def test_distributed_init_hang_is_still_a_hang(run_cli, project: Path, host: str,  # type: ignore[no-untyped-def]
                                               stall: float) -> None:
    """Workers that wait for a collective use no CPU: a hang within the stall time (issue
    20.1 keeps catching real hangs), with the GPU advice a GPU log (device_config=cuda)
    calls for."""
    res, port = launch(run_cli, project, "fake-dist-hang", host, "--stall", str(stall), "--json")
    assert res.code == ExitCode.HANG, res.output
    data = run_json(project, "fake-dist-hang")
    assert (data["verdict"]["signature"], data["verdict"]["phase"]) == (
        "engine-start-hang", "engine-config")
    assert "NCCL" in data["verdict"]["remediation"]
    waited = data["timings"]["verdict_printed_at"] - mark_time(project, "dist-hang")
    assert stall <= waited <= 3 * stall  # the stall, plus polling on a loaded machine
    assert_gone(data, port)


@pytest.mark.parametrize("host", HOSTS)
def test_a_cpu_server_hang_gets_no_gpu_advice(run_cli, project: Path, host: str,  # type: ignore[no-untyped-def]
                                              stall: float) -> None:
    """A CPU server (its engine config line says device_config=cpu) hung in engine
    configuration: still a hang, and the hint names what a CPU host has — no NCCL."""
    res, port = launch(run_cli, project, "fake-cpu-hang", host, "--stall", str(stall))
    assert res.code == ExitCode.HANG, res.output
    data = run_json(project, "fake-cpu-hang")
    verdict = data["verdict"]
    assert (verdict["signature"], verdict["phase"]) == ("engine-start-hang", "engine-config")
    assert "NCCL" not in verdict["remediation"] and "GPU" not in verdict["remediation"]
    assert "py-spy dump" in verdict["remediation"]
    assert "NCCL" not in res.stdout, res.stdout
    assert_gone(data, port)


@pytest.mark.parametrize("host", HOSTS)
def test_a_slow_silent_start_is_not_a_hang(run_cli, project: Path, host: str,  # type: ignore[no-untyped-def]
                                           stall: float) -> None:
    """The engine core computes for three stall times without a line (as a CPU server in
    engine configuration on a loaded host did for 220 s): that was a hang; its
    processes use CPU, so it is a slow start and ends ready."""
    res, _port = launch(run_cli, project, "fake-slow-config", host, "--stall", str(stall))
    assert res.code == ExitCode.OK, res.output
    assert "READY" in res.stdout
    assert "still working" in res.stderr
    data = run_json(project, "fake-slow-config")
    assert data["verdict"]["verdict"] == "ready"
    stop = run_cli(["stop", "fake-slow-config", "--host", host], project=project)
    assert stop.code == 0, stop.output


@pytest.mark.parametrize("host", HOSTS)
def test_exits_without_signature(run_cli, project: Path, host: str) -> None:  # type: ignore[no-untyped-def]
    res, _port = launch(run_cli, project, "fake-exit", host)
    assert res.code == ExitCode.FAILED, res.output
    assert "EXITED" in res.stdout and "something unexpected happened" in res.stdout
    assert run_json(project, "fake-exit")["verdict"]["verdict"] == "exited"


@pytest.mark.parametrize("host", HOSTS)
def test_healthy_then_ps_logs_stop(run_cli, project: Path, host: str) -> None:  # type: ignore[no-untyped-def]
    res, port = launch(run_cli, project, "fake-healthy", host)
    try:
        assert res.code == 0, res.output
        assert "READY" in res.stdout
        ps = run_cli(["ps", "--host", host, "--json"], project=project)
        (srv,) = json.loads(ps.stdout)["servers"]
        assert srv["variant"] == "fake-healthy" and srv["port"] == port
        assert srv["state"] == "healthy" and srv["processes"] >= 2
        table = run_cli(["ps", "--host", host], project=project)
        assert "fake-healthy" in table.stdout and "healthy" in table.stdout
        logs = run_cli(["logs", "fake-healthy", "--host", host, "-n", "1"], project=project)
        assert logs.code == 0 and "Uvicorn running on socket" in logs.stdout
        again, _ = launch(run_cli, project, "fake-healthy", host)
        assert again.code == ExitCode.FAILED
        assert "already running" in again.stderr and "--replace" in again.stderr
    finally:
        stop = run_cli(["stop", "fake-healthy", "--host", host], project=project)
    assert stop.code == 0, stop.output
    assert f"port {port} is free" in stop.stdout
    assert not port_in_use(LocalTarget(), port)
    ps = run_cli(["ps", "--host", host, "--json"], project=project)
    assert json.loads(ps.stdout)["servers"] == []
    # logs still finds the last log after the server is gone
    logs = run_cli(["logs", "fake-healthy", "--host", host], project=project)
    assert "Application startup complete." in logs.stdout
    nothing = run_cli(["stop", "fake-healthy", "--host", host], project=project)
    assert nothing.code == 0 and "not running" in nothing.stdout


@pytest.mark.parametrize("host", HOSTS)
def test_port_in_use_refuses(run_cli, project: Path, host: str) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = run_cli(["launch", "fake-healthy", "--host", host, "--port", str(port)],
                      project=project)
    assert res.code == ExitCode.FAILED
    assert f"port {port} is already in use on host {host}" in res.stderr
    assert "Traceback" not in res.output
    assert not (project / "runs").exists()


@pytest.mark.ssh
def test_no_wait_then_watch_and_stale_pid(run_cli, project: Path) -> None:  # type: ignore[no-untyped-def]
    res, port = launch(run_cli, project, "fake-healthy", "gpu1", "--no-wait")
    assert res.code == 0 and "started" in res.stdout
    w = run_cli(["watch", "fake-healthy", "--host", "gpu1"], project=project)
    assert w.code == 0 and "READY" in w.stdout, w.output
    data = run_json(project, "fake-healthy")
    assert data["verdict"]["verdict"] == "ready" and data["script"].startswith("#!/bin/sh")
    # the server dies behind our back: its record is stale
    os.killpg(data["server"]["pid"], signal.SIGKILL)
    time.sleep(0.3)
    ps = run_cli(["ps", "--host", "gpu1", "--json"], project=project)
    assert json.loads(ps.stdout)["servers"][0]["state"] == "stale"
    again = run_cli(["launch", "fake-healthy", "--host", "gpu1", "--port", str(port)],
                    project=project)
    try:
        assert again.code == 0, again.output
        assert "stale pid file" in again.stderr
    finally:
        stop = run_cli(["stop", "--all", "--host", "gpu1"], project=project)
    assert stop.code == 0 and "is free" in stop.stdout


@pytest.mark.ssh
def test_replace_stops_the_previous_server(run_cli, project: Path) -> None:  # type: ignore[no-untyped-def]
    port = free_port()
    first = run_cli(["launch", "fake-healthy", "--host", "gpu1", "--port", str(port)],
                    project=project)
    assert first.code == 0, first.output
    pid1 = run_json(project, "fake-healthy")["server"]["pid"]
    try:
        second = run_cli(["launch", "fake-healthy", "--host", "gpu1", "--port", str(port),
                          "--replace", "--grace", "3"], project=project)
        assert second.code == 0, second.output
        assert "stopping the running fake-healthy" in second.stderr
        assert group_members(LocalTarget(), pid1) == []
    finally:
        run_cli(["stop", "--all", "--host", "gpu1"], project=project)


@pytest.mark.ssh
def test_connection_dropped_mid_watch_reconnects(
    run_cli, tmp_path: Path, ssh_lab: SshLab  # type: ignore[no-untyped-def]
) -> None:
    project = make_project(tmp_path / "p2", ssh_lab, lead=4.0)
    record = project / "work-gpu1" / "run" / "fake-healthy.json"
    killed: list[int] = []

    def drop_connections_once_watching() -> None:
        deadline = time.monotonic() + 60
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # launch is now in its watch loop (the server needs 4 s more)
        killed.append(ssh_lab.servers["gpu1"].kill_sessions())

    killer = threading.Thread(target=drop_connections_once_watching, daemon=True)
    killer.start()
    port = free_port()
    try:
        res = run_cli(["launch", "fake-healthy", "--host", "gpu1", "--port", str(port),
                       "--json"], project=project)
        assert res.code == 0, res.output
        out = json.loads(res.stdout)
        assert out["verdict"] == "ready"
        assert killed and killed[0] >= 1
        assert out["reconnects"] >= 1
        assert "reconnecting" in res.stderr
    finally:
        killer.join(timeout=60)
        run_cli(["stop", "--all", "--host", "gpu1"], project=project)
    assert not port_in_use(LocalTarget(), port)


@pytest.mark.ssh
def test_unreachable_host_cli(run_cli, tmp_path: Path, ssh_lab: SshLab) -> None:  # type: ignore[no-untyped-def]
    project = make_project(tmp_path / "p3", ssh_lab)
    cfg = tmp_path / "dead_config"
    cfg.write_text(f"Host dead\n  HostName 127.0.0.1\n  Port {free_port()}\n  User root\n")
    with open(project / "variants" / "hosts.yaml", "a") as fh:
        fh.write(f"dead:\n  ssh:\n    alias: dead\n    config: {cfg}\n")
    res = run_cli(["ps", "--hosts", "gpu1,dead", "--json"], project=project)
    assert res.code == ExitCode.UNREACHABLE
    out = json.loads(res.stdout)
    assert out["errors"][0]["host"] == "dead"
    assert out["errors"][0]["error"]["kind"] == "unreachable"
    assert "connection refused" in res.stderr
    res = run_cli(["launch", "fake-healthy", "--host", "dead"], project=project)
    assert res.code == ExitCode.UNREACHABLE
    assert res.stderr.startswith("error: dead: cannot reach")
    assert "Traceback" not in res.output


@pytest.mark.parametrize("host", HOSTS)
def test_logs_follow_until_the_server_exits(run_cli, tmp_path: Path,  # type: ignore[no-untyped-def]
                                             request: pytest.FixtureRequest, host: str) -> None:
    lab = request.getfixturevalue("ssh_lab") if host != "local" else None
    project = make_project(tmp_path / "pf", lab, pace=0.2)
    res = run_cli(["launch", "fake-exit", "--host", host, "--port", str(free_port()),
                   "--no-wait"], project=project)
    assert res.code == 0, res.output
    t0 = time.monotonic()
    follow = run_cli(["logs", "fake-exit", "--host", host, "--follow"], project=project)
    assert follow.code == 0, follow.output
    lines = follow.stdout.splitlines()
    assert lines[0].endswith("vLLM API server version 0.6.3")
    assert lines[-1] == "something unexpected happened"
    assert time.monotonic() - t0 < 15
    # its "engine core" child outlived it: stop ends the rest of the group
    stop = run_cli(["stop", "fake-exit", "--host", host, "--json"], project=project)
    assert stop.code == 0, stop.output
    (done,) = json.loads(stop.stdout)["stopped"]
    assert done["processes"] == 1 and done["ok"] and done["remaining"] == []


def test_timeout_verdict_stops_the_server(run_cli, project: Path) -> None:  # type: ignore[no-untyped-def]
    res, port = launch(run_cli, project, "fake-graph-hang", "local", "--timeout", "2",
                       "--stall", "60")
    assert res.code == ExitCode.TIMEOUT, res.output
    assert "TIMEOUT fake-graph-hang on local: no verdict after 2s" in res.stdout
    data = run_json(project, "fake-graph-hang")
    assert data["verdict"]["verdict"] == "timeout" and data["stopped"]["ok"]
    assert_gone(data, port)


def test_keep_leaves_a_failed_server_running(run_cli, project: Path) -> None:  # type: ignore[no-untyped-def]
    res, _port = launch(run_cli, project, "fake-graph-hang", "local", "--stall", "1", "--keep")
    pid = run_json(project, "fake-graph-hang")["server"]["pid"]
    try:
        assert res.code == ExitCode.HANG, res.output
        assert "kept running (--keep)" in res.stdout
        assert pid in group_members(LocalTarget(), pid)
        ps = run_cli(["ps", "--json"], project=project)
        assert json.loads(ps.stdout)["servers"][0]["variant"] == "fake-graph-hang"
    finally:
        stop = run_cli(["stop", "fake-graph-hang"], project=project)
    assert stop.code == 0, stop.output
    assert group_members(LocalTarget(), pid) == []


@pytest.mark.ssh
def test_logs_follow_reconnects_after_the_connection_drops(
    run_cli, tmp_path: Path, ssh_lab: SshLab  # type: ignore[no-untyped-def]
) -> None:
    """`logs --follow` survives killed SSH sessions: it reconnects and prints every line."""
    project = make_project(tmp_path / "pr", ssh_lab, pace=0.1, lead=4.0)
    res = run_cli(["launch", "fake-exit", "--host", "gpu1", "--port", str(free_port()),
                   "--no-wait"], project=project)
    assert res.code == 0, res.output
    killed: list[int] = []

    def drop_connections() -> None:
        time.sleep(2.0)  # `logs --follow` is now polling; the server writes for 4 s more
        killed.append(ssh_lab.servers["gpu1"].kill_sessions())

    killer = threading.Thread(target=drop_connections, daemon=True)
    killer.start()
    try:
        follow = run_cli(["logs", "fake-exit", "--host", "gpu1", "--follow"], project=project)
        killer.join(timeout=30)
        assert killed and killed[0] >= 1
        assert follow.code == 0, follow.output
        assert "reconnecting" in follow.stderr
        lines = follow.stdout.splitlines()
        assert lines[0].endswith("vLLM API server version 0.6.3")
        assert lines[-1] == "something unexpected happened"
        # nothing lost or repeated across the reconnect: exactly the file's lines
        log = next((project / "work-gpu1" / "logs").glob("fake-exit-*.log"))
        assert lines == log.read_text().splitlines()
    finally:
        run_cli(["stop", "--all", "--host", "gpu1"], project=project)


@pytest.mark.ssh
def test_preflight_reads_the_models_config_on_the_host(
    run_cli, tmp_path: Path, ssh_lab: SshLab  # type: ignore[no-untyped-def]
) -> None:
    """launch reads config.json where the server would (over SFTP here) and refuses a
    tensor-parallel size that does not divide the heads, before starting anything."""
    project = make_project(tmp_path / "pm", ssh_lab)
    model = tmp_path / "model-on-host"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(
        {"num_attention_heads": 4, "max_position_embeddings": 2048}))
    (project / "variants" / "fake-tp3.yaml").write_text(
        f"extends: fake-healthy\nmodel: {model}\nargs: {{tp: 3}}\n")
    res = run_cli(["launch", "fake-tp3", "--host", "gpu1", "--port", str(free_port())],
                  project=project)
    assert res.code == ExitCode.FAILED, res.output
    assert "4 attention heads (gpu1:" in res.stderr
    assert "would fail as tp-heads-not-divisible" in res.stderr
    assert "not launching" in res.stderr
    assert not (project / "work-gpu1" / "run" / "fake-tp3.json").exists()


ACME = """\
signatures:
  - id: acme-license-expired
    title: The ACME site runtime refused to start
    kind: failed
    priority: 90
    keywords: [something unexpected happened]
    patterns: ['something unexpected happened']
    message: the ACME runtime stopped the server
    remediation: renew the ACME licence (site rule)
    examples: ['something unexpected happened']
"""


@pytest.mark.parametrize("host", HOSTS)
def test_a_project_signature_names_a_failing_launch(run_cli, project: Path, host: str) -> None:  # type: ignore[no-untyped-def]
    """The project's signatures/ is the launch's catalog too (issue 18.1): the FAKE
    server's last line matches only the project's signature, so launch (and classify of
    the archived log) name it, where the shipped catalog alone says `exited`."""
    (project / "signatures").mkdir()
    (project / "signatures" / "acme.yaml").write_text(ACME)
    res, _port = launch(run_cli, project, "fake-exit", host)
    assert res.code == ExitCode.FAILED, res.output
    assert "acme-license-expired" in res.stdout, res.output
    assert "renew the ACME licence" in res.stdout
    data = run_json(project, "fake-exit")
    assert (data["verdict"]["verdict"], data["verdict"]["signature"]) == (
        "failed", "acme-license-expired")
    (run_dir,) = [d for d in RunStore(project / "runs").dirs() if d.variant == "fake-exit"]
    same = run_cli(["classify", "--json", str(run_dir.path / "server.log")], project=project)
    assert json.loads(same.stdout)["logs"][0]["signature"] == "acme-license-expired"
