"""Fixtures of the real-vLLM tier: the SSH tier's OpenSSH lab (tests/ssh/conftest.py),
and one real ``cpu-eager`` server shared by the modules that only read it
(tests/support/eagerserver.py; those modules share its xdist group)."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ssh.conftest import ssh_lab
from tests.support.eagerserver import SharedServer, shared_server
from tests.support.realvllm import StartBudget
from tests.support.sshd import SshLab

__all__ = ["eager_server", "ssh_lab"]


@pytest.fixture(scope="session")
def eager_server(tmp_path_factory: pytest.TempPathFactory, ssh_lab: SshLab,
                 vllm_python: Path, tiny_model: Path, start_budget: StartBudget
                 ) -> Iterator[SharedServer]:
    """The shared ``cpu-eager`` server, launched (not yet waited for: ``ready()``)."""
    yield from shared_server(tmp_path_factory, ssh_lab, vllm_python, tiny_model, start_budget)
