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

from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.jsonfields import Fields, StoredFileError
from variantctl.jsontypes import JsonMapping, JsonObject

ENDPOINTS = ("chat", "completions")
BUILTIN_PROMPTS = ("short", "tools", "random")
GOODPUT_KEYS = ("ttft", "tpot", "e2el")
#: the most concurrent requests of one level (each holds a connection: far beyond what
#: any server batches, and what one client process can keep open)
MAX_CONCURRENCY = 65_536
#: the most requests of one level, warm-up included (each is prepared up front);
#: longer levels are --duration
MAX_REQUESTS = 1_000_000
#: the longest time option in seconds (~11.6 days): beyond it a deadline is a typo, and
#: the clocks that wait for it overflow (``time_t``) rather than wait
MAX_SECONDS = 1_000_000.0
#: the slowest request rate (requests/s): one request per MAX_SECONDS; a slower rate makes
#: a gap between two requests longer than any time option allows
MIN_RATE = 1.0 / MAX_SECONDS
#: the highest rate a --search rate may reach (requests/s): a level of one second at it
#: already holds the most requests a level may have
MAX_RATE = float(MAX_REQUESTS)
#: the longest --output-len (sent to the server as max_tokens)
MAX_OUTPUT_LEN = 10_000_000
#: the most repeats of a ladder
MAX_REPEAT = 10_000
#: the longest --input-len of random prompts (the token ids are built in memory)
MAX_INPUT_LEN = 10_000_000
#: the most shared prefixes (each is built with the server's tokenizer up front)
MAX_PREFIXES = 10_000
#: the most turns of one conversation (each carries the whole history)
MAX_TURNS = 1_000

#: ``--prompt KIND:FILE`` (variantctl.bench.datasets reads them)
DATASET_KINDS = ("sharegpt", "jsonl", "trace")
#: the concurrency cap of a rate ladder or ramp-up in --duration mode when none is given
RATE_CAP_DEFAULT = 256


def dataset_spec(prompt: str) -> tuple[str, str] | None:
    """``"sharegpt:FILE"`` → ``("sharegpt", "FILE")``; another ``--prompt`` → None."""
    kind, sep, rest = prompt.partition(":")
    if not sep or kind not in DATASET_KINDS:
        return None
    if not rest.strip():
        raise _usage(f"--prompt {prompt!r}: expected {kind}:FILE")
    return kind, rest


def _usage(message: str) -> VariantctlError:
    return VariantctlError(message, exit_code=ExitCode.USAGE)


