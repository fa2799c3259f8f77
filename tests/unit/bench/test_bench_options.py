"""Numbers and URLs on the command line are validated (issue 19 items 5 and 9): exit 2
naming the option, never a traceback (exit 70) nor a silently disabled deadline, and
a password in ``--url`` is never repeated; a sweep grid is counted before it is
expanded."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.support.bench_project import make_bench_project
from variantctl.exitcodes import ExitCode

Run = Callable[..., CliResult]
URL = "http://127.0.0.1:1"  # nothing is reached: every case is refused before


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_bench_project(tmp_path / "proj")


@pytest.mark.parametrize(("args", "words"), [
    (["--concurrency", "²"], "--concurrency '²': '²' is not a positive integer"),
    (["--concurrency", "1,٣"], "--concurrency '1,٣': '٣' is not a positive integer"),
    (["--concurrency", "100000000000000000000000"],
     "level 100000000000000000000000 is more than 65,536 concurrent requests"),
    (["--concurrency", "70000"], "level 70000 is more than 65,536"),
    (["--warmup", "²"], "--warmup '²': expected auto, off or a number of requests"),
    (["--warmup", "99999999999999999999"], "--warmup 99999999999999999999: more than"),
    (["--requests", "1000000000000"], "--requests must be between 1 and 1,000,000"),
    (["--repeat", "100000000"], "--repeat must be between 1 and 10,000"),
    (["--prompt", "random", "--input-len", "100000000000"], "--input-len must be between"),
    (["--request-timeout", "0"], "Invalid value for '--request-timeout': 0.0 is not in the "
                                 "range 0<x<=1000000.0"),
    (["--request-timeout", "-1"], "Invalid value for '--request-timeout'"),
    (["--request-timeout", "nan"], "'--request-timeout': 'nan' is not a finite number"),
    (["--request-timeout", "inf"], "'--request-timeout': 'inf' is not a finite number"),
    (["--duration", "nan"], "'--duration': 'nan' is not a finite number"),
    (["--duration", "inf"], "'--duration': 'inf' is not a finite number"),
    (["--temperature", "nan"], "'--temperature': 'nan' is not a finite number"),
    (["--burstiness", "nan"], "--burstiness must be > 0, got nan"),
    (["--request-rate", "nan"], "--request-rate 'nan' must be > 0"),
])
def test_bad_numbers_are_exit_2_naming_the_option(run_cli: Run, project: Path,
                                                  args: list[str], words: str) -> None:
    res = run_cli(["bench", "--url", URL, *args], project=project)
    assert res.code == ExitCode.USAGE, res.output
    assert words in res.stderr, res.stderr
    assert "Traceback" not in res.output and "internal error" not in res.output


@pytest.mark.parametrize(("url", "words"), [
    ("http://[::1", "--url 'http://[::1' is not a valid URL"),
    ("http://", "--url 'http://' names no host"),
    ("http://127.0.0.1:99999", "the port must be a number from 1 to 65535"),
    ("http://127.0.0.1:0", "the port must be a number from 1 to 65535"),
    ("http://127.0.0.1:http", "the port must be a number from 1 to 65535"),
    ("ftp://127.0.0.1", "is not an http:// or https:// URL"),
    ("http://127.0.0.1:8000/?a=1", "no ?query or #fragment"),
    ("http://user:s3cret@127.0.0.1:8000", "--url 'http://***@127.0.0.1:8000': a user name "
                                           "or password in the URL is not supported"),
    ("http://user:s3cret@[::1", "--url 'http://***@[::1' is not a valid URL"),
    ("http://user:s3cret@127.0.0.1:99999", "the port must be a number from 1 to 65535"),
])
def test_bad_urls_are_exit_2_and_never_show_a_password(run_cli: Run, project: Path,
                                                       url: str, words: str) -> None:
    res = run_cli(["bench", "--url", url], project=project)
    assert res.code == ExitCode.USAGE, res.output
    assert words in res.stderr and res.stderr.startswith("error: --url ")
    assert "s3cret" not in res.output
    res = run_cli(["bench", "--url", url, "--json"], project=project)
    assert res.code == ExitCode.USAGE
    error = json.loads(res.stdout)["error"]
    assert error["kind"] == "usage" and "s3cret" not in res.output


@pytest.mark.parametrize("args", [
    ["sweep", "x", "--grace", "nan"], ["sweep", "x", "--grace", "-1"],
    ["stop", "fake-openai", "--grace", "nan"], ["stop", "fake-openai", "--grace", "inf"],
    ["launch", "fake-openai", "--timeout", "nan"], ["launch", "fake-openai", "--stall", "inf"],
    ["watch", "fake-openai", "--grace", "nan"], ["hosts", "check", "--timeout", "nan"],
])
def test_float_options_of_every_command_refuse_nan_and_inf(run_cli: Run, project: Path,
                                                           args: list[str]) -> None:
    # click's FloatRange lets nan through (nan < 1 is false): a deadline that never comes
    res = run_cli(args, project=project)
    assert res.code == ExitCode.USAGE, res.output
    option = next(a for a in args if a.startswith("--"))
    assert f"Invalid value for '{option}'" in res.stderr, res.stderr


def test_an_absurd_sweep_grid_is_counted_and_refused(run_cli: Run, project: Path) -> None:
    # 10 axes of 10 values: 10^10 points; before, --dry-run built them all
    axes = "".join(f"    flag-{i}: [{', '.join(str(v) for v in range(10))}]\n"
                   for i in range(10))
    (project / "sweeps").mkdir()
    (project / "sweeps" / "huge.yaml").write_text(
        f"base: fake-openai\ngrid:\n  args:\n{axes}")
    res = run_cli(["sweep", "huge", "--dry-run"], project=project)
    assert res.code == ExitCode.USAGE, res.output
    assert res.stderr.startswith("error: sweeps/huge.yaml:3:")
    assert "the sweep has 10,000,000,000 points" in res.stderr
    assert "more than the 100,000 a sweep may have" in res.stderr


def test_a_large_but_sane_grid_is_planned(run_cli: Run, project: Path) -> None:
    (project / "sweeps").mkdir()
    (project / "sweeps" / "fine.yaml").write_text(
        "base: fake-openai\ngrid:\n  args:\n    flag-a: [1, 2, 3]\n    flag-b: [1, 2]\n")
    res = run_cli(["sweep", "fine", "--dry-run", "--json"], project=project)
    assert res.code == 0, res.output
    assert len(json.loads(res.stdout)["plan"]["points"]) == 6


@pytest.mark.parametrize("args", [
    ["stop", "fake-openai", "--grace", "1e308"],  # Event.wait(1e308) overflows time_t
    ["launch", "fake-openai", "--timeout", "1e9"],
    ["bench", "--url", URL, "--duration", "1e300"],
    ["bench", "--url", URL, "--request-timeout", "1e12"],
])
def test_time_options_are_bounded(run_cli: Run, project: Path, args: list[str]) -> None:
    res = run_cli(args, project=project)
    assert res.code == ExitCode.USAGE, res.output
    assert "<=1000000.0" in res.stderr and "Invalid value for '--" in res.stderr


def test_output_len_is_bounded(run_cli: Run, project: Path) -> None:
    res = run_cli(["bench", "--url", URL, "--output-len", "100000000000"], project=project)
    assert res.code == ExitCode.USAGE
    assert "--output-len must be between 1 and 10,000,000" in res.stderr


@pytest.mark.parametrize(("where", "text", "words"), [
    ("sweeps/t.yaml", "base: fake-openai\nbench:\n  timeout_s: .nan\n",
     "sweeps/t.yaml:3:14: bench.timeout_s: must be a finite number, got nan"),
    ("sweeps/t.yaml", "base: fake-openai\nbench:\n  duration: .inf\n",
     "bench.duration: must be a finite number, got inf"),
    ("sweeps/t.yaml", "base: fake-openai\nbench:\n  concurrency: [100000]\n",
     "concurrency levels must be between 1 and 65,536"),
    ("sweeps/t.yaml", "base: fake-openai\nstop:\n  min_success_pct: .nan\n",
     "stop.min_success_pct: must be a finite number"),
    ("variants/fake-openai.yaml", None, "startup.ready_timeout: must be a finite number"),
])
def test_numbers_in_files_are_finite_and_bounded(run_cli: Run, project: Path, where: str,
                                                 text: str | None, words: str) -> None:
    path = project / where
    path.parent.mkdir(exist_ok=True)
    if text is None:  # the variant's own startup deadline
        text = path.read_text().replace("ready_timeout: 30", "ready_timeout: .nan")
    path.write_text(text)
    args = ["sweep", "t", "--dry-run"] if where.startswith("sweeps") else [
        "render", "fake-openai"]
    res = run_cli(args, project=project)
    assert res.code == ExitCode.USAGE, res.output
    assert words in res.stderr, res.stderr
