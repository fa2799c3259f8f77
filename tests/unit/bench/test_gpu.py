"""GPU sampling: the CSV parser on the real format (printed by the labelled stand-in
``tests/support/standin_smi/nvidia-smi``), the seed's busy-sample averages, the sampler
through a real LocalTarget, and "not available" on a host without a monitor."""

from __future__ import annotations

import itertools
import subprocess
import time
from pathlib import Path

import pytest

from variantctl.bench.gpu import (
    QUERY_ARGS,
    GpuSampler,
    GpuSummary,
    find_monitor,
    not_available,
    parse_csv,
    summarize,
)
from variantctl.targets.local import LocalTarget

STANDIN_DIR = Path(__file__).resolve().parents[2] / "support" / "standin_smi"
STANDIN = STANDIN_DIR / "nvidia-smi"


@pytest.fixture
def smi_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The stand-in first on PATH, counting its calls in a state file."""
    monkeypatch.setenv("PATH", f"{STANDIN_DIR}:/usr/bin:/bin")
    state = tmp_path / "smi-calls"
    monkeypatch.setenv("STANDIN_SMI_STATE", str(state))
    return state


def test_parses_the_real_format_printed_by_the_standin() -> None:
    out = subprocess.run([str(STANDIN), *QUERY_ARGS], capture_output=True, text=True,
                         check=True).stdout
    samples, bad = parse_csv(out, t=5.0)
    assert bad == []
    assert [(s.index, s.util_gpu, s.mem_used, s.power, s.sm_clock) for s in samples] == [
        (0, 0.0, 30477.0, 49.67, 210.0), (1, 0.0, 612.0, 21.03, 210.0)]
    assert samples[0].mem_total == 81559.0 and samples[0].power_limit == 250.0
    assert samples[0].t == 5.0 and not samples[0].busy


def test_na_fields_are_none_and_bad_lines_are_returned_not_raised() -> None:
    text = ("0, 55, 10, 100, 200, [N/A], [Not Supported], 40, 1400\n"
            "WARNING: infoROM is corrupted at gpu 0000:01:00.0\n"
            "1, 20, 3, 100\n"
            "1, 20, x, 100, 200, 30, 250, 40, 1400\n")
    samples, bad = parse_csv(text, t=0.0)
    assert len(samples) == 1
    assert samples[0].power is None and samples[0].power_limit is None
    assert samples[0].util_gpu == 55.0 and samples[0].busy
    assert len(bad) == 3


def test_summary_per_gpu_with_busy_averages_hand_computed(tmp_path: Path) -> None:
    state = tmp_path / "calls"
    samples = []
    for k in range(3):
        text = subprocess.run([str(STANDIN), *QUERY_ARGS], capture_output=True, text=True,
                              check=True, env={"STANDIN_SMI_STATE": str(state),
                                               "PATH": "/usr/bin:/bin"}).stdout
        samples += parse_csv(text, t=float(k))[0]
    s = summarize(samples, monitor="nvidia-smi", queries=3)
    assert s.available and [d.index for d in s.devices] == [0, 1]
    g0, g1 = s.devices
    assert (g0.samples, g0.busy_samples) == (3, 2)
    u = g0.stats["util_gpu_pct"]
    assert u.avg == pytest.approx(130 / 3) and u.max == 100 and u.avg_busy == 65
    m = g0.stats["util_mem_pct"]
    assert m.avg == pytest.approx(59 / 3) and m.max == 46 and m.avg_busy == 29
    mem = g0.stats["mem_used_mib"]
    assert mem.avg == pytest.approx(30511) and mem.max == 30555 and mem.avg_busy == 30528
    p = g0.stats["power_w"]
    assert p.avg == pytest.approx(149.67 / 3) and p.max == 51 and p.avg_busy == 50
    assert g0.mem_total_mib == 81559 and g0.power_limit_w == 250
    # GPU 1: its power read [N/A] on the second call, which is one of its busy samples
    assert (g1.samples, g1.busy_samples) == (3, 2)
    assert g1.stats["util_gpu_pct"].avg_busy == 40
    p1 = g1.stats["power_w"]
    assert p1.avg == pytest.approx((21.03 + 88.5) / 2) and p1.max == 88.5
    assert p1.avg_busy == 88.5
    # the JSON form round-trips
    assert GpuSummary.from_json(s.to_json()).to_json() == s.to_json()


def test_sampler_runs_the_monitor_through_the_target_once_per_interval(
        smi_on_path: Path) -> None:
    target = LocalTarget()
    monitor = find_monitor(target, None)
    assert monitor == ["nvidia-smi"]
    interval = 0.3
    sampler = GpuSampler(target, monitor, interval=interval)
    with sampler:
        time.sleep(1.6)
    summary = sampler.summary()
    assert summary.available and summary.failed_queries == 0
    assert 3 <= sampler.queries <= 7
    assert int(smi_on_path.read_text()) == sampler.queries
    # samples sit on a fixed grid: a slow query (a loaded machine) skips whole ticks
    times = sorted({s.t for s in sampler.samples})
    ticks = [(b - a) / interval for a, b in itertools.pairwise(times)]
    assert all(round(k) >= 1 and abs(k - round(k)) < 0.34 for k in ticks), ticks
    assert [d.index for d in summary.devices] == [0, 1]
    assert summary.devices[0].samples == sampler.queries


def test_a_configured_monitor_path_is_used(smi_on_path: Path) -> None:
    assert find_monitor(LocalTarget(), f"{STANDIN} ") == [str(STANDIN)]


def test_no_monitor_on_the_host_is_not_available_not_an_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    target = LocalTarget()
    assert find_monitor(target, None) is None
    assert find_monitor(target, "ixsmi") is None
    s = not_available("no nvidia-smi or ixsmi on host local")
    assert not s.available and "no nvidia-smi" in (s.reason or "")


def test_a_failing_monitor_gives_a_reason(smi_on_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STANDIN_SMI_FAIL", "1")
    sampler = GpuSampler(LocalTarget(), ["nvidia-smi"])
    sampler.sample_once()
    s = sampler.summary()
    assert not s.available and s.failed_queries == 1
    assert "NVML" in (s.reason or "")


def test_ixsmi_is_found_when_it_is_the_hosts_monitor(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    """Iluvatar's ixsmi takes nvidia-smi's query options (the first seed sampled it)."""
    (tmp_path / "ixsmi").symlink_to(STANDIN)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monitor = find_monitor(LocalTarget(), None)
    assert monitor == ["ixsmi"]
    sampler = GpuSampler(LocalTarget(), monitor)
    sampler.sample_once()
    assert sampler.summary().available and len(sampler.samples) == 2


def test_the_steady_window_summary_keeps_only_its_samples() -> None:
    """gpu_steady: the samples stamped inside the window, the ramp and drain left out."""
    from variantctl.bench.gpu import GpuSample, window_summary

    def at(t: float, util: float) -> GpuSample:
        return GpuSample(t, 0, util, 10.0, 100.0, 200.0, 50.0, 250.0, 40.0, 1400.0)

    # ramp (0 %), steady (80-100 %), drain (10 %)
    samples = [at(0, 0), at(1, 0), at(2, 80), at(3, 100), at(4, 90), at(5, 10), at(6, 10)]
    whole = window_summary(samples, None, monitor="nvidia-smi")
    assert whole.devices[0].stats["util_gpu_pct"].avg == pytest.approx(290 / 7)
    steady = window_summary(samples, (1.5, 4.5), monitor="nvidia-smi")
    (d,) = steady.devices
    assert d.samples == 3 and d.stats["util_gpu_pct"].avg == pytest.approx(90)
    assert d.stats["util_gpu_pct"].max == 100
    # a window between two samples: said, not an empty summary
    none = window_summary(samples, (2.2, 2.8), monitor="nvidia-smi")
    assert not none.available
    assert none.reason == "no GPU sample fell in the 0.6 s steady-state window (one per 1 s)"
