"""`hosts`, `hosts check` and `locate` over real SSH (and locally)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from tests.ssh.conftest import write_hosts_yaml
from tests.support.sshd import SshLab, free_port
from variantctl.exitcodes import ExitCode

pytestmark = pytest.mark.ssh


@pytest.fixture
def project(tmp_path: Path, ssh_lab: SshLab) -> Path:
    proj = tmp_path / "proj"
    cfg = tmp_path / "dead_config"
    cfg.write_text(f"Host dead\n  HostName 127.0.0.1\n  Port {free_port()}\n  User root\n")
    write_hosts_yaml(proj, ssh_lab, tmp_path / "work",
                     extra=f"dead:\n  ssh:\n    alias: dead\n    config: {cfg}\n"
                           f"nogpu:\n  ssh:\n    alias: gpu2\n    config: {ssh_lab.ssh_config}\n"
                           f"  gpu_monitor: ixsmi\n  python: /no/such/python3\n")
    return proj


def test_hosts_lists_configured_hosts(run_cli, project: Path) -> None:  # type: ignore[no-untyped-def]
    res = run_cli(["hosts", "--json"], project=project)
    assert res.code == 0, res.output
    names = {h["name"]: h for h in json.loads(res.stdout)["hosts"]}
    assert set(names) == {"local", "gpu1", "gpu2", "dead", "nogpu"}
    assert names["gpu1"]["ssh"] == "gpu1"
    assert names["gpu1"]["origin"].endswith("hosts.yaml:1")
    table = run_cli(["hosts"], project=project)
    assert "gpu2" in table.stdout and "REACHED BY" in table.stdout


def test_hosts_check_reports_each_host(run_cli, project: Path) -> None:  # type: ignore[no-untyped-def]
    res = run_cli(["hosts", "check", "--json", "--timeout", "3"], project=project)
    assert res.code == ExitCode.UNREACHABLE, res.output
    by = {h["host"]: h for h in json.loads(res.stdout)["hosts"]}
    me = ".".join(map(str, sys.version_info[:3]))
    for name in ("local", "gpu1", "gpu2"):
        assert by[name]["ok"], by[name]
        assert by[name]["python_version"] == me
    assert not by["dead"]["reachable"] and "connection refused" in by["dead"]["problems"][0]
    nogpu = by["nogpu"]
    assert nogpu["reachable"] and not nogpu["ok"]
    assert nogpu["gpu_monitor_found"] is False
    assert any("/no/such/python3" in p for p in nogpu["problems"])
    ok = run_cli(["hosts", "check", "gpu1", "gpu2"], project=project)
    assert ok.code == 0 and "ok" in ok.stdout


def test_locate_lists_every_copy_and_the_imported_one(
    run_cli, project: Path, tmp_path: Path, ssh_lab: SshLab  # type: ignore[no-untyped-def]
) -> None:
    roots = [tmp_path / "corex-lib", tmp_path / "corex-lib64"]
    for i, root in enumerate(roots):
        pkg = root / "fakevllm" / "engine"
        pkg.mkdir(parents=True)
        (root / "fakevllm" / "__init__.py").write_text("raise SystemExit('must not import')\n")
        (pkg / "__init__.py").write_text("")
        (pkg / "arg_utils.py").write_text(f"enforce_eager = True  # copy {i}\n")
    # the PYTHONPATH comes from the host's env, as on the seed's CoreX host
    with open(project / "variants" / "hosts.yaml", "a") as fh:
        fh.write(f"corex:\n  ssh:\n    alias: gpu1\n    config: {ssh_lab.ssh_config}\n"
                 f"  python: {sys.executable}\n  env:\n"
                 f"    PYTHONPATH: {roots[0]}:{roots[1]}\n")
    res = run_cli(["locate", "fakevllm.engine.arg_utils", "--host", "corex", "--json"],
                  project=project)
    assert res.code == 0, res.output
    (found,) = json.loads(res.stdout)["results"]
    paths = [c["path"] for c in found["copies"]]
    assert paths == [str(r / "fakevllm" / "engine" / "arg_utils.py") for r in roots]
    assert found["imported"] == paths[0]
    assert [c["imported"] for c in found["copies"]] == [True, False]
    for c in found["copies"]:
        assert c["sha256"] == hashlib.sha256(Path(c["path"]).read_bytes()).hexdigest()
    human = run_cli(["locate", "fakevllm.engine.arg_utils", "--host", "corex"], project=project)
    assert human.code == 0 and " * " + paths[0] in human.stdout
    missing = run_cli(["locate", "no_such_mod_xyz", "--host", "gpu1"], project=project)
    assert missing.code == ExitCode.FAILED and "not on the path" in missing.stderr
    bad = run_cli(["locate", "a/b", "--host", "gpu1"], project=project)
    assert bad.code == ExitCode.USAGE and "not a dotted module name" in bad.stderr
    dead = run_cli(["locate", "json", "--hosts", "gpu1,dead", "--json"], project=project)
    assert dead.code == ExitCode.UNREACHABLE
    assert json.loads(dead.stdout)["results"][0]["host"] == "gpu1"
