"""Shell completion (``_VARIANTCTL_COMPLETE``): commands, options and the project's
variant, patchset, sweep and run names, through the installed console script as bash
asks for them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.report.builders import record, store_run
from variantctl.runs.store import RunStore

SCRIPT = Path(sys.executable).parent / "variantctl"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    (p / "variants" / "cpu-base.yaml").write_text("host: local\nmodel: /m\nport: 8000\n")
    (p / "variants" / "cpu-small.yaml").write_text("extends: cpu-base\nargs: {max-num-seqs: 2}\n")
    (p / "patchsets").mkdir()
    (p / "patchsets" / "eager-allreduce.yaml").write_text("name: eager-allreduce\n")
    (p / "sweeps").mkdir()
    (p / "sweeps" / "grid.yaml").write_text("variants: [cpu-base]\n")
    store = RunStore(p / "runs")
    store_run(store, record("aaaaaaaaaa-1", "cpu-base"))
    store_run(store, record("abbbbbbbbb-1", "cpu-small"))
    return p


def complete(project: Path, line: str) -> list[str]:
    """The candidates bash gets for ``line`` (the cursor at its end)."""
    words = line.split() + ([""] if line.endswith(" ") else [])
    env = {**os.environ, "_VARIANTCTL_COMPLETE": "bash_complete",
           "COMP_WORDS": " ".join(words), "COMP_CWORD": str(len(words) - 1)}
    env.pop("VARIANTCTL_PROJECT", None)
    out = subprocess.run([str(SCRIPT)], env=env, cwd=project, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    # bash_complete prints "type,value" lines
    return [ln.split(",", 1)[1] for ln in out.splitlines() if "," in ln]


def test_commands_options_and_project_names(project: Path) -> None:
    assert {"runs", "report", "rollback"} <= set(complete(project, "variantctl r"))
    assert complete(project, "variantctl runs ex") == ["export"]
    assert "--format" in complete(project, "variantctl runs export --fo")
    assert complete(project, "variantctl launch cpu") == ["cpu-base", "cpu-small"]
    assert complete(project, "variantctl show cpu-s") == ["cpu-small"]
    assert complete(project, "variantctl apply ") == ["eager-allreduce"]
    assert complete(project, "variantctl sweep ") == ["grid"]
    assert complete(project, "variantctl runs show ") == ["abbbbbbbbb-1", "aaaaaaaaaa-1"]
    assert complete(project, "variantctl compare aaaaaaaaaa-1 ab") == ["abbbbbbbbb-1"]
    assert complete(project, "variantctl report ") == ["grid", "abbbbbbbbb-1",
                                                        "aaaaaaaaaa-1"]


def test_the_bash_script_and_no_project(project: Path, tmp_path: Path) -> None:
    env = {**os.environ, "_VARIANTCTL_COMPLETE": "bash_source"}
    script = subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True,
                            timeout=60, check=True).stdout
    assert "complete -o nosort -F _variantctl_completion variantctl" in script
    (tmp_path / "empty").mkdir()
    assert complete(tmp_path / "empty", "variantctl launch ") == []
