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

#: the releases whose EngineArgs defaults are mined (scripts/mine_engine_defaults.py)
ENGINE_DEFAULT_RELEASES = ("0.2.0", "0.3.0", "0.4.2", "0.5.5", "0.6.3.post1", "0.6.6", "0.7.3",
                           "0.8.5", "0.9.2", "0.10.2", "0.11.0", "0.33.0")

#: the last release of every minor line from 0.5 to the newest on the index (0.34), plus
#: the older spread 0.2-0.4 and the 0.6.3.post1 the seed runs
DEFAULT_RELEASES = ("0.2.0", "0.3.0", "0.4.2", "0.5.5", "0.6.3.post1", "0.6.6.post1", "0.7.3",
                    "0.8.5.post1", "0.9.2", "0.10.2", "0.11.2", "0.12.0", "0.13.0", "0.14.1",
                    "0.15.1", "0.16.0", "0.17.1", "0.18.1", "0.19.1", "0.20.2", "0.21.0",
                    "0.22.1", "0.23.0", "0.24.0", "0.25.1", "0.26.0", "0.27.1", "0.28.0",
                    "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0")

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
    "flashinfer-unavailable": r"^FlashInfer is not available|FlashInfer .*sampl\w* is disabled"
                              r"|^Selected backend \{\} is not valid for this configuration",
    "port-in-use": r"^port \{\} is used by process",
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
    # the selector's message names the rejected backend (FlashInfer here) and its reasons
    "flashinfer-unavailable": ("AttentionBackendEnum.FLASHINFER", "['head_size not supported']"),
    "port-in-use": ("8000", "psutil.Process(pid=42, name='python3')"),
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
    # torch.distributed's TCPStore (c10d/socket.cpp), the store port taken
    ("port-in-use", "torch TCPStore",
     "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use"),
    ("port-in-use", "torch TCPStore (bind)",
     "torch.distributed.DistNetworkError: The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use)."),
    # csrc/custom_all_reduce.cuh's CUDACHECK (C++, not in the wheel's Python sources)
    ("custom-allreduce-failed", "vLLM C++ (custom_all_reduce.cuh)",
     "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:368 'invalid argument'"),
    # Python's own wording for a keyword a dataclass __init__ does not take
    ("engine-arg-removed", "Python (dataclass __init__)",
     "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'swap_space'"),
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


def source_dir(release: str) -> Path:
    """Where ``release``'s ``vllm/**.py`` files are kept once extracted (outside the repo)."""
    return cache_dir().parent / "vllm-src" / release


def extract(release: str, cache: Path, *, download: bool) -> Path | None:
    """``release``'s ``vllm/**.py`` files in :func:`source_dir`: the wheel is downloaded,
    only its Python sources are extracted, and the wheel (hundreds of MB) is deleted."""
    dest = source_dir(release)
    if (dest / ".complete").exists():
        return dest
    had = find_wheel(release, cache, download=False)
    wheel = had or find_wheel(release, cache, download=download)
    if wheel is None:
        return None
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.startswith("vllm/") and name.endswith(".py") and ".." not in name:
                out = dest / name
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(zf.read(name))
    (dest / ".complete").write_text(wheel.name)
    if had is None:
        wheel.unlink()  # fetched only for this: the sources are all that is kept
    return dest


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


def _members(source: Path) -> Iterator[tuple[str, bytes]]:
    """``(vllm/…py, bytes)`` of a wheel or of an extracted source directory."""
    if source.is_dir():
        for path in sorted(source.rglob("*.py")):
            yield path.relative_to(source).as_posix(), path.read_bytes()
        return
    with zipfile.ZipFile(source) as zf:
        for name in zf.namelist():
            if name.startswith("vllm/") and name.endswith(".py"):
                yield name, zf.read(name)


def wordings(wheel: Path, anchors: Sequence[re.Pattern[str]]) -> Iterator[Wording]:
    """Message templates of the release's modules that mention an anchor's literal words."""
    words = {w.lower().encode() for a in anchors for w in re.findall(r"[A-Za-z_]{6,}", a.pattern)}
    for name, data in _members(wheel):
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
        wheel = extract(release, cache, download=download)
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


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(x) for x in release.split(".post")[0].split("."))


