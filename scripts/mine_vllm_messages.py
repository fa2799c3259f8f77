#!/usr/bin/env python3
# ruff: noqa: E501  (the table rows are real message wordings, kept on one line)
"""Mine vLLM's real message wordings from its released wheels and check the signatures.

    python scripts/mine_vllm_messages.py [--releases 0.2.0,0.6.3.post1,…] [--offline] [--json]

For each release the wheel is taken from the cache (``$VARIANTCTL_CACHE/wheels``, default
``~/.cache/variantctl/wheels``; never committed) or fetched there with
``pip download --no-deps vllm==X``. Only the ``vllm/**.py`` members that mention an
anchor phrase are read from the wheel zip (nothing is unpacked to disk). Their
``raise …(f"…")`` / ``raise …("…" % …)`` arguments and ``logger.*("…")`` format strings are
extracted with :mod:`ast`, placeholders are filled with a sample value, and every
signature (and phase marker) whose anchor matches a wording must match it through the
same normaliser, keyword filter and patterns the classifier uses. Platform wordings of
the same failures (torch's CUDA/HIP/NPU/XPU allocator errors, the OS bind errors of
Linux, macOS and Windows) are not in vLLM's source; they are checked from the fixed
list below. Prints a signature × release table; exit 1 when a wording is not matched.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

#: a spread of releases: 0.2 … 0.33, the V0 -> V1 transition (0.7-0.10) included
DEFAULT_RELEASES = ("0.2.0", "0.3.0", "0.4.2", "0.5.5", "0.6.3.post1", "0.6.6", "0.7.3",
                    "0.8.5", "0.9.2", "0.10.2", "0.11.0", "0.33.0")

#: signature (or ``phase:<id>``) -> anchor regex picking its wordings among the templates
ANCHORS: dict[str, str] = {
    "batched-tokens-below-model-len": r"max_num_batched_tokens .*is smaller than max_model_len",
    # 0.6.2-0.9: f"{ms_config_str} not supported for attention backend: {name}. …" where
    # ms_config_str is "Multi-Step" or "Multi-Step + Chunked-Prefill" (see SAMPLES)
    "xformers-multistep-unsupported":
        r"^Multi-?Step not supported for attention backend|^\{\} not supported for attention backend",
    "multistep-chunked-prefill-unsupported":
        r"Multi-?Step \+ Chunked-?Prefill not supported|Chunked prefill is not supported with multi-step"
        r"|^\{\} not supported for attention backend",
    "unsupported-architecture": r"^Model architectures? .* (?:are|is) not supported for now",
    "tp-heads-not-divisible": r"Total number of attention heads .*must be divisible by tensor parallel",
    "dtype-unsupported-gpu": r"Bfloat16 is only supported on GPUs",
    "trust-remote-code-required": r"consider setting .?trust_remote_code=True",
    "model-not-found-or-unauthorized":
        r"Invalid repository ID or local directory|is not a local folder and is not a valid model",
    "max-model-len-exceeds-model": r"is greater than the derived max_model_len",
    "model-inspection-failed": r"failed to be inspected",
    "no-gpu-available": r"^Failed to infer device type",
    "free-memory-below-utilization": r"less than desired (?:GPU|CPU) memory utilization",
    "kv-cache-insufficient":
        r"larger than the maximum number of tokens that can be stored in KV cache"
        r"|^No available memory for the cache blocks|KV cache is needed, which is larger than",
    "cuda-oom": r"out of memory occurred when warming up",
    "nccl-error": r"^NCCL error",
    "flashinfer-unavailable": r"^FlashInfer is not available|FlashInfer .*sampl\w* is disabled",
    "flash-attn-missing-fallback": r"^Cannot use FlashAttention",
    "multistep-v0-fallback": r"num-scheduler-steps is not supported by the V1 Engine"
                             r"|^\{\} is not supported by the V1 Engine",
    "custom-allreduce-disabled": r"^Custom allreduce is disabled",
    "engine-startup-failed": r"^Engine core initialization failed|^Engine process failed to start",
    "phase:engine-config": r"^Initializing an? (?:V[01] )?LLM engine",
    "phase:graph-capture":
        r"^Capturing the model for CUDA graphs|^Capturing cudagraphs for decoding"
        r"|^Graph capturing finished",
    "phase:model-load": r"^Loading model weights took|^Model loading took|^Starting to load model",
    "phase:api-server-up": r"^Available routes are",
}

#: placeholder values (in order) where a generic sample would not say what vLLM prints;
#: the rest are filled with a number
SAMPLES: dict[str, tuple[str, ...]] = {
    "xformers-multistep-unsupported": ("Multi-Step", "XFORMERS"),
    "multistep-chunked-prefill-unsupported": ("Multi-Step + Chunked-Prefill", "XFORMERS"),
    "multistep-v0-fallback": ("--num-scheduler-steps",),
}

#: wordings printed by torch or the OS, not by vLLM: (signature, platform, text)
PLATFORM_WORDINGS: tuple[tuple[str, str, str], ...] = (
    ("cuda-oom", "CUDA", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."),
    ("cuda-oom", "CUDA (old torch)", "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB"),
    ("cuda-oom", "ROCm/HIP", "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.50 GiB."),
    ("cuda-oom", "Ascend NPU", "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"),
    ("cuda-oom", "Intel XPU", "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 1.00 GiB"),
    ("cuda-oom", "CUDA runtime", "RuntimeError: CUDA error: out of memory"),
    ("port-in-use", "Linux", "OSError: [Errno 98] Address already in use"),
    ("port-in-use", "Linux (uvicorn)",
     "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use"),
    ("port-in-use", "macOS", "OSError: [Errno 48] Address already in use"),
    ("port-in-use", "Windows",
     "OSError: [WinError 10048] Only one usage of each socket address (protocol/network address/port) is normally permitted"),
    ("cuda-graph-capture-error", "CUDA", "RuntimeError: CUDA error: operation not permitted when stream is capturing"),
    ("cuda-graph-capture-error", "HIP", "RuntimeError: HIP error: hipErrorStreamCaptureUnsupported"),
    # torch/_inductor/exc.py: InductorError(f"{type(inner).__name__}: {inner}") around the
    # loader's ImportError, whose text is dlerror()'s "<path>: file too short"
    ("compile-cache-corrupt", "torch inductor",
     "torch._inductor.exc.InductorError: ImportError: /root/.cache/vllm/torch_compile_cache/"
     "3f9a1c2b4d/rank_0_0/backbone/inductor_cache/ab/cabz2k4q.main.so: file too short"),
    ("compile-cache-corrupt", "torch inductor (AOT cache)",
     "torch._inductor.exc.InductorError: ImportError: /root/.cache/vllm/torch_compile_cache/"
     "torch_aot_compile/e9533c3aebba231c/inductor_cache/zo/czo2g.main.so: file too short"),
)

_MODULE_HINT = re.compile(rb"raise|logger|logging")
_SAMPLE = "12"


@dataclass(frozen=True)
class Wording:
    module: str
    line: int
    template: str  # placeholders shown as {}

    def filled(self, samples: Sequence[str] = ()) -> str:
        parts = self.template.split("{}")
        out = [parts[0]]
        for i, part in enumerate(parts[1:]):
            out.append(samples[i] if i < len(samples) else _SAMPLE)
            out.append(part)
        return "".join(out)


def cache_dir() -> Path:
    base = os.environ.get("VARIANTCTL_CACHE") or str(Path.home() / ".cache" / "variantctl")
    return Path(base).expanduser() / "wheels"


def find_wheel(release: str, cache: Path, *, download: bool) -> Path | None:
    """The cached wheel of ``release``, fetched with pip when missing (and ``download``)."""
    found = sorted(cache.glob(f"vllm-{release}-*.whl"))
    if found or not download:
        return found[0] if found else None
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                    f"vllm=={release}", "-d", str(cache)], check=False)
    found = sorted(cache.glob(f"vllm-{release}-*.whl"))
    return found[0] if found else None


def wordings(wheel: Path, anchors: Sequence[re.Pattern[str]]) -> Iterator[Wording]:
    """Message templates of the wheel's modules that mention an anchor's literal words."""
    words = {w.lower().encode() for a in anchors for w in re.findall(r"[A-Za-z_]{6,}", a.pattern)}
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if not (name.startswith("vllm/") and name.endswith(".py")):
                continue
            data = zf.read(name)
            low = data.lower()
            if not _MODULE_HINT.search(data) or not any(w in low for w in words):
                continue
            try:
                tree = ast.parse(data)
            except SyntaxError:
                continue
            for line, template in templates(tree):
                yield Wording(name, line, template)


def templates(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``(line, template)`` of every raise argument, assert message, message variable
    (``err_msg = (…)``, ``msg += …``: raised or logged a few lines later) and logger call
    format string."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            text = _string(node.exc.args[0])
            if text:
                yield node.lineno, text
        elif isinstance(node, ast.Assert) and node.msg is not None:
            text = _string(node.msg)
            if text:
                yield node.lineno, text
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and ("msg" in t.id or "message" in t.id)
                   for t in targets):
                text = _string(node.value)
                if text and len(text) > 20:
                    yield node.lineno, text
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("debug", "info", "warning", "warning_once", "info_once",
                                     "error", "exception", "critical")
              and node.args):
            text = _string(node.args[0])
            if text:
                yield node.lineno, re.sub(r"%[-+ #0]*\d*(?:\.\d+)?[sdrfigx%]", "{}", text)


def _string(node: ast.AST) -> str | None:
    """The text of a string expression, placeholders as ``{}`` (f-strings, ``%``, ``.format``,
    concatenation); None when it is not built from literals."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.sub(r"\{[^{}]*\}", "{}", node.value) if "{" in node.value else node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                parts.append(v.value)
            else:
                parts.append("{}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string(node.left), _string(node.right)
        if left is not None or right is not None:
            return (left or "{}") + (right or "{}")
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = _string(node.left)
        return None if left is None else re.sub(r"%[-+ #0]*\d*(?:\.\d+)?[sdrfigx]", "{}", left)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"):
        return _string(node.func.value)
    return None


def matches(catalog: object, key: str, text: str) -> bool:
    """Does the classifier see ``text`` (one logged line) as signature/phase ``key``?"""
    from variantctl.logs.normalize import normalize

    norm = normalize(text.replace("\n", " "))
    low = norm.lower()
    if key.startswith("phase:"):
        phase = next(p for p in catalog.phases if p.id == key[6:])  # type: ignore[attr-defined]
        pairs = [(phase.keywords, phase.start), (phase.end_keywords, phase.end)]
    else:
        sig = catalog.get(key)  # type: ignore[attr-defined]
        pairs = [(sig.keywords, sig.patterns)]
    return any(any(k in low for k in kws) and any(rx.search(norm) for rx in rxs)
               for kws, rxs in pairs)


def mine(releases: Sequence[str], *, download: bool = True, cache: Path | None = None
         ) -> list[dict[str, object]]:
    """One row per (signature, release): the wordings found and whether each matched."""
    from variantctl.config.catalog import default_catalog

    catalog = default_catalog()
    cache = cache or cache_dir()
    compiled = {k: re.compile(v, re.I) for k, v in ANCHORS.items()}
    rows: list[dict[str, object]] = []
    for release in releases:
        wheel = find_wheel(release, cache, download=download)
        if wheel is None:
            rows.append({"signature": "*", "release": release, "status": "no wheel"})
            continue
        found: dict[str, list[Wording]] = {k: [] for k in ANCHORS}
        for w in wordings(wheel, list(compiled.values())):
            for key, rx in compiled.items():
                if rx.search(w.template):
                    found[key].append(w)
        for key, items in found.items():
            unique = {w.template: w for w in items}
            if not unique:
                rows.append({"signature": key, "release": release, "status": "absent"})
                continue
            for w in unique.values():
                ok = matches(catalog, key, w.filled(SAMPLES.get(key, ())))
                rows.append({"signature": key, "release": release,
                             "status": "match" if ok else "NO MATCH",
                             "where": f"{w.module}:{w.line}", "wording": w.template})
    for key, platform, text in PLATFORM_WORDINGS:
        rows.append({"signature": key, "release": f"platform {platform}",
                     "status": "match" if matches(catalog, key, text) else "NO MATCH",
                     "where": "torch/OS", "wording": text})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--releases", default=",".join(DEFAULT_RELEASES))
    ap.add_argument("--offline", action="store_true", help="only use wheels already cached")
    ap.add_argument("--json", action="store_true")
    ns = ap.parse_args(argv)
    rows = mine([r for r in ns.releases.split(",") if r], download=not ns.offline)
    if ns.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            wording = str(r.get("wording", ""))
            wording = wording if len(wording) <= 90 else wording[:87] + "..."
            print(f"{r['signature']:40} {r['release']:24} {r['status']:9} {wording}")
    bad = [r for r in rows if r["status"] == "NO MATCH"]
    print(f"{len(bad)} wording(s) not matched", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
