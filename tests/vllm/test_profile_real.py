"""Code-level profiling on the real vLLM CPU server, over a real OpenSSH server.

``profile-decode-v1`` is applied over SSH to two runnable copies of the CPU build
on the host's PYTHONPATH (tests/support/profile_roots.py: the profiled modules
are real copies, everything else links to the cached venv, which is never
written). A server launched without profiling is relaunched by
``bench --profile`` with ``VARIANTCTL_PROFILE`` set (said so); the breakdown is
non-empty, names the V1 points (the CPU runner's included) and its step period
agrees with the measured per-token time; the raw events are in the run record;
the Chrome trace is valid JSON; ``rollback`` restores every byte.

Three real server starts (two by the first test, one by the sweep), on vLLM's
single-process engine (tests/support/realvllm.py): the model runner runs inside the
engine-core process, as on a one-GPU host (vLLM's ``uni`` executor), so the events
still come from two processes, the API server's and the engine core's. The CPU
platform's default ``mp`` executor adds a third process that imports vLLM again and
two OpenMP threads that spin against the others on 2 cores.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, CliResult, make_env
from tests.ssh.launchkit import run_json
from tests.support.cachelock import wheel_cache_lock
from tests.support.profile_roots import make_profile_roots
from tests.support.realvllm import VARIANT_ENV, StartBudget
from tests.support.sshd import SshLab, free_port
from variantctl.cli import run
from variantctl.config.patchsets import load_patchset
from variantctl.targets.local import LocalTarget
from variantctl.targets.process import port_in_use

pytestmark = [pytest.mark.vllm, pytest.mark.ssh]

PATCHSET = "profile-decode-v1"
OUTPUT_LEN = 32


class Lab:
    def __init__(self, project: Path, roots: list[Path], port: int, cache: Path,
                 venv_files: dict[Path, str]):
        self.project, self.roots, self.port, self.cache = project, roots, port, cache
        self.venv_files = venv_files

    def cli(self, *args: str) -> CliResult:
        env = make_env(self.project, self.cache)
        code = run(list(args), env)
        return CliResult(code, env.stdout.file.getvalue(),  # type: ignore[attr-defined]
                         env.stderr.file.getvalue())  # type: ignore[attr-defined]


def _tree(roots: list[Path]) -> dict[str, bytes]:
    """Every real file under the roots (links are the cached venv's, not ours)."""
    out = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file() and not p.is_symlink() and ".variantctl" not in p.parts \
                    and "__pycache__" not in p.parts:
                out[str(p)] = p.read_bytes()
    return out


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, ssh_lab: SshLab, vllm_python: Path,
        vllm_site_packages: Path, tiny_model: Path, start_budget: StartBudget
        ) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("profile")
    modules = load_patchset(REPO / "patchsets", PATCHSET).modules
    roots = make_profile_roots(vllm_site_packages, base / "corex", modules)
    venv_files = {}
    for m in modules:
        p = vllm_site_packages.joinpath(*m.split(".")).with_suffix(".py")
        venv_files[p] = _sha(p)
    project = base / "project"
    (project / "variants").mkdir(parents=True)
    (project / "patchsets").mkdir()
    shutil.copy(REPO / "patchsets" / f"{PATCHSET}.yaml", project / "patchsets")
    (project / "variants" / "hosts.yaml").write_text(
        "gpu1:\n"
        f"  ssh:\n    alias: gpu1\n    config: {ssh_lab.ssh_config}\n"
        f"  python: {vllm_python}\n"
        f"  workdir: {base / 'gpu1-work'}\n"
        "  vllm_version: 0.32.0\n"
        f"  site_roots: [{roots[0]}, {roots[1]}]\n"
        f"  env:\n    PYTHONPATH: {roots[0]}:{roots[1]}\n"
    )
    port = free_port()
    (project / "variants" / "tiny-prof.yaml").write_text(
        "description: tiny Llama, eager, with the profile points patched in\n"
        "host: gpu1\n"
        f"model: {tiny_model}\n"
        f"port: {port}\n"
        f"requires: [{PATCHSET}]\n"
        "args:\n  load-format: dummy\n  max-model-len: 512\n  dtype: bfloat16\n"
        "  gpu-memory-utilization: 0.3\n  enforce-eager: true\n"
        + VARIANT_ENV + start_budget.startup_yaml())
    lab = Lab(project, roots, port, base / "cache", venv_files)
    yield lab
    lab.cli("stop", "--all", "--host", "gpu1", "--grace", "5")


