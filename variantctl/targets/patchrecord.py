"""EFFECTFUL: ``patch record`` — read a hand-edited copy and its pristine text through a
Target, record them (:mod:`variantctl.patching.record`, pure), save the patchset,
try it on the other copies, and adopt the edited copy.

Order, so nothing is half-written: everything is read and recorded first; the
patchset YAML is written to a temporary file beside its destination, loaded back
with the ordinary loader and checked once more (applied to the pristine text it
must give the edited bytes) before it is renamed into place; only then are the
other copies tried (read only) and the edited copy adopted: a ledger record in its
root says this patchset wrote it, with the pristine text as its backup, so
``rollback NAME`` restores the original and ``status`` calls it applied. Adoption
rewrites nothing: it appends to the ledger and, when the pristine text is not
already in a backup beside the file, writes one (a new file).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from variantctl import __version__
from variantctl.errors import TargetError, VariantctlError
from variantctl.jsontypes import JsonObject
from variantctl.patching.model import Patchset
from variantctl.patching.plan import module_path, module_relpath
from variantctl.patching.records import LedgerRecord
from variantctl.patching.states import APPLIED, DRIFTED, PRISTINE
from variantctl.targets.base import Target
from variantctl.targets.guard import check_under_root
from variantctl.targets.ledger import append_ledger
from variantctl.targets.releases import installed_version, released_file
from variantctl.targets.transaction import choose_backup, locked

#: the verdicts of a copy or release, as the report words them
APPLIES = "applies"
ALREADY = "already applied"


@dataclass(frozen=True)
class CopyVerdict:
    """Where the recorded patchset travels: one other copy, file or release."""

    #: the root, file or ``vllm==X`` it was tried on
    where: str
    verdict: str  # applies / already applied / drifted / missing / error
    detail: str = ""
    line: int | None = None

    def to_json(self) -> JsonObject:
        return {"where": self.where, "verdict": self.verdict, "detail": self.detail,
                "line": self.line}


@dataclass(frozen=True)
class RecordReport:
    name: str
    file: str
    edited: str
    pristine: str
    patchset: Patchset
    copies: tuple[CopyVerdict, ...]
    #: the ledger's backup for the adopted copy (None: not adopted)
    adopted_backup: str | None

    def to_json(self) -> JsonObject:
        return {
            "name": self.name, "file": self.file, "edited": self.edited,
            "pristine": self.pristine,
            "operations": [{"id": o.id, "op": o.kind, "where": o.describe, "from": o.from_,
                            "to": o.to} for o in self.patchset.operations],
            "copies": [c.to_json() for c in self.copies],
            "adopted": {"file": self.edited, "backup": self.adopted_backup}
            if self.adopted_backup else None,
        }


def verdict_for(ps: Patchset, data: bytes, where: str) -> CopyVerdict:
    """Would the patchset apply to this text? (pure analysis, nothing written)"""
    from variantctl.patching.engine import analyze

    a = analyze(ps.operations, data, display=where, with_lines=True)
    if a.state == PRISTINE:
        return CopyVerdict(where, APPLIES)
    if a.state == APPLIED:
        return CopyVerdict(where, ALREADY)
    if a.state == DRIFTED or a.state == "partial":
        bad = next((o for o in a.ops if o.state != PRISTINE), None)
        if bad is not None:
            return CopyVerdict(where, DRIFTED if a.state == DRIFTED else "partial",
                               f"{bad.op_id}: {bad.reason or bad.state}", bad.line)
    return CopyVerdict(where, "error", a.error or a.state, a.error_line)


def _edited_copy(roots: Sequence[str], module: str, backup: str) -> tuple[str, str]:
    """The copy the backup was kept beside: (root, file)."""
    folder = posixpath.dirname(posixpath.normpath(backup))
    for root in roots:
        path = module_path(root, module)
        if posixpath.dirname(path) == folder:
            return root, path
    raise VariantctlError(
        f"{backup} is not beside a copy of {module} in any root ({', '.join(roots) or 'none'})",
        hint="keep the backup next to the edited file (arg_utils.py.bak_…), or name the "
             "root holding the edited copy with --root")


def record_patch(
    target: Target,
    *,
    roots: Sequence[str],
    module: str,
    name: str,
    patchsets_dir: Path,
    backup: str | None,
    description: str = "",
    force: bool = False,
    check_against: Sequence[Path] = (),
    check_releases: Sequence[str] = (),
    cache_dir: Path | None = None,
    now: datetime,
    load_patchset_file: Callable[[Path], Patchset],
) -> RecordReport:
    """Record the edit of ``module`` beside ``backup`` as ``patchsets/NAME.yaml``.

    ``load_patchset_file`` is the project's patchset loader (``config/``, which targets
    may not import): the saved file is read back with it before it is put in place."""
    from variantctl.patching.engine import analyze
    from variantctl.patching.record import record, render_yaml

    dest = patchsets_dir / f"{name}.yaml"
    if dest.exists() and not force:
        raise VariantctlError(f"patchset {name!r} exists ({dest})",
                              hint="choose another name, or --force to overwrite it")
    if backup is not None:
        root, edited_path = _edited_copy(roots, module, backup)
        check_under_root(target, root, posixpath.relpath(edited_path, root))
        check_under_root(target, root, posixpath.relpath(backup, root))
        edited = target.read_bytes(edited_path)
        pristine = target.read_bytes(backup)
        label = backup
    else:
        assert cache_dir is not None
        root, edited_path, edited, pristine, label = _from_pip(target, roots, module,
                                                               cache_dir)
    recording = record(module, pristine, edited, pristine_name=label, edited_name=edited_path)
    text = render_yaml(name, recording, description=description or
                       f"Recorded from the hand edit of {edited_path}.", source=label)
    patchsets_dir.mkdir(parents=True, exist_ok=True)
    # written and loaded back in a private directory beside the destination (the loader
    # wants the file named after the patchset), then renamed into place
    tmpdir = Path(tempfile.mkdtemp(dir=patchsets_dir, prefix=".record-"))
    tmp = tmpdir / f"{name}.yaml"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        ps = load_patchset_file(tmp)
        again = analyze(ps.operations, pristine, display=edited_path)
        if again.new_data != edited:
            raise VariantctlError(f"the saved form of {name} does not reproduce "
                                  f"{edited_path}; nothing written")
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()
        tmpdir.rmdir()
    ps = load_patchset_file(dest)
    copies: list[CopyVerdict] = []
    for other in roots:
        if other == root:
            continue
        path = module_path(other, module)
        try:
            check_under_root(target, other, posixpath.relpath(path, other))
            data = target.read_bytes(path)
        except TargetError as exc:
            copies.append(CopyVerdict(other, "missing" if exc.kind == "not-found" else "error",
                                      exc.message))
            continue
        copies.append(verdict_for(ps, data, other))
    for file in check_against:
        try:
            data = file.read_bytes()
        except OSError as exc:
            copies.append(CopyVerdict(str(file), "error", exc.strerror or str(exc)))
            continue
        copies.append(verdict_for(ps, data, str(file)))
    for version in check_releases:
        assert cache_dir is not None
        where = f"{module.split('.')[0]}=={version}"
        try:
            data = released_file(module.split(".")[0], version, module_relpath(module),
                                 cache_dir)
        except VariantctlError as exc:
            copies.append(CopyVerdict(where, "error", exc.message))
            continue
        copies.append(verdict_for(ps, data, where))
    adopted = adopt(target, root=root, path=edited_path, patchset=ps, pristine=pristine,
                    edited=edited, backup=backup, now=now)
    return RecordReport(name=name, file=str(dest), edited=edited_path, pristine=label,
                        patchset=ps, copies=tuple(copies), adopted_backup=adopted)


def _from_pip(target: Target, roots: Sequence[str], module: str, cache_dir: Path
              ) -> tuple[str, str, bytes, bytes, str]:
    """The released text of the module, for the installed version (from the root's
    dist-info), and the first copy that differs from it: (root, file, edited, pristine,
    label)."""
    from variantctl.patching.record import RecordError
    from variantctl.targets.scan import find_dist_info

    package, rel = module.split(".")[0], module_relpath(module)
    released: dict[str, tuple[bytes, str]] = {}
    for root in roots:
        info = find_dist_info(target, root, package)
        if info is None:
            raise VariantctlError(f"{root} has no {package}-*.dist-info: the installed "
                                  "version is unknown, so its released file cannot be had",
                                  hint="give the pristine text with --from BACKUP")
        dist = posixpath.basename(info)[: -len(".dist-info")].rsplit("-", 1)[0]
        version = installed_version(target.read_bytes(posixpath.join(info, "METADATA"))
                                    .decode("utf-8", "replace"))
        if version is None:
            raise VariantctlError(f"{info}/METADATA names no Version")
        key = f"{dist}=={version}"
        if key not in released:
            released[key] = (released_file(dist, version, rel, cache_dir), key)
        pristine, label = released[key]
        path = module_path(root, module)
        check_under_root(target, root, rel)
        edited = target.read_bytes(path)
        if edited != pristine:
            return root, path, edited, pristine, label
    raise RecordError(f"no copy of {module} differs from its released text "
                      f"({', '.join(released)}): nothing to record")


def adopt(target: Target, *, root: str, path: str, patchset: Patchset, pristine: bytes,
          edited: bytes, backup: str | None, now: datetime) -> str:
    """Take the edited copy over as applied by ``patchset``: one ledger record whose
    backup holds the pristine text (the user's, if beside the file; else a new one).
    The file itself is not written."""
    sha = hashlib.sha256
    with locked(target, [root], timeout=30.0):
        if target.read_bytes(path) != edited:
            raise VariantctlError(f"{path} changed while it was recorded; not adopted",
                                  exit_code=3)
        if backup is None or posixpath.dirname(backup) != posixpath.dirname(path):
            backup, exists = choose_backup(target, path, pristine,
                                           template=patchset.backup_template, now=now,
                                           patchset=patchset.name, managed=(path,))
            if not exists:
                target.write_new(backup, pristine)
        stamp = now.isoformat(timespec="seconds")
        append_ledger(target, root, [LedgerRecord(
            txn=now.strftime("%Y%m%dT%H%M%S") + "-adopt-" + sha(path.encode()).hexdigest()[:8],
            action="apply", patchset=patchset.name, fingerprint=patchset.fingerprint,
            file=path, module=patchset.modules[0], sha256_before=sha(pristine).hexdigest(),
            sha256_after=sha(edited).hexdigest(), backup=backup, backup_created=False,
            time=stamp, tool_version=__version__, host=target.name)])
    return backup
