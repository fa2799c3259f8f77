"""``variantctl runs import FILE --from vllm|guidellm|aiperf``: another tool's result
file stored as a run with its benchmark (marked imported: tool, version, file).

The file is read bounded (a regular file, at most :data:`MAX_IMPORT` bytes) and parsed
whole by its tool's reader before anything is written: a file of the wrong kind or a
damaged one is one :class:`~variantctl.jsonfields.StoredFileError` naming the file and
the field (exit 2), and the store is left as it was. Then the run store creates the
run, writes its record and attaches the benchmark, so ``runs``, ``compare``,
``report`` and ``runs trend`` read it like any other.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

from variantctl.bench.model import BenchResult
from variantctl.hostmodel import Host
from variantctl.interop import aiperf, guidellm, vllm_result
from variantctl.interop.imported import ImportedBench, bench_result
from variantctl.jsonfields import StoredFileError
from variantctl.jsontypes import JsonObject
from variantctl.logs.verdict import VerdictKind
from variantctl.runs.identity import host_identity, import_key
from variantctl.runs.run import RunRecord, RunVerdict
from variantctl.runs.store import RunDir, RunStore, read_bounded
from variantctl.variants.model import ResolvedVariant

#: the largest result file read (a vLLM --save-detailed file of 100k requests is ~50 MiB)
MAX_IMPORT = 256 << 20
TOOL_NAMES = {"vllm": "vllm bench serve", "guidellm": "GuideLLM", "aiperf": "AIPerf"}


@dataclass(frozen=True)
class ImportedRun:
    """What ``runs import`` stored."""

    run: RunDir
    record: RunRecord
    result: BenchResult
    bench_file: str


def read_documents(path: Path, tool: str) -> list[object]:
    """The JSON document(s) of ``path``: one, or (vLLM's ``--append-result``) one per line."""
    data = read_bounded(path.parent, path.name, MAX_IMPORT, follow=True)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StoredFileError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})"
                              ) from None
    try:
        return [json.loads(text)]
    except RecursionError:
        raise StoredFileError(f"{path}: not valid JSON (nested too deeply)") from None
    except ValueError as exc:
        lines = [line for line in text.splitlines() if line.strip()]
        if tool != "vllm" or len(lines) < 2:
            raise StoredFileError(f"{path}: not valid JSON ({exc})") from None
    docs = []
    for i, line in enumerate(lines):
        try:
            docs.append(json.loads(line))
        except (ValueError, RecursionError) as exc:
            raise StoredFileError(f"{path}: line {i + 1} is not valid JSON ({exc})") from None
    return docs


def parse(path: Path, tool: str, version: str | None) -> ImportedBench:
    """The file as its tool's benchmark (validated; nothing written)."""
    docs = read_documents(path, tool)
    source = str(path)
    if tool == "vllm":
        return vllm_result.read(docs, source, version)
    if tool == "guidellm":
        return guidellm.read(docs[0], source, version)
    return aiperf.read(docs[0], source, version)


def import_file(store: RunStore, path: Path, tool: str, *, name: str | None,
                variant: ResolvedVariant | None, host: Host | None,
                version: str | None, now: datetime) -> ImportedRun:
    """Store ``path`` (a ``tool`` result file) as a run. ``variant``/``host``: the
    project's definition of ``--variant NAME`` when it has one (the run then compares
    with that variant's own runs setting by setting); else the run is named ``name``
    (default ``<tool>-import``) and holds the model and server the file names."""
    parsed = parse(path, tool, version)
    result = bench_result(parsed, path.name)
    digest = hashlib.sha256(read_bounded(path.parent, path.name, MAX_IMPORT,
                                         follow=True)).hexdigest()
    if variant is not None:
        vdict: JsonObject = variant.to_dict()
        view = variant.launch_view()
    else:
        vdict = {"name": name or f"{tool}-import", "model": parsed.model, "args": {},
                 "env": {}, "requires": []}
        view = {"model": parsed.model}
    hdict: JsonObject = (host_identity(host) if host is not None else
                         {"name": urlsplit(parsed.url).hostname or "imported"
                          if parsed.url else "imported"})
    key = import_key(view, hdict, tool, digest)
    vname = str(vdict["name"])
    run = store.create(key=key, variant=vname, when=now)
    what = f"{TOOL_NAMES[tool]} {result.imported.version if result.imported else ''}".strip()
    record = RunRecord(
        run_id=run.run_id, key=key, variant_name=vname, variant=vdict, host=hdict,
        script="", server=None, patches={},
        verdict=RunVerdict(kind=VerdictKind.READY, title="imported",
                           message=f"imported from {path.name} ({what})"),
        facts={"imported": {"tool": tool, "version": result.imported.version
                            if result.imported else "unknown",
                            "file": str(path.resolve()), "sha256": digest}},
        created_at=now.isoformat())
    store.write(run.path, record)
    bench_path = store.attach_benchmark(run.path, result, now)
    return ImportedRun(run, store.read(run.path), result, bench_path.name)
