"""The signature catalog as data (shipped + user directories) and ``variantctl classify``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from variantctl.config.catalog import default_catalog
from variantctl.config.signatures import load_catalog
from variantctl.errors import ConfigError
from variantctl.logs.classify import classify_text
from variantctl.logs.expect import compare
from variantctl.logs.facts import Facts

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "logs"
PUBLIC_IDS = {
    "startup-ok", "batched-tokens-below-model-len", "xformers-multistep-unsupported",
    "multistep-chunked-prefill-unsupported", "flashinfer-unavailable",
    "flash-attn-missing-fallback", "cuda-graph-capture-hang", "cuda-graph-capture-error",
    "kv-cache-insufficient", "free-memory-below-utilization", "cuda-oom", "port-in-use",
    "tp-heads-not-divisible", "nccl-error", "unsupported-architecture", "dtype-unsupported-gpu",
    "trust-remote-code-required", "model-not-found-or-unauthorized", "multistep-removed",
    "unrecognized-argument",
}
Run = Callable[..., object]


def test_shipped_catalog_has_the_public_ids_with_their_kinds() -> None:
    cat = default_catalog()
    ids = {s.id for s in cat.signatures}
    assert ids >= PUBLIC_IDS
    kinds = {s.id: s.kind for s in cat.signatures}
    assert kinds["flash-attn-missing-fallback"] == "warning"
    assert kinds["cuda-graph-capture-hang"] == "hang"
    assert kinds["startup-ok"] == "ok"
    assert cat.version
    assert [p.id for p in cat.phases] == ["process-start", "engine-config", "model-load",
                                          "kv-cache-profiling", "graph-capture",
                                          "api-server-start", "api-server-up", "ready",
                                          "serving"]
    assert default_catalog() is cat  # cached


def _sigfile(tmp_path: Path, body: str) -> Path:
    d = tmp_path / "sigs"
    d.mkdir(exist_ok=True)
    (d / "mine.yaml").write_text(body)
    return d


def test_user_signature_directory_adds_and_overrides(tmp_path: Path) -> None:
    d = _sigfile(tmp_path, """\
signatures:
  - id: corex-driver-mismatch
    title: The CoreX driver does not match the runtime
    kind: failed
    priority: 90
    keywords: [ixrt driver version]
    patterns: ['IXRT driver version (?P<have>[\\d.]+) is older than (?P<need>[\\d.]+)']
    message: 'driver {have} < required {need}'
    remediation: 'Install CoreX driver {need} or newer.'
    examples: ['RuntimeError: IXRT driver version 3.1.0 is older than 4.0.0']
  - id: port-in-use
    title: Port taken (site rule)
    kind: failed
    keywords: [address already in use]
    patterns: ['address already in use']
    message: taken
    remediation: ask the on-call
