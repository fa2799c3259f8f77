"""EFFECTFUL (this machine): one file of a released wheel, for ``patch record --from-pip``
and ``--check-releases``.

``pip download --no-deps --only-binary=:all: DIST==VERSION`` fetches the wheel (pip's
own HTTP cache and its configured index apply: no other network is used); the one
member needed is kept under ``<cache>/releases/DIST-VERSION/<path>`` and the wheel is
deleted (vLLM's are 130-400 MB). A lock keeps two commands from fetching into the same
place at once. Where the wheel cannot be had, the error says so and what pip said.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from variantctl.errors import VariantctlError

#: a version as PyPI spells them (no path or option can hide in it)
VERSION_RE = r"[0-9][0-9A-Za-z.+!_-]*"
DIST_RE = r"[A-Za-z0-9][A-Za-z0-9._-]*"
#: a member bigger than this is not a source file
MAX_MEMBER = 32 << 20


def released_file(distribution: str, version: str, relpath: str, cache_dir: Path,
                  *, timeout: float = 900.0) -> bytes:
    """``relpath`` (``vllm/engine/arg_utils.py``) as released in ``distribution==version``."""
    if not re.fullmatch(DIST_RE, distribution) or not re.fullmatch(VERSION_RE, version):
        raise VariantctlError(f"not a release: {distribution}=={version}",
                              hint="versions as on PyPI, e.g. 0.8.5")
    base = cache_dir / "releases"
    cached = base / f"{distribution}-{version}" / relpath
    if cached.is_file():
        return cached.read_bytes()
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cached.is_file():  # fetched by another command while this one waited
            return cached.read_bytes()
        tmp = Path(tempfile.mkdtemp(dir=base, prefix=".download-"))
        try:
            data = _download_member(distribution, version, relpath, tmp, timeout)
            cached.parent.mkdir(parents=True, exist_ok=True)
            part = cached.with_name(cached.name + ".part")
            part.write_bytes(data)
            os.replace(part, cached)
            return data
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _download_member(distribution: str, version: str, relpath: str, tmp: Path,
                     timeout: float) -> bytes:
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
             "--only-binary=:all:", f"{distribution}=={version}", "-d", str(tmp)],
            capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise VariantctlError(f"cannot get {distribution}=={version}: pip download took "
                              f"over {timeout:.0f} s") from None
    wheels = sorted(tmp.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        said = (proc.stderr.strip().splitlines() or ["no wheel"])[-1][:300]
        raise VariantctlError(f"cannot get the released {distribution}=={version} (neither "
                              f"in pip's cache nor from its index): {said}",
                              hint="give the pristine text with --from BACKUP, or the "
                                   "release's copy with --check-against FILE")
    with zipfile.ZipFile(wheels[0]) as zf:
        try:
            info = zf.getinfo(relpath)
        except KeyError:
            raise VariantctlError(f"{distribution}=={version}'s wheel has no {relpath}") from None
        if info.file_size > MAX_MEMBER:
            raise VariantctlError(f"{relpath} in {wheels[0].name} is {info.file_size} bytes: "
                                  "not a source file")
        return zf.read(info)


def installed_version(metadata: str) -> str | None:
    """``Version:`` of a dist-info ``METADATA`` text."""
    for line in metadata.splitlines()[:50]:
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return None
