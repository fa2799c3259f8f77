"""What configuration the server really ran with, read from the few lines that carry it.

The engine config line (``Initializing … LLM engine (v…) with config: …``) is the
source of the effective configuration. Its values contain commas and nested
objects, so every key is read with its own anchored pattern (never by splitting
on ", "); the first occurrence of a key wins, nested dataclass fields come later.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeAlias, TypedDict

from variantctl.jsontypes import Json, JsonObject

#: keys read from the engine config line (as printed by some vLLM version)
CONFIG_KEYS = (
    "model",
    "tokenizer",
    "dtype",
    "max_seq_len",
    "download_dir",
    "load_format",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "disable_custom_all_reduce",
    "quantization",
    "enforce_eager",
    "kv_cache_dtype",
    "device_config",
    "seed",
    "served_model_name",
    "num_scheduler_steps",
    "multi_step_stream_outputs",
    "chunked_prefill_enabled",
    "enable_chunked_prefill",
    "enable_prefix_caching",
    "use_async_output_proc",
    "trust_remote_code",
    "max_num_seqs",
    "max_num_batched_tokens",
    "speculative_config",
)

#: lowercase keywords of the lines facts are read from (part of the scan filter)
KEYWORDS = (
    "llm engine (v",
    "llm engine with config",
    "args: namespace(",
    "non-default args: {",
    "vllm api server version",
    "█",
    "backend",
    "# gpu blocks",
    "# cpu blocks",
    "kv cache size",
    "maximum concurrency",
    "graph capturing finished",
    "warmup model)",
    "model loading took",
    "loading weights took",
    "starting vllm",
    "uvicorn running on",
)

# The requested configuration: V0's ``args: Namespace(k=v, …)`` and V1's
# ``non-default args: {'k': v, …}`` (repr values; nested objects are skipped by the
# per-key patterns, as for the engine config line).
_NAMESPACE = re.compile(r"\bargs: Namespace\(")
_NON_DEFAULT = re.compile(r"non-default args: \{")
_ARG_VALUE = r"(?P<val>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[-\w.+]+)(?=[,)}\s]|$)"
_NS_ITEM = re.compile(r"(?:^|[(,]\s*)(?P<key>[a-z_][a-z0-9_]*)=" + _ARG_VALUE)
_DICT_ITEM = re.compile(r"(?:^|[{,]\s*)'(?P<key>[a-z_][a-z0-9_]*)': " + _ARG_VALUE)
#: argument name -> the engine config key that reports its effective value
ARG_TO_CONFIG = {"max_model_len": "max_seq_len"}

_ENGINE = re.compile(
    r"Initializing an? (?:(?P<eng>V[01]) )?LLM engine (?:\(v(?P<ver>[^)\s]+)\) )?with config:",
    re.I
)
_CONFIG_ITEM = re.compile(
    r"(?<![\w.'\"])(?P<key>" + "|".join(CONFIG_KEYS) + r")="
    r"(?P<val>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,\s()]+(?:\([^)]*\))?)"
)
_VERSION = [
    re.compile(r"vLLM API server version (?P<v>\d+\.\d+[\w.+\-]*)"),
    re.compile(r"\bversion (?P<v>\d+\.\d+\.\d+[\w.+\-]*)"),
]
_BACKEND = re.compile(
    r"\bUsing (?P<b>[A-Z][\w\-]*(?: [A-Z][\w\-]*){0,2}) (?:attention )?backend"
    r"(?P<v1> on V1 engine)?(?:\.| out of|$)"
)
_NOT_ATTENTION = re.compile(r"MoE|MOE|Mamba|SSU|Ray|OOT|ReplaySSM|prefill|W4A8|Fp8|Mxfp|Nvfp", re.I)
_GPU_BLOCKS = re.compile(
    r"# (?:GPU|CUDA|XPU|NPU) blocks: (?P<g>\d+), # CPU blocks: (?P<c>\d+)", re.I
)
_GPU_BLOCKS_ONLY = re.compile(r"# (?:GPU|CUDA|XPU|NPU) blocks: (?P<g>\d+)", re.I)
_KV_TOKENS = re.compile(r"KV cache size: (?P<t>[\d,]+) tokens", re.I)
_CONCURRENCY = re.compile(
    r"Maximum concurrency for (?P<n>[\d,]+) tokens per request: (?P<x>[\d.]+)x", re.I
)
_GRAPH = re.compile(
    r"Graph capturing finished in (?P<s>[\d.]+) secs?(?:, took (?P<gib>[\d.]+) GiB)?", re.I
)
_INIT = re.compile(r"init engine \(.*?\) took (?P<s>[\d.]+) ?s", re.I)
_LOAD = re.compile(
    r"(?:Model loading took (?P<gib>[\d.]+) ?GiB(?: memory)? and (?P<s>[\d.]+) ?seconds"
    r"|Loading weights took (?P<s2>[\d.]+) ?seconds)",
    re.I,
)
_ADDRESS = re.compile(
    r"(?:Starting vLLM (?:API )?server(?: \d+)? on|Uvicorn running on(?: socket)?) "
    r"(?P<a>\S+(?: \d+\))?)",
    re.I,
)


#: a configuration value as the log prints it (see :func:`parse_value`)
ConfigValue: TypeAlias = bool | int | float | str | None


def parse_value(text: str) -> ConfigValue:
    """A config value as printed by vLLM -> bool/None/int/float/str."""
    if text in ("True", "False"):
        return text == "True"
    if text == "None":
        return None
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


@dataclass(frozen=True)
class Facts:
    """Everything the log said about the server's effective configuration and capacity."""

    vllm_version: str | None = None
    engine: str | None = None
    attention_backend: str | None = None
    #: effective configuration from the engine config line (key -> typed value)
    config: Mapping[str, ConfigValue] = field(default_factory=lambda: MappingProxyType({}))
    gpu_blocks: int | None = None
    cpu_blocks: int | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    max_concurrency_tokens: int | None = None
    graph_capture_seconds: float | None = None
    graph_capture_gib: float | None = None
    model_load_seconds: float | None = None
    engine_init_seconds: float | None = None
    #: first timestamped line to the ready line, when both carry timestamps
    startup_seconds: float | None = None
    server_address: str | None = None
    #: line number of the engine config line
    config_line: int | None = None
    #: requested configuration, from ``args: Namespace(…)`` (V0) or ``non-default args:
    #: {…}`` (V1), under the engine config line's key names (``max_model_len`` ->
    #: ``max_seq_len``); None values (a flag left at its default) are not requests
    requested: Mapping[str, ConfigValue] = field(default_factory=lambda: MappingProxyType({}))
    #: keys whose requested and effective values differ (see :func:`config_differences`)
    config_differences: tuple[Mapping[str, ConfigValue], ...] = ()
    #: keys nobody requested whose effective value is not the release's default (see
    #: :func:`default_differences`)
    default_differences: tuple[Mapping[str, ConfigValue], ...] = ()

    def get(self, key: str) -> Json:
        """A fact by name: a field, or a key of the configuration: the effective value where
        the engine config line gave one, else the requested value."""
        if key in _FIELD_NAMES and key not in _MAPPINGS:
            value: Json = getattr(self, key)  # a field by name: every field is JSON
            return value
        if key in self.config:
            return self.config[key]
        return self.requested.get(key)

    def has(self, key: str) -> bool:
        if key in _FIELD_NAMES and key not in _MAPPINGS:
            return getattr(self, key) is not None
        return key in self.config or key in self.requested

    def configuration(self) -> dict[str, ConfigValue]:
        """Requested values overlaid with the effective ones (effective wins)."""
        return {**self.requested, **self.config}

    def to_json(self) -> JsonObject:
        """The documented JSON shape (every key present, null when unknown)."""
        mappings = {"config": self.config, "requested": self.requested}
        differences = {"config_differences": self.config_differences,
                       "default_differences": self.default_differences}
        out: JsonObject = {}
        for name in _FIELD_NAMES:
            if name in mappings:
                out[name] = dict(mappings[name])
            elif name in differences:
                out[name] = [dict(d) for d in differences[name]]
            else:
                out[name] = getattr(self, name)  # the scalar fields, by name
        return out


