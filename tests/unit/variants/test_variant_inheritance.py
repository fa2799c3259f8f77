"""Inheritance: deep chains, several parents, removal, normalisation and origins."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from variantctl.config.variants import Catalog
from variantctl.errors import NotFoundError
from variantctl.variants.model import DEFAULT_COMMAND, Startup
from variantctl.variants.resolve import resolve

MakeCatalog = Callable[..., Catalog]

CHAIN = {
    "base.yaml": """
        description: the base
        host: gpu
        model: /m/base
        port: 8000
        args:
          tp: 4
          max-model-len: 100000
          enable-chunked-prefill: true
          served-model-name: [a, b]
        env:
          KEEP: "1"
          DROP: x
        expect:
          enforce_eager: true
        requires: [p1]
        tags: [seed]
        startup:
          ready_timeout: 900
    """,
    "mid.yaml": """
        extends: base
        args:
          max_model_len: 4096
          served-model-name: null
          num-scheduler-steps: 4
        env:
          DROP: null
        tags: [mid]
    """,
    "leaf.yaml": """
        extends: mid
        description: the leaf
        port: 8001
        args:
          enable-chunked-prefill: false
          tensor-parallel-size: 2
        expect:
          enforce_eager: null
          disable_custom_all_reduce: false
        requires: [p2, p1]
    """,
}


def test_deep_chain_merges_every_level(make_catalog: MakeCatalog) -> None:
    v = resolve(make_catalog(CHAIN), "leaf")
    assert v.parents == ("mid",)
    assert v.ancestors == ("mid", "base")
    assert v.host == "gpu" and v.model == "/m/base" and v.port == 8001
    assert dict(v.args) == {
        "tensor-parallel-size": 2,
        "max-model-len": 4096,
        "enable-chunked-prefill": False,
        "num-scheduler-steps": 4,
    }
    # an overridden flag keeps its position; new flags are appended
    assert list(v.args) == ["tensor-parallel-size", "max-model-len", "enable-chunked-prefill",
                            "num-scheduler-steps"]
    assert dict(v.env) == {"KEEP": "1"}
    assert dict(v.expect) == {"disable_custom_all_reduce": False}
    assert v.requires == ("p1", "p2")
    assert v.tags == ("seed", "mid")
    assert v.startup == Startup(ready_timeout=900.0, stall=Startup().stall)
    assert v.command == DEFAULT_COMMAND


def test_description_is_not_inherited(make_catalog: MakeCatalog) -> None:
    cat = make_catalog(CHAIN)
    assert resolve(cat, "mid").description == ""
    assert resolve(cat, "leaf").description == "the leaf"


def test_origins_name_the_file_and_line_that_set_each_value(make_catalog: MakeCatalog) -> None:
    v = resolve(make_catalog(CHAIN), "leaf")
    assert v.origins["args.tensor-parallel-size"] == "variants/leaf.yaml:6"
    assert v.origins["args.max-model-len"] == "variants/mid.yaml:3"
    assert v.origins["args.num-scheduler-steps"] == "variants/mid.yaml:5"
    assert v.origins["model"] == "variants/base.yaml:3"
    assert v.origins["port"] == "variants/leaf.yaml:3"
    assert v.origins["env.KEEP"] == "variants/base.yaml:11"
    assert v.origins["command"] == "default"
    assert "env.DROP" not in v.origins and "args.served-model-name" not in v.origins


def test_multiple_parents_later_wins_then_own(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({
        "a.yaml": "port: 8001\nargs: {x: a, only-a: 1}\nenv: {E: a}\ntags: [ta]\n",
        "b.yaml": "port: 8002\nargs: {x: b, only-b: 2}\nrequires: [pb]\ntags: [tb]\n",
        "c.yaml": "extends: [a, b]\nargs: {own: true}\n",
        "d.yaml": "extends: [b, a]\n",
    })
    c = resolve(cat, "c")
    assert c.parents == ("a", "b")
    assert c.port == 8002
    assert dict(c.args) == {"x": "b", "only-a": 1, "only-b": 2, "own": True}
    assert dict(c.env) == {"E": "a"}
    assert c.requires == ("pb",) and c.tags == ("ta", "tb")
    assert c.origins["args.x"] == "variants/b.yaml:2"
    d = resolve(cat, "d")
    assert d.port == 8001 and d.args["x"] == "a"


def test_diamond_inherits_the_shared_base_once(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({
        "root.yaml": "args: {r: 1}\ntags: [root]\n",
        "left.yaml": "extends: root\nargs: {l: 1}\n",
        "right.yaml": "extends: root\nargs: {r: 2}\n",
        "tip.yaml": "extends: [left, right]\n",
    })
    tip = resolve(cat, "tip")
    assert dict(tip.args) == {"r": 2, "l": 1}
    assert tip.tags == ("root",)
    assert tip.ancestors == ("left", "right", "root")


def test_null_resets_scalars_and_removes_a_whole_vendor_block(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({
        "a.yaml": """
            model: /m
            command: vllm serve
            vllm_version: 0.6.3
            vendor:
              name: corex
              backports: [reasoning_parser]
              attention_backend_default: xformers
        """,
        "b.yaml": "extends: a\nmodel: null\ncommand: null\nvllm_version: null\nvendor: null\n",
        "c.yaml": "extends: a\nvendor: {unavailable_backends: [flashinfer]}\n",
    })
    a = resolve(cat, "a")
    assert a.command == ("vllm", "serve")
    assert a.vendor is not None and a.vendor.backports == ("reasoning-parser",)
    assert a.vendor.attention_backend_default == "XFORMERS"
    b = resolve(cat, "b")
    assert (b.model, b.command, b.vllm_version, b.vendor) == (None, DEFAULT_COMMAND, None, None)
    c = resolve(cat, "c")
    assert c.vendor is not None
    assert c.vendor.name == "corex" and c.vendor.unavailable_backends == ("FLASHINFER",)


def test_aliases_and_spellings_normalise_to_one_flag(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({
        "a.yaml": "args: {-tp: 2, --max_model_len: 10, pp: 2, dp: 1, q: awq}\n",
        "b.yaml": "extends: a\nargs: {tensor-parallel-size: null, max-model-len: 20}\n",
    })
    assert dict(resolve(cat, "a").args) == {
        "tensor-parallel-size": 2, "max-model-len": 10, "pipeline-parallel-size": 2,
        "data-parallel-size": 1, "quantization": "awq"}
    assert dict(resolve(cat, "b").args) == {
        "max-model-len": 20, "pipeline-parallel-size": 2, "data-parallel-size": 1,
        "quantization": "awq"}


def test_name_key_overrides_file_name(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({"file.yaml": "name: other\nport: 9000\n"})
    assert cat.names() == ["other"]
    assert resolve(cat, "other").source == "variants/file.yaml"


def test_env_var_expansion_in_values(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({
        "a.yaml": """
            command: ["${PY:-python3}", -m, x]
            model: ${MODEL:-/default/model}
            env: {HOME_COPY: "${HOME}/x", N: 3}
            args: {download-dir: "${DL:-/tmp/dl}", list: ["${A}", b]}
            log: ${LOGS:-/logs}/{name}.log
        """,
    }, environ={"HOME": "/h", "A": "aa", "MODEL": "/set/model"})
    v = resolve(cat, "a")
    assert v.command == ("python3", "-m", "x")
    assert v.model == "/set/model"
    assert dict(v.env) == {"HOME_COPY": "/h/x", "N": "3"}
    assert dict(v.args) == {"download-dir": "/tmp/dl", "list": ("aa", "b")}
    assert v.log == "/logs/{name}.log"


def test_overrides_for_host_and_port(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({"a.yaml": "port: 8000\n"})
    v = resolve(cat, "a", port=8150, host="cpu")
    assert (v.port, v.host) == (8150, "cpu")
    assert v.origins["port"] == "override"


def test_unknown_variant_suggests_the_closest(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({"sched4-nochunk.yaml": "port: 1\n"})
    with pytest.raises(NotFoundError) as exc:
        resolve(cat, "sched4-nochunck")
    assert exc.value.message == "unknown variant 'sched4-nochunck'"
    assert exc.value.hint == "did you mean 'sched4-nochunk'?"


def test_resolved_variant_is_frozen(make_catalog: MakeCatalog) -> None:
    v = resolve(make_catalog({"a.yaml": "args: {x: 1}\n"}), "a")
    with pytest.raises(AttributeError):
        v.port = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        v.args["x"] = 2  # type: ignore[index]


def test_null_section_drops_everything_inherited(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({
        "a.yaml": "args: {x: 1, y: 2}\nenv: {E: e}\nexpect: {enforce_eager: true}\n",
        "b.yaml": "extends: a\nargs: null\nenv: null\nexpect: null\n",
        "c.yaml": "extends: b\nargs: {z: 3}\n",
    })
    b, c = resolve(cat, "b"), resolve(cat, "c")
    assert (dict(b.args), dict(b.env), dict(b.expect)) == ({}, {}, {})
    assert dict(c.args) == {"z": 3}
    assert "args.x" not in c.origins
