"""A sweep whose benchmark settings cannot work stops after the first point (issue 20.7).

``input_len`` at or below what the chat template adds to every prompt is found only on a
running server (its tokenizer counts the template). Before, every point launched its
server, then failed the same way; now the first point's failure stops the others before
they start. End to end on this machine with the labelled FAKE OpenAI server (its "chat
template" adds tests/support/fake_openai_server.py CHAT_OVERHEAD tokens).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.support.bench_project import make_bench_project
from tests.support.fake_openai_server import CHAT_OVERHEAD
from tests.support.sshd import free_port
from variantctl.exitcodes import ExitCode
from variantctl.runs.store import RunStore

Run = Callable[..., CliResult]


@pytest.fixture
def project(tmp_path: Path, run_cli: Run) -> Iterator[Path]:
    root = make_bench_project(tmp_path / "proj", gpu_monitor=False)
    (root / "sweeps").mkdir()
    yield root
    run_cli(["stop", "--all", "--grace", "2"], project=root)


def test_unusable_bench_settings_stop_the_sweep_after_the_first_point(
        run_cli: Run, project: Path) -> None:
    (project / "sweeps" / "short.yaml").write_text(
        f"base: fake-openai\nhosts: [local]\nport: {free_port()}\n"
        "grid:\n  args:\n    itl-ms: [5, 6, 7]\n"
        f"bench:\n  prompts: [random]\n  input_len: {CHAT_OVERHEAD}\n  output_len: 4\n"
        "  concurrency: [1]\n  requests: 2\n  warmup: 'off'\n")
    res = run_cli(["sweep", "short", "--json"], project=project)
    assert res.code == ExitCode.FAILED, res.output
    first, *others = json.loads(res.stdout)["points"]
    assert first["status"] == "error"
    assert f"--input-len {CHAT_OVERHEAD} is too small" in first["message"]
    assert [p["status"] for p in others] == ["error", "error"]
    for p in others:
        assert p["message"].startswith("not started: the benchmark settings cannot work "
                                       f"(found on {first['name']}: --input-len")
        assert p["run_id"] is None
    assert "the sweep's other points are not started" in res.stderr
    # one server started, not three
    assert len(list(RunStore(project / "runs").dirs())) == 1
