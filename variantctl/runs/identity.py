"""What identifies a run, a sweep point and a configuration: the one place keys are made.

Pure: no file access. Every key is the first ten hex digits of the sha256 of the
canonical JSON (sorted keys, no spaces) of ``{"variant", "host", "patches", "bench"}``
(:func:`content_key`); the three keys differ only in what they put there.

========================  =====================================================  ===========
key                       what is in it                                          used by
========================  =====================================================  ===========
**launch key**            the resolved variant's launch view (everything the     the run id
(:func:`launch_key`)      server runs with — the ``VARIANTCTL_PROFILE``           ``KEY-SEQ``
                          directory of a profiled start included), the host's    (run.json)
                          identity, the patch state of every root of each
                          patchset (file sha256s, fingerprints) and, for a
                          sweep's launch, what it measures (:class:`Measured`)
**point key**             the launch view, the host's identity and what the      sweep state,
(:func:`point_key`)       sweep measures (bench parameters of every prompt set,  ``--resume``,
                          ``profile: true``); no patch state (the plan reads no  past bench
                          host)                                                  times
**configuration key**     the launch view *without* ``VARIANTCTL_PROFILE`` (the  sweep history
(:func:`config_key`)      directory a run records into is not what is
                          measured: a start that failed profiled failed for the
                          same configuration), the host's identity and the
                          fingerprint of each patchset the variant requires (an
                          edited patchset is a new configuration); no bench, no
                          root state
**import key**             the variant and host a ``runs import`` run is recorded  the run id
(:func:`import_key`)      for, the tool and the sha256 of the imported file       of an import
========================  =====================================================  ===========

Never in a key: the variant's name, description, tags and origins (``launch_view``
leaves them out: a sweep point and a plain launch of the same configuration share
it), where the host was defined (``origin``, a file:line), a SLURM host's job count
and port range. What is left out when empty, so older keys keep their value: a host's
``slurm`` identity, the ``requires`` part of a configuration key, the ``profile`` mark
of a point, a variant's ``compile_cache`` (``ResolvedVariant.launch_view``).

Keys of stored runs are never recomputed from the present catalog: history reads a
record's configuration key from what its run.json recorded (:func:`record_config_key`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from variantctl.benchparams import BenchParams
from variantctl.hostmodel import Host, SlurmSpec
from variantctl.jsontypes import JsonMapping, JsonObject
from variantctl.profilevar import PROFILE_ENV
from variantctl.runs.run import RunRecord, thaw
from variantctl.variants.model import ResolvedVariant

KEY_LENGTH = 10
#: the keys of ``ResolvedVariant.launch_view`` (run.json's variant holds them all)
LAUNCH_KEYS = tuple(ResolvedVariant(name="x").launch_view())


@dataclass(frozen=True)
class Measured:
    """What besides the server itself makes a measurement distinct: a sweep's bench
    parameters (one per prompt set, in file order) and whether it profiles."""

    bench: tuple[BenchParams, ...]
    profile: bool = False

    def to_json(self) -> JsonObject:
        return {"bench": [b.to_json() for b in self.bench],
                **({"profile": True} if self.profile else {})}


@dataclass(frozen=True)
class PatchState:
    """A patchset's state on every root of the host, file hashes included (or why it
    could not be read there: e.g. the host has no copy of its module)."""

    name: str
    roots: Mapping[str, str]
    files: tuple[Mapping[str, Any], ...]
    required: bool = False
    error: str | None = None
    #: the patchset definition's fingerprint (a sweep's history tells an edited patchset
    #: from the one a failed run had)
    fingerprint: str | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"roots": dict(self.roots), "files": [dict(f) for f in self.files],
                               "required": self.required}
        if self.fingerprint is not None:
            out["fingerprint"] = self.fingerprint
        if self.error is not None:
            out["error"] = self.error
        return out

    @classmethod
    def from_json(cls, name: str, data: JsonMapping) -> PatchState:
        """The state as a run record keeps it (``to_json``); what an older record lacks
        reads as absent."""
        roots = data.get("roots")
        files = data.get("files")
        error, fingerprint = data.get("error"), data.get("fingerprint")
        return cls(
            name,
            MappingProxyType({str(k): str(v) for k, v in roots.items()}
                             if isinstance(roots, Mapping) else {}),
            tuple(MappingProxyType(dict(f)) for f in files if isinstance(f, Mapping))
            if isinstance(files, (list, tuple)) else (),
            required=bool(data.get("required")),
            error=None if error is None else str(error),
            fingerprint=None if fingerprint is None else str(fingerprint))


def slurm_identity(spec: SlurmSpec) -> JsonObject:
    """What of a SLURM host decides a run (the resources a job asks for); how many jobs
    a sweep queues and which ports are handed out do not."""
    return {"partition": spec.partition, "gres": spec.gres, "time": spec.time,
            "account": spec.account, "qos": spec.qos, "sbatch": list(spec.sbatch),
            "patch_roots": spec.patch_roots}


def host_identity(host: Host) -> JsonObject:
    """What of a host decides a run, as run.json records it (``origin`` is recorded but
    left out of every key)."""
    ident: JsonObject = {"name": host.name, "ssh": host.ssh.display if host.ssh else None,
                         "python": host.python, "workdir": host.workdir,
                         "env": dict(host.env), "origin": host.origin}
    if host.slurm is not None:  # only then: the keys of every other host stay as they were
        ident["slurm"] = slurm_identity(host.slurm)
    return ident


def _host_json(host: Host | str) -> JsonObject:
    """A defined host's identity; a name the project does not define: the name alone
    (the plan's pre-flight reports it, the point never runs)."""
    return host_identity(host) if isinstance(host, Host) else {"name": host}


def content_key(variant_view: Mapping[str, Any], host: Mapping[str, Any],
                 patches: Mapping[str, Any], bench: Mapping[str, Any] | None) -> str:
    """sha256 of the canonical JSON of what decides a run (``origin`` of the host left
    out), first :data:`KEY_LENGTH` hex digits."""
    host = {k: v for k, v in host.items() if k != "origin"}
    content = {"variant": variant_view, "host": host, "patches": patches, "bench": bench}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_LENGTH]


