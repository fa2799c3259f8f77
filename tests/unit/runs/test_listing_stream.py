"""``runs --json`` writes its rows in batches (issue 27 item 8: memory flat in the number
of runs listed): the text is exactly the one document ``json_text`` makes."""

from __future__ import annotations

from pathlib import Path

import pytest

from variantctl.jsontypes import Json
from variantctl.render.output import json_list_chunks, json_text

CASES: list[list[Json]] = [
    [],
    [{"run_id": "a-1", "facts": {}, "benchmarks": [], "signature": None}],
    [{"verdict": "ready", "text": "x\u0085\u009b\ny\x7f"}, {"nested": {"l": [1, [2, {}]]}},
     3, "s", None],
    [{"i": i, "dir": f"/runs/{i}"} for i in range(600)],
]


@pytest.mark.parametrize("items", CASES)
@pytest.mark.parametrize("batch", [1, 2, 256])
def test_chunks_are_the_whole_document(items: list[Json], batch: int) -> None:
    assert "".join(json_list_chunks("runs", items, batch)) == json_text({"runs": items})


def test_values_json_cannot_hold_are_written_as_text() -> None:
    items: list[Json] = [{"path": Path("/x")}]  # type: ignore[dict-item]
    assert "".join(json_list_chunks("runs", items)) == json_text({"runs": items})
