"""How often ``tune``'s search finds a known optimum within its budget, with and without
the compass step (``variantctl/tune/search._compass_step``): figures.

The search runs in-process against a simulated lab (no server): a 5 × 5 space of
max-num-seqs × max-num-batched-tokens whose throughput is ``100 / known_factor``
(tests/support/fake_openai_server.known_factor, the stand-in server's bowl, its optimum
moved to each of four places) times Gaussian noise of ``--sigma`` (relative), a budget of
12 launches (half the grid), the default stages. For each optimum it runs optimiser seeds
1–5, ``--draws`` noise draws each, and prints the share of tunes whose named best is the
optimum, for Optuna's TPE alone and for TPE with the compass step, side by side; then,
for the known-answer test's optimum, how many draws each seed finds it in.

Usage: .venv/bin/python benchmarks/bench_tune_search.py [--sigma 0.03] [--draws 8]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tests.support.fake_openai_server as stand_in
from variantctl.config.tunes import load_tune
from variantctl.tune import search
from variantctl.tune.model import Settings, TuneSpec
from variantctl.tune.search import Launched, Screened, run_search
from variantctl.tune.verdict import decide

SEQS = [4, 8, 16, 32, 64]
TOKENS = [512, 1024, 2048, 4096, 8192]
OPTIMA = [(16, 2048), (8, 4096), (32, 1024), (4, 8192)]
BASE = (4, 512)


def _spec(directory: Path, seed: int) -> TuneSpec:
    (directory / "known.yaml").write_text(
        "variant: tunable\nhosts: [local]\n"
        f"space:\n  args.max-num-seqs: {SEQS}\n  args.max-num-batched-tokens: {TOKENS}\n"
        "bench: {concurrency: [2], requests: 6, output_len: 8}\n"
        "objective: {maximize: output_throughput}\n"
        f"budget: {{launches: {len(SEQS) * len(TOKENS) // 2}}}\nseed: {seed}\n")
    return load_tune(directory, "known")


class _Lab:
    """Throughput from the bowl, with relative Gaussian noise; one server per key."""

    def __init__(self, sigma: float, rng: random.Random) -> None:
        self.sigma, self.rng = sigma, rng

    @staticmethod
    def _key(s: Settings) -> tuple[Any, Any]:
        return (s.get("args.max-num-seqs", BASE[0]),
                s.get("args.max-num-batched-tokens", BASE[1]))

    def screen(self, settings: Settings) -> Screened:
        return Screened(None, config=repr(self._key(settings)))

    def launch(self, batch: Any) -> list[Launched]:
        return [Launched("sim", 100.0 / stand_in.known_factor(*self._key(s))
                         * (1.0 + self.rng.gauss(0.0, self.sigma))) for s in batch]


def _found(directory: Path, seed: int, sigma: float, draw: int) -> bool:
    log = run_search(_spec(directory, seed), _Lab(sigma, random.Random(draw * 100 + seed)))
    best = decide(log, maximize=True).best
    if best is None:
        return False
    s = best.settings
    return stand_in.known_factor(s["args.max-num-seqs"], s["args.max-num-batched-tokens"]) == 1.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sigma", type=float, default=0.03)
    ap.add_argument("--draws", type=int, default=8)
    args = ap.parse_args()
    compass = search._compass_step
    directory = Path(tempfile.mkdtemp())
    print(f"budget 12 of 25 launches, noise sigma {args.sigma:.0%}, seeds 1-5 x "
          f"{args.draws} draws per optimum (n = {5 * args.draws} tunes each)")
    print(f"{'optimum':>12}  {'TPE alone':>10}  {'TPE + compass':>13}")
    totals = [0, 0]
    for optimum in OPTIMA:
        stand_in.TUNE_OPTIMUM = optimum
        shares = []
        for k, step in enumerate((lambda *_a, **_k: None, compass)):
            search._compass_step = step  # type: ignore[assignment]
            hits = sum(_found(directory, seed, args.sigma, draw)
                       for seed in range(1, 6) for draw in range(args.draws))
            totals[k] += hits
            shares.append(hits / (5 * args.draws))
        print(f"{optimum!s:>12}  {shares[0]:>10.0%}  {shares[1]:>13.0%}")
    stand_in.TUNE_OPTIMUM = OPTIMA[0]  # the known-answer test's: which seeds find it
    search._compass_step = compass  # type: ignore[assignment]
    per_seed = {seed: sum(_found(directory, seed, args.sigma, draw)
                          for draw in range(args.draws)) for seed in range(1, 6)}
    print(f"per seed at {OPTIMA[0]} with the compass step (of {args.draws} draws): "
          + ", ".join(f"seed {k}: {v}" for k, v in per_seed.items()))
    n = 5 * args.draws * len(OPTIMA)
    print(f"{'all':>12}  {totals[0] / n:>10.0%}  {totals[1] / n:>13.0%}   (n = {n} each)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
