"""patch record --from-pip / --check-releases: the released file comes from the wheel
(pip download, here from a local wheel directory: no network), cached, and its
absence is said."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.unit.patching.conftest import EAGER, REL

CASE = EAGER / "v062_model_config"


@pytest.fixture
def wheelhouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local index of one vLLM 0.6.3 wheel whose arg_utils.py is the vendor text."""
    house = tmp_path / "wheelhouse"
    house.mkdir()
    with zipfile.ZipFile(house / "vllm-0.6.3-py3-none-any.whl", "w") as zf:
        zf.writestr(str(REL), (CASE / "before.py").read_bytes())
        zf.writestr("vllm-0.6.3.dist-info/METADATA",
                    "Metadata-Version: 2.1\nName: vllm\nVersion: 0.6.3\n")
        zf.writestr("vllm-0.6.3.dist-info/WHEEL",
                    "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                    "Tag: py3-none-any\n")
        zf.writestr("vllm-0.6.3.dist-info/RECORD", "")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(house))
    return house


def _installed_edited(root: Path, version: str) -> None:
    (root / REL).parent.mkdir(parents=True)
    (root / REL).write_bytes((CASE / "after.py").read_bytes())
    info = root / f"vllm-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")


def test_from_pip_records_against_the_released_file(project, tmp_path, run_cli,  # type: ignore[no-untyped-def]
                                                   wheelhouse) -> None:
    root = tmp_path / "site-packages"
    _installed_edited(root, "0.6.3")
    r = run_cli(["patch", "record", "mine", "--module", "vllm.engine.arg_utils", "--from-pip",
                 "--root", str(root), "--check-releases", "0.6.3,9.9.9", "--json"],
                project=project)
    assert r.code == 0, r.output
    report = json.loads(r.stdout)
    assert report["pristine"] == "vllm==0.6.3"
    assert [(c["where"], c["verdict"]) for c in report["copies"]] == [
        ("vllm==0.6.3", "applies"), ("vllm==9.9.9", "error")]
    assert "cannot get the released vllm==9.9.9" in report["copies"][1]["detail"]
    # the released text became the backup beside the adopted copy (a new file)
    backups = list((root / REL).parent.glob("arg_utils.py.bak_*"))
    assert [b.read_bytes() for b in backups] == [(CASE / "before.py").read_bytes()]
    # cached: the wheel itself is not kept
    cached = tmp_path / "cache" / "releases" / "vllm-0.6.3" / REL
    assert cached.read_bytes() == (CASE / "before.py").read_bytes()
    assert not list((tmp_path / "cache" / "releases").rglob("*.whl"))
    r = run_cli(["rollback", "mine", "--root", str(root)], project=project)
    assert r.code == 0, r.output
    assert (root / REL).read_bytes() == (CASE / "before.py").read_bytes()


def test_from_pip_says_when_the_release_cannot_be_had(project, tmp_path, run_cli,  # type: ignore[no-untyped-def]
                                                      wheelhouse) -> None:
    root = tmp_path / "site-packages"
    _installed_edited(root, "0.0.7")
    r = run_cli(["patch", "record", "mine", "--module", "vllm.engine.arg_utils", "--from-pip",
                 "--root", str(root)], project=project)
    assert r.code == 2
    assert "cannot get the released vllm==0.0.7" in r.stderr and "--from BACKUP" in r.stderr
    assert not (project / "patchsets" / "mine.yaml").exists()
