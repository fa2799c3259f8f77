"""Secrets held inline (issue 32): a variant's ``command`` (``--api-key sk-…``,
``HF_TOKEN=… vllm serve``) and an argument whose value is a command line are masked by
the one rule (variantctl/secretmask.py) in every output that masks secrets: compare,
bisect, the sweep plan, the report's labels and files, ``runs show`` and ``runs export``."""

from __future__ import annotations

import csv
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.unit.report.builders import measured_level, record, result, store_run
from variantctl.report.labels import labels
from variantctl.report.model import RunInput
from variantctl.runs.run import RunRecord
from variantctl.runs.store import RunStore
from variantctl.secretmask import DEFAULT, MASK, SecretRule, masked_record
from variantctl.sweeps.bisect import settings_between
from variantctl.sweeps.model import GridPoint

Run = Callable[..., CliResult]
KEY_A, KEY_B = "sk-aaaaINLINEaaaa", "sk-bbbbINLINEbbbb"
HF_A, HF_B = "hf_aaaaPREFIXaaaa", "hf_bbbbPREFIXbbbb"
LEAKS = (KEY_A, KEY_B, HF_A, HF_B, "INLINE", "PREFIX")


def _no_secret(text: str) -> None:
    for s in LEAKS:
        assert s not in text, s


@pytest.mark.parametrize(("value", "shown"), [
    (["vllm", "serve", "--api-key", KEY_A, "--port", "80"],
     ["vllm", "serve", "--api-key", MASK, "--port", "80"]),
    ([f"HF_TOKEN={HF_A}", "vllm", f"--api-key={KEY_A}"],
     [f"HF_TOKEN={MASK}", "vllm", f"--api-key={MASK}"]),
    (("bash", "-c", f"HF_TOKEN={HF_A} vllm serve --hf-token '{KEY_A}'"),
     ("bash", "-c", f"HF_TOKEN={MASK} vllm serve --hf-token {MASK}")),
    (f"HF_TOKEN={HF_A} vllm serve --api-key {KEY_A} --max-num-batched-tokens 8192",
     f"HF_TOKEN={MASK} vllm serve --api-key {MASK} --max-num-batched-tokens 8192"),
    # a flag without a value is not followed by its neighbour's mask
    (["vllm", "--disable-token-stats", "--port", "80"],
     ["vllm", "--disable-token-stats", "--port", "80"]),
    (["vllm", "--max-num-batched-tokens", "8192", "--tokenizer", "t/x"],
     ["vllm", "--max-num-batched-tokens", "8192", "--tokenizer", "t/x"]),
    (42, 42),
])
def test_the_rule_reaches_into_command_lines(value: object, shown: object) -> None:
    assert DEFAULT.mask_value(value) == shown
    assert DEFAULT.mask("command", value) == shown


def test_token_counts_are_settings_not_secrets() -> None:
    for name in ("max-num-batched-tokens", "max-tokens", "tokenizer", "tokenizer-mode"):
        assert not DEFAULT.is_secret(name), name
    assert SecretRule(("MAX_TOKENS",)).is_secret("max-tokens")  # a project may list it
    assert DEFAULT.is_secret("HF_TOKEN") and DEFAULT.is_secret("tokens-secret")


def test_the_project_list_reaches_inline_too() -> None:
    rule = SecretRule(("MY_CRED",))
    assert rule.mask_value(["x", "--my-cred", "c-1", "MY_CRED=c-2"]) == [
        "x", "--my-cred", MASK, f"MY_CRED={MASK}"]


def _rec(run_id: str, name: str, key: str, hf: str, command_key: str | None = None
         ) -> RunRecord:
    rec = record(run_id, name, args={"max-num-seqs": 2,
                                     "middleware-args": ["--api-key", key]})
    variant = {**rec.variant, "command": [f"HF_TOKEN={hf}", "vllm", "serve", "--api-key",
                                          command_key or key]}
    return dataclasses.replace(rec, variant=variant,
                               script=f"export X=1\nHF_TOKEN={hf} exec vllm serve "
                                      f"--api-key '{key}'\n")


def _runs() -> list[RunInput]:
    return [RunInput(_rec("aaaaaaaaaa-1", "one", KEY_A, HF_A), (("b1.json", result(
        [measured_level(1, s, slow=1.0, repeat=s) for s in range(3)])),)),
            RunInput(_rec("bbbbbbbbbb-1", "two", KEY_B, HF_B), (("b1.json", result(
                [measured_level(1, s, slow=1.3, repeat=s) for s in range(3)])),))]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    store = RunStore(p / "runs")
    for r in _runs():
        store_run(store, r.record, [res for _, res in r.results])
    return p


