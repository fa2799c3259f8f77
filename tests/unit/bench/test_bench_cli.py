"""``variantctl bench`` end to end on this machine: a variant launched for real (running
the labelled FAKE OpenAI server, tests/support/fake_openai_server.py), benchmarked,
its results stored beside the launch's run; GPUs sampled with the labelled stand-in
nvidia-smi; every fault of issue 10 item 6."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, CliResult
from tests.support.bench_project import make_bench_project
from tests.support.interruptible import variantctl_argv
from tests.support.sshd import free_port
from variantctl.exitcodes import ExitCode
from variantctl.runs.store import RunStore

Run = Callable[..., CliResult]


@pytest.fixture
def project(tmp_path: Path, run_cli: Run) -> Iterator[Path]:
    root = make_bench_project(tmp_path / "proj")
    yield root
    run_cli(["stop", "--all", "--grace", "2"], project=root)


@pytest.fixture
def project_without_gpu_monitor(tmp_path: Path, run_cli: Run) -> Iterator[Path]:
    """For a test of many short levels that asks nothing of the GPUs: no stand-in
    nvidia-smi (a process started at every level and every second of it)."""
    root = make_bench_project(tmp_path / "proj", gpu_monitor=False)
    yield root
    run_cli(["stop", "--all", "--grace", "2"], project=root)


def launch(run_cli: Run, project: Path, variant: str) -> int:
    port = free_port()
    res = run_cli(["launch", variant, "--port", str(port), "--grace", "2"], project=project)
    assert res.code == 0, res.output
    return port


def bench(run_cli: Run, project: Path, *args: str) -> CliResult:
    return run_cli(["bench", *args], project=project)


def run_dir(project: Path, variant: str) -> Path:
    """The one run of ``variant`` in the project's run store."""
    (found,) = [d.path for d in RunStore(project / "runs").dirs() if d.variant == variant]
    return found


def test_ladder_on_a_launched_variant_is_measured_sampled_and_stored(
        run_cli: Run, project: Path) -> None:
    launch(run_cli, project, "fake-openai")
    res = bench(run_cli, project, "fake-openai", "--concurrency", "1,2", "--requests", "6",
                "--output-len", "12", "--warmup", "off", "--json")
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["schema"] == "variantctl.bench/1"
    assert doc["target"]["variant"] == "fake-openai" and doc["target"]["host"] == "local"
    assert doc["target"]["model"] == "fake-model"
    assert [lv["concurrency"] for lv in doc["levels"]] == [1, 2]
    for lv in doc["levels"]:
        m = lv["metrics"]
        assert (m["completed"], m["failed"]) == (6, 0)
        assert m["total_output_tokens"] == 72  # the fake's usage: exactly max_tokens
        assert m["total_input_tokens"] > 0
        assert not lv["partial"]
        # the stand-in nvidia-smi on the host: two GPUs, sampled during the level
        assert lv["gpu"]["available"], lv["gpu"]
        assert [d["index"] for d in lv["gpu"]["devices"]] == [0, 1]
        assert lv["gpu"]["monitor"].endswith("standin_smi/nvidia-smi")
        # the fake has no /metrics: said, not an error
        assert not lv["server_metrics"]["available"]
        assert "404" in lv["server_metrics"]["reason"]
    # GPU samples come from successive calls: the second level saw later rows
    assert (project / "smi-local").read_text() != "0"
    stored = Path(doc["stored"])
    assert stored.parent == run_dir(project, "fake-openai")
    assert stored.name.startswith("bench-") and stored.suffix == ".json"
    saved = json.loads(stored.read_text())
    assert saved["levels"][1]["metrics"] == doc["levels"][1]["metrics"]
    # the launch's run.json lists it: a launch and its benchmarks are one record
    run = json.loads((stored.parent / "run.json").read_text())
    assert run["benchmarks"] == [stored.name]


def test_the_gpus_are_also_summarised_over_the_steady_window(run_cli: Run,
                                                              project: Path) -> None:
    """A level of a few seconds: the samples stamped inside its steady-state window are
    summarised apart (gpu_steady), and the table shows them beside the whole level."""
    launch(run_cli, project, "fake-openai")
    res = bench(run_cli, project, "fake-openai", "--concurrency", "1", "--requests", "30",
                "--output-len", "12", "--warmup", "off", "--json")
    assert res.code == 0, res.output
    (lv,) = json.loads(res.stdout)["levels"]
    steady, whole = lv["gpu_steady"], lv["gpu"]
    window = lv["metrics"]["steady"]
    assert window["duration_s"] > 2.0, window
    assert steady["available"], steady
    for d_all, d_steady in zip(whole["devices"], steady["devices"], strict=True):
        assert d_steady["index"] == d_all["index"]
        # one sample per second: the window's are a subset of the level's
        assert 1 <= d_steady["samples"] <= d_all["samples"]
        assert d_steady["samples"] <= window["duration_s"] + 1
    # the table's column (a short level: the column is there whatever the window holds)
    table = bench(run_cli, project, "fake-openai", "--concurrency", "1", "--requests", "3",
                  "--output-len", "4", "--warmup", "off")
    assert "steady util %" in table.stdout


