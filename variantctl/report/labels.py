"""Point labels from the settings that vary between the runs of a report (PURE).

A reader should see what was varied, not a derived name: two sweep points that differ in
``enforce-eager`` and ``max-num-seqs`` are ``eager=off seqs=2`` and ``eager=on seqs=2``,
not ``cpu-base@cpu-smoke-01`` and ``…-02``. Settings are the vLLM arguments, the
environment (the variant's and the host's), the patchsets, the host and the model;
only those whose value is not the same in every run make the label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from variantctl.report.model import RunInput
from variantctl.secretmask import DEFAULT, MASK, SecretRule

#: the longest label (a legend entry, a table cell) and the longest value in it
LABEL_MAX = 120
VALUE_MAX = 40

#: common vLLM flags, shortened as people write them
SHORT = {"enforce-eager": "eager", "max-num-seqs": "seqs", "tensor-parallel-size": "tp",
         "pipeline-parallel-size": "pp", "max-num-batched-tokens": "batched",
         "gpu-memory-utilization": "gpu-mem", "max-model-len": "len",
         "enable-chunked-prefill": "chunked", "enable-prefix-caching": "prefix-cache",
         "tool-call-parser": "tool-parser", "reasoning-parser": "reasoning"}

_MISSING = object()


def settings_of(run: RunInput) -> dict[str, object]:
    """A run's performance-relevant settings, flat: ``args.max-num-seqs``, ``env.X``,
    ``patch.NAME``, ``host``, ``model``."""
    v = run.record.variant
    out: dict[str, object] = {}
    args = v.get("args")
    if isinstance(args, Mapping):
        out.update({f"args.{k}": val for k, val in args.items()})
    for where in (v.get("env"), run.record.host.get("env")):
        if isinstance(where, Mapping):
            out.update({f"env.{k}": val for k, val in where.items()})
    out.update({f"patch.{name}": True for name in run.record.patches})
    out["host"] = run.record.host.get("name")
    out["model"] = v.get("model")
    return out


def _short(key: str) -> str:
    group, _, name = key.partition(".")
    if group == "args":
        return SHORT.get(name, name)
    return name if group in ("env", "patch") else key


def _text(value: object, flag: bool) -> str:
    if value is _MISSING or value is None:
        return "off" if flag else "default"
    if value is True:
        return "on"
    if value is False:
        return "off"
    if isinstance(value, (list, tuple)):
        return ",".join(str(x) for x in value)
    text = str(value)
    return text.rsplit("/", 1)[-1] if "/" in text else text


def _varying(flats: Sequence[Mapping[str, object]]) -> list[str]:
    keys = list(dict.fromkeys(k for f in flats for k in f))
    return [k for k in keys if len({repr(f.get(k, _MISSING)) for f in flats}) > 1]


def varying(runs: Sequence[RunInput]) -> list[str]:
    """The settings whose value differs between the runs, in the order first seen."""
    return _varying([settings_of(r) for r in runs])


def shorten(text: str, limit: int = LABEL_MAX) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis (the full value is in the
    report's JSON / the run's record)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def labels(runs: Sequence[RunInput], secrets: SecretRule = DEFAULT) -> dict[str, str]:
    """Run id -> ``eager=off seqs=2``: the varying settings; empty when nothing varies.

    Linear in runs × settings (each run's settings flattened once); a secret's value is
    ``***`` (:mod:`variantctl.secretmask`); each value is cut to :data:`VALUE_MAX` and the
    label to :data:`LABEL_MAX` characters with an ellipsis."""
    flats = [settings_of(r) for r in runs]
    keys = _varying(flats)
    # a flag: on/off (1 == True in Python: test the type, not the value)
    flag = {k: all(f.get(k) is None or isinstance(f.get(k), bool) for f in flats)
            for k in keys}
    out = {}
    for r, f in zip(runs, flats, strict=True):
        words = []
        for k in keys:
            value = f.get(k, _MISSING)
            shown = (MASK if secrets.is_secret_setting(k) and value not in (_MISSING, None)
                     else shorten(_text(secrets.mask_value(value), flag[k]), VALUE_MAX))
            words.append(f"{_short(k)}={shown}")
        out[r.run_id] = shorten(" ".join(words))
    return out
