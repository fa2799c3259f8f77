"""One loaded project per command (issue 18.1): every part read once, the same signature
catalog for every diagnosis (the project's signatures/ and VARIANTCTL_SIGNATURES)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import make_env
from variantctl.env import Environment
from variantctl.project.loaded import Project

SIG = """\
signatures:
  - id: {id}
    title: A site rule
    kind: failed
    keywords: [{kw}]
    patterns: ['{kw}']
    message: site rule
    remediation: ask the on-call
"""


def _project(root: Path) -> Path:
    (root / "variants").mkdir(parents=True)
    (root / "patchsets").mkdir()
    (root / "variants" / "hosts.yaml").write_text("gpu:\n  workdir: /srv/w\n")
    (root / "variants" / "a.yaml").write_text("model: m\nhost: gpu\n")
    (root / "signatures").mkdir()
    (root / "signatures" / "site.yaml").write_text(SIG.format(id="site-rule",
                                                              kw="acme licence expired"))
    return root


def test_every_part_is_loaded_once_and_shared(tmp_path: Path) -> None:
    project = Project(make_env(_project(tmp_path / "p"), tmp_path / "cache"))
    assert project.variants is project.variants
    assert project.signatures is project.signatures
    assert project.runs is project.runs
    assert project.resolve("a").host == "gpu"
    assert set(project.hosts) == {"local", "gpu"}  # the catalog's hosts, once loaded
    ctx = project.launch_context()
    # the launch diagnoses with the command's one catalog: the project's signature in it
    assert ctx.signatures is project.signatures
    assert ctx.signatures.get("site-rule") is not None
    assert ctx.runs is project.runs and ctx.known_patchsets == ()


def test_extra_signature_directories_come_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path / "p")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "more.yaml").write_text(SIG.format(id="more-rule", kw="quota exceeded"))
    monkeypatch.setenv("VARIANTCTL_SIGNATURES", os.pathsep.join([str(extra), ""]))
    monkeypatch.chdir(root)
    env = Environment.from_process()
    assert env.signature_dirs == (extra,)
    project = Project(env)
    assert project.signature_dirs == (root / "signatures", extra)
    assert project.signatures.get("more-rule") is not None
    assert project.signatures.get("site-rule") is not None
    # classify --signatures DIR replaces the environment's list (click reads the variable
    # itself when no option is given)
    only = Project(env, [root / "signatures"])
    assert only.signature_dirs == (root / "signatures",)
    assert only.signatures.get("more-rule") is None
