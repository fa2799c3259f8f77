"""Sweep files: the shipped ones load; every bad input is one error naming file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from variantctl.config.sweeps import load_sweep, parse_sweep, sweep_names
from variantctl.config.yamlload import load_yaml_text
from variantctl.errors import ConfigError, NotFoundError


def parse(text: str, name: str = "t"):  # type: ignore[no-untyped-def]
    return parse_sweep(load_yaml_text(text, "sweeps/t.yaml"), name)


def test_the_shipped_sweeps_load() -> None:
    assert {"seed-decode", "seed-grid", "tp-ladder", "cpu-smoke"} <= set(
        sweep_names(REPO / "sweeps"))
    decode = load_sweep(REPO / "sweeps", "seed-decode")
    assert decode.bases == ("full-parser", "parser-off")
    assert [b.prompt for b in decode.bench] == ["short", "tools"]
    assert {b.concurrency for b in decode.bench} == {(1, 2, 4)}
    grid = load_sweep(REPO / "sweeps", "seed-grid")
    assert [a.key for a in grid.axes] == ["args.max-num-seqs", "args.max-num-batched-tokens",
                                         "args.enable-chunked-prefill",
                                         "args.num-scheduler-steps"]
    ladder = load_sweep(REPO / "sweeps", "tp-ladder")
    (bench,) = ladder.bench
    assert (bench.prompt, bench.input_len, bench.output_len) == ("random", 1024, 128)
    assert bench.concurrency == (1, 8, 16, 32, 64, 128, 200)
    assert ladder.axes[0].key == "args.tensor-parallel-size"  # `tp` normalised
    assert ladder.stop.max_ttft_p90_ms == 60000


def test_a_full_file_is_modelled() -> None:
    spec = parse(
        "base: [a, b]\nhosts: h1\nport: 9000\n"
        "grid:\n  args:\n    max_num_seqs: [1, 2]\n    max-model-len: [1024, 2048]\n"
        "    max-seq-len-to-capture: [1024, 2048]\n  env:\n    VLLM_X: [fast, null]\n"
        "link:\n  - [args.max-model-len, args.max-seq-len-to-capture]\n"
        "exclude:\n  - {base: b, args.max-num-seqs: 2}\n"
        "include:\n  - {base: a, env.VLLM_X: extra}\n"
        "bench:\n  concurrency: [1, 4]\n  requests: 3\n  prompts: [short, tools]\n"
        "  warmup: 2\n  request_rate: inf\n"
        "stop:\n  min_success_pct: 100\n")
    assert spec.hosts == ("h1",) and spec.port == 9000
    assert spec.links == (("args.max-model-len", "args.max-seq-len-to-capture"),)
    assert dict(spec.exclude[0]) == {"base": "b", "args.max-num-seqs": 2}
    assert spec.axes[-1].values == ("fast", None)
    assert spec.axes[0].origin == "sweeps/t.yaml:6"
    assert [b.warmup for b in spec.bench] == ["2", "2"]
    assert spec.stop.min_success_pct == 100.0
    assert spec.profile is False


def test_profile_true_is_part_of_the_point_key_not_of_the_configuration(tmp_path: Path) -> None:
    from tests.conftest import REPO
    from variantctl.config.variants import load_catalog
    from variantctl.hostmodel import Host
    from variantctl.runs.identity import config_key
    from variantctl.sweeps.plan import make_plan
    from variantctl.variants.resolve import resolve

    catalog = load_catalog(REPO / "variants")
    base = {"cpu-eager": resolve(catalog, "cpu-eager")}
    host = base["cpu-eager"].host
    hosts = {host: Host(name=host, workdir=str(tmp_path))}
    plain = make_plan(parse("base: cpu-eager\n"), base, hosts).points[0]
    spec = parse("base: cpu-eager\nprofile: true\n")
    assert spec.profile is True and spec.measured.profile is True
    profiled = make_plan(spec, base, hosts).points[0]
    # a profiled measurement is another measurement (state, resume, ETA by point key)...
    assert profiled.point_key != plain.point_key
    # ...of the same configuration: a failed profiled start counts for the plain one too
    assert profiled.config_key == plain.config_key
    with_dir = plain.variant.with_args({}, env={"VARIANTCTL_PROFILE": "/w/profile/x"},
                                       origin="test")
    assert config_key(with_dir, hosts[host], {}) == plain.config_key
    assert config_key(plain.variant.with_args({}, env={"OTHER": "1"}, origin="t"),
                      hosts[host], {}) != plain.config_key


@pytest.mark.parametrize(("text", "where", "words"), [
    ("base: a\ngrdi: {}\n", "sweeps/t.yaml:2:1", "unknown key 'grdi'"),
    ("grid: {}\n", "sweeps/t.yaml:1:1", "missing required key 'base'"),
    ("base: a\ngrid:\n  args:\n    max-num-seqs: 3\n", "sweeps/t.yaml:4:19", "expected a list"),
    ("base: a\ngrid:\n  args:\n    x: [1]\n    y: [1, 2]\nlink:\n  - [args.x, args.y]\n",
     "sweeps/t.yaml:7:5", "the same length (args.x has 1, args.y has 2)"),
    ("base: a\ngrid:\n  args:\n    x: [1]\nlink:\n  - [args.x, args.z]\n",
     "sweeps/t.yaml:6:14", "args.z is not in the grid"),
    ("base: a\ngrid:\n  args:\n    x: [1]\nexclude:\n  - {args.q: 1}\n",
     "sweeps/t.yaml:6:14", "can never match"),
    ("base: a\nexclude:\n  - {base: c}\n", "sweeps/t.yaml:3:12", "'c' is not a base"),
    ("base: a\nexclude:\n  - {args: 1}\n", "sweeps/t.yaml:3:12", "not a grid key"),
    ("base: a\ngrid:\n  args:\n    tp: [1]\n    tensor-parallel-size: [2]\n",
     "sweeps/t.yaml:5:5", "given twice"),
    ("base: a\nbench:\n  prompts: [random]\n", "sweeps/t.yaml:3:13",
     "prompt random needs input_len"),
    ("base: a\nbench:\n  concurrency: [1, 1]\n", "sweeps/t.yaml:3:16", "given twice"),
    ("base: a\ngrid:\n  args:\n    no-foo: [1]\n", "sweeps/t.yaml:4:13", "foo: false"),
    ("base: a\nprofile: yes please\n", "sweeps/t.yaml:2:10", "expected"),
])
def test_bad_files_name_file_line_and_key(text: str, where: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse(text)
    assert err.value.message.startswith(where), err.value.message
    assert words in err.value.message


def test_a_missing_sweep_suggests_a_name(tmp_path: Path) -> None:
    (tmp_path / "cpu-smoke.yaml").write_text("base: a\n")
    with pytest.raises(NotFoundError) as err:
        load_sweep(tmp_path, "cpu-smok")
    assert "no sweep 'cpu-smok'" in err.value.message
    assert "cpu-smoke" in (err.value.hint or "")


def test_the_cli_prints_one_error_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "variants").mkdir()
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "sweeps" / "bad.yaml").write_text("base: a\nstop:\n  max_ttft: 3\n")
    res = run_cli(["sweep", "bad", "--dry-run"], project=tmp_path)
    assert res.code == 2
    assert res.stderr.splitlines()[0].startswith(
        "error: sweeps/bad.yaml:3:3: stop.max_ttft: unknown key 'max_ttft'")
    assert "Traceback" not in res.output
    res = run_cli(["sweep", "nothere", "--dry-run", "--json"], project=tmp_path)
    assert res.code == 2 and '"kind"' in res.stdout


def test_seed_grid_dry_run_needs_no_host(run_cli) -> None:  # type: ignore[no-untyped-def]
    # corex is an ssh alias no test machine has: the plan must not try to connect
    res = run_cli(["sweep", "seed-grid", "--dry-run"])
    assert res.code == 0, res.output
    assert "24 points, 6 to run, 18 skipped, on corex" in res.stdout
    assert "skip: predicted by multistep-chunked-prefill" in res.stdout
    assert "dry run: nothing launched" in res.stderr
    res = run_cli(["sweep", "seed-grid", "--dry-run", "--json"])
    plan = json.loads(res.stdout)["plan"]
    skipped = [p for p in plan["points"] if not p["run"]]
    assert len(skipped) == 18
    assert {p["skip"]["signature"] for p in skipped} == {
        "multistep-chunked-prefill-unsupported", "batched-tokens-below-model-len"}


def test_hosts_option_spreads_points_and_refuses_unknown_hosts(run_cli) -> None:  # type: ignore[no-untyped-def]
    res = run_cli(["sweep", "tp-ladder", "--dry-run", "--json", "--hosts", "rtx4080,corex"])
    assert res.code == 0, res.output
    plan = json.loads(res.stdout)["plan"]
    assert [p["host"] for p in plan["points"]] == ["rtx4080", "corex"]
    res = run_cli(["sweep", "tp-ladder", "--dry-run", "--hosts", "rtx4090"])
    assert res.code == 2
    assert "rtx4090" in res.stderr.splitlines()[0]


def test_a_host_list_overrides_the_base_hosts(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "variants").mkdir()
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "variants" / "v.yaml").write_text("host: elsewhere\nmodel: m\n")
    (tmp_path / "variants" / "hosts.yaml").write_text("h1:\n  workdir: /tmp/x\n")
    (tmp_path / "sweeps" / "s.yaml").write_text("base: v\nhosts: [h1]\n")
    (tmp_path / "sweeps" / "own.yaml").write_text("base: v\n")
    res = run_cli(["sweep", "s", "--dry-run", "--json"], project=tmp_path)
    assert res.code == 0, res.output
    assert [p["host"] for p in json.loads(res.stdout)["plan"]["points"]] == ["h1"]
    res = run_cli(["sweep", "own", "--dry-run"], project=tmp_path)
    assert res.code == 2 and "elsewhere" in res.stderr.splitlines()[0]


def test_a_bench_block_takes_rate_ladders_ramp_ups_and_datasets() -> None:
    (ladder,) = parse("base: a\nbench:\n  request_rate: [1, 2.5, 4]\n  requests: 30\n").bench
    assert ladder.rate_ladder == (1.0, 2.5, 4.0) and ladder.concurrency == (30,)
    (ramp,) = parse("base: a\nbench:\n  ramp_up: exponential\n  ramp_start: 1\n"
                    "  ramp_end: 8\n  concurrency: 16\n").bench
    assert (ramp.ramp_up, ramp.ramp_start, ramp.ramp_end, ramp.concurrency) == (
        "exponential", 1, 8, (16,))
    (trace,) = parse("base: a\nbench:\n  prompts: trace:t.jsonl\n  trace_speed: 2\n").bench
    assert trace.trace_speed == 2.0 and trace.output_len_set is False
    with pytest.raises(ConfigError, match=r"t.yaml:3:3: bench: ramp_up needs ramp_start"):
        parse("base: a\nbench:\n  ramp_up: linear\n")
    with pytest.raises(ConfigError, match=r"give one concurrency"):
        parse("base: a\nbench:\n  request_rate: [1, 2]\n  concurrency: [1, 2]\n")
    with pytest.raises(ConfigError, match=r"a rate is given twice"):
        parse("base: a\nbench:\n  request_rate: [1, 1]\n")


def test_a_bench_block_takes_shared_prefixes_and_turns() -> None:
    (b,) = parse("base: a\nbench:\n  prompts: random\n  input_len: 16\n  prefix_len: 64\n"
                 "  prefixes: 4\n  turns: 3\n").bench
    assert (b.prefix_len, b.prefixes, b.turns) == (64, 4, 3)
    with pytest.raises(ConfigError, match=r"prefixes needs prefix_len"):
        parse("base: a\nbench:\n  prefixes: 4\n")
    with pytest.raises(ConfigError, match=r"turns sends conversations: it needs endpoint chat"):
        parse("base: a\nbench:\n  turns: 2\n  endpoint: completions\n")
