"""Parsing of --concurrency / --goodput / --request-rate / --warmup and BenchParams checks."""

from __future__ import annotations

import math

import pytest

from variantctl.benchparams import (
    BenchParams,
    parse_concurrency,
    parse_goodput,
    parse_rate,
    parse_warmup,
)
from variantctl.errors import VariantctlError


def test_concurrency_ladder_keeps_order() -> None:
    assert parse_concurrency("1,2,4") == (1, 2, 4)
    assert parse_concurrency(" 8 , 1 ") == (8, 1)


@pytest.mark.parametrize("text", ["", "1,,2", "0", "-1", "a", "1.5", "2,2"])
def test_concurrency_rejects(text: str) -> None:
    with pytest.raises(VariantctlError) as exc:
        parse_concurrency(text)
    assert exc.value.exit_code == 2
    assert "--concurrency" in exc.value.message


def test_goodput() -> None:
    assert parse_goodput("ttft:500,tpot:50,e2el:3000") == {
        "ttft": 500.0, "tpot": 50.0, "e2el": 3000.0}
    assert parse_goodput("TTFT:1.5") == {"ttft": 1.5}


@pytest.mark.parametrize("text", ["ttft", "ttft:", "ttft:x", "itl:5", "ttft:0", "ttft:1,ttft:2",
                                  "ttft:inf"])
def test_goodput_rejects(text: str) -> None:
    with pytest.raises(VariantctlError) as exc:
        parse_goodput(text)
    assert exc.value.exit_code == 2
    assert text in exc.value.message


def test_rate() -> None:
    assert parse_rate("inf") == math.inf
    assert parse_rate("2.5") == 2.5
    for bad in ("0", "-1", "fast", "nan"):
        with pytest.raises(VariantctlError):
            parse_rate(bad)


def test_warmup() -> None:
    assert parse_warmup("auto") == "auto"
    assert parse_warmup("off") == "off"
    assert parse_warmup("20") == 20
    with pytest.raises(VariantctlError):
        parse_warmup("some")


def test_params_validation_and_json_round_trip() -> None:
    goodput = {"ttft": 500.0}
    p = BenchParams(prompt="random", input_len=64, output_len=64, goodput=goodput,
                    concurrency=(1, 4), request_rate=math.inf)
    goodput["tpot"] = 1.0  # the frozen params must not see the caller's later edits
    assert dict(p.goodput) == {"ttft": 500.0}
    data = p.to_json()
    assert data["request_rate"] == "inf"
    assert BenchParams.from_json(data) == p
    assert p.requests_per_level == 100
    assert BenchParams(duration=5.0).requests_per_level is None
    for kwargs in ({"prompt": "random"}, {"requests": 1, "duration": 1.0}, {"endpoint": "x"},
                   {"output_len": 0}, {"concurrency": ()}, {"burstiness": 0.0}):
        with pytest.raises(VariantctlError):
            BenchParams(**kwargs)  # type: ignore[arg-type]
