"""Pure pieces of the launch layer: command quoting, host layout, server records."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from variantctl.runs.record import HostLayout, ServerRecord, safe_name, stamp_of
from variantctl.shellquote import build_command, quote_path


def test_build_command_survives_a_real_shell(tmp_path: Path) -> None:
    hostile = "a b'c\"$HOME`id`;\n*"
    cmd = build_command(["printf", "%s|%s", hostile], env={"V": hostile}, cwd=str(tmp_path))
    # the shell starts without a V of its own (a developer's shell may export one)
    clean = {k: v for k, v in os.environ.items() if k != "V"}
    out = subprocess.run(["sh", "-c", cmd + ' && printf "|%s" "$V"'], capture_output=True,
                         text=True, check=True, env=clean)
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
    # escaped injectively (%XX), never collapsed: `co l` and `co_l` are two variants
    assert lay.log("sched4 flash/x", stamp) == "/w/logs/sched4%20flash%2Fx-20260714T101500Z.log"
    assert lay.pid_file("a") == "/w/run/a.pid" and lay.record("a") == "/w/run/a.json"
    assert safe_name("../..") == "%2E.%2F.."
    rec = ServerRecord("a", "h", 1, 2, "/l", "/s", "/p", when.isoformat())
    assert ServerRecord.from_dict(json.loads(json.dumps(rec.to_dict()))) == rec
