"""A tune's objective per trial and its best-so-far curve: the data (pure, built from a
:class:`~variantctl.report.tuneresult.TuneResult`) and its PNG (matplotlib's Agg
backend, imported inside :func:`render_tune_png` as report/plots.py does).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from variantctl.report.tuneresult import TuneResult

#: the plot's file name beside report.md
TUNE_PNG = "tune.png"


@dataclass(frozen=True)
class TrialPoint:
    x: float
    y: float
    #: (below, above) the 95 % interval reaches from y; None below two launches
    err: tuple[float, float] | None


@dataclass(frozen=True)
class TuneCurve:
    name: str
    title: str
    xlabel: str
    ylabel: str
    #: trials with an objective, in order
    points: tuple[TrialPoint, ...]
    #: the running best of those objectives: (trial, best so far), a step per change
    best: tuple[tuple[float, float], ...]
    #: trials without an objective (failed, predicted, historical)
    missing: tuple[float, ...]
    #: the verdict's best configuration (trial, mean), and whether it is a winner
    pick: tuple[float, float] | None
    winner: bool

    @property
    def lines(self) -> tuple[TrialPoint, ...]:
        """What there is to draw (the report writers skip a plot without lines)."""
        return self.points


def tune_curve(t: TuneResult) -> TuneCurve:
    """Each trial's objective (mean over its launches, 95 % CI) and the best of them so
    far, trial by trial, where better is higher or lower as the objective says."""
    points: list[TrialPoint] = []
    best: list[tuple[float, float]] = []
    top: float | None = None
    for trial in t.trials:
        y = trial.objective
        if y is None:
            continue
        x = float(trial.number)
        err = None if trial.ci95 is None else (y - trial.ci95[0], trial.ci95[1] - y)
        points.append(TrialPoint(x, y, err))
        if top is None or (y > top if t.maximize else y < top):
            top = y
            best.append((x, top))
    if best and t.trials and best[-1][0] < t.trials[-1].number:
        best.append((float(t.trials[-1].number), best[-1][1]))  # the step runs to the end
    pick = None
    if t.best is not None and t.best.interval is not None:
        same = [p for p in t.trials if p.label == t.best.label]
        if same:
            pick = (float(same[0].number), t.best.interval.estimate)
    return TuneCurve(
        TUNE_PNG, f"Tune {t.name}: objective per trial and best so far",
        "trial (in the order proposed; 0 is the base variant)", f"objective: {t.objective}",
        tuple(points), tuple(best),
        tuple(float(p.number) for p in t.trials if p.objective is None), pick,
        t.beats_base)


def render_tune_png(plot: TuneCurve) -> bytes:
    """The curve as PNG bytes (deterministic: no timestamp in the metadata)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    # the legend below the axes, at a fixed place (never "best": placing it costs a
    # search over the data, and it moves between reports)
    fig = Figure(figsize=(7.0, 4.8), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    confirmed = [p for p in plot.points if p.err is not None]
    probes = [p for p in plot.points if p.err is None]
    errs = [p.err for p in confirmed if p.err is not None]
    if confirmed:
        ax.errorbar([p.x for p in confirmed], [p.y for p in confirmed],
                    yerr=[[max(0.0, e[0]) for e in errs], [max(0.0, e[1]) for e in errs]],
                    fmt="o", color="C0", capsize=3, elinewidth=1, zorder=3,
                    label="objective: mean of its launches (95 % CI)")
    if probes:
        ax.plot([p.x for p in probes], [p.y for p in probes], "o", color="C0",
                markerfacecolor="none", zorder=3, label="objective: one launch")
    if plot.best:
        ax.step([b[0] for b in plot.best], [b[1] for b in plot.best], where="post",
                color="C1", linewidth=2, zorder=2, label="best so far")
    if plot.missing:
        # on the axis, whatever the objective's scale: these trials have no value
        ax.plot(plot.missing, [0.03] * len(plot.missing), "x", color="C3",
                transform=ax.get_xaxis_transform(), clip_on=False,
                label="no objective (failed, predicted, historical)")
    if plot.pick is not None:
        ax.plot([plot.pick[0]], [plot.pick[1]], "*", color="C2", markersize=14, zorder=4,
                label="winner (beats the base beyond the noise)" if plot.winner
                else "best measured (not a winner)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(plot.title)
    ax.set_xlabel(plot.xlabel)
    ax.set_ylabel(plot.ylabel)
    ax.grid(True, alpha=0.3)
    fig.legend(loc="outside lower center", ncols=2, fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
