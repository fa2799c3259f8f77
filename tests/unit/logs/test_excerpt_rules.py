"""Verdict rules for excerpts, requested vs effective configuration, --suggest, and the
normalisation of field-log damage (issue 12). The before/after fixtures of every rule
are in tests/fixtures/logs/excerpts/ (checked by test_fixtures.py); these tests check
what a fixture's expected.yaml cannot say."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from variantctl.config.catalog import default_catalog
from variantctl.config.signatures import nested_repeat
from variantctl.logs.classify import classify_text
from variantctl.logs.expect import compare
from variantctl.logs.model import compile_pattern
from variantctl.logs.normalize import normalize

CAT = default_catalog()
EXCERPTS = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "excerpts"

NAMESPACE = ("INFO 10-20 04:12:31 api_server.py:527] args: Namespace(host=None, port=8000, "
             "model='/models/q', enforce_eager=False, tensor_parallel_size=4, "
             "max_model_len=4096, dtype='auto', num_scheduler_steps=1, quantization=None)")
FORK_CONFIG = ("INFO 10-20 04:12:32 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with "
               "config: model='/models/q', dtype=torch.float16, max_seq_len=4096, "
               "tensor_parallel_size=4, enforce_eager=True, num_scheduler_steps=1, seed=0")
NON_DEFAULT = ("(APIServer pid=1) INFO 11-29 11:19:01 [utils.py:253] non-default args: "
               "{'model': '/m', 'max_model_len': 4096, 'max_num_batched_tokens': 64, "
               "'enable_chunked_prefill': False, 'compilation_config': {'level': 3}}")
SCHED_FAIL = ("  Value error, max_num_batched_tokens (64) is smaller than max_model_len (4096). "
              "This effectively limits [type=value_error, input_value=ArgsKwargs((), {}), "
              "input_type=ArgsKwargs]")


def test_requested_vs_effective_flags_the_forked_default() -> None:
    r = classify_text(NAMESPACE + "\n" + FORK_CONFIG + "\n", CAT)
    assert r.facts.requested["enforce_eager"] is False
    assert r.facts.requested["max_seq_len"] == 4096  # max_model_len under the config's name
    assert "quantization" not in r.facts.requested  # None: left at its default
    diffs = {d["key"]: d for d in r.facts.config_differences}
    assert set(diffs) == {"enforce_eager"}  # dtype 'auto' was resolved, not overridden
    assert diffs["enforce_eager"]["effective"] is True
    assert "requested enforce_eager=False; the engine ran with True" in diffs["enforce_eager"][
        "message"]
    data = r.to_json()["facts"]
    assert data["requested"]["enforce_eager"] is False
    assert data["config_differences"][0]["key"] == "enforce_eager"


def test_facts_of_a_server_that_failed_before_its_engine_config() -> None:
    r = classify_text(NON_DEFAULT + "\n" + SCHED_FAIL + "\n", CAT)
    assert (r.kind, r.signature) == ("failed", "batched-tokens-below-model-len")
    assert r.facts.config == {}
    assert r.facts.get("max_num_batched_tokens") == 64
    assert r.facts.get("enable_chunked_prefill") is False
    # --expect works from the requested values when no engine config line was printed
    mism = compare(r.facts, {}, {"max-model-len": 2048})
    assert [(m.key, m.expected, m.actual) for m in mism] == [("max_seq_len", 2048, 4096)]


def test_expect_uses_the_effective_value_where_both_exist() -> None:
    r = classify_text(NAMESPACE + "\n" + FORK_CONFIG + "\n", CAT)
    mism = compare(r.facts, {"enforce_eager": False}, {})
    assert [(m.key, m.actual) for m in mism] == [("enforce_eager", True)]
    mism = compare(r.facts, {}, {})  # no --enforce-eager: expected off, the engine ran on
    assert [(m.key, m.expected, m.actual) for m in mism] == [("enforce_eager", False, True)]


def test_ok_without_readiness_says_which_evidence_decided() -> None:
    text = (EXCERPTS / "startup-ok--route-list-only.log").read_text()
    r = classify_text(text, CAT)
    assert r.kind == "ok" and "Available routes" in r.evidence[0].text
    assert "not in the log" in r.note and "route list" in r.note
    assert r.to_json()["note"] == r.note
    # a process known to still run after its routes is not hung either (the server is up)
    assert classify_text(text, CAT, exited=False).kind == "ok"


def test_a_log_that_stops_in_an_engine_phase_is_a_possible_hang() -> None:
    text = (EXCERPTS / "cuda-graph-capture-hang--debug-level.log").read_text()
    r = classify_text(text, CAT)
    assert r.kind == "hang" and r.note.startswith("possible hang")
    assert classify_text(text, CAT, exited=False).note == ""  # a live process: a hang


def test_error_after_ready_ends_the_server_but_a_request_error_does_not() -> None:
    r = classify_text((EXCERPTS / "port-in-use--after-startup-complete.log").read_text(), CAT)
    assert "after the server reported ready" in r.note
    r = classify_text((EXCERPTS / "startup-ok--request-error-after-ready.log").read_text(), CAT)
    assert r.kind == "ok"
    assert [a.signature for a in r.also] == ["model-not-found-or-unauthorized"]


def test_cut_traceback_in_a_single_purpose_frame_names_it() -> None:
    r = classify_text((EXCERPTS / "dtype-unsupported-gpu--cut-in-check-frame.log").read_text(),
                      CAT)
    assert "_check_if_gpu_supports_dtype" in r.note


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("`[36m(main_task pid=3)[0m ValueError: x", "ValueError: x"),
        ('<font color="#2AA1B3"><b>(APIServer pid=1)</b></font> INFO x', "INFO x"),
        ("(W pid=3)     ^^^^^ [repeated 7x across cluster]", "    ^^^^^"),
        ("                    INFO       File \"a.py\", line 1, in f          local.py:108",
         '  File "a.py", line 1, in f'),
        ("[05/05/25 16:31:14] ERROR    OSError: boom", "OSError: boom"),
        ("svc  | 2024-02-20 21:46:23 | ERROR | stderr |   File \"x.py\"", '  File "x.py"'),
        ("11:35PM DBG GRPC(org/m-127.0.0.1:36135): stdout INFO 04-10 23:35:40 s.py:51] x",
         "INFO 04-10 23:35:40 s.py:51] x"),
        ("> ValueError: quoted in markdown", "ValueError: quoted in markdown"),
    ],
)
def test_normalise_field_damage(raw: str, want: str) -> None:
    assert normalize(raw) == want


def test_nested_repetition_is_detected() -> None:
    for bad in ("(a+)+$", r"(\w+ )*x", r"(?:[^,]*,)+end"):
        assert nested_repeat(compile_pattern(bad).pattern), bad
    for ok in ("a+b+", r"(?:ab)+", r"(?:[^,]+,){0,3}", r"Errno (?:98|48)"):
        assert nested_repeat(compile_pattern(ok).pattern) is None, ok


def test_suggest_prints_a_checked_signature_that_loads(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "srv.log"
    log.write_text(
        "INFO 10-20 04:12:31 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with "
        "config: model='m', enforce_eager=False\n"
        "Traceback (most recent call last):\n"
        '  File "/x/vllm/worker/worker.py", line 12, in init_device\n'
        "    ixrt.init()\n"
        "RuntimeError: IXRT driver version 3.1.0 is older than 4.0.0 required by /opt/corex/lib\n")
    res = run_cli(["classify", "--suggest", str(log)])
    assert res.code == 0, res.stderr
    assert "# check: matches this log -> yes" in res.stdout
    assert "# check: matches a shipped fixture or example -> no" in res.stdout
    assert "# phase when it was printed: engine-config" in res.stdout
    doc = yaml.safe_load(res.stdout)
    entry = doc["signatures"][0]
    assert entry["kind"] == "failed" and "TODO" in entry["remediation"]
    assert r"[\d.]+" in entry["patterns"][0] and r"\S+" in entry["patterns"][0]  # generalised
    sigs = tmp_path / "signatures"
    sigs.mkdir()
    (sigs / f"{entry['id']}.yaml").write_text(res.stdout)
    again = run_cli(["classify", "--json", "--signatures", str(sigs), str(log)])
    assert f'"signature": "{entry["id"]}"' in again.stdout


def test_suggest_declines_a_recognised_log(run_cli) -> None:  # type: ignore[no-untyped-def]
    res = run_cli(["classify", "--suggest", str(EXCERPTS / "port-in-use--macos-errno-48.log")])
    assert res.code == 0 and "already classified as port-in-use" in res.stdout
