"""A server whose port another process took is not ready (stop 24's leftover: the
launch checked the port, then another process bound it before the server did, and
that process's /health 200 made the launch "ready" — a benchmark then measured the
other server until the launched one was found dead).

The launched server is the FAKE OpenAI server with a slow load (``--bind-after``: it
binds only once a file exists); while it loads, a second fake server takes its port.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.support import fake_openai_server
from tests.support.bench_project import make_bench_project, write_fake_variant
from variantctl.exitcodes import ExitCode
from variantctl.targets.local import LocalTarget
from variantctl.targets.process import foreign_listener, is_alive, listener_pids

Run = Callable[..., CliResult]


@pytest.fixture
def project(tmp_path: Path, run_cli: Run) -> Iterator[Path]:
    root = make_bench_project(tmp_path / "proj", gpu_monitor=False)
    yield root
    run_cli(["stop", "--all", "--grace", "2"], project=root)


def test_a_server_whose_port_another_process_took_is_not_ready(
        run_cli: Run, project: Path, tmp_path: Path) -> None:
    gate = tmp_path / "bind-now"
    write_fake_variant(project, "late", {"ttft-ms": 10, "itl-ms": 5, "bind-after": gate})
    launched = run_cli(["launch", "late", "--no-wait", "--json"], project=project)
    assert launched.code == 0, launched.output
    port = json.loads(launched.stdout)["port"]
    asked = tmp_path / "other-requests.log"

    def bind_once_the_other_answered() -> None:
        # the watch has asked /health of the port and the other process answered 200:
        # only then may the launched server try to bind (and fail)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if asked.is_file() and "GET /health" in asked.read_text():
                break
            time.sleep(0.02)
        gate.touch()

    with fake_openai_server.spawn("--port", str(port), "--request-log", str(asked)):
        helper = threading.Thread(target=bind_once_the_other_answered, daemon=True)
        helper.start()
        res = run_cli(["watch", "late", "--json"], project=project)
        helper.join(timeout=60)
    assert "GET /health" in asked.read_text()  # the other process did answer
    assert res.code == ExitCode.FAILED, res.output
    out = json.loads(res.stdout)
    assert out["verdict"] != "ready", out
    # it failed to bind, and says so: the log's errno 98
    assert out["signature"] == "port-in-use", out


def test_the_listener_is_told_from_the_process_tables(tmp_path: Path) -> None:
    target = LocalTarget()
    with fake_openai_server.spawn() as url:
        port = int(url.rsplit(":", 1)[1])
        (pid,) = listener_pids(target, port)
        assert is_alive(target, pid)
        # the fake server is not in pid 1's process group: another process's port
        other = foreign_listener(target, 1, port)
        assert other is not None and other.pid == pid
        assert "fake_openai_server" in other.describe_listener()
    assert listener_pids(target, port) == set()  # nothing listens any more


def test_ps_and_bench_never_take_another_server_for_the_variants(
        run_cli: Run, project: Path, tmp_path: Path) -> None:
    # the launched server never binds (its gate never opens) while another serves its port
    write_fake_variant(project, "late", {"ttft-ms": 10, "itl-ms": 5,
                                         "bind-after": tmp_path / "never"})
    launched = run_cli(["launch", "late", "--no-wait", "--json"], project=project)
    assert launched.code == 0, launched.output
    port = json.loads(launched.stdout)["port"]
    asked = tmp_path / "other-requests.log"
    with fake_openai_server.spawn("--port", str(port), "--request-log", str(asked)):
        ps = run_cli(["ps", "--json"], project=project)
        assert ps.code == 0, ps.output
        (row,) = [r for r in json.loads(ps.stdout)["servers"] if r["variant"] == "late"]
        assert row["state"] == "port-taken" and "fake_openai_server" in row["foreign_listener"]
        text = run_cli(["ps"], project=project)
        assert "healthy" not in text.stdout and "port-taken (served by pid" in text.stdout
        bench = run_cli(["bench", "late", "--requests", "2", "--warmup", "off"],
                        project=project)
        assert bench.code == ExitCode.CONFLICT, bench.output
        assert f"port {port} is served by pid" in bench.stderr
        assert "refusing to measure another server" in bench.stderr
        profile = run_cli(["bench", "late", "--profile", "--requests", "2", "--warmup", "off"],
                          project=project)
        assert profile.code == ExitCode.CONFLICT, profile.output
    # nothing was measured: the other server got no completion request
    assert "POST" not in asked.read_text()
