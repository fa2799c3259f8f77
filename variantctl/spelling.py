"""``did you mean …?`` hints: shared by the loaders (config) and the pure planners
(variants), so neither has to import the other for it."""

from __future__ import annotations

from collections.abc import Iterable


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """``did you mean 'x'?`` for the closest of ``choices``, or None."""
    import difflib  # only needed on the error path

    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else None