def test_bench_profile_breakdown_trace_and_rollback(lab: Lab, tmp_path: Path) -> None:
    before = _tree(lab.roots)
    status = lab.cli("status", PATCHSET, "--host", "gpu1")
    assert status.code == 0, status.output
    assert "CPUModelRunner._to_list:" in status.stdout and "EngineCore.step:" in status.stdout

    applied = lab.cli("apply", PATCHSET, "--host", "gpu1")
    assert applied.code == 0, applied.output
    assert "12 file(s) written in 2 root(s)" in applied.stdout
    runner = lab.roots[0] / "vllm" / "v1" / "worker" / "gpu_model_runner.py"
    assert '@_variantctl_profile("GPUModelRunner.execute_model")' in runner.read_text()

    # a server started without profiling: bench --profile must relaunch it
    launched = lab.cli("launch", "tiny-prof", "--json", "--grace", "5")
    assert launched.code == 0, launched.output
    trace = tmp_path / "trace.json"
    try:
        r = lab.cli("bench", "tiny-prof", "--profile", "--concurrency", "1", "--requests", "16",
                    "--output-len", str(OUTPUT_LEN), "--ignore-eos", "--warmup", "4",
                    "--profile-trace", str(trace), "--json")
        assert r.code == 0, r.output
        assert "runs without VARIANTCTL_PROFILE; relaunching it" in r.stderr
        assert "relaunched with VARIANTCTL_PROFILE=" in r.stderr
        doc = json.loads(r.stdout)
        (level,) = doc["profile"]
        points = {p["name"]: p for p in level["points"]}
        assert level["step"] == "EngineCore.step" and level["dropped"] == 0
        for name in ("EngineCore.step", "Scheduler.schedule", "GPUModelRunner.execute_model",
                     "GPUModelRunner._model_forward", "Sampler.forward",
                     "CPUModelRunner._to_list", "CPUAttentionBackendImpl.forward"):
            assert points[name]["calls"] > 0, name
        assert points["Sampler.forward"]["parent"] == "GPUModelRunner._sample"
        assert 0 < points["GPUModelRunner._model_forward"]["share_of_parent"] < 1
        # 16 requests × 32 tokens, one request at a time: a prefill and 31 decode steps
        # each, plus the steps that only retire finished requests
        steps = points["EngineCore.step"]["calls"]
        assert 16 * OUTPUT_LEN <= steps <= 2 * 16 * OUTPUT_LEN, steps
        assert points["GPUModelRunner.execute_model"]["calls"] >= 16 * OUTPUT_LEN
        # consistent with the measured decode time. On 2 cores the CPU server often sends
        # a request's tokens in one burst at its end (README, "A finding on the way":
        # its engine starves its own output thread), so the chunk-based TPOT can be near
        # 0 and says nothing; the per-token time is E2EL / output tokens (one request
        # at a time: one token per step)
        metrics = doc["levels"][0]["metrics"]
        per_token = metrics["e2el_ms"]["mean"] / OUTPUT_LEN
        assert 0.5 < level["step_period_ms"] / per_token < 1.5, (level, metrics["e2el_ms"])

        # raw events kept in the run record; the Chrome trace loads as JSON
        run_dir = Path(run_json(lab.project, "tiny-prof")["server"]["run_dir"])
        (stored,) = run_dir.glob("profile-*.json")
        raw = json.loads(stored.read_text())
        assert len(raw["levels"][0]["events"]) == level["events"] > 0
        t = json.loads(trace.read_text())
        xs = [e for e in t["traceEvents"] if e["ph"] == "X"]
        assert len(xs) == level["events"]
        assert {"EngineCore.step", "Sampler.forward"} <= {e["name"] for e in xs}
    finally:
        lab.cli("stop", "tiny-prof", "--host", "gpu1", "--grace", "10")
    assert not port_in_use(LocalTarget(), lab.port)

    back = lab.cli("rollback", PATCHSET, "--host", "gpu1")
    assert back.code == 0, back.output
    assert _tree(lab.roots) == before  # every byte, no backup left behind
    for p, sha in lab.venv_files.items():
        assert _sha(p) == sha, f"the cached venv's {p} changed"


def test_a_sweep_with_profile_true_collects_each_points_breakdown(lab: Lab,
                                                                  tmp_path: Path) -> None:
    """``profile: true`` in a sweep file: the point's server starts with the variable
    set (its own directory on the host), each level's events are collected over SSH and
    stored in the point's run, the state lists them and ``report SWEEP`` shows the
    breakdown. The point applies the patchset itself (``requires``); rolled back after."""
    before = _tree(lab.roots)
    (lab.project / "sweeps").mkdir(exist_ok=True)
    (lab.project / "sweeps" / "prof.yaml").write_text(
        "base: tiny-prof\nprofile: true\n"
        "bench:\n  concurrency: [1, 2]\n  requests: 8\n"
        f"  output_len: {OUTPUT_LEN}\n  ignore_eos: true\n  warmup: 2\n")
    res = lab.cli("sweep", "prof", "--json")
    assert res.code == 0, res.output
    (point,) = json.loads(res.stdout)["points"]
    assert point["status"] == "measured", point
    (name,) = point["profiles"]
    run_dir = Path(point["run_dir"])
    raw = json.loads((run_dir / name).read_text())
    assert [lv["label"] for lv in raw["levels"]] == ["c1", "c2"]
    for lv in raw["levels"]:
        steps = {p["name"]: p for p in lv["breakdown"]["points"]}["EngineCore.step"]
        # 8 requests × 32 tokens: at least one step per token at c=1, fewer at c=2
        assert steps["calls"] >= 8 * OUTPUT_LEN // 2, lv["label"]
        assert len(lv["events"]) == lv["breakdown"]["events"] > 0
    # the warm-up's events are not a level's: c=1 holds one step per token at most twice
    c1 = {p["name"]: p for p in raw["levels"][0]["breakdown"]["points"]}
    assert c1["EngineCore.step"]["calls"] <= 2 * 8 * OUTPUT_LEN
    # the server ran with the variable set, in a directory of its own on the host
    rec = json.loads((run_dir / "run.json").read_text())
    assert rec["variant"]["env"]["VARIANTCTL_PROFILE"].endswith("/profile/tiny-prof@prof-01")
    assert rec["variant"]["host"] == "gpu1"
    assert rec["variant"]["origins"]["env.VARIANTCTL_PROFILE"] == "sweep prof profile: true"

    out = tmp_path / "report"
    rep = lab.cli("report", "prof", "--out", str(out))
    assert rep.code == 0, rep.output
    md = (out / "report.md").read_text()
    assert "Code-level profile" in md and "EngineCore.step" in md

    back = lab.cli("rollback", PATCHSET, "--host", "gpu1")
    assert back.code == 0, back.output
    assert _tree(lab.roots) == before


