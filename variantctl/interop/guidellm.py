"""GuideLLM's benchmarks JSON (``--output kind=json``, ``benchmarks.json``) as an
:class:`~variantctl.interop.imported.ImportedBench` (PURE).

The report (``GenerativeBenchmarksReport``) holds ``metadata`` (``guidellm_version``),
the run's ``config`` and ``benchmarks``: one per strategy run, each with its
``config.strategy`` (``synchronous``, ``concurrent`` with ``streams``, ``throughput``,
``constant``/``poisson`` with ``rate``; before 0.4 under ``args.strategy``),
``metrics`` — per metric a status distribution (``successful``/``errored``/
``incomplete``/``total``, each ``mean``, ``median``, ``std_dev``, ``min``, ``max``,
``count``, ``total_sum``, ``percentiles.p10…p99``) — and ``requests`` by status.

Mapped by definition (docs/report.md "Import"): TTFT ← ``time_to_first_token_ms``;
TPOT (E2EL − TTFT)/(tokens − 1) ← ``inter_token_latency_ms`` (GuideLLM's ITL is
vLLM's TPOT); E2EL ← ``request_latency`` (s); output throughput and requests/s are
successful tokens and requests over the measured duration (vLLM's definition).
GuideLLM has no per-chunk gaps (vLLM's ITL) nor a per-request output TPS: those
figures are absent.

Checked on files GuideLLM 0.8.1 wrote (tests/fixtures/interop/guidellm-0.8.1/): the
model and server are under ``config.spec.backend`` there (``config`` itself before); a
rate strategy's own ``max_concurrency`` is GuideLLM's bound (10240) unless the user
capped it (``config.spec.profile.max_concurrency``), so without a cap the concurrency
is the mean request concurrency; the ``inter_token_latency_ms`` summary weighs each
request by its tokens − 1 (its ``count`` is tokens, not requests), so the TPOT kept is
GuideLLM's token-weighted figure — vLLM's unweighted mean when every request has the
same length — and its sample size is the successful requests.
"""

from __future__ import annotations

import math

from variantctl.bench.model import RequestResult, Stats
from variantctl.interop.imported import ImportedBench, ImportedLevel, number_getter, stats_of
from variantctl.jsonfields import Fields

_KEYS = {"mean": "mean", "median": "median", "std": "std_dev", "min": "min", "max": "max"}
_PCT = {"p10": "p10", "p50": "p50", "p90": "p90", "p99": "p99"}


def _dist(metrics: Fields, key: str, scale: float = 1.0, count: int | None = None
          ) -> Stats:
    """The successful requests' distribution of one metric (absent: an empty Stats);
    ``count``: the sample size when the file's ``count`` is not one per request."""
    sds = metrics.opt_obj(key)
    d = sds.opt_obj("successful") if sds is not None else None
    if d is None:
        return Stats()
    pct = d.opt_obj("percentiles")
    plain, pcts = number_getter(d), number_getter(pct)
    if count is None:
        count = d.opt_integer("count") or 0

    def get(k: str) -> float | None:
        return pcts(k) if k.startswith("p") and k[1:].isdigit() else plain(k)

    return stats_of(get, count, scale=scale, keys={**_KEYS, **_PCT})


def _sum(metrics: Fields, key: str) -> float:
    sds = metrics.opt_obj(key)
    d = sds.opt_obj("successful") if sds is not None else None
    return (d.opt_number("total_sum") or 0.0) if d is not None else 0.0


def _strategy(b: Fields) -> Fields:
    for where in ("config", "args"):
        holder = b.opt_obj(where)
        if holder is not None and holder.opt_obj("strategy") is not None:
            return holder.obj("strategy")
    raise b.error("config.strategy", "is missing: not a GuideLLM benchmark")


def _duration(b: Fields) -> float:
    sm = b.opt_obj("scheduler_metrics")
    if sm is not None and sm.opt_number("measure_end_time") is not None:
        return sm.number("measure_end_time") - sm.number("measure_start_time")
    if b.opt_number("duration") is not None:
        return b.number("duration")
    if b.opt_number("end_time") is not None:
        return b.number("end_time") - b.number("start_time")
    raise b.error("scheduler_metrics.measure_end_time", "is missing: the benchmark's "
                  "duration is not in the file")


