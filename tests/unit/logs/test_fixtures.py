"""Every era fixture in tests/fixtures/logs/<era>/<case>.log classifies as its
<case>.expected.yaml says, in whole-file mode and in streaming mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from variantctl.config.catalog import default_catalog
from variantctl.logs.classify import classify_text
from variantctl.logs.stream import StreamClassifier

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "logs"
CASES = sorted(FIXTURES.glob("*/*.log"))
IDS = [f"{p.parent.name}/{p.stem}" for p in CASES]


def _expected(log: Path) -> dict[str, Any]:
    data = yaml.safe_load(log.with_name(log.stem + ".expected.yaml").read_text())
    assert isinstance(data, dict)
    return data


def _check(result: Any, want: dict[str, Any], text: str) -> None:
    got = (result.kind, result.signature)
    assert got == (want["kind"], want.get("signature")), (got, result.message, result.evidence)
    for key, value in (want.get("captures") or {}).items():
        assert result.captures.get(key) == str(value), (key, dict(result.captures))
    if "phase" in want:
        assert result.phase == want["phase"]
    if "warnings" in want:
        assert sorted({w.signature for w in result.warnings}) == sorted(want["warnings"])
    if "also" in want:
        assert set(want["also"]) <= {a.signature for a in result.also}
    if "enforce_eager" in want:
        assert result.facts.config["enforce_eager"] is want["enforce_eager"]
    lines = text.split("\n")
    for ev in result.evidence:
        # evidence is the original text of that very line
        assert lines[ev.line - 1].rstrip("\r") == ev.text.rstrip("\r")


def test_there_is_a_fixture_for_every_shipped_signature() -> None:
    catalog = default_catalog()
    covered = {_expected(p).get("signature") for p in CASES}
    covered |= {w for p in CASES for w in (_expected(p).get("warnings") or [])}
    # a stall before any phase only exists while streaming (test_engine covers it)
    internal = {"startup-stalled"}
    missing = {s.id for s in catalog.signatures} - covered - internal
    assert not missing
    for era in ("v0_6", "v0_10", "v1"):
        assert len(list((FIXTURES / era).glob("*.log"))) >= 15


@pytest.mark.parametrize("log", CASES, ids=IDS)
def test_whole_file(log: Path) -> None:
    text = log.read_text("utf-8")
    want = _expected(log)
    # ``running: true``: judged as the log of a process known to still run (--running)
    exited = False if want.get("running") else None
    _check(classify_text(text, default_catalog(), exited=exited), want, text)


@pytest.mark.parametrize("log", CASES, ids=IDS)
def test_streaming(log: Path) -> None:
    text = log.read_text("utf-8")
    want = _expected(log)
    now = [0.0]
    clf = StreamClassifier(default_catalog(), stall_seconds=30.0, clock=lambda: now[0])
    decided = None
    for line in text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"):
        v = clf.feed(line)
        now[0] += 0.01
        if v is not None:
            assert decided is None, "a stream decides once"
            decided = v
    if decided is None and want["kind"] in ("failed", "ok"):
        # a match whose optional captures may continue on a wrapped line waits briefly
        now[0] += clf.settle_seconds
        decided = clf.tick()
    if want.get("stream") == "at-end":
        assert decided is None
    elif want.get("stream") == "ok":
        # ready is decided on its line; an error after it that ends the server decides at the end
        assert decided is not None and decided.kind == "ok"
    elif want["kind"] in ("failed", "ok"):
        # failures and ready are decided as soon as the line that shows them is in ...
        assert decided is not None
        assert decided.kind == want["kind"]
    else:
        assert decided is None
    if want["kind"] == "hang":
        assert clf.tick() is None  # not stalled yet
        now[0] += 31.0
        v = clf.tick()
        assert v is not None and (v.kind, v.signature) == ("hang", want["signature"])
    # ... and the end of the stream gives the whole-file verdict (``finish:`` where a live
    # process that still runs is judged differently from an excerpt)
    _check(clf.finish(exited=False), {**want, **(want.get("finish") or {})}, text)
