"""``check --connect``: the SSH hosts' own facts (profile points of their vLLM, the
model's config.json) over real SSH; without the flag ``check`` never connects, and
a host that cannot be read is a warning naming it, not a failed check."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.prof_project import prof_project
from tests.support.sshd import SshLab, free_port

pytestmark = pytest.mark.ssh

SAMPLE = "class Runner:\n    def execute_model(self, x):\n        return x\n"


def test_check_connect_reads_the_ssh_hosts(run_cli, tmp_path: Path,  # type: ignore[no-untyped-def]
                                           ssh_lab: SshLab) -> None:
    project, root = tmp_path / "project", tmp_path / "remote-root"
    prof_project(project, root, SAMPLE)
    # a model whose config.json the max-model-len rule reads (on the host, over SFTP)
    model = tmp_path / "remote-model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"max_position_embeddings": 2048}))
    dead = tmp_path / "dead_config"
    dead.write_text(f"Host dead\n  HostName 127.0.0.1\n  Port {free_port()}\n  User root\n")
    (project / "variants" / "hosts.yaml").write_text(
        f"gpu1:\n  ssh:\n    alias: gpu1\n    config: {ssh_lab.ssh_config}\n"
        f"  python: {sys.executable}\n  workdir: {tmp_path / 'work'}\n"
        f"  site_roots: [{root}]\n"
        f"dead:\n  ssh:\n    alias: dead\n    config: {dead}\n"
        f"  python: {sys.executable}\n  site_roots: [{root}]\n")
    (project / "variants" / "v.yaml").write_text(
        f"host: gpu1\nmodel: {model}\nport: 8000\nrequires: [prof]\n"
        "args:\n  max-model-len: 4096\n")
    (project / "variants" / "w.yaml").write_text(
        "host: dead\nmodel: some/model\nport: 8001\nrequires: [prof]\n")

    offline = run_cli(["check", "v", "w", "--json"], project=project)
    assert offline.code == 0, offline.output
    rules = {f["rule"] for f in json.loads(offline.stdout)["findings"]}
    assert "profile-points-missing" not in rules and "host-unreadable" not in rules

    online = run_cli(["check", "v", "w", "--connect", "--json"], project=project)
    doc = json.loads(online.stdout)
    by_rule = {(f["variant"], f["rule"]): f for f in doc["findings"]}
    missing = by_rule[("v", "profile-points-missing")]
    assert missing["severity"] == "warning"
    assert f"MultiStep.execute_model in {root}" in missing["message"]
    assert "Runner.execute_model," not in missing["message"]  # that point exists
    # the model's config.json was read on the host: 4096 > 2048 is the usual error
    assert any(v == "v" and f["severity"] == "error" and "2048" in f["message"]
               for (v, _), f in by_rule.items()), doc["findings"]
    assert online.code == 1, online.output
    unreadable = by_rule[("w", "host-unreadable")]
    assert unreadable["severity"] == "warning"
    assert "host dead could not be read" in unreadable["message"]