def _requests(b: Fields) -> tuple[RequestResult, ...]:
    """The successful and errored requests, when the file kept them with their times."""
    reqs = b.opt_obj("requests")
    if reqs is None:
        return ()
    rows = [(True, r) for r in reqs.objs("successful")] + [
        (False, r) for r in reqs.objs("errored")]
    starts = [r.opt_number("request_start_time") for _, r in rows]
    if not rows or any(s is None for s in starts):
        return ()
    t0 = min(s for s in starts if s is not None)
    out = []
    for i, ((ok, r), start) in enumerate(zip(rows, starts, strict=True)):
        ttft_ms = r.opt_number("time_to_first_token_ms")
        latency = r.opt_number("request_latency")
        if ok and (ttft_ms is None or latency is None):
            return ()  # stats only (GuideLLM's sample_size 0): the summary is what there is
        assert start is not None
        out.append(RequestResult(
            index=i, ok=ok, start_s=start - t0, ttft_s=(ttft_ms or 0.0) / 1000.0,
            latency_s=latency or 0.0, prompt_tokens=r.opt_integer("prompt_tokens") or 0,
            output_tokens=r.opt_integer("output_tokens") or 0, usage_seen=True,
            error=None if ok else "guidellm error",
            error_detail=None if ok else (r.opt_text("error") or None)))
    return tuple(out)


class _UserCap:
    """Whether the file says the user's concurrency cap apart from the strategy's own."""

    def __init__(self, f: Fields):
        config = f.opt_obj("config")
        spec = config.opt_obj("spec") if config is not None else None
        profile = spec.opt_obj("profile") if spec is not None else None
        #: 0.8: the profile the user asked for; its ``max_concurrency`` null means no cap
        #: (the strategy's ``max_concurrency`` is then GuideLLM's own bound, 10240)
        self.known = profile is not None
        self.cap = profile.opt_integer("max_concurrency") if profile is not None else None


def _level(b: Fields, user: _UserCap) -> ImportedLevel:
    m = b.obj("metrics")
    totals = m.obj("request_totals")
    completed, errored = totals.integer("successful"), totals.integer("errored", 0)
    st = _strategy(b)
    kind = st.text("type_", "") or st.text("type", "")
    rate = math.inf
    conc_sds = m.opt_obj("request_concurrency")
    conc_d = conc_sds.opt_obj("successful") if conc_sds is not None else None
    mean_conc = conc_d.opt_number("mean") if conc_d is not None else None
    if kind == "synchronous":
        conc = 1
    elif kind == "concurrent":
        conc = st.integer("streams")
    else:
        if kind in ("constant", "poisson", "async"):
            rate = st.number("rate")
        cap = user.cap if user.known else st.opt_integer("max_concurrency")
        conc = cap or max(1, round(mean_conc or 1.0))
    duration = _duration(b)
    tin, tout = _sum(m, "prompt_token_count"), _sum(m, "output_token_count")
    return ImportedLevel(
        concurrency=conc, duration_s=duration, completed=completed, failed=errored,
        input_tokens=int(tin), output_tokens=int(tout),
        request_throughput=completed / duration if duration > 0 else 0.0,
        output_throughput=tout / duration if duration > 0 else 0.0,
        total_token_throughput=(tin + tout) / duration if duration > 0 else 0.0,
        ttft_ms=_dist(m, "time_to_first_token_ms"),
        # weighted by tokens − 1 (its count is tokens): the sample is the requests
        tpot_ms=_dist(m, "inter_token_latency_ms", count=completed), itl_ms=Stats(),
        e2el_ms=_dist(m, "request_latency", 1000.0), output_tps=Stats(), rate=rate,
        requests=_requests(b))


def _backend(f: Fields) -> tuple[object, object]:
    """The model and server URL the run measured: ``config.spec.backend`` (0.8), else
    ``config`` (before); each None where the file does not say."""
    config = f.opt_obj("config")
    if config is None:
        return None, None
    spec = config.opt_obj("spec")
    backend = spec.opt_obj("backend") if spec is not None else None
    holder = backend if backend is not None else config
    return holder.data.get("model"), holder.data.get("target")


def read(doc: object, source: str, version: str | None) -> ImportedBench:
    f = Fields(doc, source)
    benches = f.objs("benchmarks", Fields.REQUIRED)
    if not benches:
        raise f.error("benchmarks", "is empty: no benchmark to import")
    for b in benches:
        kind = b.data.get("type_", "generative_benchmark")
        if kind != "generative_benchmark":
            raise b.error("type_", f"is {kind!r}: not a GuideLLM generative benchmark")
    meta = f.opt_obj("metadata")
    told = meta.opt_text("guidellm_version") if meta is not None else None
    model, target = _backend(f)
    started = ""
    sm = benches[0].opt_obj("scheduler_metrics")
    if sm is not None and sm.opt_number("start_time") is not None:
        from datetime import datetime, timezone

        started = datetime.fromtimestamp(sm.number("start_time"), timezone.utc).isoformat()
    return ImportedBench(tool="guidellm", version=version or told,
                         model=model if isinstance(model, str) else None,
                         url=target if isinstance(target, str) else None,
                         started_at=started,
                         levels=tuple(_level(b, _UserCap(f)) for b in benches))
