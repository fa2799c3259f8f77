"""The status cache writes through the one atomic-write helper (Target.write_atomic)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from variantctl.targets.local import LocalTarget
from variantctl.targets.statecache import CachedState, JsonStateCache

ANSWER = CachedState(state="applied", error=None, error_line=None, ops=())


def test_save_goes_through_target_write_atomic(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = LocalTarget.write_atomic

    def spy(self: LocalTarget, path: str, data: bytes) -> None:
        calls.append(path)
        real(self, path, data)

    monkeypatch.setattr(LocalTarget, "write_atomic", spy)
    path = tmp_path / "patch-status.json"
    cache = JsonStateCache(path)
    cache.put("k", ANSWER)
    cache.save()
    cache.save()  # nothing new: not written again
    assert calls == [str(path)]
    assert JsonStateCache(path).get("k") == ANSWER  # what the next status reads
    assert json.loads(path.read_text("utf-8")) == {"engine": cache.engine,
                                                   "entries": {"k": ANSWER.to_json()}}


def test_another_engines_answers_are_not_used(tmp_path: Path) -> None:
    """An upgraded variantctl (other patching source) ignores the old answers: how a
    state is decided may have changed. The older flat file counts as another engine."""
    path = tmp_path / "patch-status.json"
    old = JsonStateCache(path, engine="old")
    old.put("k", ANSWER)
    old.save()
    assert JsonStateCache(path, engine="old").get("k") == ANSWER
    assert JsonStateCache(path).get("k") is None
    path.write_text(json.dumps({"k": ANSWER.to_json()}))
    assert JsonStateCache(path).get("k") is None


def test_the_engine_fingerprint_follows_the_patching_source(tmp_path: Path) -> None:
    import variantctl
    from variantctl.targets.statecache import engine_fingerprint, source_fingerprint

    pkg = tmp_path / "patching"
    pkg.mkdir()
    (pkg / "decide.py").write_text("APPLIED = 1\n")
    first = source_fingerprint("0.1.0", pkg)
    assert source_fingerprint("0.1.0", pkg) == first
    (pkg / "decide.py").write_text("APPLIED = 2\n")  # the decision changed
    assert source_fingerprint("0.1.0", pkg) != first
    assert source_fingerprint("0.2.0", pkg) != source_fingerprint("0.1.0", pkg)
    assert engine_fingerprint() == source_fingerprint(
        variantctl.__version__, Path(variantctl.__file__).parent / "patching")


def test_a_link_at_the_cache_path_is_left_alone(tmp_path: Path) -> None:
    """The helper refuses links: the cache is then simply not kept (os.replace used to
    swap the link for a regular file)."""
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("{}")
    path = tmp_path / "patch-status.json"
    path.symlink_to(elsewhere)
    cache = JsonStateCache(path)
    cache.put("k", ANSWER)
    cache.save()  # no exception: a cache that cannot be written is not kept
    assert path.is_symlink() and os.readlink(path) == str(elsewhere)
    assert elsewhere.read_text() == "{}"


def test_a_cache_that_cannot_be_written_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "patch-status.json"
    path.mkdir()  # something that is not a file is in the way
    cache = JsonStateCache(path)
    cache.put("k", ANSWER)
    cache.save()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["patch-status.json"]
    assert path.is_dir()


@pytest.mark.parametrize("entry", [
    {"state": 3, "error": None, "error_line": None, "ops": []},
    {"state": "applied", "ops": [{"id": "x"}]},
    {"state": "applied", "error": None, "error_line": "7", "ops": []},
    ["applied"],
])
def test_a_cache_entry_of_another_shape_is_a_miss(tmp_path: Path, entry: object) -> None:
    """A damaged entry is parsed again, never a KeyError in status (exit 70 before the
    entries were a typed value, issue 18.5)."""
    path = tmp_path / "patch-status.json"
    cache = JsonStateCache(path)
    path.write_text(json.dumps({"engine": cache.engine, "entries": {"k": entry}}))
    assert cache.get("k") is None
