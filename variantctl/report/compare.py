"""Two runs side by side: metric deltas next to what differs between them (PURE).

The first seed's "full parser vs parser-off" table, with a decision: per concurrency,
each headline figure of A and B with its 95 % interval and n, the difference in % with
its 95 % interval, and whether it is beyond the noise (Welch over repeats, or a
bootstrap over requests: :mod:`variantctl.bench.uncertainty`); a verdict per level on
output throughput — beside the configuration, patch, host/environment, engine-fact and
benchmark-parameter differences (deepdiff, as :mod:`variantctl.variants.diff` finds
variant differences), ports and addresses apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from variantctl.bench.model import BenchResult
from variantctl.bench.uncertainty import MetricTest, compare_points, verdict
from variantctl.jsontypes import Json, JsonMapping, JsonObject
from variantctl.report.model import RunInput
from variantctl.report.series import points_of
from variantctl.secretmask import DEFAULT, MASK, SecretRule
from variantctl.variants.diff import UNSET, Setting, format_value

#: resolved-variant fields that name or describe a run rather than decide it
_NOT_CONFIG = frozenset({"name", "description", "parents", "ancestors", "source", "tags",
                         "origins", "log"})
#: bench parameters that shape the ladder rather than each level
_LADDER = frozenset({"concurrency", "repeat", "until_ci", "max_repeat"})
#: settings that differ between any two launches and cannot change performance: shown
#: apart, collapsed ("also differs"), so "what differs" lists only what can matter
NOT_PERFORMANCE = frozenset({"port", "server_address", "config_line"})
#: the groups whose keys are variable or argument names (a secret is one of them)
_NAMED_GROUPS = frozenset({"args", "env", "host.env"})


@dataclass(frozen=True)
class SettingChange:
    """One setting that differs: ``group`` (args, env, patches, host, facts, bench, …)."""

    group: str
    key: str
    #: the value on each side; UNSET where that side does not have the setting
    a: Setting
    b: Setting

    def to_json(self) -> JsonObject:
        return {"group": self.group, "key": self.key,
                "a": None if self.a is UNSET else self.a, "b": None if self.b is UNSET else self.b,
                "a_text": format_value(self.a), "b_text": format_value(self.b)}


@dataclass(frozen=True)
class Comparison:
    a: RunInput
    b: RunInput
    #: the bench files compared on each side (several: repeats of the same parameters)
    a_files: tuple[str, ...]
    b_files: tuple[str, ...]
    #: per concurrency both sides measured, each headline figure tested (B against A)
    tests: tuple[MetricTest, ...]
    #: what can change performance (configuration, patches, environment, host, facts, bench)
    changes: tuple[SettingChange, ...]
    notes: tuple[str, ...] = ()
    #: what differs but cannot change performance (ports, addresses, log line numbers)
    also: tuple[SettingChange, ...] = ()

    @property
    def verdicts(self) -> dict[int, str]:
        """Per concurrency, on output throughput: b-faster | b-slower |
        no-significant-difference | noise-unknown (one launch a side)."""
        by_c: dict[int, list[MetricTest]] = {}
        for t in self.tests:
            by_c.setdefault(t.concurrency, []).append(t)
        out = {}
        for c, tests in by_c.items():
            v = verdict(tests)
            if v is not None:
                out[c] = v
        return out

    def to_json(self) -> JsonObject:
        def side(r: RunInput, files: tuple[str, ...]) -> JsonObject:
            return {"run_id": r.run_id, "variant": r.record.variant_name,
                    "host": r.record.host.get("name"), "verdict": r.record.verdict.kind,
                    "benchmarks": list(files)}

        return {"a": side(self.a, self.a_files), "b": side(self.b, self.b_files),
                "verdict": {str(c): v for c, v in self.verdicts.items()},
                "rows": [t.to_json() for t in self.tests],
                "changes": [c.to_json() for c in self.changes],
                "also_differs": [c.to_json() for c in self.also], "notes": list(self.notes)}


def _shape(result: BenchResult) -> JsonObject:
    """What a level sends: the bench parameters without the ladder's shape."""
    return {k: v for k, v in result.params.to_json().items() if k not in _LADDER}