def launch_key(variant: ResolvedVariant, host: Host, patches: Sequence[PatchState] = (),
               measured: Measured | None = None) -> str:
    """The key of a launch (its run id is ``KEY-SEQ``)."""
    return content_key(variant.launch_view(), host_identity(host),
                        {p.name: p.to_json() for p in patches},
                        measured.to_json() if measured is not None else None)


def unresolved_launch_key(name: str, host: Host) -> str:
    """The key of a run whose variant is no longer known (``watch`` of a server whose
    variant was deleted and that has no earlier run to take it from): its name."""
    return content_key({"name": name}, host_identity(host), {}, None)


def import_key(variant_view: Mapping[str, Any], host: Mapping[str, Any], tool: str,
               sha256: str) -> str:
    """The key of a run ``runs import`` made from another tool's result file: the
    variant and host it is recorded for, the tool and the file's sha256 (the same file
    imported again is the same key, the next sequence number)."""
    return content_key(variant_view, host, {}, {"imported": tool, "sha256": sha256})


def point_key(variant: ResolvedVariant, host: Host | str, measured: Measured) -> str:
    """A sweep point's key in its state file (``--resume`` matches finished points by
    it, so an edited grid or bench section reruns what changed)."""
    return content_key(variant.launch_view(), _host_json(host), {}, measured.to_json())


def required_fingerprints(requires: Iterable[str], fingerprints: Mapping[str, str]
                          ) -> dict[str, str]:
    """name -> fingerprint of the required patchsets (a name with no known definition
    is keyed by its name alone: the pre-flight reports it)."""
    return {name: fingerprints.get(name, "") for name in requires}


def config_key(variant: ResolvedVariant, host: Host | str,
               fingerprints: Mapping[str, str]) -> str:
    """The configuration key of ``variant`` on ``host`` with the project's patchsets as
    defined now (``fingerprints``: name -> fingerprint of every patchset; the key holds
    those the variant requires)."""
    return _config_key(variant.launch_view(), _host_json(host),
                       required_fingerprints(variant.requires, fingerprints))


def record_config_key(record: RunRecord) -> str:
    """The configuration key of a stored run, from what its run.json recorded: its
    variant, its host and the fingerprint each required patchset had when it started
    (a run recorded before fingerprints were kept has none: it no longer matches, so
    it is tried again)."""
    view = {k: record.variant.get(k) for k in LAUNCH_KEYS}
    requires = view.get("requires") or ()
    prints = {name: str(p.get("fingerprint") or "") for name, p in record.patches.items()
              if isinstance(p, Mapping)}
    return _config_key(view, record.host, required_fingerprints(
        requires if isinstance(requires, (list, tuple)) else (), prints))


def _config_key(view: Mapping[str, Any], host: Mapping[str, Any],
                required: Mapping[str, str]) -> str:
    plain = thaw(view)
    env = plain.get("env")
    if isinstance(env, dict) and PROFILE_ENV in env:
        plain = {**plain, "env": {k: v for k, v in env.items() if k != PROFILE_ENV}}
    # without required patchsets the key is what it always was (older runs keep counting)
    patches = {"requires": dict(sorted(required.items()))} if required else {}
    return content_key(plain, thaw(host), patches, None)
