"""One launcher per loaded host for the command (issue 18.5): every caller of
``launcher_for`` with the command's host gets the same launcher, so what it caches (a
SLURM node's address) lasts; a host loaded again gets a fresh one."""

from __future__ import annotations

import gc

from variantctl.hostmodel import Host, SlurmSpec
from variantctl.launch.launcher import _LAUNCHERS, ProcessLauncher, launcher_for
from variantctl.launch.slurm import SlurmLauncher


def test_the_same_host_value_gets_the_same_launcher() -> None:
    host = Host(name="gpu1", python="python3")
    first = launcher_for(host)
    assert isinstance(first, ProcessLauncher)
    assert launcher_for(host) is first
    # the next command loads its hosts again: an equal value, a launcher of its own
    again = Host(name="gpu1", python="python3")
    assert again == host and launcher_for(again) is not first


def test_a_slurm_launchers_cache_lasts_for_the_command() -> None:
    host = Host(name="login", slurm=SlurmSpec())
    launcher = launcher_for(host)
    assert isinstance(launcher, SlurmLauncher)
    launcher._addresses["node7"] = "10.0.0.7"  # as asked of scontrol once
    other = launcher_for(host)
    assert isinstance(other, SlurmLauncher) and other._addresses == {"node7": "10.0.0.7"}


def test_a_collected_host_leaves_no_launcher_behind() -> None:
    host = Host(name="gone", python="python3")
    launcher_for(host)
    key = id(host)
    assert key in _LAUNCHERS
    del host
    gc.collect()
    assert key not in _LAUNCHERS
