"""The keys keep their value (issue 18.3): launch, point and configuration keys made by
``runs/identity.py`` from typed values equal the keys the previous release computed
from dict bags (the constants below were computed with the code before the change), so
``sweep --resume`` and history over a store written by it still match; and a record of
the v2 fixture store keeps its configuration key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType

import pytest

from tests.conftest import REPO
from variantctl.benchparams import BenchParams
from variantctl.hostmodel import Host, SlurmSpec, SshSpec
from variantctl.profilevar import PROFILE_ENV
from variantctl.runs.identity import (
    Measured,
    PatchState,
    config_key,
    launch_key,
    point_key,
    record_config_key,
    unresolved_launch_key,
)
from variantctl.runs.store import RunStore
from variantctl.sweeps.model import SweepSpec
from variantctl.variants.model import ResolvedVariant

VARIANT = ResolvedVariant(
    name="cpu-eager@g-01", host="gpu1", port=8123, command=("vllm", "serve"), model="/m/tiny",
    args=MappingProxyType({"max-num-seqs": 2, "enforce-eager": True, "tp": ("a", "b")}),
    env=MappingProxyType({"VLLM_X": "1"}), requires=("fix-a",))
PROFILED = VARIANT.with_args({}, env={PROFILE_ENV: "/w/profile/p"}, origin="t")
SSH = Host(name="gpu1", ssh=SshSpec(alias="gpu1"), python="/opt/py", workdir="/w",
           env=MappingProxyType({"A": "b"}), origin="hosts.yaml:3")
SLURM = Host(name="hpc", ssh=SshSpec(alias="login"), workdir="/s",
             slurm=SlurmSpec(gres="gpu:4", partition="p"))
PATCHES = (PatchState("fix-a", MappingProxyType({"/r": "applied"}),
                      (MappingProxyType({"path": "x.py", "sha256": "ab"}),), required=True,
                      fingerprint="f1"),)
SPEC = SweepSpec(name="g", source="sweeps/g.yaml", bases=("cpu-eager",),
                 bench=(BenchParams(concurrency=(1, 2)), BenchParams(prompt="tools", repeat=2)))
PROFILE_SPEC = SweepSpec(name="g", source="sweeps/g.yaml", bases=("cpu-eager",), profile=True)
FINGERPRINTS = {"fix-a": "f1", "other": "f2"}


@pytest.mark.parametrize(("key", "expected"), [
    (lambda: launch_key(VARIANT, SSH), "c9449e9b3d"),
    (lambda: launch_key(VARIANT, SSH, PATCHES, SPEC.measured), "c7c84d5ab2"),
    (lambda: launch_key(PROFILED, SSH, PATCHES, PROFILE_SPEC.measured), "d457b10ebe"),
    (lambda: launch_key(VARIANT, SLURM), "165f142d53"),
    (lambda: unresolved_launch_key("gone", SSH), "d7ab8eaa9f"),
    (lambda: point_key(VARIANT, SSH, SPEC.measured), "b48244e4bc"),
    (lambda: point_key(PROFILED, SSH, PROFILE_SPEC.measured), "cca735a010"),
    (lambda: point_key(VARIANT, "nowhere", SPEC.measured), "d9a435752e"),
    (lambda: config_key(VARIANT, SSH, FINGERPRINTS), "74ec707b97"),
    # the profile directory is not in a configuration
    (lambda: config_key(PROFILED, SSH, FINGERPRINTS), "74ec707b97"),
    (lambda: config_key(replace(VARIANT, requires=()), SLURM, FINGERPRINTS), "9d68251b7d"),
    # a required patchset the project does not define: keyed by its name alone
    (lambda: config_key(VARIANT, SLURM, {}), "7d79b6e4fd"),
], ids=["launch", "launch-measured", "launch-profiled", "launch-slurm", "launch-unresolved",
        "point", "point-profile", "point-unknown-host", "config", "config-profiled",
        "config-no-requires", "config-undefined-patchset"])
def test_a_key_has_the_value_the_previous_release_gave_it(key: Callable[[], str],
                                                          expected: str) -> None:
    assert key() == expected


def test_a_v2_store_keeps_its_configuration_keys() -> None:
    store = RunStore(REPO / "tests" / "fixtures" / "store-v2" / "runs")
    keys = {d.path.name: record_config_key(store.read(d.path)) for d in store.dirs()}
    assert keys == {"2026-07-14-cpu-base-aaaaaaaaaa-1": "24c318b932",
                    "2026-07-14-cpu-small-bbbbbbbbbb-1": "65e1adeae3"}


def test_what_a_key_leaves_out() -> None:
    # not the name, nor where the host was defined
    renamed = replace(VARIANT, name="other")
    assert launch_key(renamed, SSH) == launch_key(VARIANT, SSH)
    moved = replace(SSH, origin="elsewhere.yaml:9")
    assert point_key(VARIANT, moved, SPEC.measured) == point_key(VARIANT, SSH, SPEC.measured)
    # a SLURM host's job count and ports decide nothing
    busy = replace(SLURM, slurm=SlurmSpec(gres="gpu:4", partition="p", max_jobs=9,
                                          ports=(9000, 9100)))
    assert launch_key(VARIANT, busy) == launch_key(VARIANT, SLURM)
    # an edited required patchset is another configuration; an unrequired one is not
    assert config_key(VARIANT, SSH, {**FINGERPRINTS, "fix-a": "f9"}) != config_key(
        VARIANT, SSH, FINGERPRINTS)
    assert config_key(VARIANT, SSH, {**FINGERPRINTS, "other": "f9"}) == config_key(
        VARIANT, SSH, FINGERPRINTS)
    # the bench parameters are in a point's key, not in its configuration's
    other = Measured((BenchParams(concurrency=(4,)),))
    assert point_key(VARIANT, SSH, other) != point_key(VARIANT, SSH, SPEC.measured)


