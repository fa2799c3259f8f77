"""Grid expansion, derived variants, predictions, history skips and ETAs (pure)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from tests.conftest import REPO
from variantctl.config.sweeps import load_sweep, parse_sweep
from variantctl.config.variants import load_catalog
from variantctl.config.yamlload import load_yaml_text
from variantctl.hostmodel import Host
from variantctl.launch.core import variant_json
from variantctl.runs.identity import host_identity
from variantctl.runs.run import RunRecord, RunVerdict
from variantctl.sweeps.grid import expand
from variantctl.sweeps.history import History
from variantctl.sweeps.model import point_name, sweep_of_name
from variantctl.sweeps.plan import HISTORY, PREDICTED, Plan, make_plan
from variantctl.variants.model import ResolvedVariant
from variantctl.variants.resolve import resolve


def spec_of(text: str, name: str = "t"):  # type: ignore[no-untyped-def]
    return parse_sweep(load_yaml_text(text, "sweeps/t.yaml"), name)


def test_axes_links_exclusions_and_includes_expand_in_a_stable_order() -> None:
    spec = spec_of(
        "base: [a, b]\ngrid:\n  args:\n    s: [1, 2]\n    l: [10, 20]\n    c: [10, 20]\n"
        "link:\n  - [args.l, args.c]\nexclude:\n  - {base: b, args.s: 2}\n"
        "include:\n  - {base: a, args.s: 9}\n")
    points = expand(spec)
    got = [(p.index, p.base, dict(p.values)) for p in points]
    assert got == [
        (1, "a", {"args.s": 1, "args.l": 10, "args.c": 10}),
        (2, "a", {"args.s": 1, "args.l": 20, "args.c": 20}),
        (3, "a", {"args.s": 2, "args.l": 10, "args.c": 10}),
        (4, "a", {"args.s": 2, "args.l": 20, "args.c": 20}),
        (5, "b", {"args.s": 1, "args.l": 10, "args.c": 10}),
        (6, "b", {"args.s": 1, "args.l": 20, "args.c": 20}),
        (7, "a", {"args.s": 9}),
    ]


def test_an_exclusion_compares_types_strictly() -> None:
    # `1` and `true` are different YAML values; excluding one must not drop the other
    spec = spec_of("base: a\ngrid:\n  args:\n    x: [1, true]\nexclude:\n  - {args.x: true}\n")
    assert [dict(p.values) for p in expand(spec)] == [{"args.x": 1}]


def test_point_names_round_trip() -> None:
    name = point_name("cpu-eager", "cpu-smoke", 3)
    assert name == "cpu-eager@cpu-smoke-03"
    assert sweep_of_name(name) == ("cpu-smoke", 3)
    assert sweep_of_name("cpu-eager") is None
    assert sweep_of_name("a@b") is None


def _repo_plan(name: str, **kw: Any) -> Plan:
    spec = load_sweep(REPO / "sweeps", name)
    catalog = load_catalog(REPO / "variants")
    hosts = dict(catalog.hosts)
    return make_plan(spec, {b: resolve(catalog, b) for b in spec.bases}, hosts,
                     on_hosts=spec.hosts, known_patchsets=(), **kw)


def test_seed_grid_on_corex_predicts_the_seeds_multi_step_failures() -> None:
    plan = _repo_plan("seed-grid")
    assert len(plan.points) == 24 and plan.hosts == ("corex",)
    by_values = {tuple(sorted(p.point.values.items())): p for p in plan.points}
    for values, p in by_values.items():
        v = dict(values)
        steps, chunked = v["args.num-scheduler-steps"], v["args.enable-chunked-prefill"]
        if steps == 4 and chunked:
            # the seed's "Multi-Step + Chunked-Prefill not supported for ... xformers"
            assert p.skip is not None and p.skip.reason == PREDICTED
            assert p.skip.signature == "multistep-chunked-prefill-unsupported"
        elif not chunked:
            # the seed's first failure: batched tokens 8192 < max-model-len 100000
            assert p.skip is not None and p.skip.signature == "batched-tokens-below-model-len"
        else:
            assert p.skip is None and p.run
    assert len(plan.to_run) == 6


def test_a_derived_variant_says_where_its_values_came_from() -> None:
    plan = _repo_plan("seed-grid")
    p = plan.points[1]
    assert p.name == "parser-off@seed-grid-02"
    assert p.variant.args["num-scheduler-steps"] == 4
    assert p.variant.origins["args.num-scheduler-steps"] == "sweep seed-grid grid"
    assert p.variant.parents == ("parser-off",)
    # a value the grid does not touch keeps its file origin
    assert p.variant.origins["args.tensor-parallel-size"].startswith("variants/full-parser")


def test_include_predicted_runs_a_predicted_point() -> None:
    plan = _repo_plan("seed-grid", include_predicted=True)
    assert len(plan.to_run) == 24
    assert all(p.skip is not None for p in plan.to_run[1:4])


def _record(variant: ResolvedVariant, host: Host, verdict: str, *, run_id: str,
            when: str, ready: float | None = None, signature: str | None = None) -> RunRecord:
    # what launch writes: the resolved variant (JSON round trip) and the host identity
    data = json.loads(json.dumps(variant_json(variant)))
    return RunRecord(run_id=run_id, key=run_id.split("-")[0], variant_name=variant.name,
                     variant=data, host=host_identity(host), script="", server=None,
                     patches={}, verdict=RunVerdict(kind=verdict, signature=signature,
                                                    message="it broke"),
                     facts={}, timings={"time_to_ready_s": ready}, created_at=when)


def _cpu_plan(history: History, **kw: Any) -> Plan:
    spec = load_sweep(REPO / "sweeps", "cpu-smoke")
    catalog = load_catalog(REPO / "variants")
    hosts = dict(catalog.hosts)
    return make_plan(spec, {"cpu-base": resolve(catalog, "cpu-base")}, hosts,
                     on_hosts=spec.hosts,
                     known_patchsets=(), history=history, **kw)


def test_history_skips_a_configuration_that_failed_under_any_name() -> None:
    plain = _cpu_plan(History())
    hosts = dict(load_catalog(REPO / "variants").hosts)
    target = plain.points[1]
    # the same configuration launched by hand under another name, and it failed
    renamed = ResolvedVariant(**{**target.variant.__dict__, "name": "by-hand"})
    fail = _record(renamed, hosts["cpu"], "failed", run_id="aaaaaaaaaa-1",
                   when="2026-01-01T00:00:00", signature="oom")
    plan = _cpu_plan(History.from_records([fail]), include_predicted=True)
    p = plan.points[1]
    assert p.skip is not None and p.skip.reason == HISTORY and not p.run
    assert (p.skip.run_id, p.skip.signature) == ("aaaaaaaaaa-1", "oom")
    assert all(q.skip is None for q in plan.points[:1] + plan.points[2:4])
    # a later ready run of it means the failure was fixed
    ok = _record(renamed, hosts["cpu"], "ready", run_id="aaaaaaaaaa-2",
                 when="2026-01-02T00:00:00", ready=12.0)
    plan = _cpu_plan(History.from_records([fail, ok]))
    assert plan.points[1].skip is None
    assert plan.points[1].eta_startup_s == 12.0
    assert plan.points[1].eta_source == "this configuration"


def test_a_failure_under_an_edited_required_patchset_is_tried_again() -> None:
    """The point requires a patchset; a run with that definition failed. Unchanged, the
    history skips it; once the patchset is edited (the fix), the point runs again."""
    plain = _cpu_plan(History())
    hosts = dict(load_catalog(REPO / "variants").hosts)
    target = plain.points[1]
    patched = ResolvedVariant(**{**target.variant.__dict__, "requires": ("fix",)})

    def plan_with(fingerprint: str, record: RunRecord) -> Plan:
        spec = load_sweep(REPO / "sweeps", "cpu-smoke")
        catalog = load_catalog(REPO / "variants")
        base = resolve(catalog, "cpu-base")
        base = ResolvedVariant(**{**base.__dict__, "requires": ("fix",)})
        return make_plan(spec, {"cpu-base": base}, dict(catalog.hosts),
                         on_hosts=spec.hosts, known_patchsets=("fix",),
                         patchset_fingerprints={"fix": fingerprint},
                         history=History.from_records([record]))

    fail = _record(patched, hosts["cpu"], "failed", run_id="bbbbbbbbbb-1",
                   when="2026-01-01T00:00:00", signature="oom")
    fail = dataclasses.replace(fail, patches={"fix": {"required": True, "fingerprint": "v1"}})
    same = plan_with("v1", fail).points[1]
    assert same.skip is not None and same.skip.reason == HISTORY
    edited = plan_with("v2", fail).points[1]
    assert edited.skip is None and edited.run
    # a run recorded before fingerprints were kept does not skip a point that requires
    # a patchset: what it ran with is unknown
    old = dataclasses.replace(fail, patches={"fix": {"required": True}})
    assert plan_with("v1", old).points[1].skip is None


def test_eta_comes_from_past_startups_of_the_base_then_the_host() -> None:
    hosts = dict(load_catalog(REPO / "variants").hosts)
    plain = _cpu_plan(History())
    assert {p.eta_startup_s for p in plain.points} == {60.0}
    other = _cpu_plan(History()).points[0].variant
    runs = [_record(other.with_args({"max-num-seqs": 7}, origin="t", name="cpu-base@x-01"),
                    hosts["cpu"], "ready", run_id=f"bbbbbbbbbb-{i}",
                    when=f"2026-01-0{i}T00:00:00", ready=r) for i, r in ((1, 10.0), (2, 30.0),
                                                                        (3, 20.0))]
    plan = _cpu_plan(History.from_records(runs))
    assert plan.points[0].eta_startup_s == 20.0  # the median
    assert plan.points[0].eta_source == "cpu-base on cpu"
    # hosts run in parallel, points on one host add up
    assert plan.eta_s == sum(p.eta_s for p in plan.to_run)


def test_without_a_grid_a_sweep_is_its_bases_or_only_its_includes() -> None:
    assert [(p.base, dict(p.values)) for p in expand(spec_of("base: [a, b]\n"))] == [
        ("a", {}), ("b", {})]
    only = spec_of("base: [a, b]\ninclude:\n  - {base: b, args.x: 1}\n")
    assert [(p.index, p.base, dict(p.values)) for p in expand(only)] == [(1, "b", {"args.x": 1})]
