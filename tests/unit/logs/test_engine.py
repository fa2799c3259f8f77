"""Normaliser, matcher, phases, facts and streaming behaviour on small, targeted logs."""

from __future__ import annotations

import pytest

from variantctl.config.catalog import default_catalog
from variantctl.logs.classify import classify_text
from variantctl.logs.engine import fill, scanner
from variantctl.logs.normalize import normalize, split_header, timestamp_of
from variantctl.logs.stream import StreamClassifier

CAT = default_catalog()

OLD_CONFIG = (
    "INFO 10-20 04:12:31 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: "
    "model='/m', speculative_config=None, tokenizer='/m', dtype=torch.bfloat16, "
    "max_seq_len=100000, "
    "tensor_parallel_size=4, pipeline_parallel_size=1, disable_custom_all_reduce=True, "
    "quantization=None, enforce_eager=True, kv_cache_dtype=auto, seed=0, "
    "decoding_config=DecodingConfig(guided_decoding_backend='outlines'), num_scheduler_steps=4, "
    "chunked_prefill_enabled=False multi_step_stream_outputs=True, enable_prefix_caching=True, "
    "use_async_output_proc=True, use_cached_outputs=True"
)


def lines(*items: str) -> str:
    return "\n".join(items) + "\n"


# -- normaliser ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("\x1b[32mINFO\x1b[0m 10-20 04:12:31 x.py:1] hi", "INFO 10-20 04:12:31 x.py:1] hi"),
        ("^[[0;36mINFO^[[0m 10-20 04:12:31 x.py:1] hi", "INFO 10-20 04:12:31 x.py:1] hi"),
        ("(VllmWorker rank=1 pid=4242) ERROR boom", "ERROR boom"),
        ("(VllmWorkerProcess pid=77) INFO x", "INFO x"),
        ("(EngineCore_DP0 pid=9) INFO x", "INFO x"),
        ("(RayWorkerWrapper pid=5, ip=10.0.0.2) [rank0]: err", "err"),
        ("vllm-qwen-1  | 2024-10-20T04:12:31.123Z (APIServer pid=1) INFO x", "INFO x"),
        ("2024-10-20 04:12:31,123 INFO x", "INFO x"),
        ("(APIServer pid=31)   File \"a.py\", line 1", '  File "a.py", line 1'),
        ("bar  10%\rbar 100%\rINFO done", "bar  10% bar 100% INFO done"),
        ("plain text  ", "plain text"),
        ("Oct 20 04:12:31 gpu7 vllm[1234]:   File \"x.py\"", '  File "x.py"'),
        ("[pod/vllm-0/vllm] INFO x", "INFO x"),
    ],
)
def test_normalize(raw: str, want: str) -> None:
    assert normalize(raw) == want


def test_header_and_timestamps() -> None:
    fused = "100%|███| 4/4 [00:02<00:00]INFO 08-07 16:06:47 [selector.py:189] Using"
    level, ts, msg = split_header(fused)
    assert (level, ts, msg) == ("INFO", "08-07 16:06:47", "Using")
    a = timestamp_of("INFO 10-20 04:12:31 llm_engine.py:237] x")
    b = timestamp_of("WARNING 10-20 04:13:01 [core.py:1] x")
    assert a is not None and b is not None and a[0] == b[0] == "logger" and b[1] - a[1] == 30
    iso = timestamp_of("2024-10-20T04:12:31.5Z something")
    assert iso is not None and iso[0] == "iso"
    assert timestamp_of("no time here") is None


def test_fill_optional_parts() -> None:
    assert fill("a[[ ({x})]] b {y}", {"x": "1", "y": "2"}) == "a (1) b 2"
    assert fill("a[[ ({x})]] b {y}", {"y": "2"}) == "a b 2"
    assert fill("{missing}", {}) == "?"


def test_scanner_finds_every_keyword_even_overlapping() -> None:
    sc = scanner(CAT)
    for sig in CAT.signatures:
        for kw in sig.keywords:
            assert kw in sc.keywords_in(f"xx {kw} yy"), kw
    both = "nccl error: ncclinternalerror"
    assert {"nccl error", "ncclinternalerror"} <= sc.keywords_in(both)


