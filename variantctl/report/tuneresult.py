"""A finished tune's result, read back from its state (``runs/tunes/NAME.json``, through
the run store) as a frozen value for ``variantctl report --tune NAME``.

The state's ``"result"`` is the object ``tune --json`` prints under ``"tune"``
(:func:`variantctl.tune.result.result_json`); a damaged one is a
:class:`~variantctl.jsonfields.StoredFileError` naming the file and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from variantctl.errors import NotFoundError
from variantctl.jsonfields import Fields
from variantctl.secretmask import DEFAULT, SecretRule

if TYPE_CHECKING:
    from variantctl.runs.store import RunStore

#: trial states that never gave the search an objective it kept, with the reason why
DROPPED = ("pruned", "failed", "predicted", "historical")


def setting_text(v: object) -> str:
    """One setting's value as ``tune`` and its report print it (``unset``, ``true``,
    ``[a, b]``), from its ``--json`` form."""
    if v is None:
        return "unset"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return str(v)


def settings_label(settings: Mapping[str, Any], secrets: SecretRule = DEFAULT) -> str:
    """``max-num-seqs=16 enable-chunked-prefill=true`` (the base variant: ``(base)``),
    as ``tune`` prints a candidate; a secret's value masked (a report is shared)."""
    return " ".join(f"{str(k).split('.', 1)[-1]}={setting_text(secrets.mask(str(k), v))}"
                    for k, v in settings.items()) or "(base)"


@dataclass(frozen=True)
class Interval:
    estimate: float
    lo: float
    hi: float


@dataclass(frozen=True)
class Trial:
    """One candidate of the search, in the order it was proposed (``#0`` the base)."""

    number: int
    label: str
    state: str
    launches: int
    #: the mean over its launches (None: none gave an objective)
    objective: float | None
    #: Student's t over its launches (None below two)
    ci95: tuple[float, float] | None
    reason: str
    run_id: str | None


@dataclass(frozen=True)
class Pick:
    """The best, or the recommended cheaper equivalent."""

    label: str
    interval: Interval | None
    run_id: str | None
    why: str = ""


@dataclass(frozen=True)
class TuneResult:
    """What the tune's last finished run searched, measured and decided."""

    name: str
    source: str
    variant: str
    objective: str
    maximize: bool
    started_at: str
    finished_at: str
    launches: int
    resumed: bool
    trials: tuple[Trial, ...]
    best: Pick | None
    beats_base: bool
    equivalent: tuple[str, ...]
    recommended: Pick | None
    #: setting -> PED-ANOVA share, largest first (empty: see ``importance_note``)
    importance: tuple[tuple[str, float], ...]
    importance_note: str
    verdict: str
    variant_written: str | None
    #: the best mean after each batch, as the search recorded it
    best_so_far: tuple[float, ...]

    @property
    def measured(self) -> tuple[Trial, ...]:
        return tuple(t for t in self.trials if t.objective is not None)


def _pair(f: Fields, key: str) -> tuple[float, float] | None:
    if f.data.get(key) is None:
        return None
    lo_hi = f.numbers(key)
    if len(lo_hi) != 2:
        raise f.error(key, "should be [low, high]")
    return lo_hi[0], lo_hi[1]


def _pick(f: Fields | None, secrets: SecretRule) -> Pick | None:
    if f is None:
        return None
    ci = _pair(f, "ci95")
    est = f.opt_number("objective")
    return Pick(settings_label(f.mapping("settings"), secrets),
                Interval(est, *ci) if est is not None and ci is not None else None,
                f.opt_text("run_id"), f.text("why", ""))


def tune_result(state: Mapping[str, Any], source: str,
                secrets: SecretRule = DEFAULT) -> TuneResult:
    """The result a finished tune's state keeps (``source``: the file, for messages;
    ``secrets``: the project's rule, for the settings' values)."""
    top = Fields(state, source)
    r = top.obj("result")
    obj = r.obj("objective")
    trials = []
    for i, t in enumerate(r.objs("trials", Fields.REQUIRED)):
        # a failure's reason quotes the server's log, which may hold a secret inline
        reason = secrets.mask_text(t.opt_text("reason") or "")
        trials.append(Trial(i, settings_label(t.mapping("settings"), secrets), t.text("state"),
                            t.integer("launches"), t.opt_number("objective"),
                            _pair(t, "ci95"), reason, t.opt_text("run_id")))
    importance = sorted(r.number_map("importance").items(), key=lambda kv: -kv[1])
    equivalent = tuple(settings_label(e.data, secrets) for e in r.objs("equivalent"))
    return TuneResult(
        name=r.text("name", top.text("tune")), source=source,
        variant=r.text("variant"), objective=obj.text("label"),
        maximize=obj.flag("maximize"), started_at=top.text("started_at", ""),
        finished_at=top.text("finished_at", ""), launches=r.integer("launches"),
        resumed=r.flag("resumed", False), trials=tuple(trials),
        best=_pick(r.opt_obj("best"), secrets),
        beats_base=r.flag("beats_base"), equivalent=equivalent,
        recommended=_pick(r.opt_obj("recommended"), secrets), importance=tuple(importance),
        importance_note=r.opt_text("importance_note") or "", verdict=r.text("verdict"),
        variant_written=r.opt_text("variant_written"),
        best_so_far=r.numbers("best_so_far"))


def load_tune(store: RunStore, name: str, secrets: SecretRule = DEFAULT) -> TuneResult:
    """Tune ``name``'s last finished result from the store; unknown, unfinished or
    recorded without a result (before variantctl kept it) is one error, exit 2."""
    path = store.tune_state_path(name)
    # a name is a file name in runs/tunes/, never a path out of it
    state = store.read_tune_state(name) if name and "/" not in name and name != ".." \
        else None
    if state is None:
        raise NotFoundError(f"no tune {name!r} has run here (no {path})",
                            hint=f"`variantctl tune {name}` runs tunes/{name}.yaml and "
                                 "writes that file when it starts")
    if state.get("status") != "finished":
        raise NotFoundError(
            f"tune {name} has not finished ({path}: status {state.get('status')!r}, "
            f"started {state.get('started_at')}): no result to report",
            hint=f"`variantctl tune {name} --resume` continues it")
    if "result" not in state:
        raise NotFoundError(
            f"tune {name}'s state has no result ({path} was written by a variantctl "
            "that did not keep it)",
            hint=f"run `variantctl tune {name}` again: it reuses every stored measurement "
                 "of the same configuration and records the result")
    return tune_result(state, str(path), secrets)
