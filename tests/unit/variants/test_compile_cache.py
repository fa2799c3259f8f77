"""A corrupt torch.compile cache (issue 20.2): the signature names the directory to remove,
and ``compile_cache: per-variant`` gives a variant its own ``VLLM_CACHE_ROOT``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.unit.variants.conftest import write_project
from variantctl.config.catalog import default_catalog
from variantctl.exitcodes import ExitCode
from variantctl.hostmodel import Host
from variantctl.logs.classify import classify_text
from variantctl.variants.render import render_script

# the wording torch 2.x prints (torch/_inductor/exc.py: InductorError around the loader's
# ImportError, whose text is the dynamic loader's "<path>: file too short")
CORE = "(EngineCore_DP0 pid=212) ERROR 12-01 21:00:00 [core.py:843] "


@pytest.mark.parametrize(("so", "cache"), [
    # vLLM's own cache: torch_compile_cache/<hash>/rank_0_0/<prefix>/inductor_cache/…
    ("/root/.cache/vllm/torch_compile_cache/3f9a1c2b4d/rank_0_0/backbone/inductor_cache/ab/"
     "cabz2k4q5.main.so", "/root/.cache/vllm/torch_compile_cache/3f9a1c2b4d"),
    # AOT compiles (VLLM_USE_AOT_COMPILE): torch_compile_cache/torch_aot_compile/<sha256>/…
    ("/w/compile-cache/v1/torch_compile_cache/torch_aot_compile/e9533c3aebba231cc08d14e1/"
     "inductor_cache/zo/czo2giqk.main.so",
     "/w/compile-cache/v1/torch_compile_cache/torch_aot_compile/e9533c3aebba231cc08d14e1"),
])
def test_a_truncated_kernel_names_the_cache_directory_to_remove(so: str, cache: str) -> None:
    log = "\n".join([
        CORE + "EngineCore failed to start.",
        CORE + "Traceback (most recent call last):",
        CORE + '  File "/venv/lib/python3.12/site-packages/torch/_inductor/codecache.py", '
               "line 4006, in _load_library_inner",
        CORE + f"torch._inductor.exc.InductorError: ImportError: {so}: file too short",
        CORE + "",
        CORE + "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this "
               "especially if you're reporting a bug to PyTorch).",
        "(APIServer pid=31) RuntimeError: Engine core initialization failed. See root cause "
        "above. Failed core proc(s): {}",
    ]) + "\n"
    r = classify_text(log, default_catalog(), exited=True)
    assert (r.kind, r.signature) == ("failed", "compile-cache-corrupt")
    assert so in r.message
    assert f"rm -rf {cache} " in r.remediation
    assert "VLLM_DISABLE_COMPILE_CACHE=1" in r.remediation
    assert r.evidence[0].text.endswith("file too short")


def test_a_truncated_kernel_of_inductors_default_cache() -> None:
    r = classify_text("ImportError: /tmp/torchinductor_root/cx/cxq3v7.so: file too short\n",
                      default_catalog(), exited=True)
    assert r.signature == "compile-cache-corrupt"
    assert "rm -f /tmp/torchinductor_root/cx/cxq3v7.so" in r.remediation
    assert "rm -rf" not in r.remediation


def test_another_truncated_library_is_not_the_compile_cache() -> None:
    r = classify_text("ImportError: /usr/lib/libfoo.so: file too short\n", default_catalog(),
                      exited=True)
    assert r.signature != "compile-cache-corrupt"


HOST = Host(name="gpu", workdir="~/.variantctl")


def test_per_variant_compile_cache_exports_its_own_cache_root(
        tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    project = write_project(tmp_path / "p", {
        "base.yaml": "model: m\ncompile_cache: per-variant\n",
        "child.yaml": "extends: base\nport: 8001\n",
        "own.yaml": "extends: base\nenv: {VLLM_CACHE_ROOT: /fast/cache}\n",
        "plain.yaml": "model: m\n",
    })
    res = run_cli(["render", "child"], project=project)
    assert res.code == 0, res.output
    (line,) = [ln for ln in res.stdout.splitlines() if "VLLM_CACHE_ROOT" in ln]
    assert line.startswith("export VLLM_CACHE_ROOT=")
    assert line.endswith("/compile-cache/child")  # under the local host's workdir
    # the variant's own env wins; a variant that does not opt in keeps vLLM's cache
    assert "export VLLM_CACHE_ROOT=/fast/cache" in run_cli(["render", "own"],
                                                           project=project).stdout
    assert "VLLM_CACHE_ROOT" not in run_cli(["render", "plain"], project=project).stdout


def test_per_variant_compile_cache_changes_the_launch_key_only_when_set(
        make_catalog: Callable[..., Any]) -> None:
    from variantctl.variants.resolve import resolve

    cat = make_catalog({"a.yaml": "model: m\n", "b.yaml": "model: m\ncompile_cache: shared\n",
                        "c.yaml": "model: m\ncompile_cache: per-variant\n"})
    a, b, c = (resolve(cat, n) for n in "abc")
    assert "compile_cache" not in a.launch_view()  # runs recorded before stay comparable
    assert a.launch_view() == b.launch_view()
    assert c.launch_view()["compile_cache"] == "per-variant"
    assert "VLLM_CACHE_ROOT=" in render_script(c, HOST)
    assert "VLLM_CACHE_ROOT" not in render_script(a, HOST)


def test_a_bad_compile_cache_value_is_refused(tmp_path: Path,
                                              run_cli: Callable[..., Any]) -> None:
    project = write_project(tmp_path / "p", {"v.yaml": "model: m\ncompile_cache: private\n"})
    res = run_cli(["render", "v"], project=project)
    assert res.code == ExitCode.USAGE
    assert "variants/v.yaml:2:16: compile_cache: expected one of 'shared', 'per-variant', " \
           "got 'private'" in res.stderr
    assert "Traceback" not in res.output
