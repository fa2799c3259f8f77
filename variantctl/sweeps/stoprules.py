"""A ladder's stop rules, evaluated on one measured level (pure)."""

from __future__ import annotations

from variantctl.bench.model import LevelMetrics
from variantctl.sweeps.model import StopRules


def stop_reason(rules: StopRules, metrics: LevelMetrics) -> str | None:
    """Why the ladder stops after this level, or None to go on."""
    if rules.min_success_pct is not None:
        pct = 100.0 * metrics.success_rate
        if pct < rules.min_success_pct:
            return (f"success {pct:.0f} % < {rules.min_success_pct:g} % at concurrency "
                    f"{metrics.concurrency}")
    if rules.max_ttft_p90_ms is not None and metrics.ttft_ms.count:
        p90 = metrics.ttft_ms.p90
        if p90 > rules.max_ttft_p90_ms:
            return (f"TTFT P90 {p90:.0f} ms > {rules.max_ttft_p90_ms:g} ms at concurrency "
                    f"{metrics.concurrency}")
    return None