_FIELD_NAMES = tuple(Facts.__dataclass_fields__)
_MAPPINGS = ("config", "requested")


def config_differences(requested: Mapping[str, ConfigValue],
                       effective: Mapping[str, ConfigValue]
                       ) -> tuple[dict[str, ConfigValue], ...]:
    """Every key both report with different values, as a finding: a flag the installed
    source overrides (the seed's fork hard-codes ``enforce_eager=True``) or a platform
    forces. ``auto`` requests (dtype, kv-cache dtype) are resolved, not overridden."""
    out = []
    for key, want in requested.items():
        if key not in effective or (isinstance(want, str) and want.lower() == "auto"):
            continue
        got = effective[key]
        if _same_value(want, got):
            continue
        out.append({
            "key": key, "requested": want, "effective": got,
            "message": f"requested {key}={want!r}; the engine ran with {got!r}: the installed "
                       "source (or the platform) overrides the flag",
        })
    return tuple(out)


#: keys whose effective value is compared with the release's default when nobody
#: requested them (identity and sizing keys are not: the model, the usage context and the
#: machine pick those)
DEFAULT_COMPARED = ("enforce_eager", "disable_custom_all_reduce", "tensor_parallel_size",
                    "pipeline_parallel_size", "enable_chunked_prefill",
                    "enable_prefix_caching", "num_scheduler_steps", "kv_cache_dtype",
                    "quantization", "trust_remote_code", "seed", "use_async_output_proc")
