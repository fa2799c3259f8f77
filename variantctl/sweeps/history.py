"""What the run store says about a sweep's points (pure: fed RunRecords, no file access).

A point's *configuration key* is the content hash of its launch view (the resolved
variant without its name), its host's identity and the fingerprints of the patchsets
it requires: a run of the same configuration under another name (a plain ``launch``,
another sweep) counts, and a run whose required patchset has since been edited does
not (the fix is what the user wants tried). The state of the host's roots is not in
it: the plan reads no host.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from variantctl.profilevar import PROFILE_ENV
from variantctl.runs.run import RunRecord, run_key, thaw
from variantctl.sweeps.model import sweep_of_name
from variantctl.variants.model import ResolvedVariant

#: how a start that never became ready ends
FAILED_KINDS = frozenset({"failed", "hang", "exited", "timeout"})
#: the keys of ``ResolvedVariant.launch_view`` (run.json's variant holds them all)
LAUNCH_KEYS = tuple(ResolvedVariant(name="x").launch_view())
#: startup estimate when nothing ran on that host before
DEFAULT_STARTUP_S = 60.0


def config_key(view: Mapping[str, Any], host_ident: Mapping[str, Any],
               required: Mapping[str, str] | None = None) -> str:
    """Content key of a configuration (launch view + host identity + the fingerprint of
    each required patchset; no root state, no bench).

    The profile directory (``VARIANTCTL_PROFILE``, set by ``profile: true``) is left out:
    a start that failed with profiling on failed for the same configuration. Without
    required patchsets the key is what it always was (older runs keep counting)."""
    plain = thaw(view)
    env = plain.get("env")
    if isinstance(env, dict) and PROFILE_ENV in env:
        plain = {**plain, "env": {k: v for k, v in env.items() if k != PROFILE_ENV}}
    patches = {"requires": dict(sorted(required.items()))} if required else {}
    return run_key(plain, thaw(host_ident), patches, None)


def required_fingerprints(requires: Iterable[str], fingerprints: Mapping[str, str]
                          ) -> dict[str, str]:
    """name -> fingerprint of the required patchsets (a name with no known definition
    is keyed by its name alone: the pre-flight reports it)."""
    return {name: fingerprints.get(name, "") for name in requires}


def record_config_key(record: RunRecord) -> str:
    view = {k: record.variant.get(k) for k in LAUNCH_KEYS}
    requires = view.get("requires") or ()
    # what each required patchset was when the run started (a run recorded before
    # fingerprints were kept has none: it no longer matches, so it is tried again)
    prints = {name: str(p.get("fingerprint") or "") for name, p in record.patches.items()
              if isinstance(p, Mapping)}
    return config_key(view, record.host,
                      required_fingerprints(requires if isinstance(requires, (list, tuple))
                                            else (), prints))


def base_of(variant_name: str) -> str:
    """The base variant of a sweep point's name (any other name is its own base)."""
    return variant_name.rpartition("@")[0] if sweep_of_name(variant_name) else variant_name


@dataclass(frozen=True)
class PastRun:
    run_id: str
    verdict: str
    signature: str | None
    message: str
    time_to_ready_s: float | None
    created_at: str


@dataclass
class History:
    """Runs by configuration (oldest first) and startup times by host/base variant."""

    by_config: dict[str, list[PastRun]] = field(default_factory=dict)
    ready_by_host_base: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    ready_by_host: dict[str, list[float]] = field(default_factory=dict)

    @classmethod
    def from_records(cls, records: Iterable[RunRecord]) -> History:
        out = cls()
        for rec in sorted(records, key=lambda r: (r.created_at, r.seq)):
            ready = rec.timings.get("time_to_ready_s")
            ttr = float(ready) if isinstance(ready, (int, float)) else None
            past = PastRun(rec.run_id, rec.verdict.kind, rec.verdict.signature,
                           rec.verdict.message or rec.verdict.title, ttr, rec.created_at)
            out.by_config.setdefault(record_config_key(rec), []).append(past)
            if ttr is not None and rec.verdict.kind == "ready":
                host = str(rec.host.get("name", ""))
                out.ready_by_host_base.setdefault((host, base_of(rec.variant_name)),
                                                  []).append(ttr)
                out.ready_by_host.setdefault(host, []).append(ttr)
        return out

    def last_failure(self, key: str) -> PastRun | None:
        """The last run of this configuration, when it failed to start (else None: a
        later ready run means the failure was fixed)."""
        runs = [r for r in self.by_config.get(key, ()) if r.verdict != "started"]
        if runs and runs[-1].verdict in FAILED_KINDS:
            return runs[-1]
        return None

    def startup_estimate(self, key: str, host: str, base: str) -> tuple[float, str]:
        """(seconds, where the estimate comes from)."""
        same = [r.time_to_ready_s for r in self.by_config.get(key, ())
                if r.verdict == "ready" and r.time_to_ready_s is not None]
        if same:
            return statistics.median(same), "this configuration"
        if self.ready_by_host_base.get((host, base)):
            return statistics.median(self.ready_by_host_base[(host, base)]), f"{base} on {host}"
        if self.ready_by_host.get(host):
            return statistics.median(self.ready_by_host[host]), f"runs on {host}"
        return DEFAULT_STARTUP_S, "default"
