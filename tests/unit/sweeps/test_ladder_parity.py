"""``bench`` and a sweep run one ladder (issue 18.4): the same ladder measured both ways
sends the server the same requests in the same order — one model probe and one prompt
preparation per ladder, the prefix cache reset before every level but the first, the
warm-ups and levels in ``bench``'s order (repeats × levels). Real launches of the
labelled FAKE OpenAI server (tests/support/fake_openai_server.py: not vLLM), which logs
every request it gets (``--request-log``)."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult
from tests.support.bench_project import FAKE_OPENAI, make_bench_project
from tests.support.sshd import free_port

Run = Callable[..., CliResult]

#: what the client sends whatever the ladder: the readiness polls and the /metrics
#: scrapes (one a second) depend on timing, not on the ladder
TIMED = ("GET /health", "GET /metrics")


def _kind(line: str) -> str:
    return line.split(" max_tokens")[0]


def _group(line: str) -> str:
    """Requests a client sends several at once share a group (the prompt preparation's
    tokenizer calls, a level's completions): their arrival order is the server's."""
    return "tokenizer" if "tokenize" in line else _kind(line)


def _requests(log: Path) -> list[str]:
    """The logged requests without the timed ones, each run of one group sorted."""
    lines = [ln for ln in log.read_text().splitlines() if not ln.startswith(TIMED)]
    return [ln for _, run in itertools.groupby(lines, _group) for ln in sorted(run)]


def test_bench_and_a_sweep_send_the_same_requests_in_the_same_order(
        run_cli: Run, tmp_path: Path) -> None:
    project = make_bench_project(tmp_path / "proj", gpu_monitor=False)
    bench_log, sweep_log = tmp_path / "bench.log", tmp_path / "sweep.log"
    (project / "variants" / "fake-log.yaml").write_text(
        "description: FAKE OpenAI-compatible server logging its requests; not vLLM\n"
        f"command: {json.dumps([sys.executable, str(FAKE_OPENAI)])}\n"
        f"port: {free_port()}\n"
        f"args:\n  ttft-ms: 2\n  itl-ms: 1\n  request-log: {bench_log}\n"
        "startup:\n  ready_timeout: 30\n  stall: 30\n")
    (project / "sweeps").mkdir()
    (project / "sweeps" / "p.yaml").write_text(
        f"base: fake-log\nhosts: [local]\nport: {free_port()}\n"
        f"grid:\n  args:\n    request-log: [{sweep_log}]\n"
        "bench:\n  prompts: [random]\n  input_len: 8\n  output_len: 4\n  ignore_eos: true\n"
        "  concurrency: [1, 2]\n  requests: 3\n  warmup: '2'\n  repeat: 2\n")

    res = run_cli(["sweep", "p", "--json"], project=project)
    assert res.code == 0, res.output
    (point,) = json.loads(res.stdout)["points"]
    assert point["status"] == "measured", point
    try:
        res = run_cli(["launch", "fake-log", "--grace", "2"], project=project)
        assert res.code == 0, res.output
        res = run_cli(["bench", "fake-log", "--prompt", "random", "--input-len", "8",
                       "--output-len", "4", "--ignore-eos", "--concurrency", "1,2",
                       "--requests", "3", "--warmup", "2", "--repeat", "2", "--json"],
                      project=project)
        assert res.code == 0, res.output
    finally:
        run_cli(["stop", "--all", "--grace", "2"], project=project)
    bench, sweep = _requests(bench_log), _requests(sweep_log)
    assert bench == sweep
    # and that is the ladder as documented: one probe, one preparation, then per level
    # (repeats × levels) a prefix-cache reset but before the first, the warm-up, the
    # level's connections opened (one per concurrent request), the level
    kinds = [_kind(line) for line in sweep]
    completion = kinds.index("POST /v1/chat/completions")
    assert kinds[0] == "GET /v1/models" and "POST /tokenize" in kinds[:completion]
    chat = "POST /v1/chat/completions"

    def level(c: int) -> list[str]:
        return [chat] * 2 + ["GET /v1/models"] * c + [chat] * 3

    reset = ["POST /reset_prefix_cache"]
    assert kinds[completion:] == level(1) + reset + level(2) + reset + level(1) + reset + level(2)
