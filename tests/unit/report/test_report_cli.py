"""``variantctl report`` end to end on run records written with the RunStore API."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.unit.report.builders import gpu, level, record, result, store_run, write_json
from tests.unit.report.pngcheck import png_ok
from variantctl.runs.store import RunStore

Cli = Callable[..., CliResult]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    store = RunStore(p / "runs")
    store_run(store, record("aaaaaaaaaa-1", "full-parser"), [result([
        level(1, agg=8.34, ttft_p90_ms=1850.0, tps_p10=8.74, tps_p50=8.9,
              devices=[gpu(28.9, 60, 30500, 49.7)]),
        level(2, agg=8.07, ttft_p90_ms=2500.0, tps_p10=4.1, tps_p50=4.3,
              devices=[gpu(40.0, 70, 30600, 55.0)])])])
    store_run(store, record("bbbbbbbbbb-1", "parser-off", args={"max-num-seqs": 2}), [result([
        level(1, agg=8.0, ttft_p90_ms=1700.0, tps_p10=8.3, tps_p50=8.5),
        level(2, agg=7.23, ttft_p90_ms=2400.0, tps_p10=3.9, tps_p50=4.0)])])
    store_run(store, record("cccccccccc-1", "sched4", verdict="failed",
                            signature="batched-tokens-below-model-len",
                            evidence=((17, "ValueError: max_num_batched_tokens (64) is "
                                           "smaller than max_model_len (512)."),),
                            remediation="raise --max-num-batched-tokens"))
    return p


def test_markdown_report_with_plots_beside_it(run_cli: Cli, project: Path) -> None:
    out = project / "rep"
    res = run_cli(["report", "aaaaaaaaaa-1", "bbbb", "cccccccccc-1", "--out", str(out)],
                  project=project)
    assert res.code == 0, res.output
    assert res.stdout.splitlines()[0] == f"report: {out / 'report.md'}"
    md = (out / "report.md").read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert links == ["agg_tps.png", "tpot.png", "ttft_p90.png", "gpu_util.png", "pareto.png"]
    for name in links:  # relative links to files that are there, each a drawn plot
        assert png_ok((out / name).read_bytes()) == (700, 420)
    # again into the same directory without GPU data: the old GPU plot does not linger
    res = run_cli(["report", "bbbbbbbbbb-1", "--out", str(out)], project=project)
    assert res.code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["agg_tps.png", "pareto.png", "report.md",
                                                    "tpot.png", "ttft_p90.png"]
    # points are labelled by the one setting that varies; no interval without requests
    # or 3 repeats: the figure, n and the marks
    assert "| seqs=default | 1 | 4/4 | 100 | 1850 n=1*! | 8.74 n=1*! | 8.90 n=1*! | " \
        "8.34 n=1*! |" in md
    assert "| c | seqs=default | seqs=2 |" in md
    assert "| 2 | 8.07 n=1*! | 7.23 n=1*! |" in md
    assert "| seqs=default | 1 | 0 | 28.9 / 60.0 |" in md
    assert "| seqs=2 | 1 | – | not available (no GPU monitor) |" in md
    assert "| seqs=default | full-parser | aaaaaaaaaa-1 | cpu | ready |" in md
    # the answer first, one heading per section
    assert md.index("## Summary") < md.index("## Runs")
    assert "| 1 | seqs=default | 8.34 n=1*! | none; untested (no interval): seqs=2 " \
        "(8.00 n=1*!) |" in md
    assert "**Runs**" not in md and "**Steady state**" not in md
    assert ("| sched4 | failed (cccccccccc-1) | batched-tokens-below-model-len | log:17: "
            "ValueError: max_num_batched_tokens (64) is smaller than max_model_len (512). "
            "| raise --max-num-batched-tokens |") in md


def test_html_report_is_one_self_contained_file(run_cli: Cli, project: Path) -> None:
    out = project / "rep"
    res = run_cli(["report", "aaaaaaaaaa-1", "bbbbbbbbbb-1", "--format", "html", "--out",
                   str(out), "--json"], project=project)
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    assert {k: doc[k] for k in ("report", "files")} == {
        "report": str(out / "report.html"), "files": [str(out / "report.html")]}
    assert sorted(p.name for p in out.iterdir()) == ["report.html"]
    html = (out / "report.html").read_text()
    assert not re.search(r"""(src|href)=["']?(https?:|//|file:)""", html)
    assert "<script" not in html
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) == 5
    for b64 in images:
        png_ok(base64.b64decode(b64))
    assert "<td>full-parser</td>" in html and "<caption>Per point</caption>" in html


