"""What a bisect works on and finds: the two checked runs and the settings between them
(:class:`Bisection`), each configuration's measured levels (:class:`Measured`) and the
result (:class:`BisectResult`). Values only, below the flow that runs the rounds and the
renderers that print them (``render/bisect.py``), so neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from variantctl.sweeps.bisect import GREEDY_MAX, Effect, Setting, Subset, subset_label

if TYPE_CHECKING:
    from variantctl.bench.model import LevelResult
    from variantctl.benchparams import BenchParams
    from variantctl.report.model import RunInput
    from variantctl.variants.model import ResolvedVariant


@dataclass(frozen=True)
class Bisection:
    """Two checked runs and what a bisect of them varies (built before anything runs)."""

    a: RunInput
    b: RunInput
    host: str
    settings: tuple[Setting, ...]
    base: ResolvedVariant
    bench: BenchParams
    notes: tuple[str, ...]

    @property
    def strategy(self) -> str:
        return "one-at-a-time" if len(self.settings) <= GREEDY_MAX else "group-halving"

    def round_name(self, n: int) -> str:
        return f"bisect-{self.a.run_id}-{self.b.run_id}-r{n}"


@dataclass(frozen=True)
class Measured:
    """One configuration's outcome: its levels (empty when it was not measured)."""

    subset: Subset
    round: int
    status: str
    run_id: str | None
    levels: tuple[LevelResult, ...]


@dataclass(frozen=True)
class BisectResult:
    """What a bisect measured and found (the renderers' input)."""

    bisection: Bisection
    level: int
    total: Effect
    effects: dict[Subset, Effect]
    measured: dict[Subset, Measured]
    found: Subset | None
    reason: str
    rounds: int
    first_launches: int
    at_most: int

    def label(self, subset: Subset) -> str:
        return subset_label(subset, self.bisection.settings)
