"""Benchmark parameters: one frozen value, and the parsers of the CLI's compact options.

A model below ``bench/``, ``sweeps/`` and ``config/`` (a sweep file names them), so
loading a sweep never imports the load generator.

Parse functions raise :class:`VariantctlError` (exit 2, usage) with a message that
quotes the bad input, so the CLI prints one ``error:`` line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.jsonfields import Fields, StoredFileError

ENDPOINTS = ("chat", "completions")
BUILTIN_PROMPTS = ("short", "tools", "random")
GOODPUT_KEYS = ("ttft", "tpot", "e2el")


def _usage(message: str) -> VariantctlError:
    return VariantctlError(message, exit_code=ExitCode.USAGE)


@dataclass(frozen=True)
class BenchParams:
    """Everything that decides what one benchmark run sends (not where to)."""

    endpoint: str = "chat"
    model: str | None = None
    prompt: str = "short"  # short | tools | random | a file path
    input_len: int | None = None
    output_len: int = 128
    ignore_eos: bool = False
    temperature: float = 0.0
    seed: int = 0
    request_rate: float = math.inf
    burstiness: float = 1.0
    requests: int | None = None
    duration: float | None = None
    warmup: str = "auto"  # auto | off | N
    goodput: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    concurrency: tuple[int, ...] = (1,)
    repeat: int = 1
    timeout_s: float = 600.0  # per request; a hung server must not hang the level forever

    def __post_init__(self) -> None:
        if self.endpoint not in ENDPOINTS:
            raise _usage(f"endpoint must be one of {', '.join(ENDPOINTS)}, got {self.endpoint!r}")
        if self.output_len < 1:
            raise _usage(f"--output-len must be >= 1, got {self.output_len}")
        if self.input_len is not None and self.input_len < 1:
            raise _usage(f"--input-len must be >= 1, got {self.input_len}")
        if self.prompt == "random" and self.input_len is None:
            raise _usage("--prompt random needs --input-len")
        if not self.request_rate > 0:
            raise _usage(f"--request-rate must be > 0 or inf, got {self.request_rate}")
        if not self.burstiness > 0:
            raise _usage(f"--burstiness must be > 0, got {self.burstiness}")
        if self.requests is not None and self.requests < 1:
            raise _usage(f"--requests must be >= 1, got {self.requests}")
        if self.duration is not None and not self.duration > 0:
            raise _usage(f"--duration must be > 0 seconds, got {self.duration}")
        if self.requests is not None and self.duration is not None:
            raise _usage("give --requests or --duration, not both")
        if self.repeat < 1:
            raise _usage(f"--repeat must be >= 1, got {self.repeat}")
        if not self.concurrency or any(c < 1 for c in self.concurrency):
            raise _usage(f"--concurrency levels must be >= 1, got {self.concurrency}")
        parse_warmup(self.warmup)
        # Frozen means frozen: a caller's dict must not change the params later.
        object.__setattr__(self, "goodput", MappingProxyType(dict(self.goodput)))

    @property
    def requests_per_level(self) -> int | None:
        """Requests per level; ``None`` when the level is bounded by ``--duration``."""
        if self.duration is not None:
            return None
        return self.requests if self.requests is not None else 100

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (``inf`` as the string ``"inf"``), stable key order for hashing."""
        return {
            "endpoint": self.endpoint,
            "model": self.model,
            "prompt": self.prompt,
            "input_len": self.input_len,
            "output_len": self.output_len,
            "ignore_eos": self.ignore_eos,
            "temperature": self.temperature,
            "seed": self.seed,
            "request_rate": "inf" if math.isinf(self.request_rate) else self.request_rate,
            "burstiness": "inf" if math.isinf(self.burstiness) else self.burstiness,
            "requests": self.requests,
            "duration": self.duration,
            "warmup": self.warmup,
            "goodput": dict(sorted(self.goodput.items())),
            "concurrency": list(self.concurrency),
            "repeat": self.repeat,
            "timeout_s": self.timeout_s,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BenchParams:
        return cls.from_fields(Fields(data, "params"))

    @classmethod
    def from_fields(cls, f: Fields) -> BenchParams:
        """Validated, as the options are; a bad value is an error naming the field."""
        concurrency = f.numbers("concurrency", Fields.REQUIRED)
        if any(not c.is_integer() for c in concurrency):
            raise f.error("concurrency", "should be a list of integers")
        try:
            return cls(
                endpoint=f.text("endpoint"),
                model=f.opt_text("model"),
                prompt=f.text("prompt"),
                input_len=f.opt_integer("input_len"),
                output_len=f.integer("output_len"),
                ignore_eos=f.flag("ignore_eos"),
                temperature=f.number("temperature"),
                seed=f.integer("seed"),
                request_rate=f.number("request_rate"),
                burstiness=f.number("burstiness"),
                requests=f.opt_integer("requests"),
                duration=f.opt_number("duration"),
                warmup=f.text("warmup"),
                goodput=f.number_map("goodput"),
                concurrency=tuple(int(c) for c in concurrency),
                repeat=f.integer("repeat", 1),
                timeout_s=f.number("timeout_s", 600.0),
            )
        except StoredFileError:
            raise
        except VariantctlError as exc:  # what the options refuse, read from a file
            raise StoredFileError(f"{f.source}: field '{f.path}': {exc.message}") from None


def parse_concurrency(text: str) -> tuple[int, ...]:
    """``"1,2,4"`` → ``(1, 2, 4)``: positive integers, in the order given, no duplicates."""
    parts = [p.strip() for p in text.split(",")]
    levels: list[int] = []
    for part in parts:
        if not part.isdigit() or int(part) < 1:
            raise _usage(
                f"--concurrency {text!r}: {part!r} is not a positive integer "
                "(expected a comma-separated list such as 1,2,4)"
            )
        if int(part) in levels:
            raise _usage(f"--concurrency {text!r}: level {int(part)} is given twice")
        levels.append(int(part))
    return tuple(levels)


def parse_goodput(text: str) -> dict[str, float]:
    """``"ttft:500,tpot:50"`` → ``{"ttft": 500.0, "tpot": 50.0}`` (milliseconds, like vLLM)."""
    slos: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        key, sep, value = part.partition(":")
        key = key.strip().lower()
        if not sep or key not in GOODPUT_KEYS:
            raise _usage(
                f"--goodput {text!r}: {part!r} is not KEY:MS with KEY one of "
                f"{', '.join(GOODPUT_KEYS)} (e.g. ttft:500,tpot:50)"
            )
        try:
            ms = float(value)
        except ValueError:
            raise _usage(f"--goodput {text!r}: {value.strip()!r} is not a number of ms") from None
        if not ms > 0 or math.isinf(ms):
            raise _usage(f"--goodput {text!r}: {key} must be a positive number of ms")
        if key in slos:
            raise _usage(f"--goodput {text!r}: {key} is given twice")
        slos[key] = ms
    return slos


def parse_rate(text: str) -> float:
    """``"inf"`` → ``math.inf``; ``"2.5"`` → 2.5 requests/s (must be > 0)."""
    if text.strip().lower() == "inf":
        return math.inf
    try:
        rate = float(text)
    except ValueError:
        raise _usage(f"--request-rate {text!r} is not a number of requests/s or 'inf'") from None
    if not rate > 0 or math.isnan(rate):
        raise _usage(f"--request-rate {text!r} must be > 0 (or 'inf')")
    return rate


def parse_warmup(text: str) -> int | str:
    """``auto`` / ``off`` / a count ``N`` (``0`` means off)."""
    if text in ("auto", "off"):
        return text
    if text.isdigit():
        return int(text)
    raise _usage(f"--warmup {text!r}: expected auto, off or a number of requests")