# -- verdicts --------------------------------------------------------------------------------


def test_facts_from_the_old_config_line_with_its_missing_comma() -> None:
    backend = "INFO 10-20 04:12:33 selector.py:116] Using XFormers backend."
    r = classify_text(lines(OLD_CONFIG, backend), CAT)
    f = r.facts
    assert (f.vllm_version, f.engine, f.attention_backend) == ("0.6.3", "V0", "XFormers")
    assert f.config["enforce_eager"] is True
    assert f.config["disable_custom_all_reduce"] is True
    assert f.config["tensor_parallel_size"] == 4
    assert f.config["max_seq_len"] == 100000
    assert f.config["num_scheduler_steps"] == 4
    assert f.config["chunked_prefill_enabled"] is False
    assert f.config["enable_chunked_prefill"] is False  # one name across eras
    assert f.config["enable_prefix_caching"] is True
    assert f.config["use_async_output_proc"] is True
    assert f.config["model"] == "/m"
    assert f.config_line == 1


def test_capacity_graph_and_startup_time_facts() -> None:
    text = lines(
        "INFO 10-20 04:12:00 api_server.py:526] vLLM API server version 0.6.3",
        OLD_CONFIG,
        "INFO 10-20 04:13:05 executor.py:57] # GPU blocks: 23648, # CPU blocks: 4096",
        "INFO 10-20 04:13:05 x.py:61] Maximum concurrency for 4096 tokens per request: 92.38x",
        "INFO 10-20 04:13:08 model_runner.py:1395] Capturing the model for CUDA graphs. This may",
        "INFO 10-20 04:13:20 model_runner.py:1523] Graph capturing finished in 12 secs.",
        "INFO 10-20 04:13:21 launcher.py:19] Available routes are:",
        "INFO:     Application startup complete.",
        "INFO:     Uvicorn running on socket ('0.0.0.0', 8000) (Press CTRL+C to quit)",
    )
    r = classify_text(text, CAT)
    assert (r.kind, r.signature, r.phase) == ("ok", "startup-ok", "ready")
    f = r.facts
    assert (f.gpu_blocks, f.cpu_blocks) == (23648, 4096)
    assert (f.max_concurrency, f.max_concurrency_tokens) == (92.38, 4096)
    assert f.graph_capture_seconds == 12.0
    assert f.startup_seconds == 81.0
    assert f.server_address == "('0.0.0.0', 8000)"


def test_seed_graph_capture_hang_excerpt() -> None:
    text = lines(
        "INFO 07-14 10:00:00 model_runner.py:1395] Capturing the model for CUDA graphs. "
        "This may lead "
        "to unexpected consequences if the model is not static.",
        "[W CUDAGraph.cpp:145] Warning: Waiting for pending NCCL work to finish before starting "
        "graph capture. (function operator())",
    )
    r = classify_text(text, CAT)
    assert (r.kind, r.signature, r.phase) == ("hang", "cuda-graph-capture-hang", "graph-capture")
    assert [e.line for e in r.evidence] == [1, 2]
    assert "--enforce-eager" in r.remediation
    # the same log from a process known to have exited is not a hang
    assert classify_text(text, CAT, exited=True).kind == "unknown"


def test_graph_capture_that_finished_is_not_a_graph_hang() -> None:
    text = lines(
        "INFO 10-20 04:13:08 model_runner.py:1395] Capturing the model for CUDA graphs. x",
        "INFO 10-20 04:13:20 model_runner.py:1523] Graph capturing finished in 12 secs.",
    )
    # a process known to still run: the API server start hangs
    r = classify_text(text, CAT, exited=False)
    assert (r.kind, r.signature, r.phase) == ("hang", "api-server-start-hang", "api-server-start")
    # an excerpt judged after the fact: the engine finished, nothing failed -> a weak ok
    r = classify_text(text, CAT)
    assert (r.kind, r.signature) == ("ok", "startup-ok")
    assert "weak evidence" in r.note


