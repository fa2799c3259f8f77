"""``variantctl runs export``: the report's figures as CSV, JSON Lines and Parquet."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq  # the test extra installs it (variantctl[parquet] for users)
import pytest

from tests.conftest import CliResult
from tests.unit.report.builders import measured_level, record, result, store_run
from variantctl.bench.uncertainty import HEADLINES
from variantctl.interop.export import csv_cell
from variantctl.report.load import load_run
from variantctl.report.series import series_of
from variantctl.runs.store import RunStore

EVIL = "=HYPERLINK(\"http://x\",\"y\")"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Two runs that differ in max-num-seqs and an environment value a spreadsheet would
    run; the first with 3 repeats per level (t over repeats), the second with one
    (bootstrap over requests)."""
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    store = RunStore(p / "runs")
    a = record("aaaaaaaaaa-1", "seqs-2", args={"max-num-seqs": 2, "max-model-len": -1},
               env={"NOTE": EVIL})
    b = record("bbbbbbbbbb-1", "seqs-4", args={"max-num-seqs": 4, "max-model-len": -1},
               env={"NOTE": "@SUM(A1)"})
    store_run(store, a, [result([measured_level(c, 10 * c + s, repeat=s)
                                 for c in (1, 2) for s in range(3)])])
    store_run(store, b, [result([measured_level(c, 7 * c, slow=1.3) for c in (1, 2)])])
    return p


def _report_points(project: Path) -> dict[tuple[str, int], dict[str, float]]:
    """(run id, concurrency) -> headline -> the estimate the report shows."""
    store = RunStore(project / "runs")
    runs = [load_run(store, "aaaa"), load_run(store, "bbbb")]
    return {(s.run.run_id, p.concurrency): {h: f.estimate for h, f in p.intervals.items()}
            for s in series_of(runs) for p in s.points}


def _num(cell: str) -> float | None:
    return None if cell == "" else float(cell)


def test_csv_per_level_equals_the_report(run_cli: Callable[..., CliResult],
                                         project: Path) -> None:
    out = project / "levels.csv"
    res = run_cli(["runs", "export", "aaaa", "bbbb", "--format", "csv", "--out", str(out)],
                  project=project)
    assert res.code == 0, res.output
    assert "4 rows" in res.stdout
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    expected = _report_points(project)
    assert {(r["run_id"], int(r["concurrency"])) for r in rows} == set(expected)
    for r in rows:
        want = expected[(r["run_id"], int(r["concurrency"]))]
        for h in HEADLINES:
            assert _num(r[h]) == pytest.approx(want[h], rel=1e-12), (r["run_id"], h)
            lo, hi = _num(r[f"{h}_ci_lo"]), _num(r[f"{h}_ci_hi"])
            assert lo is not None and hi is not None and lo <= want[h] <= hi
        # the settings that vary are columns; the one that does not is not
        assert r["setting.args.max-num-seqs"] in ("2", "4")
        assert "setting.args.max-model-len" not in r
        # formulas are neutralised, the numbers stay numbers
        assert r["setting.env.NOTE"] in ("'" + EVIL, "'@SUM(A1)")
    a1 = next(r for r in rows if r["run_id"] == "aaaaaaaaaa-1" and r["concurrency"] == "1")
    b1 = next(r for r in rows if r["run_id"] == "bbbbbbbbbb-1" and r["concurrency"] == "1")
    assert (a1["repeats"], a1["output_throughput_method"], a1["output_throughput_n"]) == (
        "3", "repeats", "3")
    assert (b1["repeats"], b1["ttft_p90_method"], b1["ttft_p90_n"]) == ("1", "requests", "40")