V0_RELEASE = "0.6.3"


def _release_modules(version: str, modules: tuple[str, ...]) -> dict[str, bytes]:
    """The released sources of ``modules`` (from the wheel in the cache, fetched once with
    ``pip download --no-deps``; the extracted files are cached beside it)."""
    from tests.conftest import CACHE

    wheels_dir = CACHE / "wheels"
    cache = wheels_dir / f"src-{version}"
    rels = {m: "/".join(m.split(".")) + ".py" for m in modules}
    with wheel_cache_lock(wheels_dir):
        _fetch_release_modules(version, wheels_dir, cache, rels)
    return {r: (cache / r).read_bytes() for r in rels.values()}


def _fetch_release_modules(version: str, wheels_dir: Path, cache: Path,
                           rels: dict[str, str]) -> None:
    if not all((cache / r).is_file() for r in rels.values()):
        wheels = sorted(wheels_dir.glob(f"vllm-{version}-*.whl"))
        if not wheels:
            wheels_dir.mkdir(parents=True, exist_ok=True)
            proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                                   f"vllm=={version}", "-d", str(wheels_dir)],
                                  capture_output=True, text=True, check=False, timeout=900)
            wheels = sorted(wheels_dir.glob(f"vllm-{version}-*.whl"))
            if proc.returncode != 0 or not wheels:
                pytest.fail(f"could not download vllm=={version}: {proc.stderr[-500:]}")
        with zipfile.ZipFile(wheels[0]) as zf:
            for r in rels.values():
                (cache / r).parent.mkdir(parents=True, exist_ok=True)
                (cache / r).write_bytes(zf.read(r))


def test_v0_patchset_on_the_released_063_sources(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    patchset = load_patchset(REPO / "patchsets", "profile-decode-v0")
    files = _release_modules(V0_RELEASE, patchset.modules)
    roots = [tmp_path / n / "python3" / "dist-packages" for n in ("lib", "lib64")]
    for root in roots:
        for rel, data in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
    project = tmp_path / "project"
    (project / "patchsets").mkdir(parents=True)
    shutil.copy(REPO / "patchsets" / "profile-decode-v0.yaml", project / "patchsets")
    args = [a for r in roots for a in ("--root", str(r))]

    # every point of the seed's list exists in 0.6.3, with its line
    r = run_cli(["status", "profile-decode-v0", *args, "--json"], project=project)
    assert r.code == 0, r.output
    report = json.loads(r.stdout)["reports"][0]
    found = {f["code"] for fl in report["files"] for o in fl["operations"] for f in o["found"]}
    assert found == {fn for op in patchset.operations for fn in op.functions}
    assert {fl["state"] for fl in report["files"]} == {"pristine"}

    r = run_cli(["apply", "profile-decode-v0", *args], project=project)
    assert r.code == 0, r.output
    for root in roots:
        for rel in files:
            text = (root / rel).read_text("utf-8")
            compile(text, rel, "exec")
            assert "def _variantctl_profile(" in text
    runner = (roots[0] / "vllm/worker/model_runner.py").read_text()
    assert '@_variantctl_profile("ModelRunner.execute_model")' in runner
    paged = (roots[0] / "vllm/attention/ops/paged_attn.py").read_text()
    assert '    @staticmethod\n    @_variantctl_profile("PagedAttention.forward_decode")' in paged

    r = run_cli(["rollback", "profile-decode-v0", *args], project=project)
    assert r.code == 0, r.output
    for root in roots:
        for rel, data in files.items():
            assert (root / rel).read_bytes() == data

    # the V1 patchset on this V0 release: the modules are missing, and status says so
    shutil.copy(REPO / "patchsets" / f"{PATCHSET}.yaml", project / "patchsets")
    r = run_cli(["status", PATCHSET, "--root", str(roots[0])], project=project)
    assert r.code == 2, r.output
    assert "module vllm.v1.engine.core not found in this root" in r.output
