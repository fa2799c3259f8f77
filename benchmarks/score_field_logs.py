"""Score the classifier on the real field-log corpus and print the accuracy per label.

    python benchmarks/score_field_logs.py [CORPUS] [--misses]

CORPUS defaults to ``../shared/field-logs`` beside the repository (its ``index.yaml``
labels each excerpt). The corpus is a benchmark, never copied into the repository.
The rules are those of the corpus' own ``score.py``:

- a failure or ``startup-ok`` label: the verdict's signature is that id;
- ``flash-attn-missing-fallback`` / ``flashinfer-unavailable``: that id as the
  signature or as a warning (and, for the flash-attn fallback, not a failed/hang verdict);
- ``other``: no signature of the listed public ids (its own id, or unknown, is right);
- ``unknown``: the verdict kind is ``unknown``.

Classification runs in-process through the same path as ``variantctl classify``
(bounded read, whole-file mode, no ``--exited``). Exit 0 always; the figures are the
output (the README quotes them).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from variantctl.config.catalog import default_catalog  # noqa: E402
from variantctl.logs.classify import classify_text  # noqa: E402
from variantctl.usecases.classify import read_log  # noqa: E402

LISTED = {
    "startup-ok", "batched-tokens-below-model-len", "xformers-multistep-unsupported",
    "multistep-chunked-prefill-unsupported", "flashinfer-unavailable",
    "flash-attn-missing-fallback",
    "cuda-graph-capture-hang", "cuda-graph-capture-error", "kv-cache-insufficient",
    "free-memory-below-utilization", "cuda-oom", "port-in-use", "tp-heads-not-divisible",
    "nccl-error", "unsupported-architecture", "dtype-unsupported-gpu",
    "trust-remote-code-required", "model-not-found-or-unauthorized", "multistep-removed",
    "unrecognized-argument",
}
WARNING_OK = {"flash-attn-missing-fallback", "flashinfer-unavailable"}


def right(want: str, sig: str | None, kind: str, warns: set[str]) -> bool:
    if want in WARNING_OK:
        return (sig == want or want in warns) and (
            want != "flash-attn-missing-fallback" or kind not in ("failed", "hang"))
    if want == "unknown":
        return kind == "unknown"
    if want == "other":
        return sig is None or sig not in LISTED
    return sig == want


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    corpus = Path(args[0]) if args else REPO.parent / "shared" / "field-logs"
    entries = yaml.safe_load((corpus / "index.yaml").read_text())["logs"]
    catalog = default_catalog()
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses = []
    for e in entries:
        text, _ = read_log(corpus / e["file"], e["file"])
        r = classify_text(text, catalog)
        warns = {w.signature for w in r.warnings}
        ok = right(e["expected"], r.signature, r.kind, warns)
        per[e["expected"]][0] += ok
        per[e["expected"]][1] += 1
        if not ok:
            misses.append(f"MISS {e['file']:48} want {e.get('other_id') or e['expected']:36} "
                          f"got {r.signature} ({r.kind})")
    good = sum(g for g, _ in per.values())
    total = sum(n for _, n in per.values())
    print(f"{'label':40} right/total")
    for label in sorted(per):
        g, n = per[label]
        print(f"{label:40} {g:>3}/{n:<3} {100 * g / n:5.0f}%")
    if "--misses" in argv:
        print("\n".join(misses))
    print(f"accuracy {good}/{total} ({100 * good / total:.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