def test_parquet_and_jsonl_round_trip(run_cli: Callable[..., CliResult],
                                      project: Path) -> None:
    out = project / "levels.parquet"
    res = run_cli(["runs", "export", "aaaa", "bbbb", "--format", "parquet", "--out", str(out),
                   "--json"], project=project)
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    table = pq.read_table(out)
    assert table.column_names == doc["columns"] and table.num_rows == doc["rows"] == 4
    assert str(table.schema.field("concurrency").type) == "int64"
    assert str(table.schema.field("partial").type) == "bool"
    expected = _report_points(project)
    for r in table.to_pylist():
        want = expected[(r["run_id"], r["concurrency"])]
        assert {h: r[h] for h in HEADLINES} == pytest.approx(want, rel=1e-12)
        assert r["setting.env.NOTE"] in (EVIL, "@SUM(A1)")  # Parquet holds text as text

    jl = project / "levels.jsonl"
    assert run_cli(["runs", "export", "aaaa", "bbbb", "--format", "jsonl", "--out", str(jl)],
                   project=project).code == 0
    lines = [json.loads(line) for line in jl.read_text().splitlines()]
    assert lines == table.to_pylist()


def test_per_request_rows(run_cli: Callable[..., CliResult], project: Path) -> None:
    out = project / "req.csv"
    res = run_cli(["runs", "export", "bbbb", "--per", "request", "--format", "csv",
                   "--out", str(out)], project=project)
    assert res.code == 0, res.output
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    level = result([measured_level(c, 7 * c, slow=1.3) for c in (1, 2)]).levels
    reqs = [r for lv in level for r in lv.requests]
    assert len(rows) == len(reqs) == 80
    for row, r in zip(rows, reqs, strict=True):
        assert float(row["send_s"]) == pytest.approx(r.start_s)
        assert float(row["first_token_s"]) == pytest.approx(r.start_s + r.ttft_s)
        assert float(row["end_s"]) == pytest.approx(r.end_s)
        assert int(row["output_tokens"]) == r.output_tokens and row["ok"] == "true"
        assert row["error"] == ""


def test_csv_cells() -> None:
    assert csv_cell("-1") == "-1" and csv_cell(-1) == -1 and csv_cell("+2.5e3") == "+2.5e3"
    assert csv_cell("-2+3") == "'-2+3" and csv_cell("+cmd") == "'+cmd"
    assert csv_cell("\t=x") == "'\t=x" and csv_cell("plain") == "plain"
    assert csv_cell(None) == "" and csv_cell(True) == "true"


def test_errors_leave_nothing_written(run_cli: Callable[..., CliResult], project: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    out = project / "x.csv"
    res = run_cli(["runs", "export", "ffff", "--format", "csv", "--out", str(out)],
                  project=project)
    assert res.code == 2 and res.stderr.startswith("error: no run 'ffff'")
    assert not out.exists()
    res = run_cli(["runs", "export", "--format", "csv", "--out", str(out)], project=project)
    assert res.code == 2 and "nothing to export" in res.stderr
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as without the extra
    res = run_cli(["runs", "export", "aaaa", "--format", "parquet", "--out", str(out)],
                  project=project)
    assert res.code == 2, res.output
    assert res.stderr.splitlines()[0] == ("error: --format parquet needs pyarrow, which is "
                                          "not installed")
    assert "variantctl[parquet]" in res.stderr and not out.exists()


def test_a_secret_is_never_exported(run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """An export is made to be shared: a secret setting's column holds ``***`` (the
    default rule's names and the project's own ``secrets:``), in the labels too."""
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    (p / "variants" / "hosts.yaml").write_text("secrets: [INTERNAL_URL]\n")
    store = RunStore(p / "runs")
    for run_id, token in (("aaaaaaaaaa-1", "hf_aaaa1111"), ("bbbbbbbbbb-1", "hf_bbbb2222")):
        rec = record(run_id, "v" + run_id[0], args={"max-num-seqs": 2},
                     env={"HF_TOKEN": token, "INTERNAL_URL": f"http://{run_id}.corp"})
        store_run(store, rec, [result([measured_level(1, 10)])])
    out = p / "levels.csv"
    res = run_cli(["runs", "export", "aaaa", "bbbb", "--format", "csv", "--out", str(out)],
                  project=p)
    assert res.code == 0, res.output
    text = out.read_text(encoding="utf-8")
    for leaked in ("hf_aaaa1111", "hf_bbbb2222", ".corp"):
        assert leaked not in text
    rows = list(csv.DictReader(text.splitlines()))
    assert {r["setting.env.HF_TOKEN"] for r in rows} == {"***"}
    assert {r["setting.env.INTERNAL_URL"] for r in rows} == {"***"}
