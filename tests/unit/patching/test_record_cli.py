"""`patch record` end to end on two fixture roots: the seeds' hand edit, recorded,
tried on the other copy and another release, adopted, applied and rolled back."""

from __future__ import annotations

import json
from pathlib import Path

from tests.unit.patching.conftest import EAGER, REL, root_args
from variantctl.config.patchsets import load_patchset_file
from variantctl.patching.engine import normalise

CASE = EAGER / "v062_model_config"


def _hand_edit(root: Path) -> Path:
    """What the seeds did: keep a backup, then edit the installed file."""
    target = root / REL
    backup = target.with_name("arg_utils.py.bak_20250101_eager")
    backup.write_bytes(target.read_bytes())
    target.write_bytes((CASE / "after.py").read_bytes())
    return backup


def test_the_seed_story_recorded_applied_and_rolled_back(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    vendor = (CASE / "before.py").read_bytes()
    roots = make_roots(vendor)
    backup = _hand_edit(roots[0])
    other_release = EAGER / "v055_engine_config"
    r = run_cli(["patch", "record", "eager-allreduce-mine", "--module", "vllm.engine.arg_utils",
                 "--from", str(backup), *root_args(roots), "--check-against",
                 str(other_release / "before.py"), "--check-against",
                 str(other_release / "after.py"), "--json"], project=project)
    assert r.code == 0, r.output
    report = json.loads(r.stdout)
    assert [(c["where"], c["verdict"]) for c in report["copies"]] == [
        (str(roots[1]), "applies"), (str(other_release / "before.py"), "drifted"),
        (str(other_release / "after.py"), "drifted")]
    # the recorded within is the narrowest (create_model_config): 0.5.5 builds
    # ModelConfig elsewhere, and the report says where it stopped matching
    assert report["copies"][1]["line"] is None or report["copies"][1]["line"] > 0
    ps = load_patchset_file(project / "patchsets" / "eager-allreduce-mine.yaml")
    shipped = load_patchset_file(project / "patchsets" / "eager-allreduce.yaml")
    assert ([(o.kind, o.callee, o.keyword, normalise(o.from_ or ""), normalise(o.to or ""))
             for o in ps.operations]
            == [(o.kind, o.callee, o.keyword, normalise(o.from_ or ""), normalise(o.to or ""))
                for o in shipped.operations])
    # adopted: the edited copy reads as applied, the other as pristine
    r = run_cli(["status", "eager-allreduce-mine", *root_args(roots), "--json"],
                project=project)
    files = json.loads(r.stdout)["reports"][0]["files"]
    assert [f["state"] for f in files] == ["applied", "pristine"]
    r = run_cli(["apply", "eager-allreduce-mine", *root_args(roots)], project=project)
    assert r.code == 0, r.output
    assert (roots[1] / REL).read_bytes() == (CASE / "after.py").read_bytes()
    r = run_cli(["rollback", "eager-allreduce-mine", *root_args(roots)], project=project)
    assert r.code == 0, r.output
    assert [(root / REL).read_bytes() for root in roots] == [vendor, vendor]
    assert backup.read_bytes() == vendor  # the user's own backup is kept


def test_record_refuses_bad_input_and_writes_nothing(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    roots = make_roots((CASE / "before.py").read_bytes(), n=1)
    backup = _hand_edit(roots[0])
    args = ["patch", "record", "mine", "--module", "vllm.engine.arg_utils", "--from",
            str(backup), *root_args(roots)]
    edited = (roots[0] / REL)
    good = edited.read_bytes()
    edited.write_bytes(good + b"\ndef broken(:\n")
    r = run_cli(args, project=project)
    assert r.code == 2 and "does not parse" in r.stderr and ":" in r.stderr
    assert not (project / "patchsets" / "mine.yaml").exists()
    edited.write_bytes(backup.read_bytes())
    r = run_cli(args, project=project)
    assert r.code == 2 and "no changes" in r.stderr
    edited.write_bytes(good)
    assert run_cli(args, project=project).code == 0
    r = run_cli(args, project=project)
    assert r.code == 2 and "exists" in r.stderr and "--force" in r.stderr
    assert sorted(p.name for p in (project / "patchsets").iterdir()) == [
        "eager-allreduce.yaml", "mine.yaml"]
