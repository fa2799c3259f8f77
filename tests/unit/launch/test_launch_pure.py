"""Pure pieces of the launch layer: expect checks, command quoting, layout, archive numbering."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from variantctl.launch.archive import new_run_dir, read_run_json, write_run_json
from variantctl.launch.core import check_expect, fact_value
from variantctl.runs.record import HostLayout, ServerRecord, safe_name, stamp_of
from variantctl.targets.ssh import build_command, quote_path


def test_check_expect_compares_typed_facts() -> None:
    facts = {"vllm_version": "0.32.0", "config": {"enforce_eager": True, "max_seq_len": 512}}
    assert fact_value(facts, "enforce_eager") is True
    assert fact_value(facts, "vllm_version") == "0.32.0"
    checks = check_expect({"enforce_eager": False, "max_seq_len": 512, "vllm_version": "0.32.0",
                           "missing": 1}, facts)
    assert [(c.fact, c.ok) for c in checks] == [
        ("enforce_eager", False), ("max_seq_len", True), ("vllm_version", True),
        ("missing", False)]
    assert checks[0].to_json() == {"fact": "enforce_eager", "expected": False, "actual": True,
                                   "ok": False}
    assert check_expect({"enforce_eager": "true"}, facts)[0].ok


def test_build_command_survives_a_real_shell(tmp_path: Path) -> None:
    hostile = "a b'c\"$HOME`id`;\n*"
    cmd = build_command(["printf", "%s|%s", hostile], env={"V": hostile}, cwd=str(tmp_path))
    out = subprocess.run(["sh", "-c", cmd + ' && printf "|%s" "$V"'], capture_output=True,
                         text=True, check=True)
    assert out.stdout == f"{hostile}||"  # V is set for the program only
    env_cmd = build_command(["sh", "-c", 'printf %s "$V"'], env={"V": hostile})
    assert subprocess.run(["sh", "-c", env_cmd], capture_output=True, text=True,
                          check=True).stdout == hostile


def test_quote_path_keeps_tilde_for_the_remote_shell() -> None:
    assert quote_path("~/x y") == "\"$HOME\"/'x y'"
    assert quote_path("~") == '"$HOME"'
    assert quote_path("/a b") == "'/a b'"
    home = subprocess.run(["sh", "-c", "printf %s " + quote_path("~/x y")], capture_output=True,
                          text=True, check=True).stdout
    assert home == str(Path.home() / "x y")


def test_layout_and_record_round_trip() -> None:
    lay = HostLayout("/w")
    when = datetime(2026, 7, 14, 10, 15, tzinfo=timezone.utc)
    stamp = stamp_of(when)
    assert lay.log("sched4 flash/x", stamp) == "/w/logs/sched4_flash_x-20260714T101500Z.log"
    assert lay.pid_file("a") == "/w/run/a.pid" and lay.record("a") == "/w/run/a.json"
    assert safe_name("../..") == ".._.."
    rec = ServerRecord("a", "h", 1, 2, "/l", "/s", "/p", when.isoformat())
    assert ServerRecord.from_dict(json.loads(json.dumps(rec.to_dict()))) == rec


def test_run_dirs_are_numbered_per_day_and_variant(tmp_path: Path) -> None:
    when = datetime(2026, 7, 14, tzinfo=timezone.utc)
    a = new_run_dir(tmp_path / "runs", "sched4", when)
    b = new_run_dir(tmp_path / "runs", "sched4", when)
    c = new_run_dir(tmp_path / "runs", "other", when)
    assert [a.name, b.name, c.name] == ["2026-07-14-sched4-1", "2026-07-14-sched4-2",
                                        "2026-07-14-other-1"]
    write_run_json(a, {"x": 1})
    assert read_run_json(a) == {"x": 1}
    assert read_run_json(b) is None
    assert [p.name for p in a.iterdir()] == ["run.json"]
