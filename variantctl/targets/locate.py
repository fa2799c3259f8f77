"""Every copy of a module on a host's Python path, which one is imported, and hashes.

Runs the host's Python with the host's environment (its PYTHONPATH decides what
is on the path), without importing the module: the import system's own path
finder is walked package by package, so ``__init__`` files never run (importing
vLLM takes seconds and may fail on a broken install).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from variantctl.errors import TargetError
from variantctl.hostmodel import Host
from variantctl.jsontypes import JsonObject
from variantctl.targets.base import Target

_SCRIPT = r"""
import hashlib, json, os, sys
from importlib.machinery import PathFinder
parts = sys.argv[1].split(".")
entries = [os.path.abspath(e or ".") for e in sys.path[1:]]
copies, seen = [], set()
for base in entries:
    for cand in (os.path.join(base, *parts) + ".py", os.path.join(base, *parts, "__init__.py")):
        if os.path.isfile(cand):
            real = os.path.realpath(cand)
            if real not in seen:
                seen.add(real)
                with open(cand, "rb") as fh:
                    data = fh.read()
                copies.append({"root": base, "path": cand, "realpath": real, "size": len(data),
                               "sha256": hashlib.sha256(data).hexdigest()})
            break
imported, problem = None, None
try:
    path, spec = None, None
    for i in range(len(parts)):
        spec = PathFinder.find_spec(".".join(parts[: i + 1]), path)
        if spec is None:
            break
        path = spec.submodule_search_locations
    if spec is not None and spec.origin and os.path.isfile(spec.origin):
        imported = os.path.abspath(spec.origin)
except Exception as exc:
    problem = "%s: %s" % (type(exc).__name__, exc)
print(json.dumps({"python": sys.executable, "version": sys.version.split()[0],
                  "path": entries, "copies": copies, "imported": imported,
                  "problem": problem}))
"""


@dataclass(frozen=True)
class ModuleCopy:
    root: str
    path: str
    realpath: str
    size: int
    sha256: str
    imported: bool

    def to_json(self) -> JsonObject:
        return {"root": self.root, "path": self.path, "realpath": self.realpath,
                "size": self.size, "sha256": self.sha256, "imported": self.imported}


@dataclass(frozen=True)
class Located:
    host: str
    module: str
    python: str
    version: str
    sys_path: tuple[str, ...]
    copies: tuple[ModuleCopy, ...]
    imported: str | None

    def to_json(self) -> JsonObject:
        return {"host": self.host, "module": self.module, "python": self.python,
                "version": self.version, "sys_path": list(self.sys_path),
                "imported": self.imported, "copies": [c.to_json() for c in self.copies]}


def locate(target: Target, host: Host, module: str) -> Located:
    """Where ``module`` lives for ``host.python`` with ``host.env``."""
    res = target.run([host.python, "-c", _SCRIPT, module], env=dict(host.env), timeout=60)
    if not res.ok:
        tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
        raise TargetError(f"could not run {host.python}: {tail}", kind="other", host=host.name)
    try:
        data = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise TargetError(f"unexpected output from {host.python}", kind="other",
                          host=host.name) from None
    imported = data.get("imported")
    copies = tuple(
        ModuleCopy(c["root"], c["path"], c["realpath"], int(c["size"]), c["sha256"],
                   imported is not None and c["path"] == imported)
        for c in data["copies"]
    )
    return Located(host.name, module, data["python"], data["version"], tuple(data["path"]),
                   copies, imported)
