"""The sections of a tune in a report (PURE): the verdict first, the trials in order with
the objective-per-trial and best-so-far plot, each setting's effect, then the pruned and
failed candidates with their reasons — the figures ``tune`` printed when it finished
(render/tune.result_blocks), from the result its state keeps.
"""

from __future__ import annotations

from variantctl.report.section import Section
from variantctl.report.tables import Table
from variantctl.report.tuneplot import tune_curve
from variantctl.report.tuneresult import DROPPED, Pick, TuneResult


def _g(value: float | None) -> str:
    # four significant figures, as tune prints them: objectives range from 0.3 to 3000
    return "–" if value is None else f"{value:.4g}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "–" if ci is None else f"{ci[0]:.4g} … {ci[1]:.4g}"


def _pick(p: Pick, objective: str) -> str:
    iv = p.interval
    figure = "" if iv is None else f" — {objective} {_g(iv.estimate)} (95 % CI " \
        f"{_ci((iv.lo, iv.hi))})"
    return p.label + figure + (f", run {p.run_id}" if p.run_id else "")


def verdict_line(t: TuneResult) -> str:
    """One line: the winner, or why there is none (the command prints it too)."""
    if t.best is not None and t.beats_base:
        return f"Tune {t.name}: winner {_pick(t.best, t.objective)}: {t.verdict}."
    if t.best is not None:
        return (f"Tune {t.name}: no winner — {t.verdict}; best measured "
                f"{_pick(t.best, t.objective)}.")
    return f"Tune {t.name}: no winner — {t.verdict}."


def tune_sections(t: TuneResult) -> tuple[Section, ...]:
    better = "higher" if t.maximize else "lower"
    head = (f"Variant {t.variant}, objective {t.objective} ({better} is better). The last "
            f"run started {t.started_at or '?'} and finished {t.finished_at or '?'}"
            + (" (resumed after an interruption)" if t.resumed else "")
            + f": {len(t.trials)} trials, {t.launches} launches ({t.source}).")
    paras = [verdict_line(t), head]
    if t.best is not None:
        paras.append("Not significantly different from the best (Welch, 95 %): "
                     + ("; ".join(t.equivalent) if t.equivalent else "none") + ".")
    if t.recommended is not None:
        paras.append("Recommended (cheaper, as good): "
                     + _pick(t.recommended, t.objective) + f" — {t.recommended.why}.")
    paras.append(f"Wrote {t.variant_written}." if t.variant_written
                 else "No variant written.")
    trials = Table(
        "Trials in order",
        ("#", "settings", "state", "n", "objective", "95 % CI", "run", "reason"),
        tuple((str(x.number), x.label, x.state, str(x.launches), _g(x.objective),
               _ci(x.ci95), x.run_id or "–", x.reason) for x in t.trials),
        note="n: launches of the trial; objective: their mean; 95 % CI: Student's t over "
             "the launches (none below two). The plot's best so far is the running best "
             "of these objectives, trial by trial.")
    sections = [Section(f"Tune {t.name}: verdict and trials", tuple(paras), (trials,),
                        (tune_curve(t),))]
    if t.importance:
        sections.append(Section(
            "Each setting's effect",
            tables=(Table("Importance", ("setting", "share"),
                          tuple((k, f"{v:.2f}") for k, v in t.importance),
                          note="Optuna's PED-ANOVA importance over the measured trials "
                               "(shares of 1): how much the search's results depended "
                               "on each setting; not a measurement (no interval). "
                               "variantctl bisect splits best vs base setting by "
                               "setting."),)))
    else:
        sections.append(Section("Each setting's effect", (
            "Not computed: " + (t.importance_note or "no measured trials") + ".",)))
    dropped = tuple((str(x.number), x.label, x.state, x.reason) for x in t.trials
                    if x.state in DROPPED)
    sections.append(Section(
        "Pruned and failed candidates",
        () if dropped else ("None: no candidate was pruned, failed or screened out.",),
        (Table("Pruned and failed candidates", ("#", "settings", "state", "reason"),
               dropped),) if dropped else ()))
    return tuple(sections)
