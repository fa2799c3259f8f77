"""The archived verdict is the one printed (issue 19.11): a server whose /health
answers 200 before the log reader has caught up is READY with the log's own
explanation (read to its end first), never a hang signature of the phase the reader
had reached."""

from __future__ import annotations

import http.server
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_gpu_server import scenario_lines
from variantctl.config.catalog import default_catalog
from variantctl.launch.classify import ClassifierAdapter
from variantctl.launch.launcher import ProcessLauncher
from variantctl.launch.watch import READY, watch
from variantctl.runs.record import ServerRecord
from variantctl.runs.run import RunVerdict
from variantctl.targets.local import LocalTarget


class _Healthy(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def healthy_port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Healthy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def _classifier() -> ClassifierAdapter:
    return ClassifierAdapter.create(stall_seconds=30, clock=time.monotonic,
                                    catalog=default_catalog())


def test_ready_before_the_log_shows_it_carries_no_hang_signature() -> None:
    head, _decisive, _ = scenario_lines("healthy", 8000)
    c = _classifier()
    for line in head:
        c.feed(line)
    d = c.ready()
    told = RunVerdict.of(d.verdict, d.result, waiting=d.waiting)
    assert d.verdict == "ready" and told.signature is None and told.title == ""


def test_watch_reads_the_log_to_its_end_before_the_ready_verdict(
        tmp_path: Path, healthy_port: int) -> None:
    head, decisive, _ = scenario_lines("healthy", healthy_port)
    # more than one read's worth of log before the lines that say the server is up:
    # the first read stops short of them, /health already answers 200
    filler = [f"INFO 01-01 00:00:00 loader.py:1] loading shard {i:07d} " + "x" * 60
              for i in range(20000)]
    log = tmp_path / "server.log"
    log.write_text("\n".join(head + filler + decisive) + "\n")
    assert log.stat().st_size > 1 << 20
    # the record's process group is this one, whose thread serves /health (a server
    # whose port another process holds is not ready: test_port_taken.py)
    record = ServerRecord(variant="v", host="local", pid=os.getpgrp(), port=healthy_port,
                          log=str(log), script="", pid_file="", started_at="")
    out = watch(LocalTarget(), record, _classifier(), timeout=30,
                launcher=ProcessLauncher())
    assert out.verdict == READY
    assert out.decision.result is not None and out.decision.result.signature == "startup-ok"
    assert out.lines == len(head) + len(filler) + len(decisive)
