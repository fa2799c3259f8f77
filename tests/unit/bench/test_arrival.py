"""Arrival profiles (issue 22.3): ``--request-rate 1,2,4`` as a ladder with the concurrency
as cap, ``--ramp-up`` as ``vllm bench serve``'s, each level recording its profile; against
the labelled FAKE OpenAI server (tests/support/fake_openai_server.py)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.support.fake_openai_server import spawn
from variantctl.bench import arrival
from variantctl.benchparams import BenchParams
from variantctl.exitcodes import ExitCode

Run = Callable[..., CliResult]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with spawn("--ttft-ms", "2", "--itl-ms", "1") as u:
        yield u


def test_ramp_up_rates_are_vllms() -> None:
    """serve._get_current_request_rate: start + (end − start)·i/(n−1), or start·(end/start)^…"""
    lin = arrival.Profile("ramp-up", ramp="linear", ramp_start=2.0, ramp_end=20.0)
    assert [arrival.rate_at(lin, i, 10) for i in range(10)] == [2.0 + 2 * i for i in range(10)]
    exp = arrival.Profile("ramp-up", ramp="exponential", ramp_start=1.0, ramp_end=16.0)
    assert [round(arrival.rate_at(exp, i, 5), 9) for i in range(5)] == [1, 2, 4, 8, 16]
    # regular arrivals (burstiness inf): cumulative 1/rate, not rescaled under a ramp
    offs = arrival.offsets(lin, 10, math.inf, 0)
    want, t = [], 0.0
    for i in range(10):
        t += 1.0 / (2.0 + 2 * i)
        want.append(t)
    assert offs == pytest.approx(want)
    const = arrival.offsets(arrival.Profile("rate", rate=4.0), 8, 1.0, 3)
    assert const[-1] == pytest.approx(2.0)  # vLLM's normalisation: n / rate


def test_levels_of_each_profile() -> None:
    ladder = BenchParams(request_rate=1.0, rate_ladder=(1.0, 2.0, 4.0), concurrency=(8,))
    assert [(lv.concurrency, lv.profile.kind, lv.profile.rate)
            for lv in arrival.levels(ladder)] == [(8, "rate", 1.0), (8, "rate", 2.0),
                                                  (8, "rate", 4.0)]
    conc = BenchParams(concurrency=(1, 2))
    assert [lv.profile.kind for lv in arrival.levels(conc)] == ["concurrency"] * 2
    ramp = BenchParams(ramp_up="exponential", ramp_start=1, ramp_end=8, concurrency=(4,))
    (only,) = arrival.levels(ramp)
    assert only.profile.to_json() == {"kind": "ramp-up", "rate": "inf", "ramp": "exponential",
                                      "ramp_start": 1, "ramp_end": 8}


def test_rate_ladder_is_one_level_per_rate_capped_by_concurrency(
        run_cli: Run, url: str, tmp_path: Path) -> None:
    export = tmp_path / "v.json"
    res = run_cli(["bench", "--url", url, "--request-rate", "10,40", "--requests", "8",
                   "--burstiness", "inf", "--output-len", "4", "--warmup", "off", "--json",
                   "--export-vllm", str(export)])
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    levels = doc["levels"]
    assert [lv["profile"] for lv in levels] == [{"kind": "rate", "rate": 10.0},
                                                {"kind": "rate", "rate": 40.0}]
    assert [lv["concurrency"] for lv in levels] == [8, 8]  # the cap: --requests
    assert doc["params"]["rate_ladder"] == [10.0, 40.0]
    # regular arrivals: request k is sent no earlier than (k+1)/rate (n/rate at the last)
    for lv, rate in zip(levels, (10.0, 40.0), strict=True):
        starts = sorted(r["start_s"] for r in lv["requests"])
        assert starts[-1] >= 8 / rate - 0.01
    # one export per rate (not one overwriting the other), each with its own rate
    files = sorted(tmp_path.glob("v-rate*.json"))
    assert [f.name for f in files] == ["v-rate10.json", "v-rate40.json"]
    assert [json.loads(f.read_text())["request_rate"] for f in files] == [10.0, 40.0]
    assert json.loads(files[0].read_text())["temperature"] == 0.0
    assert "--temperature 0" in json.loads(files[0].read_text())["variantctl_note"]


def test_ramp_up_level_records_its_profile_and_exports_vllms_fields(
        run_cli: Run, url: str, tmp_path: Path) -> None:
    export = tmp_path / "ramp.json"
    res = run_cli(["bench", "--url", url, "--ramp-up", "linear", "--ramp-start", "20",
                   "--ramp-end", "80", "--requests", "6", "--output-len", "3",
                   "--warmup", "off", "--json", "--export-vllm", str(export)])
    assert res.code == 0, res.output
    (level,) = json.loads(res.stdout)["levels"]
    assert level["profile"]["kind"] == "ramp-up" and level["concurrency"] == 6
    out = json.loads(export.read_text())
    assert (out["ramp_up_strategy"], out["ramp_up_start_rps"], out["ramp_up_end_rps"]) == (
        "linear", 20.0, 80.0)


@pytest.mark.parametrize(("args", "what"), [
    (["--request-rate", "1,2", "--concurrency", "1,2"], "give one --concurrency"),
    (["--request-rate", "1,inf"], "cannot hold 'inf'"),
    (["--request-rate", "2,2"], "given twice"),
    (["--ramp-up", "linear", "--ramp-start", "1"], "needs --ramp-start and --ramp-end"),
    (["--ramp-up", "linear", "--ramp-start", "4", "--ramp-end", "2"], "<= --ramp-end"),
    (["--ramp-up", "linear", "--ramp-start", "1", "--ramp-end", "2", "--duration", "3"],
     "not --duration"),
    (["--ramp-up", "linear", "--ramp-start", "1", "--ramp-end", "2", "--request-rate", "3"],
     "no --request-rate"),
    (["--ramp-start", "1"], "need --ramp-up"),
])
def test_bad_arrival_options_are_refused(run_cli: Run, args: list[str], what: str) -> None:
    res = run_cli(["bench", "--url", "http://127.0.0.1:9", *args])
    assert res.code == ExitCode.USAGE, res.output
    assert what in res.stderr and "Traceback" not in res.output


def test_rate_ladder_params_round_trip_and_older_params_hash_the_same() -> None:
    params = BenchParams(rate_ladder=(1.0, 3.0), request_rate=1.0, concurrency=(4,))
    back = BenchParams.from_json(params.to_json())
    assert back == params
    assert "rate_ladder" not in BenchParams().to_json()  # older params hash the same
    assert "ramp_up" not in BenchParams().to_json()
