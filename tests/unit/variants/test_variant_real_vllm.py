"""The rendered command lines against the real vLLM 0.32.0 CPU build's argument parser.

No server is started: one subprocess imports vLLM's own parser and parses every
CPU variant's argv, so the flag tables (negation, removed and added flags) are
checked against the real thing rather than against our own expectations.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.unit.variants.conftest import FIXTURES
from variantctl.config.variants import load_catalog
from variantctl.variants.check import check
from variantctl.variants.model import ResolvedVariant
from variantctl.variants.render import render_argv
from variantctl.variants.resolve import resolve

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.vllm


def parse_all(python: Path, argvs: list[list[str]]) -> list[dict[str, Any]]:
    proc = subprocess.run([str(python), str(FIXTURES / "parse_with_vllm.py")],
                          input=json.dumps(argvs), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: list[dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_cpu_variants_parse_and_version_rules_match_reality(vllm_python: Path,
                                                            tiny_model: Path) -> None:
    environ = {"VARIANTCTL_VLLM_PYTHON": str(vllm_python),
               "VARIANTCTL_TINY_MODEL": str(tiny_model)}
    catalog = load_catalog(REPO / "variants", environ)
    host = catalog.hosts["cpu"]
    names = [n for n in catalog.names() if "cpu" in resolve(catalog, n).tags]
    assert len(names) >= 5
    variants = [resolve(catalog, n, port=8190) for n in names]
    base = variants[names.index("cpu-base")]

    def probe(flag: str, value: Any) -> ResolvedVariant:
        return ResolvedVariant(**{**base.__dict__, "name": f"probe-{flag}",
                                  "args": {**base.args, flag: value}})

    probes = [probe("num-scheduler-steps", 4), probe("max-seq-len-to-capture", 512),
              probe("attention-backend", "CPU_ATTN"), probe("enforce-eager", False)]
    # argv[0:3] is `python -m vllm.entrypoints.openai.api_server`
    argvs = [render_argv(v, host)[3:] for v in [*variants, *probes]]
    results = parse_all(vllm_python, argvs)
    for name, res in zip(names, results, strict=False):
        assert res["ok"], (name, res)
        assert res["args"]["model"] == str(tiny_model) and res["args"]["port"] == 8190
    by_name = dict(zip(names, results, strict=False))
    assert by_name["cpu-batched-tokens"]["args"]["enable_chunked_prefill"] is False
    assert by_name["cpu-batched-tokens"]["args"]["max_num_batched_tokens"] == 64
    assert by_name["cpu-eager"]["args"]["enforce_eager"] is True
    assert by_name["cpu-base"]["args"]["load_format"] == "dummy"

    steps, capture, backend, no_eager = results[len(names):]
    # flags our table says 0.32.0 lacks are rejected, and check predicted exactly that
    assert not steps["ok"] and "--num-scheduler-steps" in steps["error"]
    assert not capture["ok"] and "--max-seq-len-to-capture" in capture["error"]
    predicted = {f.variant: f.rule for f in check(probes, (), catalog.hosts)
                 if f.severity == "error"}
    assert predicted == {"probe-num-scheduler-steps": "flag-not-in-version",
                         "probe-max-seq-len-to-capture": "flag-not-in-version"}
    # ... and what it says exists (negation, --attention-backend) is accepted
    assert backend["ok"], backend
    assert no_eager["ok"] and no_eager["args"]["enforce_eager"] is False
