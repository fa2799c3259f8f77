#!/usr/bin/env python3
"""FAKE vLLM server for GPU-only startup paths — a test double, not vLLM.

The real vLLM CPU build cannot reach the GPU-era failures of the seed
(xFormers multi-step, FlashInfer import failure, CUDA-graph capture hang), so
this script prints that era's *real* log lines (vLLM 0.6.3 / Iluvatar CoreX
wording, see shared/reference/vllm-facts.md and seed-experiments.md) with
realistic pauses, then fails, hangs or serves ``/health`` like a real server.

Like vLLM it forks a child ("engine core") in its own process group, so
stopping it must kill the whole group. ``--mark FILE`` records the wall time
at which the decisive line was written (for fail-fast timing tests).

    fake_gpu_server.py --scenario xformers-multistep|flashinfer|graph-hang|healthy|exit
                                  |dist-hang|cpu-hang|slow-config
                       [--port N] [--pace S] [--mark FILE] [--ignore-term] [--busy S]

``dist-hang``: distributed init that never finishes (the workers wait, using no CPU);
``cpu-hang``: a CPU-platform server (``device_config=cpu``) hung in engine
configuration; ``slow-config``: a healthy server whose engine core computes silently
for ``--busy`` seconds after the config line (a slow start under load, not a hang).
"""

from __future__ import annotations

import argparse
import http.server
import os
import signal
import subprocess
import sys
import threading
import time

MODEL = "/models/Qwen3.6-35B-A3B"


def ts() -> str:
    return time.strftime("%m-%d %H:%M:%S")


def info(where: str, msg: str) -> str:
    return f"INFO {ts()} {where}] {msg}"


def warn(where: str, msg: str) -> str:
    return f"WARNING {ts()} {where}] {msg}"


def config_line(*, eager: bool, car_disabled: bool, steps: int, chunked: bool,
                device: str = "cuda") -> str:
    return info(
        "llm_engine.py:237",
        f"Initializing an LLM engine (v0.6.3) with config: model='{MODEL}', "
        f"speculative_config=None, tokenizer='{MODEL}', skip_tokenizer_init=False, "
        "tokenizer_mode=auto, revision=None, override_neuron_config=None, rope_scaling=None, "
        "rope_theta=None, tokenizer_revision=None, trust_remote_code=False, "
        "dtype=torch.bfloat16, max_seq_len=4096, download_dir=None, load_format=LoadFormat.AUTO, "
        "tensor_parallel_size=4, pipeline_parallel_size=1, "
        f"disable_custom_all_reduce={car_disabled}, quantization=None, "
        f"enforce_eager={eager}, kv_cache_dtype=auto, quantization_param_path=None, "
        f"device_config={device}, "
        "decoding_config=DecodingConfig(guided_decoding_backend='outlines'), "
        "observability_config=ObservabilityConfig(otlp_traces_endpoint=None, "
        "collect_model_forward_time=False, collect_model_execute_time=False), seed=0, "
        f"served_model_name={MODEL}, use_v2_block_manager=True, num_scheduler_steps={steps}, "
        f"chunked_prefill_enabled={chunked} multi_step_stream_outputs=True, "
        "enable_prefix_caching=True, use_async_output_proc=True, use_cached_outputs=True, "
        "mm_processor_kwargs=None)",
    )


def preamble(port: int) -> list[str]:
    return [
        info("api_server.py:528", "vLLM API server version 0.6.3"),
        info(
            "api_server.py:529",
            f"args: Namespace(host=None, port={port}, model='{MODEL}', tensor_parallel_size=4)",
        ),
        info("config.py:887", "Defaulting to use mp for distributed inference"),
    ]


