"""A project whose variants run the FAKE OpenAI-compatible server (tests/support/
fake_openai_server.py — a labelled test double with known timing, not vLLM), for the
``variantctl bench`` tests: launch a fake variant for real, then benchmark it.

The hosts sample GPUs with the labelled stand-in ``tests/support/standin_smi/nvidia-smi``
(``gpu_monitor``), counting its calls in ``<root>/smi-<host>`` so every call differs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.support.sshd import SshLab, free_port

SUPPORT = Path(__file__).resolve().parent
FAKE_OPENAI = SUPPORT / "fake_openai_server.py"
STANDIN_SMI = SUPPORT / "standin_smi" / "nvidia-smi"

#: variant -> extra flags of the fake server
VARIANTS = {
    "fake-openai": {"ttft-ms": 40, "itl-ms": 5},
    "fake-openai-b": {"ttft-ms": 20, "itl-ms": 10},
    "fake-openai-slow": {"ttft-ms": 20, "itl-ms": 30},
    "fake-openai-dies": {"ttft-ms": 20, "itl-ms": 20, "die-after": 5},
    "fake-openai-fails": {"ttft-ms": 10, "itl-ms": 5, "fail-every": 1},
}


def make_bench_project(root: Path, lab: SshLab | None = None, *,
                       gpu_monitor: bool = True) -> Path:
    (root / "variants").mkdir(parents=True)
    (root / "patchsets").mkdir()
    names = ["local"] + (["gpu1"] if lab is not None else [])
    hosts = ""
    for name in names:
        hosts += f"{name}:\n"
        if name != "local":
            assert lab is not None
            hosts += f"  ssh:\n    alias: {name}\n    config: {lab.ssh_config}\n"
        hosts += f"  python: {sys.executable}\n  workdir: {root / ('work-' + name)}\n"
        if gpu_monitor:
            monitor = f"env STANDIN_SMI_STATE={root / ('smi-' + name)} {STANDIN_SMI}"
            hosts += f"  gpu_monitor: {json.dumps(monitor)}\n"
    (root / "variants" / "hosts.yaml").write_text(hosts)
    for name, flags in VARIANTS.items():
        write_fake_variant(root, name, flags)
    return root


def write_fake_variant(root: Path, name: str, flags: dict[str, object], *,
                       description: str = "FAKE OpenAI-compatible server with known "
                                          "timing; a test double, not vLLM",
                       python: str = "python") -> Path:
    """``variants/NAME.yaml``: the fake server with ``flags`` on a free port."""
    args = "".join(f"  {k}: {v}\n" for k, v in flags.items())
    path = root / "variants" / f"{name}.yaml"
    path.write_text(
        f"description: {description}\n"
        f"command: {json.dumps([python, str(FAKE_OPENAI)])}\n"
        f"port: {free_port()}\n"
        f"args:\n{args}"
        "startup:\n  ready_timeout: 30\n  stall: 30\n"
    )
    return path