def pick(a: RunInput, b: RunInput) -> tuple[list[tuple[str, BenchResult]],
                                            list[tuple[str, BenchResult]], list[str]]:
    """The benchmarks to compare: A's latest, every A and B result sent the same way
    (pooled as repeats) and, when B has none alike, B's latest with a note."""
    notes: list[str] = []
    if not a.results or not b.results:
        for r in (a, b):
            if not r.results:
                notes.append(f"run {r.run_id} has no benchmark: only settings are compared")
        return list(a.results), list(b.results), notes
    shape = _shape(a.results[-1][1])
    a_sel = [(f, r) for f, r in a.results if _shape(r) == shape]
    b_sel = [(f, r) for f, r in b.results if _shape(r) == shape]
    if not b_sel:
        b_sel = [b.results[-1]]
        notes.append("the two runs were benchmarked with different parameters "
                     "(see 'bench' below): the deltas compare unlike loads")
    return a_sel, b_sel, notes


def metric_tests(a: Sequence[BenchResult], b: Sequence[BenchResult]) -> list[MetricTest]:
    """Per concurrency both sides measured (A's ladder order), each headline figure."""
    pa = {p.concurrency: p for p in points_of([lv for r in a for lv in r.levels])}
    pb = {p.concurrency: p for p in points_of([lv for r in b for lv in r.levels])}
    out = []
    for c in [c for c in pa if c in pb]:
        out += compare_points(c, pa[c].levels, pb[c].levels)
    return out


def _success_notes(a: Sequence[BenchResult], b: Sequence[BenchResult]) -> list[str]:
    """Failed requests are not in the figures: say where the success rates differ."""
    pa = {p.concurrency: p for p in points_of([lv for r in a for lv in r.levels])}
    pb = {p.concurrency: p for p in points_of([lv for r in b for lv in r.levels])}
    out = []
    for c in [c for c in pa if c in pb]:
        ra, rb = (p.completed / max(1, p.completed + p.failed) for p in (pa[c], pb[c]))
        if ra != rb:
            out.append(f"concurrency {c}: success {ra:.0%} in A, {rb:.0%} in B (the figures "
                       "cover successful requests only)")
    return out


def _view(run: RunInput) -> JsonObject:
    return {k: v for k, v in _plain_object(run.record.variant).items() if k not in _NOT_CONFIG}


