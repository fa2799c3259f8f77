"""Tuning specs (``tunes/NAME.yaml``): a full file is modelled; every bad input is one
error naming file:line (exit 2 from the CLI), and ``tune --dry-run`` shows the space, what
the pre-flight rules prune and the budget without launching anything."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from variantctl.config.tunes import parse_tune
from variantctl.config.yamlload import load_yaml_text
from variantctl.errors import ConfigError
from variantctl.tune.model import Choices, Range, TuneSpec

HEAD = "variant: base\n"
SPACE = "space:\n  args.max-num-seqs: [8, 16]\n"
OBJ = "objective: {maximize: output_throughput}\n"
BUDGET = "budget: {launches: 10}\n"


def parse(text: str) -> TuneSpec:
    return parse_tune(load_yaml_text(text, "tunes/t.yaml"), "t")


def test_a_full_spec_is_modelled() -> None:
    spec = parse(
        "variant: qwen7b\nhosts: [gpu1, gpu2]\n"
        "space:\n"
        "  args.max-num-seqs: {range: [8, 512], log: true, int: true}\n"
        "  args.max_num_batched_tokens: [2048, 4096, 8192]\n"
        "  env.VLLM_ATTENTION_BACKEND: [FLASH_ATTN, FLASHINFER]\n"
        "  patchsets: [[], [eager-allreduce]]\n"
        "bench: {prompts: [random], input_len: 1024, output_len: 128, concurrency: [16],"
        " requests: 200}\n"
        "objective: {maximize: output_throughput}\n"
        "budget: {launches: 20, minutes: 120}\nseed: 1\n")
    seqs, tokens, backend, patches = spec.space
    assert isinstance(seqs, Range) and (seqs.lo, seqs.hi, seqs.log, seqs.integer) == (
        8, 512, True, True)
    assert isinstance(tokens, Choices) and tokens.key == "args.max-num-batched-tokens"
    assert tokens.origin == "tunes/t.yaml:5"
    assert isinstance(backend, Choices) and backend.values == ("FLASH_ATTN", "FLASHINFER")
    assert isinstance(patches, Choices) and patches.values == ((), ("eager-allreduce",))
    assert spec.hosts == ("gpu1", "gpu2") and spec.seed == 1
    assert (spec.budget.launches, spec.budget.minutes) == (20, 120.0)
    assert spec.bench[0].concurrency == (16,) and spec.bench[0].requests == 200
    assert spec.grid_size == 505 * 3 * 2 * 2
    assert spec.objective.maximize and spec.objective.metric == "output_throughput"


def test_a_search_objective_becomes_the_benchs_capacity_search() -> None:
    spec = parse(HEAD + SPACE + BUDGET
                 + "objective: {search: concurrency, slo: {ttft: 500, tpot: 50}}\n")
    assert spec.objective.kind == "search"
    (bench,) = spec.bench
    assert bench.search == "concurrency"
    assert bench.slo is not None


@pytest.mark.parametrize(("text", "line", "expected"), [
    (HEAD + "space: {}\n" + OBJ + BUDGET, 2, "the space is empty"),
    (HEAD + "space:\n  args.max-num-seqs: []\n" + OBJ + BUDGET, 3, "has no values"),
    (HEAD + "space:\n  args.max-num-seqs: {range: [8]}\n" + OBJ + BUDGET, 3, "unbounded"),
    (HEAD + "space:\n  args.max-num-seqs: {range: [8, .inf]}\n" + OBJ + BUDGET, 3,
     "finite"),
    (HEAD + "space:\n  args.max-num-seqs: {range: [64, 8]}\n" + OBJ + BUDGET, 3,
     "is empty"),
    (HEAD + "space:\n  args.max-num-seqs: {rnage: [8, 64]}\n" + OBJ + BUDGET, 3,
     "did you mean 'range'"),
    (HEAD + "space:\n  args.max-num-seqs: [8, 8]\n" + OBJ + BUDGET, 3, "given twice"),
    (HEAD + "space:\n  max-num-seqs: [8]\n" + OBJ + BUDGET, 3, "not a grid key"),
    (HEAD + SPACE + "objective: {search: concurrency}\n" + BUDGET, 4, "needs an SLO"),
    (HEAD + SPACE + "objective: {maximize: output_troughput}\n" + BUDGET, 4,
     "did you mean 'output_throughput'"),
    (HEAD + SPACE + "objective: {maximize: ttft_p90}\n" + BUDGET, 4, "lower is better"),
    (HEAD + SPACE + OBJ + "budget: {launches: 0}\n", 5, "at least 1"),
    (HEAD + SPACE + OBJ + "budget: {launches: lots}\n", 5, "expected an integer"),
    (HEAD + SPACE + OBJ + "budget: {minutes: .nan}\n", 5, "finite"),
    (HEAD + SPACE + OBJ + "budget: {}\n", 5, "launches: N and/or minutes"),
    (HEAD + SPACE + OBJ + "budgte: {launches: 3}\n", 5, "did you mean 'budget'"),
    (HEAD + "space:\n  args.max-num-seqs: {range: [1, 1000000], int: true}\n"
     "  args.max-num-batched-tokens: [1, 2]\n" + OBJ + BUDGET + "sampler: grid\n", 7,
     "more than the 100,000"),
    (HEAD + "space:\n  args.gpu-memory-utilization: {range: [0.5, 0.9]}\n" + OBJ + BUDGET
     + "sampler: grid\n", 6, "a range of reals has no grid"),
])
def test_bad_input_is_one_located_error(text: str, line: int, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(text)
    err = info.value
    assert expected in str(err) + (err.hint or "")
    assert err.source == "tunes/t.yaml" and err.line == line


def _project(root: Path, space: str) -> Path:
    (root / "variants").mkdir(parents=True)
    (root / "patchsets").mkdir()
    (root / "tunes").mkdir()
    (root / "variants" / "hosts.yaml").write_text(
        f"cpu:\n  python: python3\n  workdir: {root / 'work'}\n  vllm_version: 0.32.0\n")
    (root / "variants" / "base.yaml").write_text(
        "host: cpu\nmodel: m\nargs:\n  max-model-len: 2048\n  enable-chunked-prefill: false\n")
    (root / "tunes" / "t.yaml").write_text(HEAD + "space:\n" + space + OBJ + BUDGET)
    return root


def test_dry_run_shows_the_space_what_the_rules_prune_and_the_budget(
        tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    project = _project(tmp_path / "p", "  args.max-num-batched-tokens: [1024, 4096]\n"
                       "  args.max-num-seqs: {range: [8, 64], log: true, int: true}\n")
    res = run_cli(["tune", "t", "--dry-run"], project=project)
    assert res.code == 0, res.output
    assert "114 configurations" in res.stdout  # 2 × 57
    assert "pruned: args.max-num-batched-tokens=1024" in res.stdout
    assert "batched-tokens-below-model-len" in res.stdout
    assert "sampler tpe (seed 0); budget 10 launches" in res.stdout
    res = run_cli(["tune", "t", "--dry-run", "--json"], project=project)
    plan = json.loads(res.stdout)["plan"]
    assert plan["grid_size"] == 114 and plan["sampler"] == "tpe"
    assert [p["value"] for p in plan["pruned"]] == [1024]
    assert plan["space"][1] == {"setting": "args.max-num-seqs", "range": [8.0, 64.0],
                                "log": True, "int": True}


def test_a_setting_the_hosts_vllm_lacks_is_refused_at_its_line(
        tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    project = _project(tmp_path / "p", "  args.max-num-seqs: [8, 16]\n"
                       "  args.num-scheduler-steps: [1, 8]\n")
    res = run_cli(["tune", "t", "--dry-run"], project=project)
    assert res.code == 2
    assert "tunes/t.yaml:4" in res.stderr
    assert "does not exist in vLLM 0.32.0" in res.stderr
    assert "Traceback" not in res.output


def test_a_small_grid_within_the_budget_is_measured_whole(
        tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    project = _project(tmp_path / "p", "  args.max-num-seqs: [8, 16]\n")
    res = run_cli(["tune", "t", "--dry-run", "--json"], project=project)
    assert json.loads(res.stdout)["plan"]["sampler"] == "grid"


def test_an_unknown_tune_gets_a_did_you_mean(
        tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    project = _project(tmp_path / "p", "  args.max-num-seqs: [8, 16]\n")
    res = run_cli(["tune", "tt", "--dry-run"], project=project)
    assert res.code == 2 and "no tune 'tt'" in res.stderr