""")
    cat = load_catalog([d])
    r = classify_text("RuntimeError: IXRT driver version 3.1.0 is older than 4.0.0\n", cat)
    assert (r.signature, r.message) == ("corex-driver-mismatch", "driver 3.1.0 < required 4.0.0")
    assert r.remediation == "Install CoreX driver 4.0.0 or newer."
    r = classify_text("OSError: [Errno 98] Address already in use\n", cat)
    assert (r.signature, r.remediation) == ("port-in-use", "ask the on-call")
    assert str(d / "mine.yaml") in cat.sources


@pytest.mark.parametrize(
    ("body", "where", "what"),
    [
        ("signatures:\n  - id: x\n    title: t\n    kind: failed\n    keywords: [a]\n"
         "    patterns: ['(unclosed']\n    message: m\n",
         "mine.yaml:6:16: signatures[0].patterns[0]", "invalid regular expression"),
        ("signatures:\n  - id: x\n    title: t\n    kind: failed\n    keywords: [a]\n"
         "    patern: ['a']\n    message: m\n",
         "mine.yaml:6:5: signatures[0].patern", "unknown key 'patern'"),
        ("signatures:\n  - id: x\n    title: t\n    kind: fail\n    keywords: [a]\n"
         "    patterns: ['a']\n    message: m\n",
         "mine.yaml:4:11: signatures[0].kind", "expected one of failed, hang, warning, ok"),
        ("signatures:\n  - id: x\n    title: t\n    kind: failed\n    keywords: [abc]\n"
         "    patterns: ['abc']\n    message: m\n    examples: ['abd']\n",
         "mine.yaml:8:16: signatures[0].examples[0]", "example contains none of the keywords"),
        ("signatures:\n  - id: x\n    title: t\n    kind: failed\n    keywords: [a]\n"
         "    patterns: ['a']\n    message: 'got {nope}'\n",
         "mine.yaml:7:14: signatures[0].message", "{nope} is not a named group"),
        ("signatures:\n  - id: x\n    title: t\n    kind: failed\n    keywords: [Upper]\n"
         "    patterns: ['a']\n    message: m\n",
         "mine.yaml:5:16: signatures[0].keywords[0]", "must be lowercase"),
        ("signatures: [\n", "mine.yaml:2:1", "invalid YAML"),
    ],
)
def test_bad_signature_files_name_file_line_and_key(tmp_path: Path, body: str, where: str,
                                                     what: str) -> None:
    d = _sigfile(tmp_path, body)
    with pytest.raises(ConfigError) as exc:
        load_catalog([d])
    assert where in exc.value.message
    assert what in exc.value.message


def test_missing_signature_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="signature directory not found"):
        load_catalog([tmp_path / "nope"])


# -- expectations ----------------------------------------------------------------------------


def _facts(**config: object) -> Facts:
    from types import MappingProxyType

    return Facts(vllm_version="0.6.3", engine="V0", config=MappingProxyType(config))


def test_expect_flags_a_hard_coded_enforce_eager() -> None:
    f = _facts(enforce_eager=True, disable_custom_all_reduce=True, tensor_parallel_size=4,
               max_seq_len=4096, dtype="torch.bfloat16")
    args = {"tensor-parallel-size": 4, "max-model-len": 4096, "dtype": "bfloat16"}
    got = compare(f, {}, args)
    assert [(m.key, m.expected, m.actual, m.source) for m in got] == [
        ("enforce_eager", False, True, "--enforce-eager (not set)")
    ]
    # asking for eager makes the same log consistent
    assert compare(f, {}, {**args, "enforce-eager": True}) == []


def test_expect_block_and_flag_values() -> None:
    f = _facts(enforce_eager=False, tensor_parallel_size=2, num_scheduler_steps=1,
               enable_chunked_prefill=True)
    got = compare(f, {"engine": "V1", "enforce_eager": False, "attention_backend": "XFORMERS"},
                  {"tp": 4, "num-scheduler-steps": 4, "enable-chunked-prefill": None})
    by_key = {m.key: m for m in got}
    assert by_key["engine"].actual == "V0" and by_key["engine"].source == "expect.engine"
    assert by_key["attention_backend"].reason == "not-reported"
    assert by_key["tensor_parallel_size"].expected == 4
    assert by_key["num_scheduler_steps"].source == "--num-scheduler-steps"
    assert by_key["enable_chunked_prefill"].expected is False
    assert "enforce_eager" not in by_key
    # no config line (the start failed early): flags are not judged, expect entries are
    assert compare(Facts(), {}, {"tp": 4}) == []
    assert [m.reason for m in compare(Facts(), {"enforce_eager": False}, {})] == ["not-reported"]


# -- CLI -------------------------------------------------------------------------------------


def test_cli_human_output_and_exit_codes(run_cli: Run) -> None:
    ok = FIX / "v0_6" / "startup-ok--scary-warnings.log"
    res = run_cli(["classify", str(ok)])
    assert res.code == 0, res.output  # type: ignore[attr-defined]
    out = res.stdout  # type: ignore[attr-defined]
    assert "OK startup-ok" in out and "flash-attn-missing-fallback" in out
    assert "enforce_eager" in out and "vLLM version" in out
    bad = FIX / "v0_6" / "batched-tokens-below-model-len--ansi.log"
    res = run_cli(["classify", str(bad)])
    assert res.code == 1
    assert "batched-tokens-below-model-len" in res.stdout  # type: ignore[attr-defined]
    fix = "fix: Raise --max-num-batched-tokens to at least 100000"
    assert fix in res.stdout  # type: ignore[attr-defined]
    hang = FIX / "v0_6" / "cuda-graph-capture-hang--seed-excerpt.log"
    assert run_cli(["classify", str(hang)]).code == 5  # type: ignore[attr-defined]
    cut = FIX / "v1" / "truncated--no-evidence.log"
    assert run_cli(["classify", str(cut)]).code == 7  # type: ignore[attr-defined]
    # several logs: the most severe verdict decides
    assert run_cli(["classify", str(ok), str(hang), str(bad)]).code == 1  # type: ignore[attr-defined]


def test_cli_json_schema(run_cli: Run) -> None:
    logs = [FIX / "v1" / "port-in-use--ansi-literal.log",
            FIX / "v1" / "startup-ok--eager-compose.log"]
    res = run_cli(["classify", "--json", *map(str, logs)])
    data = json.loads(res.stdout)  # type: ignore[attr-defined]
    assert data["schema"] == "variantctl.classify/1"
    a, b = data["logs"]
    assert (a["path"], a["kind"], a["signature"]) == (str(logs[0]), "failed", "port-in-use")
    assert a["evidence"][0]["line"] >= 1 and "98" in a["evidence"][0]["text"]
    assert a["expect"] is None
    assert (b["kind"], b["facts"]["config"]["enforce_eager"]) == ("ok", True)


def test_cli_explain_shows_recovered_errors_and_every_fact(run_cli: Run) -> None:
    log = FIX / "v0_10" / "startup-ok--scary-warnings.log"
    res = run_cli(["classify", "--explain", str(log)])
    out = res.stdout  # type: ignore[attr-defined]
    assert "also seen" in out and "startup-error" in out
    assert "use_async_output_proc" in out  # every config key with --explain


def test_cli_errors_are_one_line(run_cli: Run, tmp_path: Path) -> None:
    res = run_cli(["classify", str(tmp_path / "missing.log")])
    assert res.code == 2
    assert res.stderr.startswith("error: ")  # type: ignore[attr-defined]
    assert "log file not found" in res.stderr and "Traceback" not in res.output  # type: ignore[attr-defined]
    d = _sigfile(tmp_path, "signatures:\n  - id: x\n")
    log = FIX / "v1" / "port-in-use--ansi-literal.log"
    res = run_cli(["classify", "--signatures", str(d), str(log)])
    assert res.code == 2
    assert "mine.yaml:2:5: signatures[0]: missing required key 'title'" in res.stderr  # type: ignore[attr-defined]


def test_cli_expect_variant(run_cli: Run, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "variants").mkdir(parents=True)
    (project / "variants" / "lazy.yaml").write_text(
        "description: graphs on\nargs:\n  max-model-len: 512\nexpect:\n  enforce_eager: false\n"
    )
    (project / "variants" / "eager.yaml").write_text(
        "description: eager\nargs:\n  enforce-eager: true\n"
    )
    forked = FIX / "v1" / "real-cpu-0.32--startup-interrupted.log"  # enforce_eager=True
    res = run_cli(["classify", "--expect", "lazy", "--json", str(forked)], project=project)
    item = json.loads(res.stdout)["logs"][0]  # type: ignore[attr-defined]
    assert item["expect"]["ok"] is False
    assert item["expect"]["mismatches"][0]["key"] == "enforce_eager"
    assert item["expect"]["mismatches"][0]["actual"] is True
    healthy = FIX / "v1" / "startup-ok--eager-compose.log"
    res = run_cli(["classify", "--expect", "eager", str(healthy)], project=project)
    assert res.code == 0 and "facts match" in res.stdout  # type: ignore[attr-defined]
    res = run_cli(["classify", "--expect", "lazy", str(healthy)], project=project)
    assert res.code == 1 and "log says True" in res.stdout  # type: ignore[attr-defined]
    res = run_cli(["classify", "--expect", "nope", str(healthy)], project=project)
    assert res.code == 2 and "nope" in res.stderr  # type: ignore[attr-defined]


def test_expect_verdict_keys(run_cli: Run, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "variants").mkdir(parents=True)
    (project / "variants" / "graphs.yaml").write_text(
        "description: seed graphs\nexpect:\n  verdict: hang\n  signature: cuda-graph-capture-hang\n"
    )
    hang = FIX / "v0_6" / "cuda-graph-capture-hang--seed-excerpt.log"
    res = run_cli(["classify", "--expect", "graphs", "--json", str(hang)], project=project)
    assert json.loads(res.stdout)["logs"][0]["expect"]["ok"] is True  # type: ignore[attr-defined]
    ok = FIX / "v1" / "startup-ok--eager-compose.log"
    res = run_cli(["classify", "--expect", "graphs", "--json", str(ok)], project=project)
    got = json.loads(res.stdout)["logs"][0]["expect"]["mismatches"]  # type: ignore[attr-defined]
    # (that log also ran eager although this variant never asked for --enforce-eager)
    assert [(m["key"], m["actual"]) for m in got] == [("verdict", "ok"),
                                                      ("signature", "startup-ok"),
                                                      ("enforce_eager", True)]
    assert res.code == 1  # type: ignore[attr-defined]


def test_project_signatures_directory_is_read(run_cli: Run, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "signatures").mkdir(parents=True)
    (project / "signatures" / "site.yaml").write_text(
        "signatures:\n  - id: site-quota\n    title: Quota exceeded\n    kind: failed\n"
        "    keywords: [gpu quota exceeded]\n    patterns: ['GPU quota exceeded']\n"
        "    message: quota\n    remediation: ask for more\n"
    )
    log = tmp_path / "x.log"
    log.write_text("RuntimeError: GPU quota exceeded for team a\n")
    res = run_cli(["classify", str(log)], project=project)
    assert res.code == 1 and "site-quota" in res.stdout  # type: ignore[attr-defined]
    res = run_cli(["classify", str(log)], project=tmp_path / "elsewhere")
    assert res.code == 7 and "site-quota" not in res.stdout  # type: ignore[attr-defined]
