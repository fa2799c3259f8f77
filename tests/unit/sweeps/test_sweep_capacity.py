"""``rank: capacity`` (issue 22.4): a sweep whose ``bench:`` searches for capacity stores
each point's capacity and lists the points by it. Real launches of the labelled FAKE
OpenAI server (tests/support/fake_openai_server.py: not vLLM) whose TPOT grows with the
requests in flight beyond the streams it serves at full speed (3 or 5: the grid), so each
point's capacity is known."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.support.bench_project import make_bench_project, write_fake_variant
from tests.support.sshd import free_port

Run = Callable[..., CliResult]


def test_a_sweep_ranks_its_points_by_capacity(run_cli: Run, tmp_path: Path) -> None:
    project = make_bench_project(tmp_path / "proj", gpu_monitor=False)
    write_fake_variant(project, "fake-load",
                       {"ttft-ms": 20, "itl-ms": 10, "itl-per-inflight-ms": 60},
                       python=sys.executable,
                       description="FAKE OpenAI-compatible server, TPOT grows with load; not "
                                   "vLLM")
    (project / "sweeps").mkdir()
    # TPOT(c) = 10 ms up to the streams served at full speed, then 10 + 60 (c − full) ms,
    # under an SLO of 40 ms: full 3 → c 3 (10; c 4: 70), full 5 → c 5 (10; c 6: 70) — 30 ms
    # from the SLO on either side, more than a loaded machine adds
    (project / "sweeps" / "cap.yaml").write_text(
        f"base: fake-load\nhosts: [local]\nport: {free_port()}\nrank: capacity\n"
        "grid:\n  args:\n    full-speed-streams: [3, 5]\n"
        "bench:\n  search: concurrency\n  slo: 'ttft:3000,tpot:40'\n  max_level: 8\n"
        "  requests: 10\n  output_len: 5\n  ignore_eos: true\n  warmup: 'off'\n")
    res = run_cli(["sweep", "cap", "--json"], project=project)
    assert res.code == 0, res.output
    points = json.loads(res.stdout)["points"]
    caps = {p["values"]["args.full-speed-streams"]: p["capacity"] for p in points}
    assert caps[3]["best_level"] == 3 and caps[5]["best_level"] == 5
    assert caps[3]["limiting"] == "tpot" and caps[3]["mode"] == "concurrency"
    table = run_cli(["sweep", "cap", "--resume"], project=project)
    assert table.code == 0, table.output
    rows = [ln for ln in table.stdout.splitlines() if "fake-load" in ln and "concurrency " in ln]
    # the most capacity first, whatever order the grid ran them in
    assert "concurrency 5" in rows[0] and "concurrency 3" in rows[1], table.stdout


def test_rank_capacity_needs_a_search(tmp_path: Path) -> None:
    from variantctl.config.sweeps import parse_sweep
    from variantctl.config.yamlload import load_yaml_text
    from variantctl.errors import ConfigError

    with pytest.raises(ConfigError, match=r"t.yaml:2:.*rank: capacity needs a capacity "):
        parse_sweep(load_yaml_text("base: a\nrank: capacity\n", "sweeps/t.yaml"), "t")
    with pytest.raises(ConfigError, match=r"slo: --slo 'tpot' .* is not KEY:MS|slo 'tpot'"):
        parse_sweep(load_yaml_text("base: a\nbench:\n  search: rate\n  slo: tpot\n",
                                   "sweeps/t.yaml"), "t")