def test_compare_masks_a_command_and_says_that_it_differs(run_cli: Run, project: Path) -> None:
    res = run_cli(["compare", "aaaa", "bbbb"], project=project)
    assert res.code == 0, res.output
    _no_secret(res.output)
    assert "command" in res.stdout
    res = run_cli(["compare", "aaaa", "bbbb", "--json"], project=project)
    assert res.code == 0, res.output
    _no_secret(res.output)
    doc = json.loads(res.stdout)["compare"]
    also = {c["key"]: c for c in doc["also_differs"]}
    # only the secret differs: said, never what
    assert also["command"]["a"] == [f"HF_TOKEN={MASK}", "vllm", "serve", "--api-key", MASK]
    assert also["middleware-args"]["b"] == ["--api-key", MASK]
    assert not any(c["key"] in ("command", "middleware-args") for c in doc["changes"])


def test_bisect_shows_an_inline_secret_masked_and_uses_it() -> None:
    a, b = (r.record.variant for r in _runs())
    settings, other = settings_between(a, b)
    by = {s.label: s for s in settings}
    s = by["args.middleware-args"]
    assert s.b == ["--api-key", KEY_B]  # what the round launches
    assert s.to_json() == {"setting": "args.middleware-args", "a": ["--api-key", MASK],
                           "b": ["--api-key", MASK]}
    assert "command" in other


def test_bisect_dry_run_prints_no_inline_secret(run_cli: Run, tmp_path: Path) -> None:
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    (p / "variants" / "hosts.yaml").write_text(f"cpu:\n  workdir: {tmp_path / 'w'}\n")
    store = RunStore(p / "runs")
    # the same command (bisect cannot vary it), an argument holding a secret that differs
    for run_id, key in (("aaaaaaaaaa-1", KEY_A), ("bbbbbbbbbb-1", KEY_B)):
        (p / "variants" / f"v{run_id[0]}.yaml").write_text(
            f"name: v{run_id[0]}\ncommand: ['HF_TOKEN={HF_A}', vllm, serve, --api-key, "
            f"'{KEY_A}']\n")
        store_run(store, _rec(run_id, "v" + run_id[0], key, HF_A, command_key=KEY_A),
                  [result([measured_level(1, 10)])])
    for extra in ([], ["--json"]):
        res = run_cli(["bisect", "aaaa", "bbbb", "--dry-run", *extra], project=p)
        assert res.code == 0, res.output
        _no_secret(res.output)
        assert "middleware-args" in res.output, res.output


def test_sweep_plan_values_and_labels_mask_inline() -> None:
    point = GridPoint(0, "base", {"args.middleware-args": ("--api-key", KEY_A)})
    assert KEY_A not in point.label()
    assert DEFAULT.mask_mapping(point.values) == {"args.middleware-args": ("--api-key", MASK)}


def test_report_labels_and_files_mask_inline(run_cli: Run, project: Path,
                                             tmp_path: Path) -> None:
    got = labels(_runs())
    assert all(MASK in v for v in got.values()), got
    _no_secret(" ".join(got.values()))
    for fmt in ("md", "html"):
        out = tmp_path / "rep" / fmt
        res = run_cli(["report", "aaaa", "bbbb", "--format", fmt, "--out", str(out)],
                      project=project)
        assert res.code == 0, res.output
        _no_secret(res.output)
        for f in out.rglob("*"):
            if f.is_file():
                _no_secret(f.read_text("utf-8", "replace"))


def test_runs_show_masks_the_command_and_scrubs_the_script(run_cli: Run,
                                                           project: Path) -> None:
    for extra in ([], ["--json"]):
        res = run_cli(["runs", "show", "aaaa", *extra], project=project)
        assert res.code == 0, res.output
        _no_secret(res.output)
    raw = _runs()[0].record.to_json()
    shown = masked_record(raw)
    assert shown["variant"]["command"] == [f"HF_TOKEN={MASK}", "vllm", "serve",
                                           "--api-key", MASK]
    assert shown["variant"]["args"]["middleware-args"] == ["--api-key", MASK]
    assert KEY_A not in shown["script"] and HF_A not in shown["script"]
    assert raw["variant"]["command"][-1] == KEY_A  # the record itself is untouched


def test_runs_export_masks_inline(run_cli: Run, project: Path) -> None:
    out = project / "levels.csv"
    res = run_cli(["runs", "export", "aaaa", "bbbb", "--format", "csv", "--out", str(out)],
                  project=project)
    assert res.code == 0, res.output
    text = out.read_text(encoding="utf-8")
    _no_secret(text)
    rows = list(csv.DictReader(text.splitlines()))
    assert {r["setting.args.middleware-args"] for r in rows} == {json.dumps(["--api-key", MASK])}
