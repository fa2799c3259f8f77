"""The status cache writes through the one atomic-write helper (Target.write_atomic)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from variantctl.targets.local import LocalTarget
from variantctl.targets.statecache import JsonStateCache

ANSWER: dict[str, object] = {"state": "applied", "error": None, "error_line": None, "ops": []}


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
    assert json.loads(path.read_text("utf-8")) == {"k": ANSWER}


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
