"""How the suite is spread over pytest-xdist workers (``make test`` runs ``-n``).

**Groups.** Fixtures scoped to a module or the session (an SSH lab, a real vLLM
server launched once for a module's tests, the one SLURM cluster) are set up once per
*worker*. So a group of tests runs on one worker, one test after another, and shares
those fixtures as it would in a serial run: every test module is a group; every SLURM
test is in one group (the cluster's daemons are one per machine); and modules that
share a session-scoped server are one group, declared in :data:`SHARED` (a module
saying so itself with ``pytest.mark.xdist_group(NAME)`` must agree with the table:
collection fails otherwise).

Why a scheduler of our own: xdist's ``--dist loadgroup`` marks a group by rewriting
each test's node id (``…::test@group``), which pytest 9.2 no longer lets a plugin
do (a node's id is a structured value now), so its groups silently fell apart and
every worker started a module's servers. The controller sees only node ids, so the
group is computed from the id: the module's path, or the table's name for it.

**Order.** Groups are handed out in collection order (``--no-loadscope-reorder``),
so the costliest tiers are collected first — the SLURM cluster, then the real-vLLM
modules, then the SSH lab — and start at once, while the many short unit modules fill
the gaps behind them (longest first keeps the last worker from finishing long after
the others).

Without ``-n`` none of this changes what a test sees.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.suiteclock import tier_of

#: collection order of the tiers: the costliest first
TIER_ORDER = {"slurm": 0, "vllm": 1, "ssh": 2, "unit": 3}
#: the one SLURM cluster: every module under tests/slurm is one group
SLURM_GROUP = "slurm-cluster"
#: modules that share a session-scoped fixture with another module -> their group
SHARED: dict[str, str] = {
    # one real `cpu-eager` server for the session (tests/support/eagerserver.py)
    "tests/vllm/test_bench_real.py": "cpu-eager-server",
    "tests/vllm/test_report_real.py": "cpu-eager-server",
    "tests/vllm/test_workloads_real.py": "cpu-eager-server",
}


def group_of_nodeid(nodeid: str) -> str:
    """The group a test runs in, from its node id alone (all the controller has)."""
    module = nodeid.split("::")[0]
    if module in SHARED:
        return SHARED[module]
    if module.startswith("tests/slurm/"):
        return SLURM_GROUP
    return module


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A module that names its group itself must be in :data:`SHARED` (the scheduler
    reads only the table): the test fails saying so."""
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return
    name = str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    if group_of_nodeid(item.nodeid) != name:
        pytest.fail(f"xdist_group({name!r}) of {item.nodeid.split('::')[0]} is not in "
                    "tests/support/scheduling.py's SHARED table: add the module there",
                    pytrace=False)


#: the longest groups of a tier, collected first in it (longest first): in collection
#: order (alphabetical) the real tune, the tier's longest module (7 real starts, about
#: 2 min alone), came last and ran on after the other workers had finished
LONGEST_FIRST = ("tests/vllm/test_tune_real.py", "tests/vllm/test_sweep_resume_real.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank: dict[str, tuple[int, int]] = {}
    for item in items:
        group = group_of_nodeid(item.nodeid)
        first = LONGEST_FIRST.index(group) if group in LONGEST_FIRST else len(LONGEST_FIRST)
        rank[group] = min(rank.get(group, (9, 0)), (TIER_ORDER[tier_of(item)], first))
    # A stable sort keeps each module's own order; every worker collects the same list.
    items.sort(key=lambda it: rank[group_of_nodeid(it.nodeid)])


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` with the groups above (xdist's own is ``trylast``)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleGroups(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return group_of_nodeid(nodeid)

    return ModuleGroups(config, log)
