"""Issue 8 on variants: deep inheritance, names as identities, values as written.

Each test here failed on the code before the fix: a 1,000-deep ``extends`` chain
hit the recursion limit (exit 70) and ``list`` re-resolved every ancestor per
variant; variant names came from file names unchecked and ``co l``/``co_l``/
``co;l`` shared one pid file; ``model: -evil`` rendered as ``--model -evil`` and a
NUL reached the script.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.unit.variants.conftest import write_project
from variantctl.config.hosts import builtin_local
from variantctl.runs.record import HostLayout, safe_name
from variantctl.variants import resolve as resolve_mod
from variantctl.variants.model import ResolvedVariant
from variantctl.variants.render import render_argv, render_script

RunCli = Callable[..., Any]


def _chain(root: Path, n: int) -> Path:
    files = {"v0.yaml": "args:\n  max-model-len: 100\ntags: t0\n"}
    for i in range(1, n):
        files[f"v{i}.yaml"] = f"extends: v{i - 1}\nargs:\n  max-num-seqs: {i}\n"
    return write_project(root, files)


# -- family 3: inheritance of any depth, list linear in the catalog ------------------

def test_an_extends_chain_of_1000_resolves(tmp_path: Path, run_cli: RunCli) -> None:
    project = _chain(tmp_path, 1000)
    res = run_cli(["show", "v999", "--json"], project=project)
    assert res.code == 0, res.output[-500:]
    shown = json.loads(res.stdout)
    shown = shown.get("variant", shown)
    assert shown["args"] == {"max-model-len": 100, "max-num-seqs": 999}
    assert shown["ancestors"][:2] == ["v998", "v997"] and shown["ancestors"][-1] == "v0"
    assert len(shown["ancestors"]) == 999


def test_an_extends_cycle_deep_in_a_long_chain_is_still_named(
        tmp_path: Path, run_cli: RunCli) -> None:
    project = _chain(tmp_path, 1200)
    (project / "variants" / "v0.yaml").write_text("extends: v1199\n")
    res = run_cli(["list"], project=project)
    assert res.code == 2
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert line == ("error: variants/v1.yaml:1:10: extends: extends cycle: v0 -> v1199 -> "
                    "v1198 -> v1197 -> v1196 -> ... (1191 more) -> v4 -> v3 -> v2 -> v1 -> v0")


def test_list_merges_each_variant_once(tmp_path: Path, run_cli: RunCli,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # linear in the catalog: every file is laid over its parents exactly once per
    # command (before: once per descendant, so a chain of n cost n*n/2 merges)
    calls: list[str] = []
    real = resolve_mod._Acc.apply

    def counting(self: Any, layer: Any) -> None:
        calls.append(layer.name)
        real(self, layer)

    monkeypatch.setattr(resolve_mod._Acc, "apply", counting)
    project = _chain(tmp_path, 300)
    res = run_cli(["list", "--json"], project=project)
    assert res.code == 0, res.output[-500:]
    assert sorted(calls) == sorted(f"v{i}" for i in range(300))


def test_diamonds_keep_their_merge_order(tmp_path: Path, run_cli: RunCli) -> None:
    project = write_project(tmp_path, {
        "base.yaml": "args:\n  max-model-len: 1\ntags: [b]\n",
        "left.yaml": "extends: base\nargs:\n  max-model-len: 2\ntags: [l]\n",
        "right.yaml": "extends: base\nargs:\n  max-model-len: 3\n  max-num-seqs: 3\n"
                      "tags: [r]\n",
        "top.yaml": "extends: [left, right]\ntags: [t, b]\n",
    })
    res = run_cli(["show", "top", "--json"], project=project)
    assert res.code == 0, res.output
    shown = json.loads(res.stdout)
    shown = shown.get("variant", shown)
    assert shown["args"] == {"max-model-len": 3, "max-num-seqs": 3}
    assert shown["tags"] == ["b", "l", "r", "t"]
    assert shown["ancestors"] == ["left", "right", "base"]


_LAUGHS = 'a0: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"a{i}: &{c} [" + ", ".join([f"*{p}"] * 9) + "]\n"
    for i, (p, c) in enumerate(zip("abcdefgh", "bcdefghi", strict=True), start=1))


@pytest.mark.parametrize("where,text,line", [
    ("variants/v.yaml", "description: x\ntags: &a [*a]\n", 2),
    ("variants/v.yaml", "tags: " + "[" * 500 + "]" * 500 + "\n", 1),
    ("variants/v.yaml", "description: x\nvendor:\n  backports: &b [*b]\n", 3),
    ("variants/hosts.yaml", "x: &h {python: *h}\n", 1),
    ("patchsets/p.yaml", "name: p\nmodule: m\noperations: &o [*o]\n", 3),
    ("sigs/s.yaml", "signatures: &s [{id: x, patterns: *s}]\n", 1),
    ("variants/v.yaml", _LAUGHS, 6),
])
def test_hostile_yaml_is_bad_input_in_every_file(
        tmp_path: Path, run_cli: RunCli, where: str, text: str, line: int) -> None:
    # before: exit 70 (RecursionError), or minutes and gigabytes for the laughs
    project = write_project(tmp_path, {"ok.yaml": "args: {}\n"})
    (project / where).parent.mkdir(exist_ok=True)
    (project / where).write_text(text)
    args = {"patchsets": ["patch", "show", "p"], "variants": ["list"],
            "sigs": ["classify", "--signatures", str(project / "sigs"), "-"]}[where.split("/")[0]]
    res = run_cli(args, project=project)
    assert res.code == 2, res.output
    first = res.stderr.splitlines()[0]
    assert first.startswith("error: ") and f"{where}:{line}:" in first, res.stderr


# -- family 5: names are identities --------------------------------------------------

@pytest.mark.parametrize("file_name", ["co l.yaml", "co;l.yaml", "-x.yaml", ".hidden.yaml",
                                       "a$(id).yaml", "é.yaml", "x" * 101 + ".yaml"])
def test_a_file_name_that_is_no_valid_variant_name_is_refused(
        tmp_path: Path, run_cli: RunCli, file_name: str) -> None:
    project = write_project(tmp_path, {"ok.yaml": "args: {}\n", file_name: "args: {}\n"})
    res = run_cli(["list"], project=project)
    assert res.code == 2
    text = " ".join(res.stderr.split())  # the console may wrap a long line
    assert text.startswith(f"error: variants/{file_name}:1:1: variant name ")
    assert "(from the file name) is not valid: use letters, digits" in text
    assert "at most 100 characters" in text and "hint: rename the file" in text


def test_names_that_differ_only_in_case_are_refused(tmp_path: Path, run_cli: RunCli) -> None:
    project = write_project(tmp_path, {"co.yaml": "args: {}\n", "x.yaml": "name: CO\n"})
    res = run_cli(["list"], project=project)
    assert res.code == 2
    assert "variants/x.yaml: variant 'CO' differs from 'co' (variants/co.yaml) only in case" \
        in res.stderr


def test_derived_file_names_are_injective() -> None:
    names = ["co l", "co_l", "co;l", "co%3Bl", "co%20l", "", "%", "_", ".", "-", "..",
             "a/b", "a%2Fb", "é", "e\u0301", "a\nb", "a\x00b", "A", "a", "a-1", "a.1"]
    derived = [safe_name(n) for n in names]
    assert len(set(derived)) == len(names)
    for d in derived:
        assert d and "/" not in d and not d.startswith((".", "-"))
        assert all(c.isascii() and (c.isalnum() or c in "_.-%") for c in d)
    # valid names keep their files (pid files written before the change still match)
    assert [safe_name(n) for n in ("co_l", "sched4-nochunk", "v1.2")] == [
        "co_l", "sched4-nochunk", "v1.2"]
    layout = HostLayout("/w")
    assert len({layout.pid_file(n) for n in names}) == len(names)
    assert len({layout.record(n) for n in names}) == len(names)
    assert len({layout.log(n, "20260714T101500Z") for n in names}) == len(names)
    assert len({layout.script(n, "20260714T101500Z") for n in names}) == len(names)


def test_a_variants_logs_are_matched_exactly() -> None:
    # `logs a` must not pick the log of variant `a-1` (a prefix test did)
    assert HostLayout.is_log_of("a", "a-20260714T101500Z.log")
    assert not HostLayout.is_log_of("a", "a-1-20260714T101500Z.log")
    assert HostLayout.is_log_of("a-1", "a-1-20260714T101500Z.log")
    assert not HostLayout.is_log_of("a", "a-20260714T101500Z.log.old")


def test_latest_log_ignores_other_variants_sharing_a_prefix(tmp_path: Path) -> None:
    from variantctl.launch.logs import latest_log
    from variantctl.targets.local import LocalTarget

    host = dataclasses.replace(builtin_local(), workdir=str(tmp_path))
    (tmp_path / "logs").mkdir()
    # `a-b-...` sorts after `a-2026...`: a prefix match took the other variant's log
    (tmp_path / "logs" / "a-b-20260714T101500Z.log").write_text("other variant\n")
    (tmp_path / "logs" / "a-20260101T000000Z.log").write_text("mine\n")
    path, record = latest_log(LocalTarget(), host, "a")
    assert path.endswith("/logs/a-20260101T000000Z.log") and record is None


# -- family 6: values reach the server as written, or are refused ------------------

@pytest.mark.parametrize("text,where,what", [
    ('model: "-evil"\n', "variants/v.yaml:1:8: model: ", "starts with '-'"),
    ('model: "${M}"\n', "variants/v.yaml:1:8: model: ", "starts with '-'"),
    ('model: "m\\0x"\n', "variants/v.yaml:1:8: model: ", "NUL character"),
    ('args:\n  served-model-name: "a\\0b"\n', "variants/v.yaml:2:22: args.served-model-name: ",
     "NUL character"),
    ('args:\n  served-model-name: ["a", "b\\0"]\n',
     "variants/v.yaml:2:28: args.served-model-name[1]: ", "NUL character"),
    ('env:\n  HF_HOME: "/x\\0/y"\n', "variants/v.yaml:2:12: env.HF_HOME: ", "NUL character"),
    ('command: ["python", "-m\\0", "x"]\n', "variants/v.yaml:1:21: command[1]: ",
     "NUL character"),
])
def test_values_that_cannot_reach_the_server_as_written_are_refused(
        tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch,
        text: str, where: str, what: str) -> None:
    monkeypatch.setenv("M", "--help")
    project = write_project(tmp_path, {"v.yaml": text})
    for args in (["render", "v"], ["list", "--json"]):
        res = run_cli(args, project=project)
        assert res.code == 2, res.output
        (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
        assert line.startswith(f"error: {where}") and what in line


def test_a_dash_model_on_a_hand_built_variant_renders_as_one_word() -> None:
    host = builtin_local()
    v = ResolvedVariant(name="v", model="-evil")
    argv = render_argv(v, host)
    assert "--model=-evil" in argv and "-evil" not in argv
    assert "'--model=-evil'" in render_script(v, host) or " --model=-evil " in render_script(
        v, host)
    with pytest.raises(ValueError):
        render_argv(dataclasses.replace(v, command=("vllm", "serve")), host)


def test_a_nul_on_a_hand_built_variant_never_reaches_the_script() -> None:
    host = builtin_local()
    for v in (ResolvedVariant(name="v", model="m\x00x"),
              ResolvedVariant(name="v", env={"A": "x\x00y"}),
              ResolvedVariant(name="v\nrm -rf ~")):
        with pytest.raises(ValueError):
            render_script(v, host)
