"""The launch's view of the streaming log classifier (:mod:`variantctl.logs`).

The classifier decides what a log means; this adapter only turns its answers
into the launch verdict vocabulary (``failed``, ``hang``, ``exited``, ``ready``,
``timeout``) and keeps the last full result for facts and the archive.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from variantctl.jsontypes import JsonObject
from variantctl.logs.verdict import VerdictKind
from variantctl.targets.activity import HostConditions

if TYPE_CHECKING:
    from variantctl.logs.model import Catalog
    from variantctl.logs.result import Result
    from variantctl.logs.stream import StreamClassifier

#: the classifier's kinds that decide a start on their own line (the launch verdict of the
#: same name)
DECISIVE_KINDS = {"failed": VerdictKind.FAILED, "hang": VerdictKind.HANG}


@dataclass(frozen=True, kw_only=True)
class Decision:
    """A verdict with what explains it (from the classifier's Result, when there is one)."""

    verdict: VerdictKind
    decisive: bool
    #: the classifier's result that explains the verdict (None: nothing explains it)
    result: Result | None = None
    #: why the server had not started running when the verdict came (a SLURM job's
    #: ``queued (REASON)``): then that is its phase, not the log's
    waiting: str | None = None


class ClassifierAdapter:
    """Wraps a ``StreamClassifier`` (feed/tick/finish)."""

    def __init__(self, stream: StreamClassifier):
        self.stream = stream
        #: the classifier's latest result (None before its first verdict)
        self.last: Result | None = None

    @classmethod
    def create(cls, *, stall_seconds: float, clock: Callable[[], float], catalog: Catalog
               ) -> ClassifierAdapter:
        """A fresh classifier over ``catalog`` (the caller loads it: config.catalog)."""
        from variantctl.logs.stream import StreamClassifier

        return cls(StreamClassifier(catalog, stall_seconds=stall_seconds, clock=clock))

    def _decision(self, verdict: Result | None) -> Decision | None:
        if verdict is None:
            return None
        self.last = verdict
        kind = DECISIVE_KINDS.get(verdict.kind)
        # a result that decides nothing yet (ok so far, unknown) is no verdict of its own:
        # the launch waits for /health, the process's end or the deadline
        return Decision(verdict=kind or VerdictKind.STARTED, decisive=kind is not None,
                        result=verdict)

    def feed(self, line: str) -> Decision | None:
        return self._decision(self.stream.feed(line))

    def tick(self) -> Decision | None:
        return self._decision(self.stream.tick())

    def activity(self) -> None:
        """The stall clock restarts (the server only now began to run, or still works)."""
        self.stream.activity()

    def quiet_for(self) -> float:
        """Seconds since the last line (or :meth:`activity`)."""
        return self.stream.quiet_for()

    @property
    def stall_seconds(self) -> float | None:
        """After how many quiet seconds a start is a hang (None: never)."""
        return self.stream.stall_seconds

    def _finish(self, exited: bool) -> Result:
        result = self.stream.finish(exited=exited)
        self.last = result
        return result

    def ready(self) -> Decision:
        """The ready verdict (``/health`` answered 200). A log that has not shown the
        server up yet reads as a hang or a failure in its last phase: that is no
        explanation of a server that answers, so the decision carries none (its facts
        stay readable), and what is archived is the READY that was printed."""
        result = self._finish(False)
        if result.kind in DECISIVE_KINDS:
            return Decision(verdict=VerdictKind.READY, decisive=False, result=None)
        return Decision(verdict=VerdictKind.READY, decisive=False, result=result)

    def exited(self) -> Decision:
        result = self._finish(True)
        kind = DECISIVE_KINDS.get(result.kind)
        if kind is not None:
            return Decision(verdict=kind, decisive=True, result=result)
        return Decision(verdict=VerdictKind.EXITED, decisive=False, result=result)

    def timed_out(self, waiting: str | None = None) -> Decision:
        """The timeout verdict; ``waiting``: the server was still waiting to run (a
        queued job), which is then its phase (``queued (Resources)``)."""
        return Decision(verdict=VerdictKind.TIMEOUT, decisive=False,
                        result=self._finish(False), waiting=waiting)

    def phase(self) -> str:
        return self.stream.phase

    def facts(self) -> JsonObject:
        """The facts of the latest result, else those the stream gathered so far."""
        return (self.last.facts if self.last is not None else self.stream.facts).to_json()


def on_host(decision: Decision, conditions: HostConditions, catalog: Catalog) -> Decision:
    """A hang (or timeout) verdict told for the machine it happened on.

    Hints name only what the host has: on a host without GPUs (the log's
    ``device_config`` says ``cpu``, else the host's devices say so) a signature's
    ``remediation_no_gpu`` replaces its GPU advice (NCCL, CUDA graphs). On a loaded host
    the message says so ("load average 9.0 on 2 cores"): there a slow start and a hang
    look alike for longer."""
    from dataclasses import replace

    from variantctl.logs.engine import fill

    result = decision.result
    if result is None or decision.verdict not in (VerdictKind.HANG, VerdictKind.TIMEOUT):
        return decision
    message, remediation = result.message, result.remediation
    device = str(result.facts.config.get("device_config") or "").strip("'\"").lower()
    gpus = conditions.gpus if not device else device != "cpu"
    sig = catalog.get(result.signature) if result.signature else None
    if gpus is False and sig is not None and sig.remediation_no_gpu:
        remediation = fill(sig.remediation_no_gpu, dict(result.captures))
    if conditions.loaded:
        message = (f"{message.rstrip()} The host was loaded ({conditions.describe_load()}): "
                   "a busy machine starts slower; a longer --stall or --timeout tells a "
                   "slow start from a hang.")
    if (message, remediation) == (result.message, result.remediation):
        return decision
    return replace(decision, result=replace(result, message=message, remediation=remediation))
