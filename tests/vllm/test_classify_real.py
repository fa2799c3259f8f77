"""The classifier on logs produced right now by the real vLLM CPU server.

One module-scoped fixture starts four real servers at once (2 cores: the three
failure cases end by themselves, only the healthy start runs to /health = 200) and
kills every process group at teardown. The tests then classify the captured logs,
whole-file and streaming. The healthy start is the seed's vendor fork (a copy of vLLM
whose arg_utils.py hard-codes ``enforce_eager=True``), launched without
``--enforce-eager``: its log is a healthy start's and the hard-coded value's at once,
one start of vLLM fewer than two servers for the two cases.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.realvllm import StartBudget
from variantctl.config.catalog import default_catalog
from variantctl.logs.classify import classify_text
from variantctl.logs.expect import compare
from variantctl.logs.stream import StreamClassifier

pytestmark = pytest.mark.vllm

BASE_ARGS = ["--load-format", "dummy", "--max-model-len", "512", "--dtype", "bfloat16"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    port: int

    def text(self) -> str:
        return self.log.read_text("utf-8", errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def _start(name: str, python: Path, model: Path, workdir: Path, extra: list[str],
           *, port: int | None = None, env_extra: dict[str, str] | None = None) -> Server:
    port = port or _free_port()
    log = workdir / f"{name}.log"
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1")
    env.update(env_extra or {})
    if not env["VLLM_CPU_KVCACHE_SPACE"]:
        # an explicit KV-cache size skips the CPU build's memory-utilisation check
        del env["VLLM_CPU_KVCACHE_SPACE"]
    cmd = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
           "--host", "127.0.0.1", "--port", str(port), *BASE_ARGS, *extra]
    with log.open("wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, cwd=workdir)
    return Server(name, proc, log, port)


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def _forked_root(site: Path, dest: Path) -> Path:
    """A hard-linked copy of the vllm package whose arg_utils.py hard-codes enforce_eager=True
    (the seed's vendor fork, simulated on real code)."""
    root = dest / "forked"
    root.mkdir()
    subprocess.run(["cp", "-al", str(site / "vllm"), str(root / "vllm")], check=True)
    target = root / "vllm" / "engine" / "arg_utils.py"
    source = (site / "vllm" / "engine" / "arg_utils.py").read_text()
    assert source.count("enforce_eager=self.enforce_eager,") == 1
    target.unlink()  # break the hard link before writing
    target.write_text(source.replace("enforce_eager=self.enforce_eager,", "enforce_eager=True,"))
    return root


@pytest.fixture(scope="module")
def real_logs(vllm_python: Path, vllm_site_packages: Path, tiny_model: Path,
              tmp_path_factory: pytest.TempPathFactory, start_budget: StartBudget
              ) -> Iterator[dict[str, str]]:
    work = tmp_path_factory.mktemp("classify-real")
    busy = socket.socket()
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    busy_port = int(busy.getsockname()[1])
    forked = _forked_root(vllm_site_packages, work)
    servers: dict[str, Server] = {}
    try:
        util = ["--gpu-memory-utilization", "0.3"]
        # eager by the fork's hard-coded value, not by a flag (test_hard_coded_...)
        servers["healthy"] = _start("healthy", vllm_python, tiny_model, work, util,
                                    env_extra={"PYTHONPATH": str(forked)})
        servers["batched"] = _start("batched", vllm_python, tiny_model, work,
                                    [*util, "--max-num-batched-tokens", "64",
                                     "--no-enable-chunked-prefill"])
        servers["port"] = _start("port", vllm_python, tiny_model, work, util, port=busy_port)
        servers["memory"] = _start("memory", vllm_python, tiny_model, work,
                                   ["--gpu-memory-utilization", "0.99"],
                                   env_extra={"VLLM_CPU_KVCACHE_SPACE": ""})
        deadline = time.monotonic() + start_budget.wait
        pending = set(servers)
        while pending and time.monotonic() < deadline:
            for name in sorted(pending):
                s = servers[name]
                if s.proc.poll() is not None:
                    pending.discard(name)
                elif name == "healthy" and _healthy(s.port):
                    s.stop()
                    pending.discard(name)
            time.sleep(1.0)
        assert not pending, f"servers still starting after {start_budget.wait}s: {sorted(pending)}"
        logs = {name: s.text() for name, s in servers.items()}
        yield {**logs, "forked": logs["healthy"]}
    finally:
        for s in servers.values():
            s.stop()
        busy.close()
        shutil.rmtree(forked, ignore_errors=True)


@pytest.fixture(scope="module")
def catalog():  # type: ignore[no-untyped-def]
    return default_catalog()


def test_healthy_start_is_ok_with_facts(real_logs: dict[str, str], catalog,  # type: ignore[no-untyped-def]
                                        start_budget: StartBudget) -> None:
    r = classify_text(real_logs["healthy"], catalog)
    assert (r.kind, r.signature) == ("ok", "startup-ok"), real_logs["healthy"][-3000:]
    f = r.facts
    assert f.engine == "V1"
    assert f.vllm_version is not None and f.vllm_version.startswith("0.32")
    assert f.config["enforce_eager"] is True
    assert f.config["max_seq_len"] == 512
    assert f.config["tensor_parallel_size"] == 1
    assert f.kv_cache_tokens is not None and f.kv_cache_tokens > 0
    assert f.startup_seconds is not None and 0 < f.startup_seconds < start_budget.wait
    assert "Application startup complete" in r.evidence[0].text


def test_batched_tokens_failure(real_logs: dict[str, str], catalog) -> None:  # type: ignore[no-untyped-def]
    r = classify_text(real_logs["batched"], catalog, exited=True)
    assert (r.kind, r.signature) == ("failed", "batched-tokens-below-model-len")
    assert dict(r.captures) == {"batched": "64", "model_len": "512"}
    assert "--max-num-batched-tokens" in r.remediation and "512" in r.remediation
    line = real_logs["batched"].splitlines()[r.evidence[0].line - 1]
    assert line == r.evidence[0].text
    # it failed in SchedulerConfig, before the engine config line: the requested
    # configuration (V1's "non-default args") still gives the facts
    assert r.facts.config == {}
    assert r.facts.requested["max_num_batched_tokens"] == 64
    assert r.facts.get("max_seq_len") == 512


def test_port_in_use(real_logs: dict[str, str], catalog) -> None:  # type: ignore[no-untyped-def]
    r = classify_text(real_logs["port"], catalog, exited=True)
    assert (r.kind, r.signature) == ("failed", "port-in-use"), real_logs["port"][-3000:]
    assert "already in use" in r.evidence[0].text.lower()


def test_memory_below_utilization(real_logs: dict[str, str], catalog) -> None:  # type: ignore[no-untyped-def]
    r = classify_text(real_logs["memory"], catalog, exited=True)
    assert (r.kind, r.signature) == ("failed", "free-memory-below-utilization"), \
        real_logs["memory"][-3000:]
    assert r.captures["utilization"] == "0.99"
    assert float(r.captures["requested"]) > float(r.captures["free"])
    # the generic wrappers printed after the cause are kept, but never win
    assert all(a.generic for a in r.also)


def test_hard_coded_enforce_eager_is_flagged(real_logs: dict[str, str], catalog) -> None:  # type: ignore[no-untyped-def]
    r = classify_text(real_logs["forked"], catalog, exited=False)
    assert r.facts.config["enforce_eager"] is True
    # the variant did not ask for --enforce-eager and expects lazy graphs
    args = {"load-format": "dummy", "max-model-len": 512, "gpu-memory-utilization": 0.3}
    mismatches = compare(r.facts, {"enforce_eager": False}, args)
    assert [(m.key, m.expected, m.actual) for m in mismatches] == [
        ("enforce_eager", False, True)
    ]
    assert compare(r.facts, {}, args)[0].source == "--enforce-eager (not set)"


def test_streaming_gives_the_same_verdicts(real_logs: dict[str, str], catalog) -> None:  # type: ignore[no-untyped-def]
    for name, want in (("batched", "batched-tokens-below-model-len"), ("port", "port-in-use"),
                       ("memory", "free-memory-below-utilization"), ("healthy", "startup-ok")):
        now = [0.0]
        clf = StreamClassifier(catalog, stall_seconds=60, clock=lambda now=now: now[0])
        decided = None
        for line in real_logs[name].splitlines():
            v = clf.feed(line)
            now[0] += 0.001
            if v is not None:
                decided = v
        if decided is None:
            # a match that may continue on a wrapped next line is held for settle_seconds
            now[0] += 1.0
            decided = clf.tick()
        assert decided is not None and decided.signature == want, name
        assert clf.finish(exited=True).signature == want


def test_cli_on_a_real_log(real_logs: dict[str, str], run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "batched.log"
    log.write_text(real_logs["batched"])
    res = run_cli(["classify", str(log)])
    assert res.code == 1
    assert "batched-tokens-below-model-len" in res.stdout
    assert "--max-num-batched-tokens" in res.stdout
