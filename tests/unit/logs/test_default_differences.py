"""Requested vs effective knows the defaults (issue 20.3): each release's mined
``EngineArgs`` defaults, and the finding "effective differs from the release default though
not requested", distinct from an overridden request."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.cachelock import wheel_cache_lock
from variantctl.config.catalog import default_catalog
from variantctl.logs.classify import classify_text
from variantctl.logs.engine_defaults import ENGINE_DEFAULTS
from variantctl.logs.facts import default_differences, release_for

REPO = Path(__file__).resolve().parents[3]
FIX = REPO / "tests" / "fixtures" / "logs" / "v1"
SCRIPT = REPO / "scripts" / "mine_engine_defaults.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mine_engine_defaults", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_committed_defaults_are_what_the_installed_release_says(
        vllm_site_packages: Path) -> None:
    """Mined from the real vLLM 0.32 source of the CPU venv, not written by hand."""
    mined = _script().from_site(vllm_site_packages)
    assert mined == ENGINE_DEFAULTS["0.32.0"]
    assert mined["enforce_eager"] is False and mined["disable_custom_all_reduce"] is False
    assert mined["tensor_parallel_size"] == 1  # pydantic Field(default=1, ge=1)


def test_the_committed_defaults_are_what_old_wheels_say() -> None:
    """0.2.0 and 0.3.0 (the small wheels test_mined_messages also reads; downloaded into
    the cache when missing)."""
    mod = _script()
    for release in ("0.2.0", "0.3.0"):
        with wheel_cache_lock(mod.cache_dir()):
            wheel = mod.find_wheel(release, mod.cache_dir(), download=True)
        assert wheel is not None, f"no wheel of {release}"
        assert mod.from_wheel(wheel) == ENGINE_DEFAULTS[release]
    assert "enforce_eager" not in ENGINE_DEFAULTS["0.2.0"]  # the flag came in 0.3
    assert ENGINE_DEFAULTS["0.3.0"]["enforce_eager"] is False


def test_every_release_of_the_message_miner_is_in_the_table() -> None:
    """The same twelve releases (their wheels) plus the installed CPU build's 0.32."""
    assert set(_script().ENGINE_DEFAULT_RELEASES) | {"0.32.0"} == set(ENGINE_DEFAULTS)


def test_a_hard_coded_default_shows_without_expect() -> None:
    """The seed's fork on real code: the CPU server of a source that hard-codes
    enforce_eager=True, nothing requested (V1 lists only non-default arguments)."""
    text = (FIX / "real-cpu-0.32--startup-interrupted.log").read_text()
    facts = classify_text(text, default_catalog()).facts
    assert "enforce_eager" not in facts.requested
    assert facts.config_differences == ()  # nothing was requested to override
    (d,) = facts.default_differences
    assert (d["key"], d["default"], d["effective"], d["release"]) == (
        "enforce_eager", False, True, "0.32.0")
    assert "differs from the release default" in d["message"]
    assert "though not requested" in d["message"]


def test_a_healthy_cpu_server_has_no_default_finding() -> None:
    """disable_custom_all_reduce=True is what the CPU platform forces, not a finding."""
    text = (FIX / "real-cpu-0.32--startup-ok.log").read_text()
    facts = classify_text(text, default_catalog()).facts
    assert facts.config["disable_custom_all_reduce"] is True
    assert facts.default_differences == ()


CONFIG = ("(EngineCore_DP0 pid=2) INFO 12-01 10:00:01 [core.py:1] Initializing a V1 LLM engine "
          "(v{v}) with config: model='m', tensor_parallel_size=1, disable_custom_all_reduce=False,"
          " enforce_eager=True, device_config=cuda, seed=0")


@pytest.mark.parametrize(("requested", "findings"), [
    ("non-default args: {'model': 'm'}", ["enforce_eager"]),
    # requested and honoured: neither finding
    ("non-default args: {'model': 'm', 'enforce_eager': True}", []),
])
def test_requested_keys_are_not_compared_with_the_default(requested: str,
                                                          findings: list[str]) -> None:
    text = "\n".join([
        "(APIServer pid=1) INFO 12-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0",
        f"(APIServer pid=1) INFO 12-01 10:00:00 [utils.py:1] {requested}",
        CONFIG.format(v="0.11.0"),
    ]) + "\n"
    facts = classify_text(text, default_catalog()).facts
    assert [d["key"] for d in facts.default_differences] == findings
    assert facts.config_differences == ()


def test_an_excerpt_without_the_requested_line_is_not_compared() -> None:
    """Without the args line nobody knows what was requested."""
    facts = classify_text(CONFIG.format(v="0.11.0") + "\n", default_catalog()).facts
    assert facts.config["enforce_eager"] is True
    assert facts.default_differences == ()


def test_the_release_that_stands_for_a_version() -> None:
    assert release_for("0.11.0", ENGINE_DEFAULTS) == "0.11.0"
    assert release_for("0.11.2", ENGINE_DEFAULTS) == "0.11.0"
    assert release_for("0.6.3.post1", ENGINE_DEFAULTS) == "0.6.3.post1"
    assert release_for("0.6.4", ENGINE_DEFAULTS) == "0.6.3.post1"
    assert release_for("0.40.1", ENGINE_DEFAULTS) == "0.33.0"
    assert release_for("0.1.4", ENGINE_DEFAULTS) is None
    assert release_for(None, ENGINE_DEFAULTS) is None
    assert default_differences({}, {"enforce_eager": True}, "0.1.4", requested_seen=True) == ()


def test_the_finding_is_printed_and_in_json(run_cli: Callable[..., Any]) -> None:
    log = FIX / "real-cpu-0.32--startup-interrupted.log"
    res = run_cli(["classify", str(log)])
    assert "effective enforce_eager=True differs from the release default (False in vLLM " \
           "0.32.0) though not requested" in res.stdout
    data = json.loads(run_cli(["classify", "--json", str(log)]).stdout)["logs"][0]
    assert [d["key"] for d in data["facts"]["default_differences"]] == ["enforce_eager"]
    assert data["facts"]["config_differences"] == []
