"""Typed codecs, chosen by measurement (issue 27.6): today's hand-written ``to_json`` /
``from_json`` / ``from_fields`` against msgspec, cattrs and pydantic.

Four figures per candidate:

1. start cost: ``python -c "import click, LIB"`` against ``import click`` (``variantctl
   --help`` must stay within 1.5x of ``import click``; a codec imported by a model module
   is paid by every command that reads a stored file, and by ``--help`` if a model is
   imported at start);
2. the error a damaged ``run.json`` gives (``verdict.lines`` a string): the hardening
   tests require the file and the field named, one line, no traceback;
3. decode time of the store-v2 fixture's ``run.json`` into typed values;
4. code today: how many hand-written codec functions and lines there are.

The candidates are not dependencies of variantctl: install them in a scratch venv and run
this script with them on the path::

    python3 -m venv /tmp/codec-eval && /tmp/codec-eval/bin/pip install msgspec cattrs pydantic
    PYTHONPATH=/tmp/codec-eval/lib/python3.11/site-packages \
        .venv/bin/python benchmarks/bench_codecs.py [--runs N]

(the project's venv runs it, the candidates come from the scratch venv's site-packages).

A candidate that is not installed is reported as such and skipped.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
RUN_JSON = REPO / "tests/fixtures/store-v2/runs/2026-07-14-cpu-base-aaaaaaaaaa-1/run.json"
CANDIDATES = ("msgspec", "cattrs", "pydantic")


def _wall(code: str, runs: int) -> float:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - t)
    return min(times)  # best of: the machine is shared, its noise only adds


def start_cost(runs: int) -> None:
    click = _wall("import click", runs)
    helps = _wall("import runpy, sys; sys.argv = ['variantctl', '--help']\n"
                  "try: runpy.run_module('variantctl', run_name='__main__')\n"
                  "except SystemExit: pass", runs)
    print(f"start (best of {runs}):")
    print(f"  import click                          {click * 1000:6.1f} ms  1.00x")
    print(f"  variantctl --help (today)             {helps * 1000:6.1f} ms  {helps / click:.2f}x")
    for lib in CANDIDATES:
        if importlib.util.find_spec(lib) is None:
            print(f"  {lib:<10} not installed")
            continue
        both = _wall(f"import click, {lib}", runs)
        added = both - click
        print(f"  import click, {lib:<10}              {both * 1000:6.1f} ms  "
              f"{both / click:.2f}x   (+{added * 1000:.1f} ms; --help with it imported at "
              f"start: {(helps + added) / click:.2f}x)")


# -- the verdict part of run.json, as each candidate declares it ------------------------


def _damaged() -> dict[str, Any]:
    data = json.loads(RUN_JSON.read_text())
    data["verdict"]["lines"] = "many"
    return data


def today() -> tuple[Callable[[Any], object], str]:
    from variantctl.runs.run import RunRecord

    def decode(data: Any) -> object:
        return RunRecord.from_json(data, source=str(RUN_JSON))
    return decode, "RunRecord.from_json (whole record, every field checked)"


def with_msgspec() -> tuple[Callable[[Any], object], str]:
    import msgspec

    def decode(data: Any) -> object:
        return msgspec.convert(data, _MRecord)
    return decode, "msgspec.convert into Structs"


if importlib.util.find_spec("msgspec") is not None:
    # at module level: msgspec resolves the (postponed) annotations in the module's globals
    import msgspec

    class _MEvidence(msgspec.Struct, frozen=True):
        line: int
        text: str

    class _MVerdict(msgspec.Struct, frozen=True):
        verdict: str
        signature: str | None = None
        title: str = ""
        message: str = ""
        remediation: str = ""
        phase: str | None = None
        evidence: tuple[_MEvidence, ...] = ()
        decisive_line: int | None = None
        last_lines: tuple[str, ...] = ()
        lines: int = 0
        health: int | None = None
        classifier: dict[str, Any] | None = None

    class _MRecord(msgspec.Struct, frozen=True):
        schema: int
        run_id: str
        key: str
        variant_name: str
        verdict: _MVerdict
        variant: dict[str, Any]
        host: dict[str, Any]
        facts: dict[str, Any]
        expect_ok: bool
        timings: dict[str, str | float | int | None]
        benchmarks: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Evidence:
    line: int
    text: str


@dataclass(frozen=True)
class _Verdict:
    verdict: str
    signature: str | None = None
    title: str = ""
    message: str = ""
    remediation: str = ""
    phase: str | None = None
    evidence: tuple[_Evidence, ...] = ()
    decisive_line: int | None = None
    last_lines: tuple[str, ...] = ()
    lines: int = 0
    health: int | None = None
    classifier: dict[str, Any] | None = None


@dataclass(frozen=True)
class _Record:
    schema: int
    run_id: str
    key: str
    variant_name: str
    verdict: _Verdict
    variant: dict[str, Any]
    host: dict[str, Any]
    facts: dict[str, Any]
    expect_ok: bool
    timings: dict[str, str | float | int | None]
    benchmarks: tuple[str, ...] = ()


def with_cattrs() -> tuple[Callable[[Any], object], str]:
    import cattrs

    conv = cattrs.Converter(forbid_extra_keys=False)

    # cattrs has no structure hook for a union of primitives (a timing): one written by hand
    def timing(value: object, _: object) -> object:
        if value is None or isinstance(value, (str, int, float)):
            return value
        raise TypeError(f"should be a time, a number or null, got {type(value).__name__}")
    conv.register_structure_hook(str | float | int | None, timing)

    def decode(data: Any) -> object:
        try:
            return conv.structure(data, _Record)
        except cattrs.BaseValidationError as exc:
            raise ValueError("; ".join(cattrs.transform_error(exc))) from None
    return decode, ("cattrs.structure into the frozen dataclasses (transform_error; "
                    "a hand-written hook for the timings' union)")


def with_pydantic() -> tuple[Callable[[Any], object], str]:
    import pydantic

    adapter = pydantic.TypeAdapter(_Record)

    def decode(data: Any) -> object:
        # strict mode wants a dataclass instance, not a dict: lax mode, which also takes
        # "5" for 5 (today's reader does not)
        return adapter.validate_python(data)
    return decode, "pydantic.TypeAdapter over the frozen dataclasses (lax)"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    lines = text.splitlines()
    return " / ".join(line.strip() for line in lines[:3]) + (" ..." if len(lines) > 3 else "")


def errors_and_speed(runs: int) -> None:
    good = json.loads(RUN_JSON.read_text())
    makers: list[tuple[str, Callable[[], tuple[Callable[[Any], object], str]]]] = [
        ("today", today)]
    for lib, maker in (("msgspec", with_msgspec), ("cattrs", with_cattrs),
                       ("pydantic", with_pydantic)):
        if importlib.util.find_spec(lib) is not None:
            makers.append((lib, maker))
    print(f"\ndamaged run.json (verdict.lines = \"many\"), {RUN_JSON.relative_to(REPO)}:")
    speed: list[str] = []
    for name, maker in makers:
        decode, how = maker()
        try:
            decode(_damaged())
            message = "ACCEPTED (no error)"
        except Exception as exc:  # each library has its own error class
            message = _first_line(exc)
        names_file = str(RUN_JSON) in message
        names_field = "lines" in message
        print(f"  {name:<9} {how}")
        print(f"            -> {message}")
        print(f"            file named: {'yes' if names_file else 'no (the caller adds it)'}, "
              f"field named: {'yes' if names_field else 'NO'}")
        n = max(200, runs * 100)
        t = time.perf_counter()
        for _ in range(n):
            decode(good)
        per = (time.perf_counter() - t) / n
        speed.append(f"  {name:<9} {per * 1e6:8.1f} us per run.json")
    print("\ndecode the fixture's run.json (mean of one loop; the candidates check the "
          "verdict and top-level types only, today's reader every field and the run id, "
          "artifact names and schema rules):")
    print("\n".join(speed))


def code_today() -> None:
    counts = {"to_json": 0, "from_json": 0, "from_fields": 0}
    lines = dict.fromkeys(counts, 0)
    for path in sorted((REPO / "variantctl").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name in counts:
                counts[node.name] += 1
                lines[node.name] += (node.end_lineno or node.lineno) - node.lineno + 1
    print("\nhand-written codecs in variantctl/ today:")
    for name in counts:
        print(f"  {name:<12} {counts[name]:3d} functions, {lines[name]:4d} lines")
    print(f"  total        {sum(counts.values()):3d} functions, {sum(lines.values()):4d} lines")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    start_cost(args.runs)
    errors_and_speed(args.runs)
    code_today()


if __name__ == "__main__":
    main()
