"""Shared test support: real vLLM CPU paths, sshd fixture, fake GPU-era servers."""
