"""GPU sampling beside a benchmark level: ``nvidia-smi`` / ``ixsmi`` once a second.

Two halves, kept apart so the arithmetic is testable without a GPU:

- PURE: :func:`parse_csv` reads the ``--format=csv,noheader,nounits`` output of
  the query in :data:`QUERY_ARGS`; :func:`summarize` gives per-GPU avg/max and
  the averages over *busy* samples (``utilization.gpu`` > 0), as the second seed
  study computed them ("过滤空闲期（GPU-Util=0%），双卡单独统计").
- EFFECTFUL: :class:`GpuSampler` runs the query through the host's
  :class:`~variantctl.targets.base.Target` (local or SSH) in a thread on a fixed
  1-second cadence while the level runs.

Why a loop of one-shot queries and not ``nvidia-smi -l 1``: the Target runs
programs to completion (one channel per run over SSH), a one-shot query has no
process to clean up when the level is interrupted, and every sample carries the
local clock of *this* machine, the same clock the request timestamps use.

A host without a monitor gives a summary with ``available=False`` and the
reason: never an error, the benchmark goes on.
"""

from __future__ import annotations

import math
import shlex
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from variantctl.errors import TargetError
from variantctl.jsonfields import Fields
from variantctl.jsontypes import JsonMapping, JsonObject
from variantctl.targets.base import Target

#: the fields the issue asks for, in the order ``nvidia-smi`` prints them
GPU_FIELDS = (
    "index",
    "utilization.gpu",
    "utilization.memory",
    "memory.used",
    "memory.total",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "clocks.sm",
)
QUERY_ARGS = (f"--query-gpu={','.join(GPU_FIELDS)}", "--format=csv,noheader,nounits")
#: programs tried, in order, when the host names no ``gpu_monitor``
KNOWN_MONITORS = ("nvidia-smi", "ixsmi")
#: what a sample's numeric field may hold instead of a number (not an error)
_MISSING = {"[n/a]", "n/a", "[not supported]", "not supported", "[unknown error]", ""}

#: the metrics summarised per GPU: (json key, GpuSample attribute)
METRICS = (
    ("util_gpu_pct", "util_gpu"),
    ("util_mem_pct", "util_mem"),
    ("mem_used_mib", "mem_used"),
    ("power_w", "power"),
    ("temp_c", "temp"),
    ("sm_clock_mhz", "sm_clock"),
)


@dataclass(frozen=True)
class GpuSample:
    """One GPU's line of one query; ``None`` where the monitor printed ``[N/A]``."""

    t: float
    index: int
    util_gpu: float | None
    util_mem: float | None
    mem_used: float | None
    mem_total: float | None
    power: float | None
    power_limit: float | None
    temp: float | None
    sm_clock: float | None

    @property
    def busy(self) -> bool:
        """Not idle: the seed's filter (GPU-Util = 0 % is idle)."""
        return self.util_gpu is not None and self.util_gpu > 0


def _number(text: str) -> float | None:
    text = text.strip()
    if text.lower() in _MISSING:
        return None
    value = float(text)  # ValueError: the line is malformed
    return value if math.isfinite(value) else None


def parse_csv(text: str, t: float) -> tuple[list[GpuSample], list[str]]:
    """Samples of one query's output, and the lines that could not be read.

    A bad line (a warning the tool printed, a truncated row) is returned, not
    raised: one odd line must not cost the other GPUs' samples.
    """
    samples: list[GpuSample] = []
    bad: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(GPU_FIELDS) or not cells[0].isdigit():
            bad.append(line)
            continue
        try:
            values = [_number(c) for c in cells[1:]]
        except ValueError:
            bad.append(line)
            continue
        samples.append(GpuSample(t, int(cells[0]), *values))
    return samples, bad


@dataclass(frozen=True)
class Stat:
    """avg and max over all samples, and avg over busy samples (None without data)."""

    avg: float | None
    max: float | None
    avg_busy: float | None

    def to_json(self) -> dict[str, float | None]:
        return {"avg": _r(self.avg), "max": _r(self.max), "avg_busy": _r(self.avg_busy)}

    @classmethod
    def from_json(cls, data: JsonMapping) -> Stat:
        return cls.from_fields(Fields(data, "gpu stat"))

    @classmethod
    def from_fields(cls, f: Fields) -> Stat:
        return cls(f.opt_number("avg"), f.opt_number("max"), f.opt_number("avg_busy"))


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _stat(all_values: Sequence[float | None], busy_values: Sequence[float | None]) -> Stat:
    vals = [v for v in all_values if v is not None]
    busy = [v for v in busy_values if v is not None]
    return Stat(
        sum(vals) / len(vals) if vals else None,
        max(vals) if vals else None,
        sum(busy) / len(busy) if busy else None,
    )