@dataclass(frozen=True)
class BenchParams:
    """Everything that decides what one benchmark run sends (not where to)."""

    endpoint: str = "chat"
    model: str | None = None
    prompt: str = "short"  # short | tools | random | sharegpt:|jsonl:|trace:FILE | a file path
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
    #: ``--output-len`` was given: it replaces a dataset's own output lengths
    output_len_set: bool = False
    #: ``--trace-speed``: a trace's timestamps are divided by it
    trace_speed: float = 1.0
    #: ``--request-rate 1,2,4``: one level per rate (``concurrency``: one cap); () none
    rate_ladder: tuple[float, ...] = ()
    #: ``--ramp-up linear|exponential --ramp-start R --ramp-end R`` (vLLM's ramp-up)
    ramp_up: str | None = None
    ramp_start: float | None = None
    ramp_end: float | None = None
    #: ``--search concurrency|rate``: capacity search under ``slo`` (variantctl.bench.search)
    search: str | None = None
    slo: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    slo_percentile: float = 90.0
    max_level: float = 256.0
    #: ``--prefix-len N --prefixes K``: every prompt led by one of K shared N-token prefixes
    prefix_len: int | None = None
    prefixes: int = 1
    #: ``--turns T``: conversations of T turns, each carrying the history so far
    turns: int = 1
    #: ``--until-ci PCT``: repeat each level until its throughput interval's half-width is
    #: under PCT % of the mean (at least ``min_repeat``, at most ``max_repeat`` times)
    until_ci: float | None = None
    max_repeat: int = 10

    def __post_init__(self) -> None:
        if self.endpoint not in ENDPOINTS:
            raise _usage(f"endpoint must be one of {', '.join(ENDPOINTS)}, got {self.endpoint!r}")
        for name, value in (("--temperature", self.temperature),
                            ("--request-timeout", self.timeout_s)):
            if not math.isfinite(value):
                raise _usage(f"{name} must be a finite number, got {value}")
        if not self.timeout_s > 0:
            raise _usage(f"--request-timeout must be > 0 seconds, got {self.timeout_s} "
                         "(a request without a deadline could hang the level forever)")
        for name, seconds in (("--request-timeout", self.timeout_s),
                              ("--duration", self.duration)):
            if seconds is not None and seconds > MAX_SECONDS:
                raise _usage(f"{name} must be at most {MAX_SECONDS:,.0f} seconds, "
                             f"got {seconds:g}")
        if self.temperature < 0:
            raise _usage(f"--temperature must be >= 0, got {self.temperature}")
        if not 1 <= self.output_len <= MAX_OUTPUT_LEN:
            raise _usage(f"--output-len must be between 1 and {MAX_OUTPUT_LEN:,}, "
                         f"got {self.output_len}")
        if self.input_len is not None and not 1 <= self.input_len <= MAX_INPUT_LEN:
            raise _usage(f"--input-len must be between 1 and {MAX_INPUT_LEN:,}, "
                         f"got {self.input_len}")
        if self.prompt == "random" and self.input_len is None:
            raise _usage("--prompt random needs --input-len")
        if not self.request_rate > 0:
            raise _usage(f"--request-rate must be > 0 or inf, got {self.request_rate}")
        if math.isnan(self.burstiness) or not self.burstiness > 0:
            raise _usage(f"--burstiness must be > 0, got {self.burstiness}")
        if self.requests is not None and not 1 <= self.requests <= MAX_REQUESTS:
            raise _usage(f"--requests must be between 1 and {MAX_REQUESTS:,}, got "
                         f"{self.requests} (use --duration for a longer level)")
        if self.duration is not None and not (self.duration > 0
                                              and math.isfinite(self.duration)):
            raise _usage(f"--duration must be a finite number of seconds > 0, "
                         f"got {self.duration}")
        if self.requests is not None and self.duration is not None:
            raise _usage("give --requests or --duration, not both")
        if not 1 <= self.repeat <= MAX_REPEAT:
            raise _usage(f"--repeat must be between 1 and {MAX_REPEAT:,}, got {self.repeat}")
        if self.until_ci is not None:
            if self.search is not None or self.rate_ladder:
                raise _usage("--until-ci repeats each concurrency level: not with --search "
                             "or a --request-rate ladder")
            if not 0 < self.until_ci < 100:
                raise _usage(f"--until-ci must be a percentage in (0, 100), got {self.until_ci:g}")
            if not self.min_repeat <= self.max_repeat <= MAX_REPEAT:
                raise _usage(f"--max-repeat must be >= {self.min_repeat} (--until-ci needs "
                             f"at least 3 repeats, and --repeat {self.repeat}) and <= "
                             f"{MAX_REPEAT:,}, got {self.max_repeat}")
        if not self.concurrency or any(not 1 <= c <= MAX_CONCURRENCY
                                       for c in self.concurrency):
            raise _usage(f"--concurrency levels must be between 1 and {MAX_CONCURRENCY:,}, "
                         f"got {_levels(self.concurrency)}")
        if not self.trace_speed > 0 or math.isinf(self.trace_speed):
            raise _usage(f"--trace-speed must be > 0, got {self.trace_speed}")
        spec = dataset_spec(self.prompt)
        if self.trace_speed != 1.0 and (spec is None or spec[0] != "trace"):
            raise _usage("--trace-speed needs --prompt trace:FILE")
        self._check_arrivals(spec)
        self._check_search(spec)
        if self.prefix_len is not None and not 1 <= self.prefix_len <= MAX_INPUT_LEN:
            raise _usage(f"--prefix-len must be between 1 and {MAX_INPUT_LEN:,}, "
                         f"got {self.prefix_len}")
        if not 1 <= self.prefixes <= MAX_PREFIXES:
            raise _usage(f"--prefixes must be between 1 and {MAX_PREFIXES:,}, "
                         f"got {self.prefixes}")
        if self.prefix_len is not None:
            used = min(self.prefixes, self.requests or self.prefixes)
            if self.prefix_len * used > MAX_INPUT_LEN:
                raise _usage(f"--prefix-len {self.prefix_len:,} × {used:,} prefixes is "
                             f"{self.prefix_len * used:,} tokens, more than the "
                             f"{MAX_INPUT_LEN:,} built up front (fewer or shorter prefixes)")
        if self.prefixes != 1 and self.prefix_len is None:
            raise _usage("--prefixes needs --prefix-len N (the shared prefixes' tokens)")
        if not 1 <= self.turns <= MAX_TURNS:
            raise _usage(f"--turns must be between 1 and {MAX_TURNS:,}, got {self.turns}")
        if self.turns > 1:
            if self.endpoint != "chat":
                raise _usage("--turns sends conversations: it needs --endpoint chat")
            if (self.duration is not None or self.rate_ladder or self.ramp_up is not None
                    or self.search is not None or not math.isinf(self.request_rate)
                    or (spec is not None and spec[0] == "trace")):
                raise _usage("--turns runs conversations at the concurrency: not with "
                             "--duration, a request rate, ramp-up, search or a trace")
        if self.prefix_len is not None and spec is not None and spec[0] == "trace":
            raise _usage("--prefix-len: a trace shares prefixes through its hash_ids")
        parse_warmup(self.warmup)
        # Frozen means frozen: a caller's dict must not change the params later.
        object.__setattr__(self, "goodput", MappingProxyType(dict(self.goodput)))
        object.__setattr__(self, "slo", MappingProxyType(dict(self.slo)))

    def _check_search(self, spec: tuple[str, str] | None) -> None:
        if self.search is None:
            if self.slo:
                raise _usage("--slo needs --search concurrency|rate")
            return
        if self.search not in ("concurrency", "rate"):
            raise _usage(f"--search must be concurrency or rate, got {self.search!r}")
        if not self.slo:
            raise _usage("--search needs --slo ttft:MS,tpot:MS[,e2el:MS]")
        if not 0 < self.slo_percentile <= 100:
            raise _usage(f"--slo-percentile must be in (0, 100], got {self.slo_percentile:g}")
        cap = MAX_CONCURRENCY if self.search == "concurrency" else MAX_RATE
        if not 1 <= self.max_level <= cap or (
                self.search == "concurrency" and not float(self.max_level).is_integer()):
            what = "a whole number" if self.search == "concurrency" else "a number"
            unit = "concurrent requests" if self.search == "concurrency" else "requests/s"
            raise _usage(f"--max-level must be {what} between 1 and {cap:,.0f} {unit} (the "
                         f"per-level limit), got {self.max_level:g}")
        if self.rate_ladder or self.ramp_up is not None or (
                spec is not None and spec[0] == "trace"):
            raise _usage("--search chooses the levels: no rate ladder, ramp-up or trace with it")
        if self.repeat != 1:
            raise _usage("--search probes each level once: no --repeat with it")
        if len(self.concurrency) != 1:
            raise _usage("--search chooses the levels: give at most one --concurrency "
                         "(the cap of a rate search)")
        if self.search == "rate" and not math.isinf(self.request_rate):
            raise _usage("--search rate chooses the rate: no --request-rate with it")

    def _check_arrivals(self, spec: tuple[str, str] | None) -> None:
        for name, rate in (("--request-rate", self.request_rate),
                           *(("--request-rate", r) for r in self.rate_ladder),
                           ("--ramp-start", self.ramp_start), ("--ramp-end", self.ramp_end)):
            if rate is not None and 0 < rate < MIN_RATE:
                raise _usage(f"{name} {rate:g} requests/s puts more than {MAX_SECONDS:,.0f} s "
                             f"(the longest time option) between two requests: give at "
                             f"least {MIN_RATE:g}")
        trace = spec is not None and spec[0] == "trace"
        rated = bool(self.rate_ladder) or not math.isinf(self.request_rate)
        if self.rate_ladder:
            if len(self.rate_ladder) < 2 or any(
                    not r > 0 or math.isnan(r) for r in self.rate_ladder):
                raise _usage(f"--request-rate ladder must hold >= 2 rates > 0, got "
                             f"{self.rate_ladder}")
            if len(self.concurrency) != 1:
                raise _usage("--request-rate with several rates is the ladder: give one "
                             "--concurrency (the cap of every level), not several")
        if trace and rated:
            raise _usage("--prompt trace:FILE sends at the trace's times: no --request-rate")
        if self.ramp_up is None:
            if self.ramp_start is not None or self.ramp_end is not None:
                raise _usage("--ramp-start/--ramp-end need --ramp-up linear|exponential")
            return
        if self.ramp_up not in ("linear", "exponential"):
            raise _usage(f"--ramp-up must be linear or exponential, got {self.ramp_up!r}")
        if self.ramp_start is None or self.ramp_end is None:
            raise _usage("--ramp-up needs --ramp-start and --ramp-end (requests/s)")
        if not 0 < self.ramp_start <= self.ramp_end or math.isinf(self.ramp_end):
            raise _usage(f"--ramp-start must be > 0 and <= --ramp-end, got "
                         f"{self.ramp_start:g} and {self.ramp_end:g}")
        if rated or trace:
            raise _usage("--ramp-up sets the request rate: no --request-rate or trace with it")
        if self.duration is not None:
            raise _usage("--ramp-up ramps over the level's requests: give --requests, "
                         "not --duration")

    @property
    def min_repeat(self) -> int:
        """``--until-ci``: the repeats every level gets before its interval is judged (3:
        the fewest a t interval over repeats is made from; more with a larger --repeat)."""
        return max(3, self.repeat)

    @property
    def requests_per_level(self) -> int | None:
        """Requests per level; ``None`` when the level is bounded by ``--duration``."""
        if self.duration is not None:
            return None
        return self.requests if self.requests is not None else 100

    def to_json(self) -> JsonObject:
        """A JSON-safe dict (``inf`` as the string ``"inf"``), stable key order for hashing
        (keys added later appear only when they matter, so older params hash the same)."""
        out: JsonObject = {
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
        if self.until_ci is not None:
            # only when set: the JSON of plain parameters (hashed by the sweep's history)
            # stays what it was
            out |= {"until_ci": self.until_ci, "max_repeat": self.max_repeat}
        if self.rate_ladder:
            out["rate_ladder"] = list(self.rate_ladder)
        if self.ramp_up is not None:
            out |= {"ramp_up": self.ramp_up, "ramp_start": self.ramp_start,
                    "ramp_end": self.ramp_end}
        if self.prefix_len is not None:
            out |= {"prefix_len": self.prefix_len, "prefixes": self.prefixes}
        if self.turns != 1:
            out["turns"] = self.turns
        if self.search is not None:
            out |= {"search": self.search, "slo": dict(sorted(self.slo.items())),
                    "slo_percentile": self.slo_percentile, "max_level": self.max_level}
        spec = dataset_spec(self.prompt)
        if spec is not None:
            out["output_len_set"] = self.output_len_set
            if spec[0] == "trace":
                out["trace_speed"] = self.trace_speed
        return out

    @classmethod
    def from_json(cls, data: JsonMapping) -> BenchParams:
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
                output_len_set=f.flag("output_len_set", False),
                trace_speed=f.number("trace_speed", 1.0),
                rate_ladder=f.numbers("rate_ladder"),
                ramp_up=f.opt_text("ramp_up"),
                ramp_start=f.opt_number("ramp_start"),
                ramp_end=f.opt_number("ramp_end"),
                search=f.opt_text("search"),
                slo=f.number_map("slo"),
                slo_percentile=f.number("slo_percentile", 90.0),
                max_level=f.number("max_level", 256.0),
                prefix_len=f.opt_integer("prefix_len"),
                prefixes=f.integer("prefixes", 1),
                turns=f.integer("turns", 1),
                until_ci=f.opt_number("until_ci"),
                max_repeat=f.integer("max_repeat", 10),
            )
        except StoredFileError:
            raise
        except VariantctlError as exc:  # what the options refuse, read from a file
            raise StoredFileError(f"{f.source}: field '{f.path}': {exc.message}") from None