def test_default_directory_is_reports_in_the_project(run_cli: Cli, project: Path) -> None:
    res = run_cli(["report", "aaaaaaaaaa-1"], project=project)
    assert res.code == 0, res.output
    (made,) = (project / "reports").iterdir()
    assert made.name.startswith("full-parser-") and (made / "report.md").is_file()


def _sweep_state(project: Path) -> Path:
    return write_json(project / "runs" / "sweeps" / "cpu-smoke.json", {
        "schema": "variantctl.sweep/1", "sweep": "cpu-smoke", "status": "done",
        "points": [
            {"index": 1, "name": "cpu-eager@cpu-smoke-01", "status": "measured",
             "run_id": "aaaaaaaaaa-1",
             "values": {"args.enforce-eager": True, "args.max-num-seqs": 1}},
            {"index": 6, "name": "cpu-eager@cpu-smoke-06", "status": "measured",
             "run_id": "bbbbbbbbbb-1", "stopped_early": {
                 "prompt": "random", "concurrency": 2, "reason": "success 75 % < 100 %"}},
            {"index": 2, "name": "cpu-eager@cpu-smoke-02", "status": "failed",
             "run_id": "cccccccccc-1", "verdict": "failed"},
            {"index": 3, "name": "cpu-eager@cpu-smoke-03", "status": "skipped",
             "skip": {"reason": "predicted", "rule": "batched-tokens",
                      "signature": "batched-tokens-below-model-len",
                      "message": "max-num-batched-tokens 64 < max-model-len 512"}},
            {"index": 4, "name": "cpu-eager@cpu-smoke-04", "status": "skipped",
             "skip": {"reason": "history", "run_id": "cccccccccc-1",
                      "signature": "batched-tokens-below-model-len", "message": "failed"}},
            {"index": 5, "name": "cpu-eager@cpu-smoke-05", "status": "interrupted",
             "message": "Ctrl-C"},
        ]})


def test_a_sweep_by_name_shows_its_points_and_skips(run_cli: Cli, project: Path) -> None:
    _sweep_state(project)
    out = project / "rep"
    res = run_cli(["report", "cpu-smoke", "--out", str(out)], project=project)
    assert res.code == 0, res.output
    md = (out / "report.md").read_text()
    assert md.startswith("# Sweep cpu-smoke\n\n_sweep cpu-smoke")
    # points are labelled by the settings that vary, not by the derived point name
    assert "| seqs=default | 1 | 4/4 |" in md and "| seqs=2 | 2 | 4/4 |" in md
    assert "cpu-eager@cpu-smoke-01 | 1 | 4/4" not in md
    assert ("| seqs=default | cpu-eager@cpu-smoke-01 | aaaaaaaaaa-1 | cpu | ready | 42.5 | 1 | "
            "args.enforce-eager=true, args.max-num-seqs=1 |") in md
    assert "| cpu-eager@cpu-smoke-02 | failed (cccccccccc-1) |" in md
    # a catalog remediation templated on a log's numbers is not shown unfilled
    assert "{model_len}" not in md
    assert "| cpu-eager@cpu-smoke-03 | predicted by batched-tokens | " \
           "batched-tokens-below-model-len | max-num-batched-tokens 64 &lt; max-model-len 512 |" \
           in md  # "<" as an entity: the Markdown is inert (it renders as "<")
    # a history skip carries the evidence and fix of the run that failed before
    assert ("| cpu-eager@cpu-smoke-04 | skipped: failed before (cccccccccc-1) | "
            "batched-tokens-below-model-len | log:17: ValueError: max_num_batched_tokens (64) "
            "is smaller than max_model_len (512). | raise --max-num-batched-tokens |") in md
    assert "| cpu-eager@cpu-smoke-05 | interrupted | – | Ctrl-C |" in md
    assert ("cpu-eager@cpu-smoke-06: a stop rule ended the ladder at c=2 (random): "
            "success 75 % &lt; 100 %") in md
    # the same file by path
    res = run_cli(["report", str(project / "runs" / "sweeps" / "cpu-smoke.json"), "--out",
                   str(project / "rep2")], project=project)
    assert res.code == 0, res.output


