"""Fixtures of the SLURM tier: a real single-node cluster on this machine
(tests/support/slurm.py) whose login node is the SSH lab's ``gpu1`` sshd.

Jobs are submitted through the real sshd (``variantctl`` only talks to the login
node); slurmd runs here, so a job's server listens on this machine and
``/health`` is reached through the login node's SSH connection.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult, make_env
from tests.ssh.conftest import ssh_lab
from tests.support.slurm import SlurmCluster, free_port_block, missing
from tests.support.sshd import SshLab
from variantctl.cli import run

__all__ = ["ssh_lab"]


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    absent = missing()
    if absent:
        pytest.fail(f"SLURM is not installed ({', '.join(absent)} missing): run "
                    "`make slurm` (scripts/ensure-slurm.sh)")
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def slurm_hosts_yaml(lab: SshLab, cluster: SlurmCluster, shared: Path, *,
                     python: str = sys.executable, extra: str = "") -> str:
    """Two slurm hosts behind the login node gpu1: ``cluster`` (partition debug) and
    ``held`` (a partition that is down: jobs stay PENDING). Their ports are a block
    nothing on this machine holds now (``free_port_block``): a job's server listens on
    this machine, where other runs' servers may be listening."""
    first, last = free_port_block()
    text = ""
    for name, partition in (("cluster", "debug"), ("held", "held")):
        text += (
            f"{name}:\n"
            f"  ssh:\n    alias: gpu1\n    config: {lab.ssh_config}\n"
            f"  python: {python}\n"
            f"  workdir: {shared / name}\n"
            "  vllm_version: 0.32.0\n"
            "  slurm:\n"
            f"    partition: {partition}\n"
            "    time: '00:15:00'\n"
            f"    conf: {cluster.conf}\n"
            f"    ports: [{first}, {last}]\n"
            f"{extra}"
        )
    return text


class Project:
    def __init__(self, path: Path, cache: Path):
        self.path, self.cache = path, cache

    def cli(self, *args: str) -> CliResult:
        env = make_env(self.path, self.cache)
        code = run(list(args), env)
        return CliResult(code, env.stdout.file.getvalue(),  # type: ignore[attr-defined]
                         env.stderr.file.getvalue())  # type: ignore[attr-defined]
