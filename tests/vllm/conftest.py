"""The real-vLLM tier reuses the SSH tier's OpenSSH fixtures (tests/ssh/conftest.py)."""

from tests.ssh.conftest import ssh_lab

__all__ = ["ssh_lab"]
