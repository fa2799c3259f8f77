"""Secrets (issue 32): one rule of what is a secret (variantctl/secretmask.py, plus the
project's ``secrets:`` in hosts.yaml), masked as ``***`` in compare (which still says
that one differs), bisect's and sweep's plans, the report's labels and files and ``runs
show``; ``render`` and ``show`` print them and say so."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.unit.report.builders import measured_level, record, result, store_run
from variantctl.render.bisect import _value
from variantctl.report.labels import LABEL_MAX, labels
from variantctl.report.model import RunInput
from variantctl.runs.store import RunStore
from variantctl.secretmask import DEFAULT, MASK, SecretRule, masked_record
from variantctl.sweeps.bisect import settings_between

Run = Callable[..., CliResult]
TOKEN_A, TOKEN_B = "hf_aaaaSECRETaaaa123", "hf_bbbbSECRETbbbb456"
CRED_A, CRED_B = "cred-one-1111", "cred-two-2222"


@pytest.mark.parametrize(("name", "secret"), [
    ("HF_TOKEN", True), ("OPENAI_API_KEY", True), ("api-key", True), ("--api-key", True),
    ("DB_PASSWORD", True), ("MY_SECRET_SAUCE", True), ("hf_token", True),
    ("VLLM_ATTENTION_BACKEND", False), ("max-num-seqs", False), ("MY_CRED", False),
])
def test_the_documented_rule(name: str, secret: bool) -> None:
    assert DEFAULT.is_secret(name) is secret
    assert SecretRule(("MY_*",)).is_secret("MY_CRED")
    assert DEFAULT.is_secret_setting("env.HF_TOKEN") and DEFAULT.is_secret_setting("args.api-key")
    assert not DEFAULT.is_secret_setting("env.VLLM_ATTENTION_BACKEND")


def _run(run_id: str, name: str, token: str, cred: str, slow: float) -> RunInput:
    rec = record(run_id, name, env={"HF_TOKEN": token, "VLLM_X": name},
                 args={"max-num-seqs": 2, "my-cred": cred})
    return RunInput(rec, (("b1.json", result(
        [measured_level(1, s, slow=slow, repeat=s) for s in range(3)])),))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    (p / "variants" / "hosts.yaml").write_text("secrets: [MY_CRED]\n")
    store = RunStore(p / "runs")
    for r in (_run("aaaaaaaaaa-1", "one", TOKEN_A, CRED_A, 1.0),
              _run("bbbbbbbbbb-1", "two", TOKEN_B, CRED_B, 1.3)):
        store_run(store, r.record, [res for _, res in r.results])
    return p


def _no_secret(text: str) -> None:
    for s in (TOKEN_A, TOKEN_B, CRED_A, CRED_B, "SECRET", "cred-"):
        assert s not in text, s


def test_compare_says_that_a_secret_differs_never_what(run_cli: Run, project: Path) -> None:
    res = run_cli(["compare", "aaaa", "bbbb"], project=project)
    assert res.code == 0, res.output
    _no_secret(res.output)
    also = next(line for line in res.stdout.splitlines() if line.startswith("also differs"))
    assert "env.HF_TOKEN (secret: ***)" in also and "args.my-cred (secret: ***)" in also
    res = run_cli(["compare", "aaaa", "bbbb", "--json"], project=project)
    _no_secret(res.output)
    doc = json.loads(res.stdout)["compare"]
    assert {"group": "env", "key": "HF_TOKEN", "a": MASK, "b": MASK, "a_text": MASK,
            "b_text": MASK} in doc["also_differs"]
    assert not any(c["key"] in ("HF_TOKEN", "my-cred") for c in doc["changes"])


def test_report_labels_and_files_hold_no_secret(run_cli: Run, project: Path,
                                               tmp_path: Path) -> None:
    out = tmp_path / "rep"
    for fmt in ("md", "html"):
        res = run_cli(["report", "aaaa", "bbbb", "--format", fmt, "--out", str(out / fmt)],
                      project=project)
        assert res.code == 0, res.output
        _no_secret(res.output)
        for f in (out / fmt).rglob("*"):
            if f.is_file():
                _no_secret(f.read_text("utf-8", "replace"))
    runs = [_run("aaaaaaaaaa-1", "one", TOKEN_A, CRED_A, 1.0),
            _run("bbbbbbbbbb-1", "two", TOKEN_B, CRED_B, 1.3)]
    got = labels(runs, SecretRule(("MY_CRED",)))
    assert got["aaaaaaaaaa-1"] == "my-cred=*** HF_TOKEN=*** VLLM_X=one"


def test_runs_show_masks_the_record(run_cli: Run, project: Path) -> None:
    for extra in ([], ["--json"]):
        res = run_cli(["runs", "show", "aaaa", *extra], project=project)
        assert res.code == 0, res.output
        _no_secret(res.output)
    rec = record("aaaaaaaaaa-1", "one", env={"HF_TOKEN": TOKEN_A}).to_json()
    rec["script"] = f"export HF_TOKEN={TOKEN_A}\nexec vllm serve\n"
    shown = masked_record(rec)
    assert shown["variant"]["env"]["HF_TOKEN"] == MASK
    assert shown["script"] == "export HF_TOKEN=***\nexec vllm serve\n"
    assert rec["variant"]["env"]["HF_TOKEN"] == TOKEN_A  # the record itself is untouched


def test_bisect_settings_are_shown_masked_and_used_as_they_are() -> None:
    a = {"args": {"api-key": "k-aaaa"}, "env": {"HF_TOKEN": TOKEN_A, "X": "1"}}
    b = {"args": {"api-key": "k-bbbb"}, "env": {"HF_TOKEN": TOKEN_B, "X": "2"}}
    settings, _ = settings_between(a, b)
    by = {s.label: s for s in settings}
    assert by["env.HF_TOKEN"].b == TOKEN_B  # what the round launches
    assert by["env.HF_TOKEN"].to_json() == {"setting": "env.HF_TOKEN", "a": MASK, "b": MASK,
                                            "secret": True}
    assert _value(by["args.api-key"].shown(by["args.api-key"].a)) == MASK
    assert by["env.X"].to_json() == {"setting": "env.X", "a": "1", "b": "2"}


def test_hosts_yaml_secrets_list_is_validated(run_cli: Run, tmp_path: Path) -> None:
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    (p / "variants" / "hosts.yaml").write_text("secrets: [ok_name, 'bad name!']\n")
    (p / "variants" / "v.yaml").write_text("name: tok\ncommand: [vllm, serve]\nmodel: m\n")
    res = run_cli(["show", "tok"], project=p)
    assert res.code == 2, res.output
    assert "hosts.yaml:1" in res.stderr and "secrets" in res.stderr


def test_render_and_show_say_they_print_secrets(run_cli: Run, tmp_path: Path) -> None:
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    (p / "variants" / "v.yaml").write_text(
        "name: tok\ncommand: [vllm, serve]\nmodel: m\nenv: {HF_TOKEN: " + TOKEN_A + "}\n")
    for cmd in (["render", "tok"], ["show", "tok"]):
        res = run_cli(cmd, project=p)
        assert res.code == 0, res.output
        assert TOKEN_A in res.stdout  # what launch runs
        assert "secrets included (HF_TOKEN)" in res.stderr


def test_a_long_label_is_cut_with_an_ellipsis() -> None:
    runs = [RunInput(record(f"{c * 10}-1", c, args={f"opt-{i}": f"{c}{i}" for i in range(1000)}),
                     ()) for c in "ab"]
    got = labels(runs)
    assert all(len(v) == LABEL_MAX and v.endswith("…") for v in got.values())
