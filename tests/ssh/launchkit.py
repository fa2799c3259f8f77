"""Helpers for launch tests: a project whose variants run the FAKE GPU-era server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.support.sshd import SshLab, free_port

FAKE = Path(__file__).resolve().parents[1] / "support" / "fake_gpu_server.py"

SCENARIOS = ("xformers-multistep", "flashinfer", "graph-hang", "healthy", "exit", "dist-hang",
             "cpu-hang", "slow-config")


def make_project(root: Path, lab: SshLab | None, *, pace: float = 0.05, lead: float = 0.0,
                 stall: float = 30, ready_timeout: float = 60) -> Path:
    """variants/hosts.yaml (gpu1, gpu2 over SSH when ``lab``) and one ``fake-<scenario>``
    variant per scenario (each writes the decisive line's wall time to marks/<scenario>)."""
    (root / "variants").mkdir(parents=True)
    (root / "patchsets").mkdir()
    (root / "marks").mkdir()
    hosts = (
        f"local:\n  python: {sys.executable}\n  workdir: {root / 'work-local'}\n"
    )
    if lab is not None:
        for alias in ("gpu1", "gpu2"):
            hosts += (
                f"{alias}:\n  ssh:\n    alias: {alias}\n    config: {lab.ssh_config}\n"
                f"  python: {sys.executable}\n  workdir: {root / ('work-' + alias)}\n"
            )
    (root / "variants" / "hosts.yaml").write_text(hosts)
    for scenario in SCENARIOS:
        command = ["python", str(FAKE), "--scenario", scenario, "--pace", str(pace),
                   "--lead", str(lead), "--mark", str(root / "marks" / scenario)]
        (root / "variants" / f"fake-{scenario}.yaml").write_text(
            f"description: FAKE GPU-era server ({scenario}); a test double, not vLLM\n"
            f"command: {json.dumps(command)}\n"
            f"port: {free_port()}\n"
            "args:\n  enforce-eager: true\n"
            f"startup:\n  ready_timeout: {ready_timeout}\n  stall: {stall}\n"
        )
    return root


def run_json(project: Path, variant: str) -> dict[str, Any]:
    """The newest archived run.json of ``variant``."""
    from variantctl.runs.record import safe_name
    from variantctl.runs.store import RunStore

    dirs = [d for d in RunStore(project / "runs").dirs() if d.variant == safe_name(variant)]
    assert dirs, f"no run archived for {variant}"
    newest = max(dirs, key=lambda d: (d.path / "run.json").stat().st_mtime_ns)
    data: dict[str, Any] = json.loads((newest.path / "run.json").read_text())
    return data


def mark_time(project: Path, scenario: str) -> float:
    return float((project / "marks" / scenario).read_text())