def _plain(value: Json) -> Json:
    """Frozen mappings/tuples as dicts/lists, which deepdiff compares by content."""
    if isinstance(value, Mapping):
        return _plain_object(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _plain_object(value: JsonMapping) -> JsonObject:
    return {str(k): _plain(v) for k, v in value.items()}


def _patches(run: RunInput) -> JsonObject:
    """patchset -> {root: state}: what a patch did on each copy of the module; and
    ``patchset.fingerprint`` -> the definition's fingerprint (an edited patchset)."""
    out: JsonObject = {}
    for name, info in _plain_object(run.record.patches).items():
        roots = info.get("roots") if isinstance(info, dict) else None
        out[name] = roots if isinstance(roots, dict) else info
        if isinstance(info, dict) and info.get("fingerprint"):
            out[f"{name}.fingerprint"] = info["fingerprint"]
    return out


def _facts(run: RunInput) -> JsonObject:
    """The engine facts the log stated, one level deep (``config.enforce_eager``,
    ``requested.max_num_seqs``); timings (``*_seconds``) are measurements, not settings."""
    facts: JsonObject = {}
    for key, value in _plain_object(run.record.facts).items():
        if key.endswith("_seconds"):
            continue
        if isinstance(value, dict):
            facts.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            facts[key] = value
    return facts


def changes_in(group: str, a: JsonMapping, b: JsonMapping,
               keyed: frozenset[str] = frozenset()) -> list[SettingChange]:
    """Every top-level setting that differs between ``a`` and ``b`` (deepdiff), a key of
    a ``keyed`` section (``args``, ``env``) as a setting of its own."""
    from deepdiff import DeepDiff

    tree = DeepDiff(dict(a), dict(b), view="tree")
    seen: list[tuple[str, ...]] = []
    for levels in tree.values():
        for level in levels:
            path = [str(x) for x in level.path(output_format="list")]
            if not path:
                continue
            if path[0] in keyed and len(path) == 1:
                # a whole section appeared or emptied: every key of it changed
                keys = {*(_keys(a.get(path[0]))), *(_keys(b.get(path[0])))}
                seen += [(path[0], k) for k in sorted(keys) if (path[0], k) not in seen]
                continue
            key = tuple(path[:2]) if path[0] in keyed else (path[0],)
            if key not in seen:
                seen.append(key)
    out = []
    for key in sorted(seen):
        va, vb = _at(a, key), _at(b, key)
        if va != vb or type(va) is not type(vb):
            sub = group if len(key) == 1 else key[0]
            out.append(SettingChange(sub, key[-1], va, vb))
    return out


def _keys(section: Json) -> list[str]:
    return [str(k) for k in section] if isinstance(section, Mapping) else []


def _at(data: JsonMapping, key: tuple[str, ...]) -> Setting:
    """The value at ``key``; UNSET where absent."""
    value: Json = data
    for part in key:
        if not isinstance(value, Mapping) or part not in value:
            return UNSET
        value = value[part]
    return value


def setting_changes(a: RunInput, b: RunInput) -> list[SettingChange]:
    """Everything that differs between the two runs' launches: configuration, patches,
    host and environment, engine facts (vLLM version among them), and the verdict."""
    changes = [
        *changes_in("config", _view(a), _view(b), frozenset({"args", "env", "expect",
                                                             "startup", "vendor"})),
        *changes_in("patches", _patches(a), _patches(b)),
        # host.env is the environment too, but set on the host: named apart from env
        *(SettingChange("host.env" if c.group == "env" else c.group, c.key, c.a, c.b)
          for c in changes_in("host", _plain_object(a.record.host), _plain_object(b.record.host),
                              frozenset({"env"}))),
        *changes_in("facts", _facts(a), _facts(b)),
    ]
    if a.record.verdict.kind != b.record.verdict.kind:
        changes.insert(0, SettingChange("verdict", "verdict", a.record.verdict.kind,
                                        b.record.verdict.kind))
    return changes


def _masked(c: SettingChange) -> SettingChange:
    return SettingChange(c.group, c.key, UNSET if c.a is UNSET else MASK,
                         UNSET if c.b is UNSET else MASK)


def compare(a: RunInput, b: RunInput, secrets: SecretRule = DEFAULT) -> Comparison:
    """``secrets``: a secret that differs is listed under "also differs" with ``***`` for
    its values (that it differs is said, what it is never)."""
    a_sel, b_sel, notes = pick(a, b)
    changes = setting_changes(a, b)
    if a_sel and b_sel:
        changes += changes_in("bench", _shape(a_sel[-1][1]), _shape(b_sel[-1][1]))
    ra, rb = [r for _, r in a_sel], [r for _, r in b_sel]
    notes += _success_notes(ra, rb)

    def secret(c: SettingChange) -> bool:
        return ((c.group in _NAMED_GROUPS or c.group == "facts")
                and secrets.is_secret_setting(f"{c.group}.{c.key}"))

    def inline(value: Setting) -> Setting:
        return value if value is UNSET else secrets.mask_value(value)

    # a command line or a list value with a secret inline (``--api-key sk-…``) shown
    # masked; where only the secret differs, it is said under "also differs"
    shown = [c if secret(c) else SettingChange(c.group, c.key, inline(c.a), inline(c.b))
             for c in changes]
    only_secret = [not secret(s) and s.a == s.b and type(s.a) is type(s.b) for s in shown]
    also = [s for c, s, o in zip(changes, shown, only_secret, strict=True)
            if o or (c.key in NOT_PERFORMANCE and not secret(c))]
    also += [_masked(c) for c in changes if secret(c)]
    return Comparison(a, b, tuple(f for f, _ in a_sel), tuple(f for f, _ in b_sel),
                      tuple(metric_tests(ra, rb)),
                      tuple(s for c, s, o in zip(changes, shown, only_secret, strict=True)
                            if c.key not in NOT_PERFORMANCE and not secret(c) and not o),
                      tuple(notes), tuple(also))