#: keys a platform forces whatever the default (by the effective ``device_config``)
PLATFORM_FORCED = {"cpu": frozenset({"disable_custom_all_reduce"})}


def release_for(version: str | None, releases: Mapping[str, object]) -> str | None:
    """The mined release whose defaults stand for ``version``: the newest one not newer
    than it (None: no version, or older than every mined release)."""
    want = _version_key(version) if version else None
    if want is None:
        return None
    best: tuple[tuple[int, ...], str] | None = None
    for release in releases:
        have = _version_key(release)
        if have is not None and have <= want and (best is None or have > best[0]):
            best = (have, release)
    return best[1] if best else None


def _version_key(version: str) -> tuple[int, ...] | None:
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", version.strip())
    if m is None:
        return None
    return tuple(int(g or 0) for g in m.groups())


def default_differences(requested: Mapping[str, ConfigValue],
                        effective: Mapping[str, ConfigValue],
                        version: str | None, *, requested_seen: bool
                        ) -> tuple[dict[str, ConfigValue], ...]:
    """Keys nobody requested whose effective value differs from the release's default.

    A V1 log lists only non-default arguments, so a source that hard-codes
    ``enforce_eager=True`` shows nothing requested and an effective ``True``: against
    the release's mined default (``False``, :mod:`variantctl.logs.engine_defaults`) that
    is a finding. Only when the log showed what was requested (``requested_seen``),
    for :data:`DEFAULT_COMPARED` keys with a known, non-``auto`` default, and not for
    keys the platform forces (``disable_custom_all_reduce`` on CPU)."""
    from variantctl.logs.engine_defaults import ENGINE_DEFAULTS

    release = release_for(version, ENGINE_DEFAULTS)
    if not requested_seen or release is None:
        return ()
    defaults = ENGINE_DEFAULTS[release]
    device = str(effective.get("device_config") or "").strip("'\"").lower()
    forced = PLATFORM_FORCED.get(device, frozenset())
    out = []
    for key in DEFAULT_COMPARED:
        default = defaults.get(key)
        if (default is None or key in requested or key in forced or key not in effective
                or (isinstance(default, str) and default.lower() == "auto")):
            continue
        got = effective[key]
        if got is None or _same_value(default, got):
            continue
        out.append({
            "key": key, "default": default, "effective": got, "release": release,
            "message": f"effective {key}={got!r} differs from the release default "
                       f"({default!r} in vLLM {release}) though not requested: the installed "
                       "source (or the platform) changed it",
        })
    return tuple(out)


