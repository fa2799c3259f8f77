"""The bench tables in the seeds' layout, on hand-made results with hand-computed cells,
and the live progress on a terminal and off one."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from tests.conftest import make_env
from variantctl.bench.gpu import GpuSample, not_available, summarize
from variantctl.bench.metrics import compute
from variantctl.bench.model import BenchResult, LevelResult, RequestResult, Target
from variantctl.bench.runner import LiveProgress
from variantctl.benchparams import BenchParams
from variantctl.render.bench import result_blocks
from variantctl.terminal.benchview import LiveView
from variantctl.terminal.output import emit


def _req(i: int, start: float, ttft: float, latency: float, tokens: int) -> RequestResult:
    gap = (latency - ttft) / (tokens - 1)
    return RequestResult(index=i, ok=True, start_s=start, ttft_s=ttft, latency_s=latency,
                         chunk_offsets_s=tuple(ttft + k * gap for k in range(tokens)),
                         prompt_tokens=10, output_tokens=tokens, cached_tokens=4,
                         reasoning_tokens=2, usage_seen=True)


def _level(c: int, reqs: list[RequestResult], gpu: bool = True) -> LevelResult:
    dur = max(r.end_s for r in reqs)
    samples = [GpuSample(0.0, 0, 0.0, 1.0, 100.0, 200.0, 50.0, 250.0, 30.0, 210.0),
               GpuSample(1.0, 0, 80.0, 40.0, 150.0, 200.0, 90.0, 250.0, 60.0, 1410.0)]
    return LevelResult(concurrency=c, metrics=compute(reqs, concurrency=c, duration_s=dur),
                       requests=tuple(reqs), errors={},
                       gpu=summarize(samples, monitor="nvidia-smi") if gpu
                       else not_available("no nvidia-smi or ixsmi on host h"))


def _result() -> BenchResult:
    # c=1: TTFT 1 s and 2 s, 11 tokens in 2 s of decode each -> TPOT 200 ms, TPS 5.5
    c1 = _level(1, [_req(0, 0.0, 1.0, 3.0, 11), _req(1, 3.0, 2.0, 4.0, 11)])
    # c=2: both at once, decode 4 s -> TPOT 400 ms (+100 % over c=1)
    c2 = _level(2, [_req(0, 0.0, 1.0, 5.0, 11), _req(1, 0.0, 1.0, 5.0, 11)])
    return BenchResult(params=BenchParams(concurrency=(1, 2), requests=2),
                       target=Target(url="http://x"), started_at="t", levels=(c1, c2))


def _render(results: list[tuple[str, BenchResult]]) -> str:
    env = make_env(Path("/nonexistent"), Path("/nonexistent"))
    emit(env, result_blocks(results))
    return env.stdout.file.getvalue()  # type: ignore[attr-defined,no-any-return]


def test_decode_latency_and_gpu_cells_hand_computed() -> None:
    out = _render([("v", _result())])
    decode = out.split("latency")[0].splitlines()
    row1 = next(line for line in decode if line.startswith("1 "))
    cells = [c.strip() for c in row1.split("│")]
    # conc, requests, success, TTFT P90 s (1 + 0.9 * 1), TPS P10 and P50, aggregate
    # (22 tokens / 7 s: the second request ends at 3 + 4), prompt, cached, reasoning
    assert cells == ["1", "2/2", "100%", "1.90", "5.50", "5.50", "3.14", "20", "8", "4"]
    latency = out.split("latency")[1].split("throughput")[0]
    row2 = next(line for line in latency.splitlines() if line.startswith("2 "))
    assert "400/400/400" in row2 and "+100.0%" in row2
    gpu = out.split("GPU:")[1]
    # util avg 40, busy avg 80 (the idle sample dropped), max 80; power 70/90/90
    assert "40/80/80" in gpu and "70/90/90" in gpu and "1/2" in gpu
    assert "vLLM /metrics: not available" in out


def test_two_variants_share_each_table_and_missing_gpus_are_one_line() -> None:
    a, b = _result(), _result()
    b = BenchResult(params=b.params, target=b.target, started_at="t",
                    levels=tuple(_level(lv.concurrency, list(lv.requests), gpu=False)
                                 for lv in b.levels))
    out = _render([("cpu-eager", b), ("cpu-base", b)])
    decode = out.split("latency")[0]
    rows = [line.split()[0] for line in decode.splitlines()
            if line.startswith("cpu-") and "│" in line]
    assert rows == ["cpu-eager", "cpu-eager", "cpu-base", "cpu-base"]
    assert "GPU: not available — no nvidia-smi or ixsmi on host h" in out
    out = _render([("cpu-eager", a), ("cpu-base", b)])
    assert "not available: no nvidia-smi or ixsmi on host h" in out.split("GPU:")[1]


class Tty(io.StringIO):
    """A buffer that says it is a terminal (or, with ``tty=False``, that it is not)."""

    def __init__(self, tty: bool = True):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_live_progress_on_a_terminal_and_off_one() -> None:
    p = LiveProgress(concurrency=2, done=3, total=8, errors=1, tokens_per_s_now=42.5,
                     elapsed_s=1.25)
    buf = Tty()
    env = make_env(None, Path("/nonexistent"))
    env.stderr = Console(file=buf, force_terminal=True, width=100, color_system=None)
    with LiveView(env) as view:
        assert view.live is not None
        view.progress("v", p)
    assert "v c=2: 3/8 done, 1 failed, 42.5 tok/s now, 1.2 s" in buf.getvalue()
    # FORCE_COLOR makes rich call a pipe a terminal: colour yes, redrawing no — one
    # line per level, nothing redrawn into the log
    for forced in (io.StringIO(), Tty(tty=False)):
        env = make_env(None, Path("/nonexistent"))
        env.stderr = Console(file=forced, force_terminal=True, width=100)
        with LiveView(env) as view:
            assert view.live is None
            view.progress("v", p)
            view.note("next level")
        assert forced.getvalue().splitlines() == ["v c=2: 3/8 done, 1 failed, 1.2 s",
                                                  "next level"]
    env = make_env(None, Path("/nonexistent"))
    with LiveView(env) as view:
        view.progress("v", p)
        view.note("next level")
    err = env.stderr.file.getvalue()  # type: ignore[attr-defined]
    assert err.splitlines() == ["v c=2: 3/8 done, 1 failed, 1.2 s", "next level"]
