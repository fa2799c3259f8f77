"""What a report is built from: runs with their benchmark results, and skipped points.

Frozen values only; the loader (:mod:`variantctl.report.load`) or a sweep builds them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from variantctl.bench.model import BenchResult
from variantctl.jsontypes import JsonMapping
from variantctl.report.tuneresult import TuneResult
from variantctl.runs.run import RunRecord
from variantctl.secretmask import DEFAULT, SecretRule


@dataclass(frozen=True)
class RunInput:
    """One run (a launch of one configuration) and the benchmarks measured on it."""

    record: RunRecord
    #: ``(file name, result)`` in the order measured
    results: tuple[tuple[str, BenchResult], ...] = ()
    #: bench files listed in run.json that could not be read: ``file: reason``
    unreadable: tuple[str, ...] = ()
    #: the name the report shows (default: the variant's)
    label: str | None = None
    #: what sets this point apart, e.g. a sweep point's grid values
    settings: str = ""
    #: a line the report shows about this run (a sweep's stop rule ending the ladder)
    note: str = ""
    #: ``bench --profile`` breakdowns measured on this run, one per level (report/profile.py)
    profiles: tuple[JsonMapping, ...] = ()

    @property
    def run_id(self) -> str:
        return self.record.run_id

    @property
    def name(self) -> str:
        return self.label or self.record.variant_name


@dataclass(frozen=True)
class PlannedSkip:
    """A point a sweep did not run: predicted to fail, or failed before with the same
    configuration (``run_id`` names that run)."""

    point: str
    #: ``predicted`` (a pre-flight rule) or ``history`` (an identical configuration failed)
    reason: str
    signature: str | None = None
    rule: str | None = None
    message: str = ""
    remediation: str = ""
    evidence: str = ""
    run_id: str | None = None


@dataclass(frozen=True)
class Peaks:
    """A host's declared GPU ceilings (hosts.yaml ``gpu:``), for the roofline section."""

    bandwidth_gbs: float
    tflops: float
    count: int = 1
    name: str | None = None


@dataclass(frozen=True)
class ModelShape:
    """The numbers of a model's ``config.json`` the roofline arithmetic needs."""

    source: str
    hidden_size: int
    num_layers: int
    intermediate_size: int
    vocab_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    dtype_bytes: int = 2
    tie_embeddings: bool = False
    #: MoE: experts per token over all experts (1.0 for a dense model)
    active_expert_fraction: float = 1.0


def _empty_peaks() -> Mapping[str, Peaks]:
    return MappingProxyType({})


def _empty_models() -> Mapping[str, ModelShape]:
    return MappingProxyType({})


@dataclass(frozen=True)
class ReportInput:
    """Everything one report shows."""

    title: str
    runs: tuple[RunInput, ...]
    skips: tuple[PlannedSkip, ...] = ()
    #: the sweep the runs belong to, when the report is of a sweep
    sweep: str | None = None
    #: host name -> declared peaks (only hosts that declare them)
    peaks: Mapping[str, Peaks] = field(default_factory=_empty_peaks)
    #: run id -> the shape of its model (only where config.json could be read)
    models: Mapping[str, ModelShape] = field(default_factory=_empty_models)
    #: when the report was made (ISO 8601), shown in its header
    created_at: str = ""
    #: what is a secret (masked in labels): the project's rule
    secrets: SecretRule = DEFAULT
    #: the tune the report is of (``report --tune NAME``): its sections come first
    tune: TuneResult | None = None