def _levels(levels: tuple[int, ...]) -> str:
    shown = ",".join(str(c) if len(str(c)) <= 20 else f"{str(c)[:8]}…({len(str(c))} digits)"
                     for c in levels[:8])
    return shown + (",…" if len(levels) > 8 else "")


def _digits(text: str) -> bool:
    """ASCII digits only: ``str.isdigit`` also says yes to ``²`` and ``٣``, which ``int``
    then refuses (or reads as another number)."""
    return text.isascii() and text.isdigit()


def _clip(text: str) -> str:
    return text if len(text) <= 40 else text[:39] + "…"


def parse_concurrency(text: str) -> tuple[int, ...]:
    """``"1,2,4"`` → ``(1, 2, 4)``: positive integers up to :data:`MAX_CONCURRENCY`, in
    the order given, no duplicates."""
    parts = [p.strip() for p in text.split(",")]
    levels: list[int] = []
    for part in parts:
        if not _digits(part) or int(part) < 1:
            raise _usage(
                f"--concurrency {_clip(text)!r}: {_clip(part)!r} is not a positive integer "
                "(expected a comma-separated list such as 1,2,4)"
            )
        if len(part) > 12 or int(part) > MAX_CONCURRENCY:
            raise _usage(f"--concurrency {_clip(text)!r}: level {_clip(part)} is more than "
                         f"{MAX_CONCURRENCY:,} concurrent requests")
        if int(part) in levels:
            raise _usage(f"--concurrency {text!r}: level {int(part)} is given twice")
        levels.append(int(part))
    return tuple(levels)


