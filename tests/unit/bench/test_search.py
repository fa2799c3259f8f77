"""Capacity search (issue 22.4): exponential then binary search for the highest level whose
percentile latencies meet every SLO — the bisection on its own, and end to end on the
labelled FAKE OpenAI server (tests/support/fake_openai_server.py) whose TPOT grows with the
requests in flight beyond the five it serves at full speed, so the level the SLO allows is
known exactly."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from tests.conftest import CliResult
from tests.support.fake_openai_server import spawn
from variantctl.bench.search import Probe, Search, percentile
from variantctl.benchparams import BenchParams
from variantctl.exitcodes import ExitCode

Run = Callable[..., CliResult]

#: the fake server: a batch of FULL streams at full speed (TPOT = ITL), every stream in flight
#: beyond them adds SLOPE to each gap: TPOT = 10 ms up to c = 5, 70 ms at c = 6, 190 ms at
#: c = 8. The SLO (40 ms) sits 30 ms from the levels on either side of it: a loaded machine
#: adds a few ms to every gap, never 30 — and the gaps are short, so the search is quick
ITL_MS, SLOPE_MS, FULL, SLO_MS = 10, 60, 5, 40


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with spawn("--ttft-ms", "20", "--itl-ms", str(ITL_MS), "--itl-per-inflight-ms",
               str(SLOPE_MS), "--full-speed-streams", str(FULL)) as u:
        yield u


def drive(params: BenchParams, allowed: float) -> tuple[list[float], float | None]:
    """Run the search against a level that passes iff it is <= ``allowed``."""
    finder = Search(params)
    probed = []
    for value, _level in finder.steps():
        probed.append(value)
        finder.probes.append(Probe(value, value <= allowed, {}, None if value <= allowed
                                   else "tpot"))
    return probed, finder.result().best_level


@pytest.mark.parametrize("allowed", [0, 1, 2, 3, 5, 6, 7, 8, 13, 31, 32, 40])
def test_concurrency_search_finds_the_exact_level(allowed: int) -> None:
    params = BenchParams(search="concurrency", slo={"tpot": 50}, max_level=32)
    probed, best = drive(params, allowed)
    assert best == (min(allowed, 32) if allowed >= 1 else None)
    assert probed[:2] == [1, 2] or allowed < 1
    assert len(probed) == len(set(probed))  # no level is probed twice
    assert len(probed) <= 12


def test_rate_search_brackets_within_five_percent() -> None:
    params = BenchParams(search="rate", slo={"ttft": 100}, concurrency=(64,), max_level=100)
    probed, best = drive(params, 13.7)
    assert best is not None and 13.7 * 0.95 <= best <= 13.7
    assert probed[:5] == [1, 2, 4, 8, 16]


def test_percentile_is_numpys_linear() -> None:
    assert percentile([1, 2, 3, 4], 90) == pytest.approx(3.7)
    assert percentile([5], 50) == 5


def test_search_on_a_server_whose_tpot_grows_with_load_finds_the_allowed_level(
        run_cli: Run, url: str) -> None:
    # TPOT(c) = 10 ms up to c = 5, 70 ms at c = 6; the SLO is 40 ms
    res = run_cli(["bench", "--url", url, "--search", "concurrency", "--slo",
                   f"ttft:2000,tpot:{SLO_MS}", "--requests", "12", "--output-len", "6",
                   "--ignore-eos", "--warmup", "off", "--max-level", "16", "--json"])
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    search = doc["search"]
    assert search["best_level"] == 5
    assert search["limiting"] == "tpot"
    assert [p["level"] for p in search["probes"]] == [1, 2, 4, 8, 6, 5]
    assert [p["passed"] for p in search["probes"]] == [True, True, True, False, False, True]
    # every probe is a stored level of the result
    assert [lv["concurrency"] for lv in doc["levels"]] == [1, 2, 4, 8, 6, 5]
    p90 = {p["level"]: p["values_ms"]["tpot"] for p in search["probes"]}
    assert p90[5] < SLO_MS < p90[6]
    # and the table says so
    table = run_cli(["bench", "--url", url, "--search", "concurrency", "--slo", f"tpot:{SLO_MS}",
                     "--requests", "6", "--output-len", "4", "--ignore-eos", "--warmup", "off",
                     "--max-level", "2"])
    assert table.code == 0, table.output
    assert f"capacity: concurrency 2 (P90 tpot ≤ {SLO_MS} ms); --max-level 2 reached" in (
        " ".join(table.stdout.split()))


@pytest.mark.parametrize(("args", "what"), [
    (["--search", "concurrency"], "--search needs --slo"),
    (["--slo", "tpot:5"], "--slo needs --search"),
    (["--search", "concurrency", "--slo", "tpot:5", "--concurrency", "4"], "no --concurrency"),
    (["--search", "rate", "--slo", "tpot:5", "--request-rate", "3"], "no --request-rate"),
    (["--search", "concurrency", "--slo", "foo:5"], "--slo 'foo:5'"),
    (["--search", "concurrency", "--slo", "tpot:5", "--slo-percentile", "0"], "(0, 100]"),
    (["--search", "concurrency", "--slo", "tpot:5", "--max-level", "2.5"], "whole number"),
    (["--search", "concurrency", "--slo", "tpot:5", "--repeat", "2"], "no --repeat"),
])
def test_bad_search_options_are_refused(run_cli: Run, args: list[str], what: str) -> None:
    res = run_cli(["bench", "--url", "http://127.0.0.1:9", *args])
    assert res.code == ExitCode.USAGE, res.output
    assert what in res.stderr and "Traceback" not in res.output