def test_hard_wrapped_sentence_still_matches_with_both_lines_as_evidence() -> None:
    text = lines(
        "ValueError: max_num_batched_tokens (8192) is smaller than",
        "max_model_len (100000). This effectively limits the maximum sequence length.",
    )
    r = classify_text(text, CAT)
    assert r.signature == "batched-tokens-below-model-len"
    assert dict(r.captures) == {"batched": "8192", "model_len": "100000"}
    assert [e.line for e in r.evidence] == [1, 2]


def test_generic_wrapper_never_wins_and_root_cause_in_the_middle() -> None:
    text = lines(
        "(APIServer pid=1) INFO 06-14 04:57:00 [api_server.py:1] vLLM API server version 0.10.1",
        "(EngineCore_0 pid=2) ERROR 06-14 04:57:02 [core.py:700] EngineCore failed to start.",
        "(EngineCore_0 pid=2) ERROR 06-14 04:57:02 [core.py:700] Traceback "
        "(most recent call last):",
        '(VllmWorker TP1 pid=3) ERROR 06-14 04:57:02 [w.py:1] Worker failed with error',
        '(EngineCore_0 pid=2) ERROR 06-14 04:57:02 [core.py:700]   File "x.py", line 3, in f',
        "(EngineCore_0 pid=2) ERROR 06-14 04:57:02 [core.py:700] ValueError: Total number of "
        "attention heads (28) must be divisible by tensor parallel size (3).",
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above.",
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
    )
    r = classify_text(text, CAT, exited=True)
    assert r.signature == "tp-heads-not-divisible"
    assert r.evidence[0].line == 6
    # the wrappers are kept as "also"; the traceback's own record of the cause line is not
    assert {a.signature for a in r.also} == {"engine-startup-failed"}


def test_two_specific_failures_priority_then_order() -> None:
    text = lines(
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total",
    )
    r = classify_text(text, CAT)
    assert r.signature == "cuda-oom"  # the OOM is the cause, the NCCL error its echo
    assert r.captures["alloc"] == "2.00 GiB"
    assert [a.signature for a in r.also] == ["nccl-error"]


def test_error_recovered_from_is_not_a_failure() -> None:
    text = lines(
        OLD_CONFIG,
        "ERROR 10-20 04:12:40 plugins.py:52] Failed to load plugin",
        "Traceback (most recent call last):",
        '  File "p.py", line 1, in <module>',
        "ModuleNotFoundError: No module named 'flashinfer'",
        "INFO 10-20 04:12:45 model_runner.py:1056] Starting to load model /m...",
        "INFO:     Application startup complete.",
    )
    r = classify_text(text, CAT)
    assert (r.kind, r.signature) == ("ok", "startup-ok")
    assert {a.signature for a in r.also} == {"flashinfer-unavailable"}


def test_truncated_excerpts_are_unknown() -> None:
    cut = lines(OLD_CONFIG, "Traceback (most recent call last):", '  File "x.py", line 1, in f',
                "    self.model_runner.profile_run()")
    r = classify_text(cut, CAT)
    assert (r.kind, r.signature) == ("unknown", None)
    assert "cut off" in r.message
    assert classify_text("", CAT).kind == "unknown"
    assert classify_text(lines("some unrelated text"), CAT).kind == "unknown"


def test_context_condition_all_within_window() -> None:
    bare = lines("TypeError: 'NoneType' object is not callable")
    assert classify_text(bare, CAT).signature != "flashinfer-unavailable"
    seed = lines(
        '  File "/v/attention/backends/flashinfer.py", line 157, in __init__',
        "    self._decode_wrapper = BatchDecodeWithPagedKVCacheWrapper(",
        "TypeError: 'NoneType' object is not callable",
    )
    assert classify_text(seed, CAT).signature == "flashinfer-unavailable"


