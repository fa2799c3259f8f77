"""The suite stops what it starts (issue 33): a pytest plugin, loaded by tests/conftest.py.

- Every test that has a ``tmp_path`` gets a reaper: after the test and all its fixtures
  are torn down, a process still running in (or naming) that ``tmp_path`` is ended by its
  verified identity. A stand-in's deliberate orphan (the "exit" scenarios, whose child
  outlives its leader so ``stop`` has a group to end) is thus gone even when the test
  failed before its ``stop``.
- At the end of the run the root process (the xdist controller, or pytest alone) waits
  briefly for the run's processes to end, then lists any still alive whose working
  directory or command line is under the run's temp root or that carries the run's
  marker, ends them, and fails the run naming each: a session fixture that forgot a
  server, or a server that survived its stop, cannot pass unnoticed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from tests.support import leftovers

#: seconds the run's own processes get to finish ending after the last teardown
#: (VARIANTCTL_LEFTOVER_SETTLE overrides it: the check's own test runs one with leaks)
SETTLE_SECONDS = float(os.environ.get("VARIANTCTL_LEFTOVER_SETTLE", "15"))


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    # set in the root process before any worker starts: every process the run starts
    # locally inherits it, whatever directory it runs in
    if not _is_worker(config):
        os.environ[leftovers.MARKER] = f"{os.getpid()}-{time.time_ns()}"


@pytest.fixture(autouse=True)
def _reap_test_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    # autouse, so set up before the test's other fixtures and torn down after them
    yield
    tmp = request.node.funcargs.get("tmp_path") if hasattr(request.node, "funcargs") else None
    if tmp is None:
        return
    left = leftovers.find([tmp])
    if left:
        leftovers.end(left)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if _is_worker(config):
        return
    root = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    left = leftovers.settle([root], marker=os.environ.get(leftovers.MARKER),
                            seconds=SETTLE_SECONDS)
    if not left:
        return
    leftovers.end(left)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"the run left {len(left)} process(es) running (ended now):",
             *(f"  {p.describe()}" for p in left)]
    for line in lines:
        if reporter is not None:
            reporter.write_line(line, red=True)
        else:
            print(line)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