def test_host_gpu_peaks_add_the_roofline_section(run_cli: Cli, project: Path,
                                                 tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
        "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 512}))
    store = RunStore(project / "runs")
    store_run(store, record("dddddddddd-1", "tp1", model=str(model)), [result([
        level(1, agg=20.0, ttft_p90_ms=100, tps_p10=20, tps_p50=20)])])
    (project / "variants" / "hosts.yaml").write_text(
        "cpu:\n  gpu: {name: RTX 4080, peak_bandwidth_gbs: 716.8, peak_tflops: 97.5, "
        "count: 2}\n")
    out = project / "rep"
    res = run_cli(["report", "dddddddddd-1", "--out", str(out)], project=project)
    assert res.code == 0, res.output
    md = (out / "report.md").read_text()
    assert "## Roofline" in md and "cpu: RTX 4080 717 GB/s, 97.5 TFLOPS" in md
    assert "| tp1 | 1 | 2 (declared) |" in md


@pytest.mark.parametrize("hosts, message", [
    ("cpu:\n  gpu: {peak_tflop: 9}\n", "unknown key 'peak_tflop' in gpu"),
    ("cpu:\n  gpu: {count: 0}\n", "must be at least 1"),
])
def test_a_bad_gpu_declaration_is_one_error_line_with_file_and_line(
        run_cli: Cli, project: Path, hosts: str, message: str) -> None:
    (project / "variants" / "hosts.yaml").write_text(hosts)
    res = run_cli(["report", "aaaaaaaaaa-1", "--out", str(project / "r")], project=project)
    assert res.code == 2
    (line,) = res.stderr.splitlines()[:1]
    assert line.startswith("error: ") and "hosts.yaml:2:" in line and message in line
    assert "Traceback" not in res.output


def test_unknown_source_bad_state_file_and_ambiguous_prefix(run_cli: Cli,
                                                            project: Path) -> None:
    res = run_cli(["report", "nosuch"], project=project)
    assert res.code == 2
    assert res.stderr.startswith("error: 'nosuch' is neither a sweep")
    write_json(project / "runs" / "sweeps" / "broken.json", {"schema": "other"})
    res = run_cli(["report", "broken"], project=project)
    assert res.code == 2 and "not a variantctl.sweep/1 state file" in res.stderr
    store_run(RunStore(project / "runs"), record("aaaaaaaaaa-2", "full-parser"))
    res = run_cli(["report", "aaaa"], project=project)
    assert res.code == 2 and "ambiguous" in res.stderr
    assert "Traceback" not in res.output


def test_a_damaged_benchmark_file_is_a_note_not_a_crash(run_cli: Cli, project: Path) -> None:
    d = RunStore(project / "runs").find("aaaaaaaaaa-1").path
    (bench,) = d.glob("bench-*.json")
    bench.write_text("{not json")
    res = run_cli(["report", "aaaaaaaaaa-1", "--out", str(project / "r")], project=project)
    assert res.code == 0, res.output
    md = (project / "r" / "report.md").read_text()
    assert "No benchmark results in these runs." in md
    assert f"{bench}: " in md  # the file and why it was not used


def test_the_report_says_which_variant_won(run_cli: Cli, project: Path) -> None:
    """The report's first lines, and what `report` prints: the most aggregate throughput
    (at its best concurrency) and the fastest first token at the lowest common one."""
    out = project / "won"
    res = run_cli(["report", "aaaaaaaaaa-1", "bbbbbbbbbb-1", "--out", str(out)],
                  project=project)
    assert res.code == 0, res.output
    # the points are named by the setting that varies (max-num-seqs)
    # hand-made levels without requests, one repeat: no interval, and said so
    most = ("Most throughput: seqs=default, 8.3 tok/s aggregate at concurrency 1 (n=1 "
            "repeats*!, no interval), 4 % more than seqs=2 (untested: a side has no "
            "interval).")
    first = ("Fastest first token: seqs=2, TTFT P90 1700 ms at concurrency 1 (n=1 repeats*!, "
             "no interval), 8 % less than seqs=default (untested: a side has no interval).")
    assert res.stdout.splitlines()[-2:] == [most, first]
    md = (out / "report.md").read_text()
    assert f"## Summary\n\n{most}\n\n{first}\n" in md  # the report opens with them
    doc = json.loads(run_cli(["report", "bbbbbbbbbb-1", "--out", str(out), "--json"],
                             project=project).stdout)
    assert doc["summary"] == ["Most throughput: parser-off, 8.0 tok/s aggregate at "
                              "concurrency 1 (n=1 repeats*!, no interval)."]
    # no benchmark at all: nothing to say
    doc = json.loads(run_cli(["report", "cccccccccc-1", "--out", str(out), "--json"],
                             project=project).stdout)
    assert doc["summary"] == []


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_report_files_get_the_users_umask(run_cli: Cli, project: Path, umask: int,
                                          mode: int) -> None:
    import os

    old = os.umask(umask)
    try:
        out = project / "rep"
        res = run_cli(["report", "aaaaaaaaaa-1", "--out", str(out)], project=project)
        assert res.code == 0, res.output
        res = run_cli(["report", "aaaaaaaaaa-1", "--format", "html", "--out",
                       str(project / "html")], project=project)
        assert res.code == 0, res.output
    finally:
        os.umask(old)
    files = [*out.iterdir(), project / "html" / "report.html"]
    assert {f.stat().st_mode & 0o777 for f in files} == {mode}, files



def test_the_report_states_each_points_capacity(run_cli: Cli, tmp_path: Path) -> None:
    """``bench --search`` results: the report's first lines give each point's capacity,
    the largest first, with the SLOs, the limiting metric and the margin."""
    import dataclasses

    from variantctl.bench.search import Probe, SearchResult

    p = tmp_path / "cap"
    (p / "variants").mkdir(parents=True)
    store = RunStore(p / "runs")

    def searched(best: float | None, limiting: str | None) -> object:
        r = result([level(1, agg=8.0, ttft_p90_ms=100.0, tps_p10=8.0, tps_p50=8.0)])
        sr = SearchResult("concurrency", {"tpot": 50.0}, 90.0, 64.0, best, limiting,
                          (Probe(1.0, best is not None, {"tpot": 10.0}, None),))
        return dataclasses.replace(r, search=sr)

    store_run(store, record("aaaaaaaaaa-1", "tp1"), [searched(48, "tpot")])
    store_run(store, record("bbbbbbbbbb-1", "tp2"), [searched(96, "ttft")])
    store_run(store, record("cccccccccc-1", "tp0"), [searched(None, "tpot")])
    res = run_cli(["report", "aaaaaaaaaa-1", "bbbbbbbbbb-1", "cccccccccc-1", "--out",
                   str(p / "r")], project=p)
    assert res.code == 0, res.output
    lines = res.stdout.splitlines()
    assert ("Most capacity: tp2, concurrency 96 under P90 tpot ≤ 50 ms (limited by ttft), "
            "100 % more than tp1.") in lines
    assert "Capacity: tp1, concurrency 48 under P90 tpot ≤ 50 ms (limited by tpot)." in lines
    assert "Capacity of tp0: none — no concurrency met P90 tpot ≤ 50 ms." in lines
    assert "Most capacity: tp2" in (p / "r" / "report.md").read_text()
