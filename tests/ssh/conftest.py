"""Fixtures of the SSH tier: real OpenSSH servers on 127.0.0.1 (see tests/support/sshd.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.sshd import SshLab
from variantctl.hostmodel import Host, SshSpec


@pytest.fixture(scope="session")
def ssh_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshLab]:
    """Two sshd 'hosts', gpu1 and gpu2, and an ssh_config naming them."""
    lab = SshLab(tmp_path_factory.mktemp("sshlab"))
    try:
        lab.add("gpu1")
        lab.add("gpu2")
        yield lab
    finally:
        lab.stop()


def ssh_host(lab: SshLab, alias: str, workdir: Path, python: str = sys.executable) -> Host:
    """A Host reaching ``alias`` through the lab's ssh_config."""
    return Host(
        name=alias,
        ssh=SshSpec(alias=alias, config_file=str(lab.ssh_config)),
        python=python,
        workdir=str(workdir),
    )


@pytest.fixture
def gpu1(ssh_lab: SshLab, tmp_path: Path) -> Host:
    return ssh_host(ssh_lab, "gpu1", tmp_path / "gpu1-work")


@pytest.fixture
def gpu2(ssh_lab: SshLab, tmp_path: Path) -> Host:
    return ssh_host(ssh_lab, "gpu2", tmp_path / "gpu2-work")


def write_hosts_yaml(project: Path, lab: SshLab, workdir: Path, extra: str = "") -> Path:
    """A project whose variants/hosts.yaml names gpu1 and gpu2."""
    (project / "variants").mkdir(parents=True, exist_ok=True)
    (project / "patchsets").mkdir(exist_ok=True)
    text = "".join(
        f"{alias}:\n"
        f"  ssh:\n    alias: {alias}\n    config: {lab.ssh_config}\n"
        f"  python: {sys.executable}\n"
        f"  workdir: {workdir / alias}\n"
        for alias in ("gpu1", "gpu2")
    )
    path = project / "variants" / "hosts.yaml"
    path.write_text(text + extra)
    return path