def test_two_variants_in_one_table(run_cli: Run, project: Path) -> None:
    launch(run_cli, project, "fake-openai")
    launch(run_cli, project, "fake-openai-b")
    res = bench(run_cli, project, "fake-openai", "fake-openai-b", "--requests", "3",
                "--output-len", "8", "--warmup", "off", "--concurrency", "1,2")
    assert res.code == 0, res.output
    decode = res.stdout.split("latency")[0]
    rows = [line for line in decode.splitlines()
            if line.startswith("fake-openai") and "│" in line]
    assert [r.split()[0] for r in rows] == ["fake-openai", "fake-openai", "fake-openai-b",
                                            "fake-openai-b"]
    assert all("3/3" in r and "100%" in r for r in rows)
    for variant in ("fake-openai", "fake-openai-b"):
        assert list(run_dir(project, variant).glob("bench-*.json"))


def test_a_variant_that_is_not_running(run_cli: Run, project: Path) -> None:
    res = bench(run_cli, project, "fake-openai", "--requests", "2")
    assert res.code == ExitCode.USAGE
    assert "error: fake-openai is not running on host local" in res.stderr
    assert "Traceback" not in res.output


def test_a_dead_server_with_a_record_is_named_stale(run_cli: Run, project: Path) -> None:
    launch(run_cli, project, "fake-openai")
    record = json.loads((project / "work-local" / "run" / "fake-openai.json").read_text())
    os.killpg(record["pid"], signal.SIGKILL)
    time.sleep(0.3)
    res = bench(run_cli, project, "fake-openai", "--requests", "2")
    assert res.code == ExitCode.FAILED
    assert "fake-openai on host local is not ready: stale" in res.stderr
    assert f"pid {record['pid']}" in res.stderr


def test_a_level_whose_requests_all_fail(run_cli: Run, project: Path) -> None:
    launch(run_cli, project, "fake-openai-fails")
    res = bench(run_cli, project, "fake-openai-fails", "--requests", "4", "--warmup", "off",
                "--concurrency", "1,2")
    assert res.code == ExitCode.FAILED, res.output
    assert "every request of the level at concurrency 1 failed" in res.stderr
    assert "every request of the level at concurrency 2 failed" in res.stderr
    assert "4 × http 500" in res.stdout or "http 500" in res.output


def test_the_server_dying_mid_level(run_cli: Run, project: Path) -> None:
    launch(run_cli, project, "fake-openai-dies")
    res = bench(run_cli, project, "fake-openai-dies", "--requests", "40", "--warmup", "off",
                "--output-len", "20", "--concurrency", "2,4", "--json")
    assert res.code == ExitCode.FAILED, res.output
    doc = json.loads(res.stdout)
    # the ladder stopped at the level the server died in; what finished is kept
    assert len(doc["levels"]) == 1
    level = doc["levels"][0]
    assert level["partial"] and level["partial_reason"].startswith("server exited")
    assert 1 <= level["metrics"]["completed"] <= 5
    death = doc["server_death"]
    assert death["variant"] == "fake-openai-dies" and death["level"] == 2
    assert death["kind"]  # the classifier's verdict on the log
    assert any("PORT" in line for line in death["tail"])  # the log's last lines
    assert "died during the level at concurrency 2; its log says" in res.stderr
    saved = json.loads(Path(doc["stored"]).read_text())
    assert saved["levels"][0]["partial"] and saved["server_death"]["pid"] == death["pid"]


@pytest.mark.parametrize(("args", "message"), [
    (["--concurrency", "1,x"], "--concurrency '1,x': 'x' is not a positive integer"),
    (["--concurrency", "2,2"], "level 2 is given twice"),
    (["--goodput", "ttft:500,foo:3"], "--goodput 'ttft:500,foo:3'"),
    (["--goodput", "ttft:abc"], "is not a number of ms"),
    (["--request-rate", "fast"], "--request-rate 'fast'"),
    (["--prompt", "no-such-file.txt"], "--prompt 'no-such-file.txt'"),
    (["--url", "http://127.0.0.1:1"], "give a VARIANT (or several) or --url, not both"),
    (["--max-repeat", "5"], "--max-repeat needs --until-ci"),
    (["--until-ci", "0"], "--until-ci must be a percentage in (0, 100), got 0"),
    (["--until-ci", "5", "--max-repeat", "2"], "--max-repeat must be >= 3"),
    (["--until-ci", "5", "--request-rate", "1,2"], "--until-ci repeats each concurrency level"),
])
def test_bad_input_is_one_error_line(run_cli: Run, project: Path, args: list[str],
                                     message: str) -> None:
    res = bench(run_cli, project, "fake-openai", *args)
    assert res.code == ExitCode.USAGE, res.output
    assert message in res.stderr
    assert res.stderr.startswith("error: ") and "Traceback" not in res.output