def parse_goodput(text: str, option: str = "--goodput") -> dict[str, float]:
    """``"ttft:500,tpot:50"`` → ``{"ttft": 500.0, "tpot": 50.0}`` (milliseconds, like vLLM)."""
    slos: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        key, sep, value = part.partition(":")
        key = key.strip().lower()
        if not sep or key not in GOODPUT_KEYS:
            raise _usage(
                f"{option} {text!r}: {part!r} is not KEY:MS with KEY one of "
                f"{', '.join(GOODPUT_KEYS)} (e.g. ttft:500,tpot:50)"
            )
        try:
            ms = float(value)
        except ValueError:
            raise _usage(f"{option} {text!r}: {value.strip()!r} is not a number of ms") from None
        if not ms > 0 or math.isinf(ms):
            raise _usage(f"{option} {text!r}: {key} must be a positive number of ms")
        if key in slos:
            raise _usage(f"{option} {text!r}: {key} is given twice")
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


def parse_rates(text: str) -> tuple[float, tuple[float, ...]]:
    """``--request-rate``: ``"inf"``/``"2"`` → (rate, ()); ``"1,2,4"`` → (1.0, (1, 2, 4)),
    the rate ladder (no duplicates, no ``inf`` in it)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) == 1:
        return parse_rate(text), ()
    rates: list[float] = []
    for part in parts:
        rate = parse_rate(part)
        if math.isinf(rate):
            raise _usage(f"--request-rate {text!r}: a ladder of rates cannot hold 'inf' "
                         "(--concurrency is the ladder of unlimited-rate levels)")
        if rate in rates:
            raise _usage(f"--request-rate {text!r}: rate {part} is given twice")
        rates.append(rate)
    return rates[0], tuple(rates)


def parse_warmup(text: str) -> int | str:
    """``auto`` / ``off`` / a count ``N`` up to :data:`MAX_REQUESTS` (``0`` means off)."""
    if text in ("auto", "off"):
        return text
    if _digits(text):
        if len(text) > 12 or int(text) > MAX_REQUESTS:
            raise _usage(f"--warmup {_clip(text)}: more than {MAX_REQUESTS:,} requests")
        return int(text)
    raise _usage(f"--warmup {_clip(text)!r}: expected auto, off or a number of requests")


def redact_url(url: str) -> str:
    """``url`` with any ``user:password@`` replaced by ``***@``: a URL as it may appear
    in a message or a file (pure text work: it also serves for URLs that do not parse)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0),
              default=len(rest))
    netloc = rest[:end]
    if "@" not in netloc:
        return url
    return f"{scheme}://***@{netloc.rpartition('@')[2]}{rest[end:]}"


