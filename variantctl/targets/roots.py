"""Where a module lives on a host: explicit roots, configured site roots, or discovery.

Discovery runs the host's Python (with the host's environment, e.g. its
PYTHONPATH) and lists every ``sys.path`` entry that holds the module's file,
without importing the module (importing vLLM takes seconds).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from variantctl.errors import TargetError, VariantctlError
from variantctl.hostmodel import Host
from variantctl.targets.base import Target

_SCRIPT = r"""
import json, os, sys
rel = sys.argv[1].split(".")
out, seen = [], set()
for entry in sys.path[1:]:  # [0] is the cwd of `-c`
    base = os.path.abspath(entry)
    for cand in (os.path.join(base, *rel) + ".py", os.path.join(base, *rel, "__init__.py")):
        if os.path.isfile(cand):
            key = os.path.realpath(base)
            if key not in seen:
                seen.add(key)
                out.append(base)
            break
print(json.dumps(out))
"""


def discover_roots(target: Target, host: Host, module: str) -> list[str]:
    """Every ``sys.path`` entry of the host's Python that holds ``module``, in path order."""
    result = target.run([host.python, "-c", _SCRIPT, module], env=dict(host.env), timeout=60)
    if not result.ok:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise TargetError(f"could not list sys.path with {host.python}: {tail}",
                          kind="other", host=host.name)
    try:
        roots = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise TargetError(f"unexpected output from {host.python} while listing sys.path",
                          kind="other", host=host.name) from None
    return [str(r) for r in roots]


def resolve_roots(target: Target, host: Host, modules: Sequence[str],
                  explicit: Sequence[str] = ()) -> list[str]:
    """``--root`` values, else the host's ``site_roots``, else discovery of the first module."""
    if explicit:
        return list(explicit)
    if host.site_roots:
        return list(host.site_roots)
    found: list[str] = []
    for module in modules:
        for root in discover_roots(target, host, module):
            if root not in found:
                found.append(root)
    if not found:
        raise VariantctlError(
            f"{modules[0]} is not importable by host {host.name!r} ({host.python})",
            hint="pass --root DIR, or set `site_roots` (or env PYTHONPATH/python) for the "
            "host in variants/hosts.yaml",
        )
    return found
