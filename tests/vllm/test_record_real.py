"""The real tier of `patch record`: the vLLM CPU 0.32.0 arg_utils.py (files only, no
server) edited by hand, recorded, verified, tried on the second CoreX copy and on the
released arg_utils.py of five other versions (the wheel cache test_patch_real fills),
adopted and rolled back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.vllm.test_patch_real import REL, _project, _release_source, _roots, vendorise
from variantctl.patching.engine import analyze, normalise
from variantctl.patching.record import record

pytestmark = pytest.mark.vllm

OTHER_RELEASES = ("0.6.3", "0.7.3", "0.8.5", "0.9.2", "0.10.2")


def test_the_seed_edit_on_the_real_file_records_as_shipped(vllm_site_packages: Path) -> None:
    from tests.conftest import REPO
    from variantctl.config.patchsets import load_patchset

    upstream = (vllm_site_packages / REL).read_bytes()
    vendor = vendorise(upstream.decode()).encode()
    rec = record("vllm.engine.arg_utils", vendor, upstream)
    shipped = load_patchset(REPO / "patchsets", "eager-allreduce")
    shape = [(o.kind, o.callee, o.keyword, normalise(o.from_ or ""), normalise(o.to or ""))
             for o in rec.operations]
    assert shape == [(o.kind, o.callee, o.keyword, normalise(o.from_ or ""),
                      normalise(o.to or "")) for o in shipped.operations]
    assert [o.from_ for o in rec.operations] == ["True", "True"]


def test_a_rewritten_method_of_the_real_file_is_recorded_whole(vllm_site_packages: Path
                                                               ) -> None:
    upstream = (vllm_site_packages / REL).read_text("utf-8")
    anchor = "    def create_engine_config(\n"
    assert upstream.count(anchor) == 1
    # a statement added at the top of the method's body
    head_end = upstream.index(":\n", upstream.index(anchor)) + 2
    body_indent = "        "
    edited = upstream[:head_end] + f"{body_indent}print('hand edit')\n" + upstream[head_end:]
    rec = record("vllm.engine.arg_utils", upstream.encode(), edited.encode())
    assert [(o.kind, o.function) for o in rec.operations] == [
        ("replace-function", "EngineArgs.create_engine_config")]
    assert analyze(rec.operations, upstream.encode()).new_data == edited.encode()


def test_record_on_the_real_file_travels_to_the_other_copy_and_releases(  # type: ignore[no-untyped-def]
        tmp_path: Path, run_cli, vllm_site_packages: Path) -> None:
    upstream = (vllm_site_packages / REL).read_text("utf-8")
    roots = _roots(tmp_path, vendorise(upstream))
    project = _project(tmp_path)
    edited = roots[0] / REL
    backup = edited.with_name("arg_utils.py.bak_20250101_eager")
    backup.write_bytes(edited.read_bytes())
    edited.write_text(upstream, "utf-8")
    releases = []
    for version in OTHER_RELEASES:
        path = tmp_path / f"arg_utils-{version}.py"
        path.write_text(vendorise(_release_source(version)), "utf-8")
        releases.append(path)
        # --check-releases reads the released file from variantctl's release cache
        # (run_cli's cache is tmp_path/cache): seeded from the test cache, no download
        seeded = tmp_path / "cache" / "releases" / f"vllm-{version}" / REL
        seeded.parent.mkdir(parents=True)
        seeded.write_text(_release_source(version), "utf-8")
    args = [a for r in roots for a in ("--root", str(r))]
    r: CliResult = run_cli(["patch", "record", "eager-allreduce-mine", "--module",
                            "vllm.engine.arg_utils", "--from", str(backup), *args,
                            *[a for p in releases for a in ("--check-against", str(p))],
                            "--check-releases", ",".join(OTHER_RELEASES), "--json"],
                           project=project)
    assert r.code == 0, r.output
    verdicts = {c["where"]: c["verdict"] for c in json.loads(r.stdout)["copies"]}
    assert verdicts[str(roots[1])] == "applies"
    # from 0.6.2 on, ModelConfig(...) is built in create_model_config as in 0.32.0: the
    # vendor-style copies take it; the upstream releases already have it
    assert [verdicts[str(p)] for p in releases] == ["applies"] * len(releases)
    assert [verdicts[f"vllm=={v}"] for v in OTHER_RELEASES] == ["already applied"] * len(
        OTHER_RELEASES)
    r = run_cli(["apply", "eager-allreduce-mine", *args], project=project)
    assert r.code == 0, r.output
    assert (roots[1] / REL).read_text("utf-8") == upstream
    r = run_cli(["rollback", "eager-allreduce-mine", *args], project=project)
    assert r.code == 0, r.output
    assert [(root / REL).read_text("utf-8") for root in roots] == [vendorise(upstream)] * 2


def test_scan_of_the_real_venv_finds_every_file_as_installed(  # type: ignore[no-untyped-def]
        tmp_path: Path, run_cli, vllm_site_packages: Path) -> None:
    project = _project(tmp_path)
    r: CliResult = run_cli(["status", "--scan", "vllm", "--root", str(vllm_site_packages),
                            "--json"], project=project)
    assert r.code == 0, r.output
    (scan,) = json.loads(r.stdout)["roots"]
    assert scan["problem"] is None and scan["checked"] > 1000 and scan["files"] == []