def test_xformers_multistep_captures_any_backend() -> None:
    for backend in ("xformers", "torch-sdpa", "XFORMERS", "TORCH_SDPA"):
        r = classify_text(lines(
            f"ValueError: Multi-step not supported for attention backend: {backend}. Set "
            "VLLM_ATTENTION_BACKEND to a value from ['flash-attn', 'rocm-flash-attn']."
        ), CAT)
        assert (r.signature, r.captures["backend"]) == ("xformers-multistep-unsupported", backend)


# -- streaming -------------------------------------------------------------------------------


def test_stream_decides_on_the_decisive_line_and_only_once() -> None:
    now = [0.0]
    clf = StreamClassifier(CAT, stall_seconds=10, clock=lambda: now[0])
    assert clf.feed(OLD_CONFIG) is None
    assert clf.phase == "engine-config"
    assert clf.facts.config["enforce_eager"] is True
    v = clf.feed("ValueError: Total number of attention heads (28) must be divisible by tensor "
                 "parallel size (3).")
    assert v is not None and (v.kind, v.signature) == ("failed", "tp-heads-not-divisible")
    assert clf.feed("RuntimeError: Engine process failed to start.") is None
    assert clf.last_line == "RuntimeError: Engine process failed to start."
    now[0] += 100
    assert clf.tick() is None  # already decided
    assert clf.finish(exited=True).signature == "tp-heads-not-divisible"


def test_stream_stall_names_the_phase() -> None:
    now = [0.0]
    clf = StreamClassifier(CAT, stall_seconds=30, clock=lambda: now[0])
    clf.feed("INFO 10-20 04:13:08 model_runner.py:1395] Capturing the model for CUDA graphs. x")
    clf.feed("[W CUDAGraph.cpp:145] Warning: Waiting for pending NCCL work to finish before "
             "starting graph capture. (function operator())")
    now[0] += 29.9
    assert clf.tick() is None
    now[0] += 0.2
    v = clf.tick()
    assert v is not None and (v.kind, v.signature, v.phase) == (
        "hang", "cuda-graph-capture-hang", "graph-capture")
    assert clf.tick() is None


def test_stream_stall_before_any_phase_and_generic_failure() -> None:
    now = [0.0]
    clf = StreamClassifier(CAT, stall_seconds=5, clock=lambda: now[0])
    clf.feed("Loading something")
    now[0] += 6
    v = clf.tick()
    assert v is not None and (v.kind, v.signature, v.phase) == ("hang", "startup-stalled",
                                                                 "not-started")
    now[0] = 0.0
    clf = StreamClassifier(CAT, stall_seconds=5, clock=lambda: now[0])
    clf.feed(OLD_CONFIG)
    wrapper = "RuntimeError: Engine core initialization failed. See root cause above."
    assert clf.feed(wrapper) is None
    now[0] += 6
    v = clf.tick()
    assert v is not None and (v.kind, v.signature) == ("failed", "engine-startup-failed")


def test_stream_without_stall_timeout_never_hangs() -> None:
    now = [0.0]
    clf = StreamClassifier(CAT, clock=lambda: now[0])
    clf.feed(OLD_CONFIG)
    now[0] += 1e6
    assert clf.tick() is None
    assert clf.finish(exited=False).kind == "hang"
    assert clf.finish(exited=True).kind == "unknown"


def test_stream_holds_a_match_with_open_captures_for_one_line_or_settle_time() -> None:
    now = [0.0]
    clf = StreamClassifier(CAT, clock=lambda: now[0], settle_seconds=0.5)
    assert clf.feed("ValueError: Bfloat16 is only supported on GPUs with compute capability of "
                    "at least 8.0. Your Tesla V100-SXM2-32GB GPU has compute capab") is None
    v = clf.feed("ility 7.0. You can use float16 instead")
    assert v is not None and v.captures["capability"] == "7.0"
    clf = StreamClassifier(CAT, clock=lambda: now[0], settle_seconds=0.5)
    assert clf.feed("OSError: [Errno 98] Address already in use") is None
    now[0] += 0.4
    assert clf.tick() is None
    now[0] += 0.2
    v = clf.tick()
    assert v is not None and v.signature == "port-in-use"