def scenario_lines(name: str, port: int) -> tuple[list[str], list[str], str]:
    """(lines before the decisive one, the decisive block, what happens next)."""
    head = preamble(port)
    if name == "xformers-multistep":
        head += [
            config_line(eager=True, car_disabled=True, steps=4, chunked=False),
            info(
                "selector.py:115",
                "Cannot use FlashAttention-2 backend because the vllm.vllm_flash_attn package "
                "is not found. Make sure that vllm_flash_attn was built and installed "
                "(on by default).",
            ),
            info("selector.py:224", "Using XFormers backend."),
        ]
        decisive = [
            "Traceback (most recent call last):",
            '  File "/usr/local/corex/lib64/python3/dist-packages/vllm/worker/'
            'multi_step_worker.py", line 80, in __init__',
            "    raise ValueError(",
            "ValueError: Multi-Step not supported for attention backend: xformers. Set "
            "VLLM_ATTENTION_BACKEND to a value from ['flash-attn', 'rocm-flash-attn', "
            "'flashinfer'].",
        ]
        return head, decisive, "fail"
    if name == "flashinfer":
        head += [
            config_line(eager=True, car_disabled=True, steps=4, chunked=False),
            info("selector.py:224", "Using Flashinfer backend."),
        ]
        decisive = [
            "Traceback (most recent call last):",
            '  File "/usr/local/corex/lib/python3/dist-packages/vllm/attention/backends/'
            'flashinfer.py", line 148, in _get_decode_wrapper',
            "    self._decode_wrapper = BatchDecodeWithPagedKVCacheWrapper(",
            "TypeError: 'NoneType' object is not callable",
        ]
        return head, decisive, "fail"
    if name == "graph-hang":
        head += [
            config_line(eager=False, car_disabled=False, steps=1, chunked=True),
            info("selector.py:224", "Using XFormers backend."),
            info("model_runner.py:1025", "Loading model weights took 16.4506 GB"),
            info("distributed_gpu_executor.py:57", "# GPU blocks: 9362, # CPU blocks: 2048"),
        ]
        decisive = [
            info(
                "model_runner.py:1402",
                "Capturing the model for CUDA graphs. This may lead to unexpected consequences "
                "if the model is not static. To run the model in eager mode, set "
                "'enforce_eager=True' or use '--enforce-eager' in the CLI.",
            ),
            "[W CUDAGraph.cpp:145] Warning: Waiting for pending NCCL work to finish before "
            "starting graph capture. (function operator())",
        ]
        return head, decisive, "hang"
    if name == "healthy":
        head += [
            config_line(eager=True, car_disabled=True, steps=1, chunked=True),
            info("selector.py:224", "Using XFormers backend."),
            info("model_runner.py:1025", "Loading model weights took 16.4506 GB"),
            info("distributed_gpu_executor.py:57", "# GPU blocks: 9362, # CPU blocks: 2048"),
        ]
        decisive = [
            info("launcher.py:19", "Available routes are:"),
            f"INFO:     Started server process [{os.getpid()}]",
            "INFO:     Waiting for application startup.",
            "INFO:     Application startup complete.",
            f"INFO:     Uvicorn running on socket ('0.0.0.0', {port}) (Press CTRL+C to quit)",
        ]
        return head, decisive, "serve"
    if name == "exit":
        head += [config_line(eager=True, car_disabled=True, steps=1, chunked=True)]
        return head, ["something unexpected happened"], "exit"
    if name == "dist-hang":
        # the workers were started and wait for the collective set-up that never completes
        return head, [
            config_line(eager=False, car_disabled=False, steps=1, chunked=True),
            "(VllmWorkerProcess pid=2346) " + info("multiproc_worker_utils.py:215",
                                                   "Worker ready; awaiting tasks"),
        ], "hang"
    if name == "cpu-hang":
        return head, [config_line(eager=True, car_disabled=True, steps=1, chunked=True,
                                  device="cpu")], "hang"
    if name == "slow-config":
        healthy_head, rest, _ = scenario_lines("healthy", port)
        split = len(head) + 1  # the preamble and the engine config line
        return healthy_head[:split], healthy_head[split:] + rest, "busy-serve"
    raise SystemExit(f"unknown scenario {name}")


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        code = 200 if self.path == "/health" else 404
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--pace", type=float, default=0.05, help="seconds between lines")
    ap.add_argument("--lead", type=float, default=0.0, help="seconds before the decisive line")
    ap.add_argument("--mark", help="file to receive the wall time of the decisive line")
    ap.add_argument("--ignore-term", action="store_true", help="ignore SIGTERM (needs KILL)")
    ap.add_argument("--busy", type=float, default=6.0,
                    help="slow-config: seconds the engine core computes before going on")
    # the seed's baseline passes --enforce-eager, and this fake's engine config line says
    # enforce_eager=True as that baseline's did (launch checks the flag against the log)
    ap.add_argument("--enforce-eager", action="store_true")
    args = ap.parse_args()

    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    head, decisive, then = scenario_lines(args.scenario, args.port)
    # an "engine core" child in our process group, as vLLM forks one. vLLM's engine core
    # exits when the API server dies (it watches a death pipe); this one gets SIGKILL from
    # the kernel when its parent dies (PR_SET_PDEATHSIG), so a stand-in that fails or is
    # killed leaves nothing behind. Only the "exit" scenarios keep an orphan on purpose:
    # they test that `stop` ends the rest of a group whose leader is gone, and the test's
    # fixture ends it by identity if the test does not (tests/support/leftovers.py).
    child_code = "import ctypes, os, signal, sys, time\n"
    if then != "exit":
        child_code += (
            "ctypes.CDLL('libc.so.6', use_errno=True).prctl(1, signal.SIGKILL)\n"
            f"if os.getppid() != {os.getpid()}:\n    sys.exit(0)\n")  # parent already gone
    if args.ignore_term:
        child_code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    child_code += "while True:\n    time.sleep(60)\n"
    subprocess.Popen([sys.executable, "-c", child_code])

    server = None
    busy = then == "busy-serve"
    if busy:
        then = "serve"
    if then == "serve" and not busy:
        # bind first, like a real server: the port is taken while it starts
        server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), _Health)
    for line in head:
        print(line, flush=True)
        time.sleep(args.pace)
    if busy:
        # the engine core computes without a word (a CPU-bound child, as torch.compile's
        # compiler processes are), while this process waits for it
        subprocess.run([sys.executable, "-c", "import time\nend = time.time() + "
                        f"{args.busy}\nwhile time.time() < end: pass"], check=True)
        # bound once it computed: a socket nobody serves yet would hold /health probes
        server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), _Health)
    time.sleep(args.lead)
    for line in decisive:
        print(line, flush=True)
    if args.mark:
        with open(args.mark, "w") as fh:
            fh.write(f"{time.time():.6f}\n")
    if then == "fail":
        time.sleep(1.5)  # vLLM keeps tearing down workers for a while after the root cause
        print("RuntimeError: Engine process failed to start. See root cause above.", flush=True)
        return 1
    if then == "exit":
        return 3
    if then == "hang":
        while True:
            time.sleep(3600)
    assert server is not None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
