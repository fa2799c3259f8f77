"""Pre-flight rules: each one firing and not firing, and the seed's outcomes predicted."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.unit.variants.conftest import write_project
from variantctl.config.variants import load_catalog
from variantctl.hostmodel import Host, Vendor
from variantctl.variants.check import check, has_errors
from variantctl.variants.model import ResolvedVariant
from variantctl.variants.resolve import resolve
from variantctl.variants.rules import Finding

REPO = Path(__file__).resolve().parents[3]
COREX = Host(name="corex", python="python3", vllm_version="0.6.3",
             vendor=Vendor(name="corex", backports=("reasoning-parser",),
                           attention_backend_default="XFORMERS",
                           unavailable_backends=("FLASH_ATTN", "FLASHINFER")))
PLAIN = Host(name="plain", python="python3")
HOSTS = {"corex": COREX, "plain": PLAIN, "local": Host(name="local")}


def v(name: str = "v", *, host: str = "plain", args: Mapping[str, Any] | None = None,
      env: Mapping[str, str] | None = None, version: str | None = None, port: int = 8000,
      requires: tuple[str, ...] = (), expect: Mapping[str, Any] | None = None,
      vendor: Vendor | None = None) -> ResolvedVariant:
    return ResolvedVariant(name=name, host=host, args=dict(args or {}), env=dict(env or {}),
                           vllm_version=version, port=port, requires=requires,
                           expect=dict(expect or {}), vendor=vendor)


def rules_of(*variants: ResolvedVariant, patchsets: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    return [(f.severity, f.rule, f.signature or "-")
            for f in check(list(variants), patchsets, HOSTS)]


# --- batched tokens below model length ---------------------------------------------------

@pytest.mark.parametrize(
    ("args", "version", "expected"),
    [
        ({"max-num-batched-tokens": 64, "max-model-len": 512, "enable-chunked-prefill": False},
         "0.32.0", [("error", "batched-tokens-below-model-len", "batched-tokens-below-model-len")]),
        # absent flag: chunked prefill is off by default in V0 (< 0.8) ...
        ({"max-num-batched-tokens": 8192, "max-model-len": 100000}, "0.6.3",
         [("error", "batched-tokens-below-model-len", "batched-tokens-below-model-len")]),
        # ... and on by default in V1
        ({"max-num-batched-tokens": 64, "max-model-len": 512}, "0.32.0", []),
        # unknown version: it depends, so a warning
        ({"max-num-batched-tokens": 64, "max-model-len": 512}, None,
         [("warning", "batched-tokens-below-model-len", "batched-tokens-below-model-len")]),
        ({"max-num-batched-tokens": 64, "max-model-len": 512, "enable-chunked-prefill": True},
         "0.6.3", []),
        ({"max-num-batched-tokens": 512, "max-model-len": 512, "enable-chunked-prefill": False},
         "0.6.3", []),
        ({"max-model-len": 512, "enable-chunked-prefill": False}, "0.6.3", []),
        ({"max-num-batched-tokens": "64", "max-model-len": "512",
          "enable-chunked-prefill": False}, "0.9.2",
         [("error", "batched-tokens-below-model-len", "batched-tokens-below-model-len")]),
    ],
)
def test_batched_tokens_rule(args: dict[str, Any], version: str | None,
                             expected: list[tuple[str, ...]]) -> None:
    assert rules_of(v(args=args, version=version)) == expected


# --- multi-step and attention backends ----------------------------------------------------

def test_multistep_with_the_platform_default_xformers_fires() -> None:
    found = check([v(host="corex", args={"num-scheduler-steps": 4, "max-model-len": 4096,
                                         "enable-chunked-prefill": False})], (), HOSTS)
    assert [(f.rule, f.signature) for f in found] == [
        ("multistep-backend", "xformers-multistep-unsupported")]
    assert "XFORMERS (the platform default)" in found[0].message


@pytest.mark.parametrize("backend", ["FLASH_ATTN", "FLASHINFER", "ROCM_FLASH", "flash-attn"])
def test_multistep_with_a_supported_backend_passes(backend: str) -> None:
    assert rules_of(v(args={"num-scheduler-steps": 4, "enable-chunked-prefill": False},
                      env={"VLLM_ATTENTION_BACKEND": backend}, version="0.6.3")) == []


def test_multistep_with_another_unsupported_backend() -> None:
    # the classifier's xformers-multistep-unsupported matches the message for any backend
    variant = v(args={"num-scheduler-steps": 4}, env={"VLLM_ATTENTION_BACKEND": "TORCH_SDPA"},
                version="0.6.6")
    assert rules_of(variant) == [("error", "multistep-backend", "xformers-multistep-unsupported")]


def test_multistep_with_unknown_backend_is_a_warning_and_single_step_is_silent() -> None:
    assert rules_of(v(args={"num-scheduler-steps": 4}, version="0.6.3")) == [
        ("warning", "multistep-backend", "xformers-multistep-unsupported")]
    assert rules_of(v(host="corex", args={"num-scheduler-steps": 1})) == []
    assert rules_of(v(host="corex")) == []


@pytest.mark.parametrize(
    ("version", "backend", "expected"),
    [
        ("0.6.3", "XFORMERS", [("error", "multistep-chunked-prefill",
                                "multistep-chunked-prefill-unsupported")]),
        ("0.6.3", "FLASHINFER", [("error", "multistep-chunked-prefill",
                                  "multistep-chunked-prefill-unsupported")]),
        ("0.6.3", "FLASH_ATTN", []),
        ("0.7.3", "FLASHINFER", []),  # the chunked list grew in 0.7.3
        ("0.6.2", "FLASH_ATTN", [("error", "multistep-chunked-prefill",
                                  "multistep-chunked-prefill-unsupported")]),
    ],
)
def test_multistep_with_chunked_prefill(version: str, backend: str,
                                        expected: list[tuple[str, ...]]) -> None:
    variant = v(args={"num-scheduler-steps": 4, "enable-chunked-prefill": True},
                env={"VLLM_ATTENTION_BACKEND": backend}, version=version)
    assert rules_of(variant) == expected


def test_multistep_chunked_uses_the_vendor_default_backend() -> None:
    found = check([v(host="corex", args={"num-scheduler-steps": 4,
                                         "enable-chunked-prefill": True})], (), HOSTS)
    assert [(f.rule, f.signature) for f in found] == [
        ("multistep-chunked-prefill", "multistep-chunked-prefill-unsupported")]


def test_variant_vendor_overrides_the_host_default_backend() -> None:
    variant = v(host="corex", args={"num-scheduler-steps": 4, "enable-chunked-prefill": False},
                vendor=Vendor(attention_backend_default="FLASH_ATTN"))
    assert rules_of(variant) == []


# --- backend unavailable on the build -----------------------------------------------------

def test_forced_backend_the_build_lacks_fires() -> None:
    assert rules_of(v(host="corex", env={"VLLM_ATTENTION_BACKEND": "FLASHINFER"})) == [
        ("error", "attention-backend-unavailable", "flashinfer-unavailable")]
    assert rules_of(v(host="corex", env={"VLLM_ATTENTION_BACKEND": "FLASH_ATTN"})) == [
        ("error", "attention-backend-unavailable", "-")]
    assert rules_of(v(host="corex", env={"VLLM_ATTENTION_BACKEND": "XFORMERS"})) == []
    assert rules_of(v(host="plain", env={"VLLM_ATTENTION_BACKEND": "FLASHINFER"})) == []


# --- flags and env by version -------------------------------------------------------------

@pytest.mark.parametrize(
    ("flag", "version", "expected"),
    [
        ("num-scheduler-steps", "0.10.2", [("error", "flag-not-in-version", "multistep-removed")]),
        ("num-scheduler-steps", "0.9.2", [("warning", "multistep-v1-fallback",
                                           "multistep-v0-fallback")]),
        ("num-scheduler-steps", "0.8.4", []),
        ("reasoning-parser", "0.6.3", [("error", "flag-not-in-version", "unrecognized-argument")]),
        ("reasoning-parser", "0.7.3", []),
        ("tool-call-parser", "0.5.5", [("error", "flag-not-in-version", "unrecognized-argument")]),
        ("max-seq-len-to-capture", "0.10.2", []),
        ("max-seq-len-to-capture", "0.33.0", [("error", "flag-not-in-version",
                                               "unrecognized-argument")]),
        ("attention-backend", "0.10.2", [("error", "flag-not-in-version",
                                          "unrecognized-argument")]),
        ("attention-backend", "0.33", []),
        ("some-flag-we-do-not-know", "0.1.0", []),
        # from the mined removed-argument table (variantctl/removed_args.py)
        ("swap-space", "0.17.1", []),
        ("swap-space", "0.18.1", [("error", "flag-not-in-version", "unrecognized-argument")]),
        ("device", "0.10.2", [("error", "flag-not-in-version", "unrecognized-argument")]),
        ("device", "0.9.2", []),
    ],
)
def test_flag_existence_by_version(flag: str, version: str,
                                   expected: list[tuple[str, ...]]) -> None:
    value: Any = 2 if flag == "num-scheduler-steps" else "x"
    variant = v(args={flag: value}, version=version,
                env={"VLLM_ATTENTION_BACKEND": "FLASH_ATTN"})
    got = [r for r in rules_of(variant) if r[1] != "env-not-in-version"]
    assert got == expected


def test_a_removed_flag_is_refused_for_the_hosts_vllm() -> None:
    """The host declares its vLLM; a flag the mined table says that release dropped is an
    error naming the release, before any launch."""
    host = Host(name="new", python="p", vllm_version="0.20.2")
    found = check([v(host="new", args={"swap-space": 8})], (), {"new": host})
    assert [(f.severity, f.rule) for f in found] == [("error", "flag-not-in-version")]
    assert "0.20.2" in found[0].message and "before 0.18.1" in found[0].message
    old = Host(name="old", python="p", vllm_version="0.17.1")
    assert check([v(host="old", args={"swap-space": 8})], (), {"old": old}) == []


def test_backported_flag_raises_no_false_alarm() -> None:
    # the seed's vendor build: 0.6.3 but --reasoning-parser works
    assert rules_of(v(host="corex", args={"reasoning-parser": "qwen3"})) == []
    bare = Host(name="bare", python="p", vllm_version="0.6.3")
    found = check([v(host="bare", args={"reasoning-parser": "qwen3"})], (), {"bare": bare})
    assert [f.rule for f in found] == ["flag-not-in-version"]
    assert "in vendor.backports" in found[0].message


def test_false_flag_that_renders_nothing_is_not_flagged() -> None:
    assert rules_of(v(args={"reasoning-parser": False}, version="0.6.3")) == []


def test_env_var_gone_in_the_version() -> None:
    assert rules_of(v(env={"VLLM_ATTENTION_BACKEND": "FLASH_ATTN"}, version="0.33.0")) == [
        ("warning", "env-not-in-version", "-")]
    assert rules_of(v(env={"VLLM_ATTENTION_BACKEND": "FLASH_ATTN"}, version="0.10.2")) == []


# --- ports, patchsets, hosts, expectations ------------------------------------------------

def test_two_variants_of_one_host_on_one_port() -> None:
    found = check([v("a", port=8100), v("b", port=8100), v("c", port=8101),
                   v("d", host="corex", port=8100)], (), HOSTS)
    assert [(f.rule, f.variant, f.signature) for f in found] == [
        ("port-conflict", "a", "port-in-use")]
    assert "port 8100 with b" in found[0].message
    assert check([v("a", port=8100), v("c", port=8101)], (), HOSTS) == []


def test_requires_unknown_patchset() -> None:
    found = check([v(requires=("eager-allreduc",))], ["eager-allreduce"], HOSTS)
    assert [(f.severity, f.rule) for f in found] == [("error", "unknown-patchset")]
    assert "did you mean 'eager-allreduce'?" in found[0].message
    assert check([v(requires=("eager-allreduce",))], ["eager-allreduce"], HOSTS) == []


def test_unknown_host() -> None:
    assert rules_of(v(host="nowhere")) == [("error", "unknown-host", "-")]


def test_expectation_contradicting_the_flags() -> None:
    assert rules_of(v(args={"enforce-eager": True}, expect={"enforce_eager": False})) == [
        ("error", "expect-contradicts-flags", "-")]
    assert rules_of(v(args={"enforce-eager": True}, expect={"enforce_eager": True})) == []


def test_findings_are_values_with_a_why() -> None:
    f = check([v(host="nowhere")], (), HOSTS)[0]
    assert isinstance(f, Finding)
    assert f.to_dict() == {"severity": "error", "rule": "unknown-host", "variant": "v",
                           "signature": None,
                           "message": "host 'nowhere' is not defined in variants/hosts.yaml"}
    assert has_errors([f]) and not has_errors([])


# --- the seed catalog ---------------------------------------------------------------------

def seed_findings() -> dict[str, list[Finding]]:
    cat = load_catalog(REPO / "variants", {})
    variants = [resolve(cat, n) for n in cat.names()]
    out: dict[str, list[Finding]] = {n: [] for n in cat.names()}
    patchsets = sorted(p.stem for p in (REPO / "patchsets").glob("*.yaml"))
    for f in check(variants, patchsets, cat.hosts):
        out[f.variant].append(f)
    return out


def test_check_predicts_the_seed_outcomes() -> None:
    found = seed_findings()

    def first_error(name: str) -> str | None:
        errors = [f.signature for f in found[name] if f.severity == "error"]
        return errors[0] if errors else None

    assert first_error("sched4-nochunk") == "batched-tokens-below-model-len"
    assert first_error("sched4-nochunk-len4096") == "xformers-multistep-unsupported"
    assert first_error("sched4-flashinfer") == "flashinfer-unavailable"
    assert first_error("sched4-chunked") == "multistep-chunked-prefill-unsupported"
    assert first_error("cpu-batched-tokens") == "batched-tokens-below-model-len"
    # the healthy seed variants raise nothing (backported --reasoning-parser included)
    for name in ("full-parser", "parser-off", "eager-custom-ar", "graph-allreduce", "tp2",
                 "cpu-base", "cpu-eager", "cpu-expect-lazy"):
        assert [f for f in found[name] if f.severity == "error"] == [], name


def test_cli_check_exit_codes_and_json(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    res = run_cli(["check", "sched4-nochunk-len4096"], project=REPO)
    assert res.code == 1
    assert res.stdout.splitlines()[0] == ("sched4-nochunk-len4096: error [multistep-backend] "
                                          "predicts xformers-multistep-unsupported")
    assert res.stdout.splitlines()[-1] == "1 variant(s) checked: 1 error(s), 0 warning(s)"
    res = run_cli(["check", "cpu-eager", "full-parser"], project=REPO)
    assert (res.code, res.stdout) == (0, "2 variant(s) checked: 0 error(s), 0 warning(s)\n")
    res = run_cli(["check", "--all", "--json"], project=REPO)
    assert res.code == 1
    data = json.loads(res.stdout)
    assert data["predicted"]["sched4-flashinfer"] == "flashinfer-unavailable"
    assert "full-parser" in data["variants"] and "full-parser" not in data["predicted"]
    res = run_cli(["check"], project=REPO)
    assert res.code == 2
    assert res.stderr.startswith("error: name one or more variants, or pass --all")
    project = write_project(tmp_path / "p", {"v.yaml": "requires: [nope]\n"})
    res = run_cli(["check", "v"], project=project)
    assert res.code == 1
    assert "requires patchset 'nope', which does not exist" in res.stdout


def test_predicted_signatures_exist_in_the_classifier_catalog() -> None:
    import yaml

    from variantctl.variants.rules import SIGNATURES

    data = yaml.safe_load((REPO / "variantctl" / "logs" / "signatures" / "vllm.yaml")
                          .read_text(encoding="utf-8"))
    ids = {s["id"] for s in data["signatures"]}
    assert ids >= SIGNATURES, SIGNATURES - ids


# --- facts from the model's config.json ---------------------------------------------------

def _model(heads: int | None = 28, max_pos: int | None = 32768, rope: bool = False) -> Any:
    from variantctl.variants.modelinfo import ModelInfo

    return ModelInfo("local:/m/config.json", num_attention_heads=heads,
                     max_position_embeddings=max_pos, rope_scaling=rope)


def model_rules(variant: ResolvedVariant, model: Any) -> list[tuple[str, ...]]:
    return [(f.severity, f.rule, f.signature or "-")
            for f in check([variant], (), HOSTS, models={variant.name: model})]


@pytest.mark.parametrize(("tp", "fires"), [(3, True), (2, False), (4, False), (8, True), (7, False),
                                           (1, False), (None, False)])
def test_tp_must_divide_the_attention_heads(tp: int | None, fires: bool) -> None:
    args = {"tensor-parallel-size": tp} if tp else {}
    expected = [("error", "tp-heads-not-divisible", "tp-heads-not-divisible")] if fires else []
    assert model_rules(v(args=args), _model(heads=28)) == expected


def test_tp_rule_names_heads_source_and_valid_sizes() -> None:
    (f,) = check([v(args={"tensor-parallel-size": 3})], (), HOSTS, models={"v": _model(heads=28)})
    assert "28 attention heads (local:/m/config.json)" in f.message
    assert "use one of 1, 2, 4, 7, 14" in f.message


def test_no_model_facts_no_model_rules() -> None:
    # a hub id or a model dir we could not read: the rules stand back
    assert rules_of(v(args={"tensor-parallel-size": 3, "max-model-len": 10 ** 6})) == []
    assert model_rules(v(args={"tensor-parallel-size": 3}), _model(heads=None)) == []


@pytest.mark.parametrize(
    ("max_len", "env", "rope", "expected"),
    [
        (4096, {}, False, [("error", "max-model-len-exceeds-model",
                            "max-model-len-exceeds-model")]),
        (2048, {}, False, []),
        (1024, {}, False, []),
        (4096, {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}, False,
         [("warning", "max-model-len-exceeds-model", "-")]),
        (4096, {}, True, []),  # RoPE scaling changes the derived limit: no guess
    ],
)
def test_max_model_len_against_the_model(max_len: int, env: dict[str, str], rope: bool,
                                         expected: list[tuple[str, ...]]) -> None:
    variant = v(args={"max-model-len": max_len}, env=env)
    assert model_rules(variant, _model(max_pos=2048, rope=rope)) == expected


def test_model_config_parsing() -> None:
    from variantctl.variants.modelinfo import parse_model_config

    info = parse_model_config(json.dumps({
        "architectures": ["LlavaForConditionalGeneration"],
        "text_config": {"num_attention_heads": 32, "max_position_embeddings": 4096},
        "rope_scaling": None}), "x")
    assert info is not None
    assert (info.num_attention_heads, info.max_position_embeddings, info.rope_scaling) == (
        32, 4096, False)
    assert info.architectures == ("LlavaForConditionalGeneration",)
    assert parse_model_config("[1, 2]", "x") is None
    assert parse_model_config("{not json", "x") is None


def test_cli_check_reads_a_local_models_config(tmp_path: Path,
                                               run_cli: Callable[..., Any]) -> None:
    """check gathers the facts of a local model dir (like the tiny CPU model) itself."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(
        {"num_attention_heads": 4, "max_position_embeddings": 2048}))
    project = write_project(tmp_path / "p", {
        "tp3.yaml": f"model: {model}\nargs: {{tp: 3}}\n",
        "long.yaml": f"model: {model}\nargs: {{max-model-len: 4096}}\n",
        "ok.yaml": f"model: {model}\nargs: {{tp: 2, max-model-len: 2048}}\n",
        "hub.yaml": "model: Qwen/Qwen2.5-7B-Instruct\nargs: {tp: 3}\n",
    })
    res = run_cli(["check", "tp3", "long", "ok", "hub", "--json"], project=project)
    assert res.code == 1, res.output
    data = json.loads(res.stdout)
    assert data["predicted"] == {"tp3": "tp-heads-not-divisible",
                                 "long": "max-model-len-exceeds-model"}


def test_a_config_json_nested_past_the_limit_is_not_a_config() -> None:
    """A model directory is untrusted: a ``config.json`` nested 100,000 deep reads as
    "not a config" (None), never a RecursionError (issue 32: no input hangs or crashes)."""
    from variantctl.variants.modelinfo import config_mapping, parse_model_config

    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert config_mapping(deep) is None
    assert parse_model_config(deep, "m/config.json") is None
    assert config_mapping('{"hidden_size": 8, "x": [[1]]}') == {"hidden_size": 8, "x": [[1]]}