def test_result_json_shape_is_stable() -> None:
    r = classify_text(lines(OLD_CONFIG, "OSError: [Errno 98] Address already in use"), CAT)
    data = r.to_json()
    assert list(data) == ["schema", "kind", "signature", "title", "message", "remediation",
                          "phase", "captures", "evidence", "warnings", "also", "facts", "lines",
                          "catalog_version", "note"]
    assert data["schema"] == "variantctl.classify/1"
    assert data["evidence"] == [{"line": 2, "text": "OSError: [Errno 98] Address already in use"}]
    assert data["facts"]["config"]["enforce_eager"] is True
    assert set(data["facts"]) >= {"vllm_version", "engine", "attention_backend", "config",
                                  "gpu_blocks", "kv_cache_tokens", "max_concurrency",
                                  "graph_capture_seconds", "startup_seconds"}


def test_stream_waits_on_failures_that_were_only_logged_as_warnings() -> None:
    now = [0.0]
    clf = StreamClassifier(CAT, stall_seconds=10, clock=lambda: now[0])
    clf.feed(OLD_CONFIG)
    soft = "WARNING 10-20 04:12:40 utils.py:1] No module named 'flashinfer'; using another backend"
    assert clf.feed(soft) is None
    v = clf.feed("INFO:     Application startup complete.")
    assert v is not None and v.kind == "ok"
    assert [a.signature for a in v.also] == ["flashinfer-unavailable"]


def test_crlf_line_ends_are_not_part_of_the_evidence() -> None:
    r = classify_text("a\r\nOSError: [Errno 98] Address already in use\r\n", CAT)
    assert r.evidence[0].text == "OSError: [Errno 98] Address already in use"
    assert r.evidence[0].line == 2


def test_a_restart_appended_to_the_log_is_judged_on_the_last_start() -> None:
    first = [
        "INFO 10-20 04:12:00 api_server.py:526] vLLM API server version 0.6.3",
        OLD_CONFIG,
        "ValueError: Total number of attention heads (28) must be divisible by tensor "
        "parallel size (3).",
    ]
    second = [
        "INFO 10-20 04:20:00 api_server.py:526] vLLM API server version 0.6.3",
        OLD_CONFIG.replace("04:12:31", "04:20:05"),
        "INFO 10-20 04:21:00 launcher.py:19] Available routes are:",
        "INFO:     Application startup complete.",
    ]
    r = classify_text(lines(*first, *second), CAT)
    assert (r.kind, r.signature) == ("ok", "startup-ok")
    assert [a.signature for a in r.also] == ["tp-heads-not-divisible"]
    assert r.facts.startup_seconds == 60.0  # from the second start
    r = classify_text(lines(*second, *first), CAT)
    assert (r.kind, r.signature) == ("failed", "tp-heads-not-divisible")


def test_interleaved_tracebacks_of_two_workers() -> None:
    w0 = "(VllmWorker rank=0 pid=100) "
    w1 = "(VllmWorker rank=1 pid=101) "
    text = lines(
        OLD_CONFIG,
        w0 + "ERROR 10-20 04:13:40 [w.py:1] Traceback (most recent call last):",
        w1 + "Traceback (most recent call last):",
        w0 + 'ERROR 10-20 04:13:40 [w.py:1]   File "/v/worker.py", line 9, in execute',
        w1 + '  File "/v/model_runner.py", line 1234, in profile_run',
        w0 + "ERROR 10-20 04:13:40 [w.py:1]     self.all_reduce(x)",
        w1 + "    hidden = self.mlp(hidden)",
        w1 + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB.",
        w0 + "ERROR 10-20 04:13:41 [w.py:1] RuntimeError: NCCL error: unhandled system error",
        "RuntimeError: Engine core initialization failed. See root cause above.",
    )
    r = classify_text(text, CAT, exited=True)
    assert (r.signature, r.evidence[0].line, r.captures["alloc"]) == ("cuda-oom", 8, "1.50 GiB")
    assert [a.signature for a in r.also] == ["nccl-error", "engine-startup-failed"]
