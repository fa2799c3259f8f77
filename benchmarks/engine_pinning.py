"""Keep vLLM's CPU engine from starving its own output thread (benchmark set-up only).

Found while chasing issue 10's TTFT disagreement: on this 2-core VM the vLLM 0.32 CPU
server is bimodal. In phases lasting seconds, every request's tokens reach the API
server in one burst when the request ends (TTFT ≈ E2EL, TPOT ≈ 0), then for a while
they stream again one per step. Per request both clients see the same thing (paired
requests agree within 0.5 ms); it is the server's mode, and a 40-request round lands
in one or the other by chance, which moved mean TTFT by 50-500 % between rounds.

The cause, found by moving threads (300-request runs, bursts per 200 requests):
EngineCore's main thread busy-waits for the worker's reply, re-taking the GIL after
each ``sched_yield``; its output thread (msgpack + ZMQ send) then rarely wins the GIL
while they share a core, and the outputs leave only when the main thread goes idle at
the end of the request. With the engine's helper threads on the worker's core and the
main thread on the other core: 0 bursts in 4 × 200 requests (default placement: 0-193
per 200; everything of EngineCore on one core: 100-155). A GPU host with more cores
than processes is unlikely to meet this; ``variantctl bench`` warns when it happens.

The benchmarks that compare two measurements of one server pin the threads this way so
the comparison measures the clients or the patch, not which mode the server was in.
"""

from __future__ import annotations

import os
from pathlib import Path

_PROC = Path("/proc")


def _comm(pid: int) -> str:
    try:
        return (_PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in (_PROC / str(pid) / "task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def descendants(pid: int) -> list[int]:
    seen: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        for c in _children(p):
            if c not in seen:
                seen.append(c)
                todo.append(c)
    return seen


def server_pid_on_port(port: int) -> int | None:
    """The process whose command line serves ``--port PORT`` (the vLLM API server)."""
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        for i, arg in enumerate(argv[:-1]):
            if arg == b"--port" and argv[i + 1] == str(port).encode():
                return int(entry.name)
            if arg == f"--port={port}".encode():
                return int(entry.name)
    return None


def pin_engine_threads(server_pid: int) -> str:
    """Move EngineCore's helper threads to the worker's cores; its main thread and the
    API server off them.

    Returns what was done, for the benchmark's log line; does nothing (and says so) when
    the processes are not found or the machine has no core to spare.
    """
    procs = descendants(server_pid)
    engines = [p for p in procs if _comm(p).startswith("VLLM::EngineCor")]
    workers = [p for p in procs if _comm(p).startswith("VLLM::Worker")]
    if not engines or not workers:
        return f"engine threads not pinned: no EngineCore/Worker under pid {server_pid}"
    worker_cpus = os.sched_getaffinity(workers[0])
    all_cpus = os.sched_getaffinity(engines[0])
    other = all_cpus - worker_cpus
    if not other:
        return "engine threads not pinned: the worker may use every core"
    moved = 0
    # The API server goes with EngineCore's main thread: left to the OS it sometimes
    # settles on the worker's core, and that instance is then a few percent slower than
    # the next one running the same code.
    for task in (_PROC / str(server_pid) / "task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), other)
        except OSError:
            continue
    for engine in engines:
        for task in (_PROC / str(engine) / "task").iterdir():
            tid = int(task.name)
            try:
                os.sched_setaffinity(tid, other if tid == engine else worker_cpus)
                moved += 1
            except OSError:
                continue  # a thread that ended meanwhile
    return (f"engine threads pinned: API server and EngineCore main on cpus {sorted(other)}, "
            f"{moved - len(engines)} helper threads with the worker on {sorted(worker_cpus)}")
