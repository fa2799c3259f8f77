"""One expect engine: ``classify --expect`` and launch's check agree on the same log.

The log is the real CPU server's healthy start with ``enforce_eager=True`` spliced in
(the first seed's hard-coded fork): a variant that does not pass ``--enforce-eager``
must be flagged by both paths, and ``dtype: bfloat16`` must match the log's
``torch.bfloat16`` in both (the two engines used to disagree on exactly these).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult
from variantctl.config.catalog import default_catalog
from variantctl.launch.classify import ClassifierAdapter
from variantctl.launch.core import expect_mismatches
from variantctl.variants.model import ResolvedVariant

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures/logs/v1/real-cpu-0.32--startup-ok.log"

VARIANT_YAML = """\
description: the seed's baseline without --enforce-eager
model: /models/tiny
args:
  max-num-seqs: 2
expect:
  dtype: bfloat16
  max_seq_len: 512
  vllm_version: 0.32.0
"""


def hard_coded_log() -> str:
    text = FIXTURE.read_text()
    assert "enforce_eager=False" in text
    return text.replace("enforce_eager=False", "enforce_eager=True")


def launch_check(variant: ResolvedVariant, log: str) -> list[dict[str, object]]:
    """What launch records: the streaming classifier fed line by line, ready at the end."""
    classifier = ClassifierAdapter.create(stall_seconds=300, clock=lambda: 0.0,
                                          catalog=default_catalog())
    for line in log.splitlines():
        classifier.feed(line)
    return [m.to_json() for m in expect_mismatches(variant, classifier.ready())]


def test_classify_expect_and_launch_agree(
    run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / "variants").mkdir(parents=True)
    (project / "variants" / "baseline.yaml").write_text(VARIANT_YAML)
    log = tmp_path / "server.log"
    log.write_text(hard_coded_log())

    res = run_cli(["classify", str(log), "--expect", "baseline", "--json"], project=project)
    (item,) = json.loads(res.stdout)["logs"]
    from_classify = item["expect"]["mismatches"]

    from variantctl.config.variants import load_catalog
    from variantctl.variants.resolve import resolve

    variant = resolve(load_catalog(project / "variants"), "baseline")
    from_launch = launch_check(variant, log.read_text())

    assert from_launch == from_classify
    # and what they agree on is the seed's story: the flag-implied check fires, the
    # dtype spelled two ways is the same dtype, the expect block otherwise holds
    assert from_launch == [{"key": "enforce_eager", "expected": False, "actual": True,
                            "source": "--enforce-eager (not set)", "reason": "differs"}]
    assert res.code == 1


def test_they_agree_when_everything_holds(
    run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / "variants").mkdir(parents=True)
    (project / "variants" / "baseline.yaml").write_text(VARIANT_YAML)
    log = tmp_path / "server.log"
    log.write_text(FIXTURE.read_text())
    res = run_cli(["classify", str(log), "--expect", "baseline", "--json"], project=project)
    (item,) = json.loads(res.stdout)["logs"]

    from variantctl.config.variants import load_catalog
    from variantctl.variants.resolve import resolve

    variant = resolve(load_catalog(project / "variants"), "baseline")
    assert launch_check(variant, log.read_text()) == item["expect"]["mismatches"] == []
    assert res.code == 0