def _same_value(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return str(a).removeprefix("torch.") == str(b).removeprefix("torch.")


class _Values(TypedDict, total=False):
    """The scalar facts a :class:`FactsBuilder` has read so far (:class:`Facts`' fields)."""

    vllm_version: str
    engine: str
    attention_backend: str
    gpu_blocks: int
    cpu_blocks: int
    kv_cache_tokens: int
    max_concurrency: float
    max_concurrency_tokens: int
    graph_capture_seconds: float
    graph_capture_gib: float
    model_load_seconds: float
    engine_init_seconds: float
    startup_seconds: float
    server_address: str
    config_line: int


class FactsBuilder:
    """Accumulates facts from candidate lines; :meth:`snapshot` freezes them."""

    def __init__(self) -> None:
        self.values: _Values = {}
        self.config: dict[str, ConfigValue] = {}
        self.requested: dict[str, ConfigValue] = {}
        #: an ``args: Namespace(…)`` / ``non-default args: {…}`` line was read
        self.requested_seen = False
        self.first_ts: dict[str, float] = {}

    def feed(self, lineno: int, line: str, lower: str) -> None:
        """Read whatever facts ``line`` (normalised; ``lower`` is its lowercase) carries."""
        v = self.values
        if "args: " in lower and not self.requested_seen:
            m = _NAMESPACE.search(line) or _NON_DEFAULT.search(line)
            if m is not None:
                self.requested_seen = True
                items = _NS_ITEM if m.re is _NAMESPACE else _DICT_ITEM
                self._read_requested(line[m.end() - 1:], items)
                return
        if "llm engine (v" in lower or "llm engine with config" in lower:
            m = _ENGINE.search(line)
            if m is not None and "config_line" not in v:
                v["config_line"] = lineno
                if m.group("ver"):
                    v["vllm_version"] = m.group("ver")
                v["engine"] = m.group("eng") or "V0"
                self._read_config(line[m.end():])
            return
        if "backend" in lower:
            b = _BACKEND.search(line)
            if b is not None and not _NOT_ATTENTION.search(b.group("b")):
                v["attention_backend"] = b.group("b")
                if b.group("v1") and "engine" not in v:
                    v["engine"] = "V1"
            return
        if "version" in lower and "vllm_version" not in v:
            for rx in _VERSION:
                m = rx.search(line)
                if m is not None:
                    v["vllm_version"] = m.group("v")
                    break
        if "blocks" in lower:
            m = _GPU_BLOCKS.search(line)
            if m is not None:
                v["gpu_blocks"] = int(m.group("g"))
                v["cpu_blocks"] = int(m.group("c"))
            else:
                m = _GPU_BLOCKS_ONLY.search(line)
                if m is not None:
                    v["gpu_blocks"] = int(m.group("g"))
        if "kv cache size" in lower:
            m = _KV_TOKENS.search(line)
            if m is not None:
                v["kv_cache_tokens"] = int(m.group("t").replace(",", ""))
        if "maximum concurrency" in lower:
            m = _CONCURRENCY.search(line)
            if m is not None:
                v["max_concurrency"] = float(m.group("x"))
                v["max_concurrency_tokens"] = int(m.group("n").replace(",", ""))
        if "graph capturing finished" in lower:
            m = _GRAPH.search(line)
            if m is not None:
                v["graph_capture_seconds"] = float(m.group("s"))
                if m.group("gib"):
                    v["graph_capture_gib"] = float(m.group("gib"))
        if "init engine" in lower:
            m = _INIT.search(line)
            if m is not None:
                v["engine_init_seconds"] = float(m.group("s"))
        if "took" in lower:
            m = _LOAD.search(line)
            if m is not None:
                v["model_load_seconds"] = float(m.group("s") or m.group("s2"))
        if "starting vllm" in lower or "uvicorn running" in lower:
            m = _ADDRESS.search(line)
            if m is not None and "server_address" not in v:
                v["server_address"] = m.group("a")

    def _read_config(self, text: str) -> None:
        for m in _CONFIG_ITEM.finditer(text):
            key = m.group("key")
            if key not in self.config:
                self.config[key] = parse_value(m.group("val"))
        # one name for chunked prefill across eras
        if "chunked_prefill_enabled" in self.config and "enable_chunked_prefill" not in self.config:
            self.config["enable_chunked_prefill"] = self.config["chunked_prefill_enabled"]

    def _read_requested(self, text: str, items: re.Pattern[str]) -> None:
        for m in items.finditer(text):
            key = ARG_TO_CONFIG.get(m.group("key"), m.group("key"))
            value = parse_value(m.group("val"))
            if key in CONFIG_KEYS and value is not None and key not in self.requested:
                self.requested[key] = value

    def note_timestamp(self, clock: str, seconds: float) -> None:
        self.first_ts.setdefault(clock, seconds)

    def note_ready(self, stamp: tuple[str, float] | None) -> None:
        if stamp is None or "startup_seconds" in self.values:
            return
        clock, seconds = stamp
        start = self.first_ts.get(clock)
        if start is not None and seconds >= start:
            self.values["startup_seconds"] = round(seconds - start, 3)

    def snapshot(self) -> Facts:
        return Facts(config=MappingProxyType(dict(self.config)),
                     requested=MappingProxyType(dict(self.requested)),
                     config_differences=tuple(
                         MappingProxyType(d)
                         for d in config_differences(self.requested, self.config)),
                     default_differences=tuple(
                         MappingProxyType(d)
                         for d in default_differences(
                             self.requested, self.config, self.values.get("vllm_version"),
                             requested_seen=self.requested_seen)),
                     **self.values)
