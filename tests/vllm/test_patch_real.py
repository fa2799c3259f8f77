"""The real tier: eager-allreduce on the real vLLM source.

- vLLM CPU 0.32.0 (installed by `make vllm`): its arg_utils.py with the two values
  hard-coded (as the CoreX fork does), copied into two roots, applied through the
  CLI, must give back the upstream file byte for byte; rollback gives back the
  vendor file. Discovery through the real venv's Python finds its site-packages.
- Released GPU wheels 0.5.5 … 0.10.2 (downloaded once with `pip download --no-deps`
  into ~/.cache/variantctl/wheels; only arg_utils.py is kept from them): the same
  round trip on each release, covering both method layouts and the log-string trap.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CACHE, REPO, CliResult
from tests.support.cachelock import wheel_cache_lock
from variantctl.hostmodel import Host
from variantctl.targets.local import LocalTarget
from variantctl.targets.roots import discover_roots

pytestmark = pytest.mark.vllm

REL = Path("vllm/engine/arg_utils.py")
WHEELS = CACHE / "wheels"
RELEASES = ("0.5.5", "0.6.0", "0.6.2", "0.6.3", "0.6.6", "0.7.3", "0.8.5", "0.9.2", "0.10.2")
EAGER = "enforce_eager=self.enforce_eager,"
ALLREDUCE = "disable_custom_all_reduce=self.disable_custom_all_reduce,"


def vendorise(upstream: str) -> str:
    """Hard-code the two values at their call sites, as the CoreX fork does."""
    assert upstream.count(EAGER) == 1 and upstream.count(ALLREDUCE) == 1
    return upstream.replace(EAGER, "enforce_eager=True,").replace(
        ALLREDUCE, "disable_custom_all_reduce=True,")


def _roots(tmp_path: Path, data: str) -> list[Path]:
    roots = []
    for name in ("lib", "lib64"):
        root = tmp_path / "corex" / name / "python3" / "dist-packages"
        (root / REL).parent.mkdir(parents=True)
        (root / REL).write_text(data, "utf-8")
        roots.append(root)
    return roots


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "patchsets").mkdir(parents=True)
    (project / "patchsets" / "eager-allreduce.yaml").write_bytes(
        (REPO / "patchsets" / "eager-allreduce.yaml").read_bytes())
    return project


def _round_trip(tmp_path: Path, run_cli: Callable[..., CliResult], upstream: str) -> None:
    vendor = vendorise(upstream)
    roots = _roots(tmp_path, vendor)
    project = _project(tmp_path)
    args = [a for r in roots for a in ("--root", str(r))]

    r = run_cli(["status", "eager-allreduce", *args, "--json"], project=project)
    assert r.code == 0, r.output
    files = json.loads(r.stdout)["reports"][0]["files"]
    assert [f["state"] for f in files] == ["pristine", "pristine"]

    r = run_cli(["apply", "eager-allreduce", *args], project=project)
    assert r.code == 0, r.output
    for root in roots:
        assert (root / REL).read_text("utf-8") == upstream  # byte for byte
        assert len(list((root / REL).parent.glob("arg_utils.py.bak_*_eager_allreduce"))) == 1

    r = run_cli(["status", "eager-allreduce", *args, "--json"], project=project)
    assert r.code == 0
    files = json.loads(r.stdout)["reports"][0]["files"]
    assert [f["state"] for f in files] == ["applied", "applied"]

    r = run_cli(["rollback", "eager-allreduce", *args], project=project)
    assert r.code == 0, r.output
    for root in roots:
        assert (root / REL).read_text("utf-8") == vendor
        assert not list((root / REL).parent.glob("arg_utils.py.bak_*"))


def test_real_cpu_build_round_trip(tmp_path: Path, run_cli, vllm_site_packages: Path) -> None:  # type: ignore[no-untyped-def]
    upstream = (vllm_site_packages / REL).read_text("utf-8")
    assert upstream.count("\n") > 3000
    _round_trip(tmp_path, run_cli, upstream)


def test_discovery_and_status_of_the_real_venv(tmp_path: Path, run_cli, vllm_python: Path,  # type: ignore[no-untyped-def]
                                               vllm_site_packages: Path) -> None:
    host = Host(name="local", python=str(vllm_python))
    roots = discover_roots(LocalTarget(), host, "vllm.engine.arg_utils")
    assert [Path(r).resolve() for r in roots] == [vllm_site_packages.resolve()]
    # the installed upstream file reads as applied; status never writes into the venv
    project = _project(tmp_path)
    (project / "variants").mkdir()
    (project / "variants" / "hosts.yaml").write_text(f"local:\n  python: {vllm_python}\n")
    before = (vllm_site_packages / REL).stat().st_mtime_ns
    r: CliResult = run_cli(["status", "eager-allreduce", "--json"], project=project)
    assert r.code == 0, r.output
    (report,) = json.loads(r.stdout)["reports"]
    assert [f["state"] for f in report["files"]] == ["applied"]
    assert (vllm_site_packages / REL).stat().st_mtime_ns == before
    assert not (vllm_site_packages / ".variantctl").exists()


def _release_source(version: str) -> str:
    """arg_utils.py of a released vLLM wheel (downloaded once, then cached)."""
    with wheel_cache_lock(WHEELS):
        return _fetch_release_source(version)


def _fetch_release_source(version: str) -> str:
    cached = WHEELS / f"arg_utils-{version}.py"
    if cached.exists():
        return cached.read_text("utf-8")
    WHEELS.mkdir(parents=True, exist_ok=True)
    wheels = sorted(WHEELS.glob(f"vllm-{version}-*.whl"))
    if not wheels:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                               f"vllm=={version}", "-d", str(WHEELS)],
                              capture_output=True, text=True, check=False, timeout=900)
        wheels = sorted(WHEELS.glob(f"vllm-{version}-*.whl"))
        if proc.returncode != 0 or not wheels:
            pytest.fail(f"could not download vllm=={version}: {proc.stderr[-500:]}")
    with zipfile.ZipFile(wheels[0]) as zf:
        text = zf.read(str(REL)).decode("utf-8")
    cached.write_text(text, "utf-8")
    wheels[0].unlink()  # only this one file is needed; the wheels are 130-400 MB each
    return text


@pytest.mark.parametrize("version", RELEASES)
def test_released_versions_round_trip(tmp_path: Path, run_cli, version: str) -> None:  # type: ignore[no-untyped-def]
    upstream = _release_source(version)
    _round_trip(tmp_path, run_cli, upstream)