@dataclass(frozen=True)
class GpuDevice:
    """One GPU over one level."""

    index: int
    samples: int
    busy_samples: int
    stats: Mapping[str, Stat]
    mem_total_mib: float | None
    power_limit_w: float | None

    def to_json(self) -> JsonObject:
        return {
            "index": self.index,
            "samples": self.samples,
            "busy_samples": self.busy_samples,
            **{k: s.to_json() for k, s in self.stats.items()},
            "mem_total_mib": self.mem_total_mib,
            "power_limit_w": self.power_limit_w,
        }

    @classmethod
    def from_json(cls, data: JsonMapping) -> GpuDevice:
        return cls.from_fields(Fields(data, "gpu"))

    @classmethod
    def from_fields(cls, f: Fields) -> GpuDevice:
        return cls(
            index=f.integer("index"),
            samples=f.integer("samples"),
            busy_samples=f.integer("busy_samples"),
            stats={k: Stat.from_fields(f.obj(k)) for k, _ in METRICS if f.has(k)},
            mem_total_mib=f.opt_number("mem_total_mib"),
            power_limit_w=f.opt_number("power_limit_w"),
        )


@dataclass(frozen=True)
class GpuSummary:
    """The GPUs of the measured host during one level (``available=False``: why not)."""

    available: bool
    monitor: str | None = None
    reason: str | None = None
    interval_s: float = 1.0
    queries: int = 0
    devices: tuple[GpuDevice, ...] = ()
    #: lines the monitor printed that were not samples, and failed queries
    bad_lines: int = 0
    failed_queries: int = 0
    last_error: str | None = None

    def to_json(self) -> JsonObject:
        return {
            "available": self.available,
            "monitor": self.monitor,
            "reason": self.reason,
            "interval_s": self.interval_s,
            "queries": self.queries,
            "bad_lines": self.bad_lines,
            "failed_queries": self.failed_queries,
            "last_error": self.last_error,
            "devices": [d.to_json() for d in self.devices],
        }

    @classmethod
    def from_json(cls, data: JsonMapping) -> GpuSummary:
        return cls.from_fields(Fields(data, "gpu"))

    @classmethod
    def from_fields(cls, f: Fields) -> GpuSummary:
        return cls(
            available=f.flag("available"),
            monitor=f.opt_text("monitor"),
            reason=f.opt_text("reason"),
            interval_s=f.number("interval_s", 1.0),
            queries=f.integer("queries", 0),
            devices=tuple(GpuDevice.from_fields(d) for d in f.objs("devices")),
            bad_lines=f.integer("bad_lines", 0),
            failed_queries=f.integer("failed_queries", 0),
            last_error=f.opt_text("last_error"),
        )


def not_available(reason: str, monitor: str | None = None) -> GpuSummary:
    return GpuSummary(available=False, monitor=monitor, reason=reason)


def summarize(
    samples: Sequence[GpuSample], *, monitor: str, interval_s: float = 1.0, queries: int = 0,
    bad_lines: int = 0, failed_queries: int = 0, last_error: str | None = None,
) -> GpuSummary:
    """Per GPU: avg/max of every metric over all samples and avg over busy samples."""
    by_gpu: dict[int, list[GpuSample]] = {}
    for s in samples:
        by_gpu.setdefault(s.index, []).append(s)
    devices = []
    for index in sorted(by_gpu):
        rows = by_gpu[index]
        busy = [s for s in rows if s.busy]
        stats = {key: _stat([getattr(s, attr) for s in rows], [getattr(s, attr) for s in busy])
                 for key, attr in METRICS}
        totals = [s.mem_total for s in rows if s.mem_total is not None]
        limits = [s.power_limit for s in rows if s.power_limit is not None]
        devices.append(GpuDevice(index, len(rows), len(busy), stats,
                                 max(totals) if totals else None,
                                 max(limits) if limits else None))
    if not devices:
        reason = last_error or "the monitor printed no GPU samples"
        return GpuSummary(False, monitor, reason, interval_s, queries, (), bad_lines,
                          failed_queries, last_error)
    return GpuSummary(True, monitor, None, interval_s, queries, tuple(devices), bad_lines,
                      failed_queries, last_error)