def message_table(rows: Sequence[dict[str, object]]) -> list[dict[str, object]]:
    """The compact table: one entry per (signature, template) with the first and last
    mined release that prints it and the releases where it was seen."""
    seen: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        if "wording" in r and not str(r["release"]).startswith("platform"):
            seen.setdefault((str(r["signature"]), str(r["wording"])), []).append(str(r["release"]))
    return [{"signature": sig, "template": tpl, "first": min(rel, key=_key),
             "last": max(rel, key=_key), "releases": sorted(set(rel), key=_key),
             "samples": list(SAMPLES.get(sig, ()))}
            for (sig, tpl), rel in sorted(seen.items())]


def engine_arg_names(source: Path) -> set[str]:
    """The public field names of ``EngineArgs`` in a release's ``vllm/engine/arg_utils.py``."""
    path = source / "vllm" / "engine" / "arg_utils.py"
    if not path.exists():
        return set()
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.ClassDef) and node.name == "EngineArgs":
            for stmt in node.body:
                if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                        and not stmt.target.id.startswith("_")):
                    names.add(stmt.target.id)
    return names


def removed_args(releases: Sequence[str], *, download: bool = True) -> dict[str, tuple[str, str]]:
    """``{engine arg: (last release that has it, first release without it)}`` for the
    arguments that disappeared from ``EngineArgs`` and never came back."""
    cache = cache_dir()
    fields: list[tuple[str, set[str]]] = []
    for release in releases:
        source = extract(release, cache, download=download)
        names = engine_arg_names(source) if source else set()
        if names:
            fields.append((release, names))
    out: dict[str, tuple[str, str]] = {}
    for i in range(1, len(fields)):
        (prev, before), (release, now) = fields[i - 1], fields[i]
        for name in sorted(before - now):
            if not any(name in later for _, later in fields[i:]):
                out[name] = (prev, release)
    return out


def write_removed_args(path: Path, table: dict[str, tuple[str, str]]) -> None:
    rows = "".join(f"    {k!r}: ({a!r}, {b!r}),\n" for k, (a, b) in sorted(table.items()))
    path.write_text(
        '"""Engine arguments removed from vLLM: ``{name: (last release that has it, first\n'
        "release without it)}`` among the mined releases (every minor line's last release).\n\n"
        "Generated by ``scripts/mine_vllm_messages.py --write-removed-args`` from each release's\n"
        "``EngineArgs`` (do not edit). Used by the log classifier (a removed argument named by\n"
        "``TypeError: … unexpected keyword argument`` or argparse) and by ``variantctl check``.\n"
        '"""\n\nfrom __future__ import annotations\n\n'
        "REMOVED_ARGS: dict[str, tuple[str, str]] = {\n" + rows + "}\n\n\n"
        "def removed(arg: str) -> tuple[str, str] | None:\n"
        '    """``(last release with it, first without it)`` of an engine argument or its CLI\n'
        '    flag (``max_seq_len_to_capture``, ``--max-seq-len-to-capture``); None: not removed."""\n'
        '    return REMOVED_ARGS.get(arg.strip().lstrip("-").split("=")[0].replace("-", "_"))\n')


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--releases", default=",".join(DEFAULT_RELEASES))
    ap.add_argument("--offline", action="store_true", help="only use wheels already cached")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--write-removed-args", metavar="PATH", type=Path,
                    help="write the removed engine-argument table (variantctl/removed_args.py)")
    ap.add_argument("--write-table", metavar="PATH", type=Path,
                    help="write the mined message table (tests/data/vllm_messages.json)")
    ns = ap.parse_args(argv)
    releases = [r for r in ns.releases.split(",") if r]
    if ns.write_removed_args:
        write_removed_args(ns.write_removed_args,
                           removed_args([r for r in releases if _key(r) >= (0, 5)],
                                        download=not ns.offline))
        return 0
    rows = mine(releases, download=not ns.offline)
    if ns.write_table:
        ns.write_table.write_text(json.dumps({"releases": releases, "messages": message_table(rows)},
                                             indent=0, sort_keys=True) + "\n")
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
