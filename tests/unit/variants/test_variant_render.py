"""Rendering: argv, environment and the POSIX script, including the injection proof."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from tests.unit.variants.conftest import FIXTURES, write_project
from variantctl.config.variants import Catalog, load_catalog
from variantctl.hostmodel import Host
from variantctl.variants.model import ResolvedVariant
from variantctl.variants.render import (
    render_argv,
    render_env,
    render_flag,
    render_log_path,
    render_script,
)
from variantctl.variants.resolve import resolve

MakeCatalog = Callable[..., Catalog]
HOST = Host(name="h", python="/opt/py/bin/python", env={"PYTHONPATH": "/a:/b", "SHARED": "host"},
            workdir="/w")


def test_argv_default_command_model_port_and_flags(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({"v.yaml": """
        model: /models/q
        port: 8001
        args:
          tp: 4
          gpu-memory-utilization: 0.95
          enforce-eager: true
          disable-custom-all-reduce: false
          served-model-name: [a, b]
    """})
    assert render_argv(resolve(cat, "v"), HOST) == [
        "/opt/py/bin/python", "-m", "vllm.entrypoints.openai.api_server",
        "--model", "/models/q", "--port", "8001",
        "--tensor-parallel-size", "4", "--gpu-memory-utilization", "0.95", "--enforce-eager",
        "--no-disable-custom-all-reduce",
        "--served-model-name", "a", "--served-model-name", "b",
    ]


def test_vllm_serve_takes_the_model_positionally(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({"v.yaml": "command: vllm serve\nmodel: Qwen/Qwen2.5-7B-Instruct\n"
                                  "args: {tp: 2}\n"})
    assert render_argv(resolve(cat, "v"), HOST) == [
        "vllm", "serve", "Qwen/Qwen2.5-7B-Instruct", "--port", "8000",
        "--tensor-parallel-size", "2"]


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.6.3", []),  # before BooleanOptionalAction: false just leaves the flag out
        ("0.9.1", []),
        ("0.9.2", ["--no-enable-chunked-prefill"]),
        ("0.32.0", ["--no-enable-chunked-prefill"]),
        (None, ["--no-enable-chunked-prefill"]),  # unknown: current releases
    ],
)
def test_false_renders_no_flag_where_the_version_has_it(version: str | None,
                                                        expected: list[str]) -> None:
    assert render_flag("enable-chunked-prefill", False, version) == expected


def test_false_on_a_non_negatable_flag_renders_nothing() -> None:
    assert render_flag("enable-auto-tool-choice", False, "0.32.0") == []


def test_values_starting_with_a_dash_are_attached() -> None:
    assert render_flag("x", "-1", None) == ["--x=-1"]
    assert render_flag("x", -1, None) == ["--x=-1"]
    assert render_flag("x", ("a", "-b"), None) == ["--x", "a", "--x=-b"]


def test_host_version_decides_negation_unless_the_variant_declares_one() -> None:
    v = ResolvedVariant(name="v", args={"enforce-eager": False})
    old = Host(name="old", python="p", vllm_version="0.6.3")
    assert render_argv(v, old)[-2:] == ["--port", "8000"]
    v2 = ResolvedVariant(name="v", args={"enforce-eager": False}, vllm_version="0.10.2")
    assert render_argv(v2, old)[-1] == "--no-enforce-eager"


def test_env_is_host_env_then_variant_env(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({"v.yaml": "env: {SHARED: variant, OWN: '1'}\n"})
    assert render_env(resolve(cat, "v"), HOST) == {
        "PYTHONPATH": "/a:/b", "SHARED": "variant", "OWN": "1"}


def test_hand_built_variant_with_a_bad_env_name_is_refused() -> None:
    v = ResolvedVariant(name="v", env={"A;B": "x"})
    with pytest.raises(ValueError, match="invalid environment variable name 'A;B'"):
        render_env(v, HOST)


def test_script_shape(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({"v.yaml": "model: /m\nport: 8100\nenv: {X: \"it's\"}\n"
                                  "args: {load-format: dummy}\n"})
    assert render_script(resolve(cat, "v"), HOST) == (
        "#!/bin/sh\n"
        "# variantctl: variant v on host h (generated; do not edit)\n"
        "set -eu\n"
        "export PYTHONPATH=/a:/b\n"
        "export SHARED=host\n"
        "export X='it'\"'\"'s'\n"
        "exec /opt/py/bin/python -m vllm.entrypoints.openai.api_server --model /m --port 8100 "
        "--load-format dummy\n"
    )


def test_log_path_template(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({"v.yaml": "log: '{workdir}/logs/{host}-{name}-{port}.log'\nport: 9\n"})
    assert render_log_path(resolve(cat, "v"), HOST) == "/w/logs/h-v-9.log"
    assert render_log_path(ResolvedVariant(name="d"), HOST) == "/w/logs/d.log"


NASTY = {
    "model": "my model $(touch pwned-model) `touch pwned-bt`; echo *",
    "args": {
        "served-model-name": "it's \"double\" and 'single' $HOME $(id)",
        "chat-template": "line1\nline2\n",
        "dash": "-leading",
        "star": "*",
        "semi": "; touch pwned-semi",
        "pipe": "a | touch pwned-pipe && b",
        "glob": "/etc/*",
        "backslash": "back\\slash \\n",
        "unicode": "ünï \t tab",
        "repeat": ["a b", "$(touch pwned-rep)", "-x", "`id`"],
        "flag-on": True,
        "enforce-eager": False,
        "num": 0.3,
    },
    "env": {
        "V1": "spaces and 'single' \"double\"",
        "V2": "$(touch pwned-env) `touch pwned-env2`",
        "V3": "multi\nline\n",
        "V4": "-dash;*",
        "V5": "",
        "SHARED": "variant wins",
    },
}


def _expected_argv(data: dict[str, object]) -> list[str]:
    """What the probe must receive, computed from the YAML data independently of render."""
    out = ["--model", str(data["model"]), "--port", "8123"]
    args = data["args"]
    assert isinstance(args, dict)
    for flag, value in args.items():
        if value is True:
            out.append(f"--{flag}")
        elif value is False:
            out.append(f"--no-{flag}")
        else:
            for item in value if isinstance(value, list) else [value]:
                text = str(item)
                out += [f"--{flag}={text}"] if text.startswith("-") else [f"--{flag}", text]
    return out


def test_injection_proof_script_delivers_exact_argv_and_env(tmp_path: Path) -> None:
    """Render hostile values, run the script with sh and a probe printing argv and env."""
    home = tmp_path / "home"
    home.mkdir()
    # the host's Python is given as ~/py: the script must resolve it in the target's $HOME
    (home / "py").symlink_to(sys.executable)
    out = tmp_path / "probe.json"
    variant = {"command": ["python", str(FIXTURES / "probe.py"), str(out)], "port": 8123,
               **NASTY}
    variant["env"] = {**NASTY["env"],  # type: ignore[dict-item]
                      "PROBE_ENV_NAMES": "V1,V2,V3,V4,V5,SHARED,HOSTVAR"}
    text = yaml.safe_dump(variant, allow_unicode=True, sort_keys=False)
    hosts = yaml.safe_dump({"probe": {"python": "~/py", "env": {"HOSTVAR": "host $(id) 'x'",
                                                                "SHARED": "host"}}})
    project = write_project(tmp_path / "p", {"nasty.yaml": text, "hosts.yaml": hosts})
    catalog = load_catalog(project / "variants", {})
    v = resolve(catalog, "nasty", host="probe")
    # a remote-style `~/py` (local hosts get `~` expanded at load): the script resolves it
    probe_host = replace(catalog.hosts["probe"], python="~/py")
    script = render_script(v, probe_host)
    path = tmp_path / "run.sh"
    path.write_text(script, encoding="utf-8")
    work = tmp_path / "cwd"
    work.mkdir()
    sh = shutil.which("sh")
    assert sh is not None
    proc = subprocess.run([sh, str(path)], cwd=work, capture_output=True, text=True,
                          env={"HOME": str(home), "PATH": os.environ["PATH"]}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text(encoding="utf-8"))
    loaded = yaml.safe_load(text)  # the values exactly as the YAML holds them
    assert got["argv"] == _expected_argv(loaded)
    assert got["env"] == {**{k: loaded["env"][k] for k in ("V1", "V2", "V3", "V4", "V5")},
                          "SHARED": "variant wins", "HOSTVAR": "host $(id) 'x'"}
    assert list(work.iterdir()) == []  # nothing ran: no pwned-* files
    assert not list(tmp_path.glob("pwned*")) and not list(home.glob("pwned*"))


def test_repo_catalog_every_variant_renders() -> None:
    repo = Path(__file__).resolve().parents[3]
    environ = {"VARIANTCTL_VLLM_PYTHON": "/venv/bin/python", "VARIANTCTL_TINY_MODEL": "/tiny"}
    catalog = load_catalog(repo / "variants", environ)
    assert len(catalog.names()) >= 15
    for name in catalog.names():
        v = resolve(catalog, name)
        script = render_script(v, catalog.hosts[v.host])
        assert script.startswith("#!/bin/sh\n") and "\nexec " in script
    v = resolve(catalog, "cpu-batched-tokens", port=8177)
    assert render_argv(v, catalog.hosts["cpu"]) == [
        "/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/tiny",
        "--port", "8177", "--load-format", "dummy", "--max-model-len", "512",
        "--dtype", "bfloat16", "--gpu-memory-utilization", "0.3", "--enforce-eager",
        "--max-num-batched-tokens", "64", "--no-enable-chunked-prefill"]
    assert render_env(v, catalog.hosts["cpu"]) == {"VLLM_CPU_KVCACHE_SPACE": "1"}
    seed = resolve(catalog, "sched4-nochunk")
    argv = render_argv(seed, catalog.hosts["corex"])
    # 0.6.3 has no --no-enable-chunked-prefill: "off" means the flag is left out
    assert "--enable-chunked-prefill" not in argv and "--no-enable-chunked-prefill" not in argv
    assert render_env(seed, catalog.hosts["corex"]) == {
        "PYTHONPATH": "/usr/local/corex/lib/python3/dist-packages:"
                      "/usr/local/corex/lib64/python3/dist-packages"}


def test_cli_render_formats_and_overrides(tmp_path: Path,
                                          run_cli: Callable[..., object]) -> None:
    project = write_project(tmp_path / "p", {
        "v.yaml": "host: a\nmodel: /m\nport: 8000\nargs: {x: 'two words'}\n",
        "hosts.yaml": "a:\n  python: /pa\nb:\n  python: /pb\n  env: {E: 'e e'}\n",
    })
    res = run_cli(["render", "v", "--port", "8111"], project=project)
    assert res.code == 0  # type: ignore[attr-defined]
    assert res.stdout.splitlines()[-1] == (  # type: ignore[attr-defined]
        "exec /pa -m vllm.entrypoints.openai.api_server --model /m --port 8111 --x 'two words'")
    res = run_cli(["render", "v", "--format", "argv", "--host", "b"], project=project)
    assert res.stdout.splitlines() == [  # type: ignore[attr-defined]
        "/pb", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m", "--port", "8000",
        "--x", "two words"]
    res = run_cli(["render", "v", "--format", "json", "--host", "b"], project=project)
    data = json.loads(res.stdout)  # type: ignore[attr-defined]
    assert data["env"] == {"E": "e e"} and data["host"] == "b" and data["port"] == 8000
    assert data["argv"][-1] == "two words"
    assert data["script"].endswith("--x 'two words'\n")
    assert data["log"].endswith("/logs/v.log")


def test_hand_built_variant_with_a_bad_flag_name_is_refused() -> None:
    v = ResolvedVariant(name="v", args={"x; touch y": 1})
    with pytest.raises(ValueError, match="invalid flag name 'x; touch y'"):
        render_argv(v, HOST)