def parse_url(text: str, option: str = "--url") -> str:
    """A server's base URL from ``option``: http(s), a host, a port in 1-65535 (when
    given), no credentials, query or fragment; a trailing ``/`` or ``/v1`` is dropped.
    Messages never repeat a user name or password."""
    from urllib.parse import urlsplit

    shown = _clip(redact_url(text))
    example = "e.g. http://127.0.0.1:8000"
    if not text.startswith(("http://", "https://")):
        raise _usage(f"{option} {shown!r} is not an http:// or https:// URL ({example})")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        why = str(exc).replace(text, shown)
        if "out of range" in why or "Port" in why:
            why = "the port must be a number from 1 to 65535"
        raise _usage(f"{option} {shown!r} is not a valid URL: {why}") from None
    if "@" in parts.netloc:
        raise _usage(f"{option} {shown!r}: a user name or password in the URL is not "
                     "supported (it would be shown in results and messages)")
    if not parts.hostname:
        raise _usage(f"{option} {shown!r} names no host ({example})")
    if port == 0:
        raise _usage(f"{option} {shown!r}: the port must be a number from 1 to 65535")
    if parts.query or parts.fragment:
        raise _usage(f"{option} {shown!r}: a server's base URL has no ?query or #fragment "
                     f"({example})")
    if any(not c.isprintable() or c.isspace() for c in text):
        raise _usage(f"{option} {shown!r}: a URL holds no spaces or control characters")
    base = text.rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return base