def window_summary(
    samples: Sequence[GpuSample], window: tuple[float, float] | None, *, monitor: str,
    interval_s: float = 1.0, queries: int = 0, bad_lines: int = 0, failed_queries: int = 0,
    last_error: str | None = None,
) -> GpuSummary:
    """:func:`summarize` over the samples inside ``window`` (all when None); a window no
    sample fell in (shorter than the interval) is not available, saying so."""
    if window is not None:
        start, end = window
        inside = [s for s in samples if start <= s.t <= end]
        if samples and not inside:
            return not_available(
                f"no GPU sample fell in the {end - start:.1f} s steady-state window "
                f"(one per {interval_s:g} s)", monitor)
        samples = inside
    return summarize(samples, monitor=monitor, interval_s=interval_s, queries=queries,
                     bad_lines=bad_lines, failed_queries=failed_queries,
                     last_error=last_error)


# -- effectful: the sampler ---------------------------------------------------------------


def find_monitor(target: Target, configured: str | None) -> list[str] | None:
    """The monitor's argv prefix on the host: the host's ``gpu_monitor`` when set,
    else the first of :data:`KNOWN_MONITORS` on the host's PATH; None when there is none."""
    if configured:
        argv = shlex.split(configured)
        return argv if _exists(target, argv[0]) else None
    for name in KNOWN_MONITORS:
        if _exists(target, name):
            return [name]
    return None


def _exists(target: Target, program: str) -> bool:
    try:
        res = target.run(["sh", "-c", 'command -v "$1" >/dev/null', "sh", program], timeout=15)
    except TargetError:
        return False
    return res.ok


@dataclass
class GpuSampler:
    """Queries the monitor every ``interval`` seconds in a thread until :meth:`stop`.

    Use as ``with GpuSampler(target, argv) as s: ...`` then ``s.summary()``.
    """

    target: Target
    monitor: Sequence[str]
    interval: float = 1.0
    clock: Callable[[], float] = time.monotonic
    timeout: float = 10.0
    samples: list[GpuSample] = field(default_factory=list)
    queries: int = 0
    bad_lines: int = 0
    failed: int = 0
    last_error: str | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> GpuSampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="gpu-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            # a query in flight finishes (bounded by its timeout); its sample is kept
            self._thread.join(self.timeout + 5)
            self._thread = None

    def sample_once(self) -> None:
        t = self.clock()
        try:
            res = self.target.run([*self.monitor, *QUERY_ARGS], timeout=self.timeout)
        except TargetError as exc:
            self.failed += 1
            self.last_error = exc.message
            return
        self.queries += 1
        if not res.ok:
            self.failed += 1
            lines = (res.stderr or res.stdout).strip().splitlines()
            self.last_error = lines[-1] if lines else f"exit status {res.returncode}"
            return
        samples, bad = parse_csv(res.stdout, t)
        self.samples.extend(samples)
        self.bad_lines += len(bad)

    def _loop(self) -> None:
        # a fixed cadence (start + k * interval), so a slow query does not drift the grid
        start = self.clock()
        k = 0
        while not self._stop.is_set():
            self.sample_once()
            k += 1
            delay = start + k * self.interval - self.clock()
            if delay < 0:  # the query took longer than the interval: skip the missed ticks
                k += int(-delay // self.interval) + 1
                delay = start + k * self.interval - self.clock()
            if self._stop.wait(max(0.0, delay)):
                break

    def summary(self, window: tuple[float, float] | None = None) -> GpuSummary:
        """Over every sample, or over those stamped inside ``window`` (``(start, end)`` in
        the sampler's clock: the level's steady-state window)."""
        return window_summary(self.samples, window, monitor=" ".join(self.monitor),
                              interval_s=self.interval, queries=self.queries,
                              bad_lines=self.bad_lines, failed_queries=self.failed,
                              last_error=self.last_error)
