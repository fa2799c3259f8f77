"""Host loading: built-in local, ${VAR} expansion, errors with positions."""

from __future__ import annotations

from pathlib import Path

import pytest

from variantctl.config.hosts import get_host, load_hosts
from variantctl.errors import ConfigError, NotFoundError


def write_hosts(tmp_path: Path, text: str) -> Path:
    (tmp_path / "variants").mkdir(exist_ok=True)
    (tmp_path / "variants" / "hosts.yaml").write_text(text)
    return tmp_path


def test_builtin_local_without_file(tmp_path: Path) -> None:
    hosts = load_hosts(tmp_path, environ={})
    assert set(hosts) == {"local"}
    assert hosts["local"].is_local


def test_ssh_host_and_expansion(tmp_path: Path) -> None:
    write_hosts(
        tmp_path,
        "corex:\n"
        "  ssh: {alias: gpu1}\n"
        "  python: ${PY:-/usr/bin/python3}\n"
        "  env:\n"
        "    PYTHONPATH: /a/dist-packages:/b/dist-packages\n"
        "  gpu_monitor: ixsmi\n"
        "cpu:\n"
        "  python: ${VLLM_PY}\n",
    )
    hosts = load_hosts(tmp_path, environ={"VLLM_PY": "/venv/bin/python"})
    corex = hosts["corex"]
    assert corex.ssh is not None and corex.ssh.alias == "gpu1"
    assert corex.python == "/usr/bin/python3"
    assert corex.env["PYTHONPATH"] == "/a/dist-packages:/b/dist-packages"
    assert corex.origin.endswith("hosts.yaml:1")
    assert hosts["cpu"].is_local and hosts["cpu"].python == "/venv/bin/python"


def test_unset_variable_is_named(tmp_path: Path) -> None:
    write_hosts(tmp_path, "cpu:\n  python: ${NOPE}\n")
    expected = r"hosts.yaml:2:11: cpu.python: environment variable NOPE"
    with pytest.raises(ConfigError, match=expected):
        load_hosts(tmp_path, environ={})


def test_typo_and_bad_env_name(tmp_path: Path) -> None:
    write_hosts(tmp_path, "gpu:\n  ssh: {alias: g}\n  pyhton: x\n")
    with pytest.raises(ConfigError) as exc:
        load_hosts(tmp_path, environ={})
    assert exc.value.hint == "did you mean 'python'?"
    write_hosts(tmp_path, "gpu:\n  env: {'BAD NAME': x}\n")
    with pytest.raises(ConfigError, match="not an environment variable name"):
        load_hosts(tmp_path, environ={})


def test_unknown_host_did_you_mean(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError) as exc:
        get_host(load_hosts(tmp_path, environ={}), "locl")
    assert exc.value.hint == "did you mean 'local'?"
