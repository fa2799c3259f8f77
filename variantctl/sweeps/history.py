"""What the run store says about a sweep's points (pure: fed RunRecords, no file access).

Runs are grouped by *configuration key* (``runs/identity.py``: launch view without the
profile directory, host identity, fingerprints of the required patchsets): a run of
the same configuration under another name (a plain ``launch``, another sweep) counts,
and a run whose required patchset has since been edited does not (the fix is what the
user wants tried).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from variantctl.runs.identity import record_config_key
from variantctl.runs.run import RunRecord
from variantctl.sweeps.model import sweep_of_name

#: how a start that never became ready ends
FAILED_KINDS = frozenset({"failed", "hang", "exited", "timeout"})
#: startup estimate when nothing ran on that host before
DEFAULT_STARTUP_S = 60.0


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