def test_a_url_where_nothing_listens(run_cli: Run, project: Path) -> None:
    port = free_port()
    res = bench(run_cli, project, "--url", f"http://127.0.0.1:{port}", "--requests", "2")
    assert res.code == ExitCode.UNREACHABLE, res.output
    assert f"http://127.0.0.1:{port}" in res.stderr


def test_a_url_is_measured_without_a_run_record(run_cli: Run, project: Path) -> None:
    port = launch(run_cli, project, "fake-openai-b")
    res = bench(run_cli, project, "--url", f"http://127.0.0.1:{port}/v1", "--requests", "3",
                "--output-len", "5", "--warmup", "off", "--json")
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["target"]["url"] == f"http://127.0.0.1:{port}" and doc["stored"] is None
    assert doc["levels"][0]["metrics"]["total_output_tokens"] == 15
    # a loopback URL: this machine's GPUs (the stand-in is not on PATH here)
    gpu = doc["levels"][0]["gpu"]
    assert not gpu["available"] and "no nvidia-smi or ixsmi on host local" in gpu["reason"]


def test_ctrl_c_keeps_partial_results_and_leaves_no_task(run_cli: Run, project: Path) -> None:
    launch(run_cli, project, "fake-openai-slow")
    env = {**os.environ, "VARIANTCTL_PROJECT": str(project), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        variantctl_argv("bench", "fake-openai-slow", "--requests", "50", "--output-len", "20",
                        "--warmup", "off", "--concurrency", "2,4", "--json"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        assert proc.stderr is not None
        while time.monotonic() < deadline:  # wait until the level runs
            line = proc.stderr.readline()
            if "concurrency 2" in line:
                break
        time.sleep(1.5)  # requests take 0.6 s: a few finished, others in flight
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        stop_s = time.monotonic() - t0
    finally:
        proc.kill()
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert stop_s < 5, stop_s  # nothing kept it running
    doc: dict[str, Any] = json.loads(out)
    assert len(doc["levels"]) == 1
    level = doc["levels"][0]
    assert level["partial"] and level["partial_reason"].startswith("interrupted")
    assert 1 <= level["metrics"]["completed"] < 50
    assert json.loads(Path(doc["stored"]).read_text())["levels"][0]["partial"]
    assert "interrupted; partial results kept" in err


def test_export_vllm_one_file_per_level(run_cli: Run, project: Path, tmp_path: Path) -> None:
    launch(run_cli, project, "fake-openai-b")
    out = tmp_path / "exp" / "result.json"
    res = bench(run_cli, project, "fake-openai-b", "--requests", "3", "--output-len", "6",
                "--warmup", "off", "--concurrency", "1,2", "--export-vllm", str(out))
    assert res.code == 0, res.output
    assert not out.exists()
    for c in (1, 2):
        data = json.loads((tmp_path / "exp" / f"result-c{c}.json").read_text())
        assert data["max_concurrency"] == c and data["completed"] == 3
        assert data["total_output_tokens"] == 18 and "mean_tpot_ms" in data
    one = tmp_path / "one.json"
    res = bench(run_cli, project, "fake-openai-b", "--requests", "2", "--output-len", "6",
                "--warmup", "off", "--export-vllm", str(one))
    assert res.code == 0, res.output
    assert json.loads(one.read_text())["completed"] == 2


def test_several_variants_one_not_running_the_others_still_run(run_cli: Run,
                                                                project: Path) -> None:
    launch(run_cli, project, "fake-openai-b")
    res = bench(run_cli, project, "fake-openai", "fake-openai-b", "--requests", "2",
                "--output-len", "4", "--warmup", "off", "--json")
    assert res.code == ExitCode.USAGE, res.output
    doc = json.loads(res.stdout)
    assert [r["target"]["variant"] for r in doc["results"]] == ["fake-openai-b"]
    assert doc["results"][0]["levels"][0]["metrics"]["completed"] == 2
    (err,) = doc["errors"]
    assert err["variant"] == "fake-openai" and err["error"]["kind"] == "not-found"
    assert "error: fake-openai is not running on host local" in res.stderr


def test_a_death_ends_every_repeat_too(run_cli: Run, project: Path) -> None:
    launch(run_cli, project, "fake-openai-dies")
    res = bench(run_cli, project, "fake-openai-dies", "--requests", "8", "--warmup", "off",
                "--output-len", "4", "--concurrency", "1", "--repeat", "3", "--json")
    assert res.code == ExitCode.FAILED, res.output
    doc = json.loads(res.stdout)
    assert [lv["repeat"] for lv in doc["levels"]] == [0]
    # "server exited", plus the runner's note when the watchdog stopped requests in flight
    assert doc["levels"][0]["partial_reason"].startswith("server exited")


def test_every_level_carries_its_intervals_and_until_ci_says_how_it_ended(
        run_cli: Run, project_without_gpu_monitor: Path) -> None:
    project = project_without_gpu_monitor
    launch(run_cli, project, "fake-openai")
    shape = ("--requests", "4", "--output-len", "4", "--warmup", "off", "--no-store")
    common = ("fake-openai", "--concurrency", "1,2", *shape)
    # an interval no run can reach: three repeats (at least), --max-repeat 3 ends it
    res = bench(run_cli, project, *common, "--until-ci", "0.0001", "--max-repeat", "3",
                "--json")
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    # each concurrency in turn, repeated (not the whole ladder again)
    assert [(lv["concurrency"], lv["repeat"]) for lv in doc["levels"]] == [
        (1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)]
    assert doc["params"]["until_ci"] == 0.0001 and doc["params"]["max_repeat"] == 3
    for point in doc["intervals"]:
        thr = point["figures"]["output_throughput"]
        assert thr["method"] == "repeats" and thr["n_repeats"] == 3
        assert thr["n_requests"] == 12 and thr["few_requests"] and not thr["few_repeats"]
        lo, hi = thr["ci95"]
        assert lo <= thr["estimate"] <= hi
        assert point["until_ci"]["reached"] is False and point["until_ci"]["repeats"] == 3
        assert set(point["figures"]) >= {"ttft_p90", "tpot_mean", "tps_p10", "tps_p50"}
    # a loose target is met after the three repeats a t interval needs (longer levels:
    # their throughputs vary less on a loaded machine)
    res = bench(run_cli, project, "fake-openai", "--concurrency", "1", "--requests", "6",
                "--output-len", "8", "--warmup", "off", "--no-store", "--until-ci", "90")
    assert res.code == 0, res.output
    assert "fake-openai: --until-ci: concurrency 1: throughput CI ±" in res.stdout
    assert "after 3 repeats (under ±90 %)" in res.stdout
    assert "95 % confidence intervals: output throughput (tok/s), TTFT (ms)" in res.stdout
    res = bench(run_cli, project, "fake-openai", "--concurrency", "2", *shape,
                "--until-ci", "0.0001", "--max-repeat", "3")
    assert "concurrency 2: gave up — throughput CI ±" in res.stdout
    assert "after 3 repeats, not under ±0.0001 % (--max-repeat 3 reached)" in res.stdout
    # one repeat: a bootstrap over the level's 4 requests, marked * and !
    one = ("fake-openai", "--concurrency", "1", *shape)
    res = bench(run_cli, project, *one, "--json")
    thr = json.loads(res.stdout)["intervals"][0]["figures"]["output_throughput"]
    assert (thr["method"], thr["n_repeats"], thr["n_requests"]) == ("requests", 1, 4)
    assert thr["few_repeats"] and thr["few_requests"]
    res = bench(run_cli, project, *one)
    row = next(line for line in res.stdout.splitlines()
               if line.replace("│", " ").split()[:3] == ["1", "1", "4"])
    cell = row.replace("│", " ").split()[4]
    assert cell.startswith("±") and cell.endswith("*!")  # the half-width and the marks


def test_sixteen_benches_at_once_each_stored_once(run_cli: Run,
                                                  project_without_gpu_monitor: Path) -> None:
    """Issue 32's "no benchmark is lost under 16 concurrent benches", end to end: 16
    ``variantctl bench`` processes against one launched (FAKE) server's run all exit 0,
    and its run.json lists 16 distinct benchmark files, each on disk, none overwritten."""
    project = project_without_gpu_monitor
    launch(run_cli, project, "fake-openai")
    env = {**os.environ, "VARIANTCTL_PROJECT": str(project), "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen(
        variantctl_argv("bench", "fake-openai", "--concurrency", "1", "--requests", "2",
                        "--output-len", "4", "--warmup", "off", "--json"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(16)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 16, [e for _, e in outs][:2]
    stored = {json.loads(out)["stored"] for out, _ in outs}
    assert len(stored) == 16  # each bench says where it stored, no two the same file
    d = run_dir(project, "fake-openai")
    listed = json.loads((d / "run.json").read_text())["benchmarks"]
    assert len(listed) == len(set(listed)) == 16
    assert sorted(listed) == sorted(p.name for p in d.glob("bench-*.json"))
    assert {str(d / n) for n in listed} == stored
