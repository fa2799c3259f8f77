"""Helpers for launch tests: a project whose variants run the FAKE GPU-era server."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.sshd import SshLab, free_port

FAKE = Path(__file__).resolve().parents[1] / "support" / "fake_gpu_server.py"

SCENARIOS = ("xformers-multistep", "flashinfer", "graph-hang", "healthy", "exit", "dist-hang",
             "cpu-hang", "slow-config")


def machine_stall(lab: SshLab | None = None) -> float:
    """A ``--stall`` the stand-in hang tests can use on this machine now: 2 s when it is
    quiet; on a loaded one longer, scaled from how long a Python process takes to start
    and, for a host behind the lab's sshd, an SSH command takes (each the median of
    three) — the fake server's first lines wait for both, and so does every look at its
    processes' CPU time; a stall of only a few of them calls a slow start a hang (issue
    20.4: thresholds from the machine, not constants)."""
    def median(argv: list[str]) -> float:
        took = []
        for _ in range(3):
            t0 = time.monotonic()
            subprocess.run(argv, check=True, capture_output=True, timeout=120)
            took.append(time.monotonic() - t0)
        return sorted(took)[1]

    python = median([sys.executable, "-c", "pass"])
    remote = (median(["ssh", "-F", str(lab.ssh_config), "gpu1", "true"])
              if lab is not None else 0.0)
    return max(2.0, round(20 * python, 1), round(10 * remote, 1))


def make_project(root: Path, lab: SshLab | None, *, pace: float = 0.05, lead: float = 0.0,
                 stall: float = 30, ready_timeout: float = 60, busy: float = 6.0) -> Path:
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
                   "--lead", str(lead), "--mark", str(root / "marks" / scenario),
                   "--busy", str(busy)]
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
