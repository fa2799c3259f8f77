"""Where the suite's time goes: per-tier time and real vLLM server starts.

A pytest plugin (registered in ``tests/conftest.py``). At the end of a run it prints,
per tier (``unit``, ``ssh``, ``slurm``, ``vllm`` — the markers ``make unit`` filters
on), the number of tests, the time their set-up, call and tear-down took (summed),
the tier's span (from its first test's start to its last test's end: with
pytest-xdist the tiers run side by side, so the spans overlap and the ``all`` line's
span is the run's wall time), and how many real vLLM API servers its tests started,
with the modules that started them. A real start is the suite's unit of cost (tens of
seconds on a 2-core machine), so the count is what a change to the tests should keep
low.

Starts are observed, not declared: a daemon thread reads ``/proc`` once a second and
counts each new process running vLLM's API server (``-m vllm.entrypoints.openai.
api_server`` or ``vllm serve``) whose output or working directory is under this
process's temporary root — so a server started over the lab's sshd, by a SLURM job
or by a ``variantctl`` subprocess is counted like one started in-process, and servers
of other work on the machine are not. A server lives for seconds before it can fail,
so a second between reads misses none. Under xdist each worker counts under its own
root (``popen-gwN``) and hands its counts to the controller with its output.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

TIERS = ("unit", "ssh", "slurm", "vllm")
TIER_PROPERTY = "suiteclock-tier"
POLL_S = 1.0


def tier_of(item: pytest.Item) -> str:
    """The tier a test belongs to: its most expensive marker (``make unit`` runs the rest)."""
    names = {m.name for m in item.iter_markers()}
    for tier in ("slurm", "vllm", "ssh"):
        if tier in names:
            return tier
    return "unit"


def is_vllm_server(argv: list[str]) -> bool:
    """Whether a command line runs vLLM's OpenAI API server (not a parser probe)."""
    if "vllm.entrypoints.openai.api_server" in argv:
        return "--help" not in argv
    return any(Path(a).name == "vllm" and b == "serve" for a, b in itertools.pairwise(argv))


def _read_argv(pid: str) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read()
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def _under(pid: str, roots: tuple[str, ...]) -> bool:
    """The process writes its output, or works, under one of ``roots``."""
    for link in (f"/proc/{pid}/fd/1", f"/proc/{pid}/fd/2", f"/proc/{pid}/cwd"):
        try:
            dest = os.readlink(link)
        except OSError:
            continue
        if any(dest == r or dest.startswith(r + os.sep) for r in roots):
            return True
    return False


class StartCounter:
    """Counts real vLLM server processes started under ``roots``, per current label."""

    def __init__(self, roots: tuple[str, ...]):
        self.roots = roots
        self.label: tuple[str, str] = ("unit", "(before the first test)")
        self.by_tier: Counter[str] = Counter()
        self.by_module: Counter[tuple[str, str]] = Counter()
        self._seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="vllm-start-counter",
                                        daemon=True)

    def start(self) -> None:
        self._seen = {p for p in os.listdir("/proc") if p.isdigit()}  # not ours
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.scan()

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            self.scan()

    def scan(self) -> None:
        label = self.label
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or pid in self._seen:
                continue
            # read again until it is a server: `sh launch.sh` becomes one by exec
            if not is_vllm_server(_read_argv(pid)):
                continue
            self._seen.add(pid)
            if _under(pid, self.roots):
                self.by_tier[label[0]] += 1
                self.by_module[label] += 1


class SuiteClock:
    """Per-tier figures of one run: tests, the time their tests took (summed), the span
    from the tier's first test to its last (the wall time it occupied: with xdist the
    tiers overlap, so the spans add up to more than the run) and real vLLM starts.

    Tiers are read off each test's report, so the controller of an xdist run counts
    every worker's tests; starts are counted by each worker under its own temporary
    root and sent back with the worker's output (``workeroutput``)."""

    def __init__(self, counter: StartCounter | None):
        self.counter = counter
        self.seconds: Counter[str] = Counter()
        self.tests: Counter[str] = Counter()
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.starts: Counter[str] = Counter()
        self.starts_by_module: Counter[tuple[str, str]] = Counter()
        self.workers = 0
        self.began = time.monotonic()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        tier = tier_of(item)
        # the tier travels with the test's reports (an xdist worker sends them to the
        # controller, which has no items to read markers from)
        item.user_properties.append((TIER_PROPERTY, tier))
        if self.counter is not None:
            self.counter.label = (tier, item.nodeid.split("::")[0])
        yield

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        tiers = [v for k, v in report.user_properties if k == TIER_PROPERTY]
        if not tiers:
            return
        tier = str(tiers[0])
        self.seconds[tier] += report.duration
        if report.when == "setup":
            self.tests[tier] += 1
        if report.start:
            self.first[tier] = min(self.first.get(tier, report.start), report.start)
        if report.stop:
            self.last[tier] = max(self.last.get(tier, report.stop), report.stop)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.counter is None:
            return
        self.counter.stop()
        self.starts.update(self.counter.by_tier)
        self.starts_by_module.update(self.counter.by_module)
        output = getattr(session.config, "workeroutput", None)  # an xdist worker's
        if output is not None:
            output["suiteclock_starts"] = [[t, m, n] for (t, m), n
                                           in self.counter.by_module.items()]

    # optional: the hook is xdist's, and `pytest -p no:xdist` must still run
    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: object, error: object) -> None:
        """An xdist worker finished: add the starts it counted."""
        self.workers += 1
        output = getattr(node, "workeroutput", None) or {}
        for tier, module, n in output.get("suiteclock_starts", []):
            self.starts[tier] += n
            self.starts_by_module[(tier, module)] += n

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.tests:
            return
        tr = terminalreporter
        workers = f", {self.workers} workers" if self.workers else ""
        tr.section(f"time per tier{workers}")
        tr.write_line(f"{'tier':<6} {'tests':>5} {'test time':>10} {'span':>9}   "
                      "real vLLM server starts")
        for tier in TIERS:
            if self.tests[tier]:
                span = self.last.get(tier, 0.0) - self.first.get(tier, 0.0)
                tr.write_line(f"{tier:<6} {self.tests[tier]:>5} "
                              f"{_clock(self.seconds[tier]):>10} {_clock(span):>9}   "
                              f"{self.starts[tier]}")
        tr.write_line(f"{'all':<6} {sum(self.tests.values()):>5} "
                      f"{_clock(sum(self.seconds.values())):>10} "
                      f"{_clock(time.monotonic() - self.began):>9}   "
                      f"{sum(self.starts.values())}")
        for (tier, module), n in sorted(self.starts_by_module.items()):
            tr.write_line(f"  {n:>2} start{'s' if n > 1 else ' '} {tier:<5} {module}")


def _clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m}m {s:02d}s" if m else f"{seconds:.1f}s"


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    counter = None
    # The controller of an xdist run starts no server itself: its workers count.
    controller = (not hasattr(config, "workerinput")
                  and getattr(config.option, "dist", "no") != "no"
                  and bool(getattr(config.option, "tx", None)))
    if Path("/proc/self/cmdline").exists() and not controller:
        tmp = config._tmp_path_factory  # type: ignore[attr-defined]
        roots = (str(tmp.getbasetemp().resolve()),)
        counter = StartCounter(roots)
        counter.start()
    config.pluginmanager.register(SuiteClock(counter), "suiteclock")
