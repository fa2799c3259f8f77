"""Root discovery runs the host's real Python with the host's environment."""

from __future__ import annotations

import sys
from pathlib import Path
from types import MappingProxyType

import pytest

from tests.unit.patching.conftest import EAGER, REL
from variantctl.errors import VariantctlError
from variantctl.hostmodel import Host
from variantctl.targets.local import LocalTarget
from variantctl.targets.roots import discover_roots, resolve_roots


def _host(pythonpath: str = "", site_roots: tuple[str, ...] = ()) -> Host:
    env = MappingProxyType({"PYTHONPATH": pythonpath} if pythonpath else {})
    return Host(name="local", python=sys.executable, env=env, site_roots=site_roots)


def test_every_sys_path_entry_holding_the_module_in_order(make_roots, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    roots = make_roots((EAGER / "v055_engine_config" / "before.py").read_bytes(),
                       names=("lib64", "lib"))
    link = tmp_path / "lib-link"
    link.symlink_to(roots[1], target_is_directory=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    path = ":".join(map(str, [empty, roots[0], link, roots[1]]))
    found = discover_roots(LocalTarget(), _host(path), "vllm.engine.arg_utils")
    # the symlinked copy of lib is the same directory: listed once
    assert found == [str(roots[0]), str(link)]
    assert (Path(found[1]) / REL).exists()


def test_resolve_prefers_explicit_then_site_roots(make_roots) -> None:  # type: ignore[no-untyped-def]
    target = LocalTarget()
    host = _host(site_roots=("/configured",))
    assert resolve_roots(target, host, ["vllm.engine.arg_utils"], ["/explicit"]) == ["/explicit"]
    assert resolve_roots(target, host, ["vllm.engine.arg_utils"]) == ["/configured"]
    with pytest.raises(VariantctlError, match="is not importable by host 'local'"):
        resolve_roots(target, _host(), ["vllm.engine.arg_utils"])
