"""report.md is inert (issue 19 item 12): HTML and links in a log excerpt, an env value
or a title are escaped by the Markdown writer, as the HTML writer escapes them."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult
from tests.unit.report.builders import level, record, result, store_run, write_json
from variantctl.report.build import ReportDoc, Section
from variantctl.report.markdown import md_text, render_markdown
from variantctl.report.tables import Table
from variantctl.runs.store import RunStore

Cli = Callable[..., CliResult]
SCRIPT = "<script>alert(1)</script>"
IMG = '<img src=x onerror="alert(2)">'
LINK = "[click](javascript:alert(3))"


def assert_inert(md: str) -> None:
    assert "<script" not in md and "<img" not in md
    assert not re.search(r"(?<!\\)\]\(javascript", md)  # a live link: an unescaped "]("


def test_every_text_of_a_document_is_escaped() -> None:
    doc = ReportDoc(title=f"T {SCRIPT}", subtitle=IMG, sections=(Section(
        title=f"S {IMG}", paragraphs=(f"p {SCRIPT} {LINK} &amp;",),
        tables=(Table(title=SCRIPT, headers=("h", IMG), rows=((SCRIPT, f"a|b {LINK}"),),
                      note=IMG),)),))
    md = render_markdown(doc)
    assert_inert(md)
    assert "# T &lt;script&gt;alert(1)&lt;/script&gt;" in md
    assert "[click\\](javascript:alert(3))" in md
    assert "&amp;amp;" in md  # an entity in the text stays text, not a character
    assert "| &lt;script&gt;alert(1)&lt;/script&gt; | a\\|b [click\\]" in md


def test_control_characters_are_made_visible() -> None:
    assert md_text("a\x1b]0;t\x07b\\c") == "a\\\\x1b]0;t\\\\x07b\\\\c"


def test_brackets_that_make_no_link_stay() -> None:
    assert md_text("levels[0].metrics [note]") == "levels[0].metrics [note]"
    assert md_text("[a][r] [r]: javascript:x ![i](s)") == "[a\\][r] [r\\]: javascript:x ![i\\](s)"


def test_a_report_of_hostile_runs_writes_no_live_html(run_cli: Cli, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "variants").mkdir(parents=True)
    store = RunStore(project / "runs")
    store_run(store, record("aaaaaaaaaa-1", "good"), [result([
        level(1, agg=8.0, ttft_p90_ms=100.0, tps_p10=8.0, tps_p50=8.5)])])
    store_run(store, record("bbbbbbbbbb-1", "bad", verdict="failed", signature="sig",
                            evidence=((3, f"ValueError: {SCRIPT} {IMG}"),),
                            remediation=LINK))
    # a sweep whose point sets an env value, and a skip whose message quotes a log
    write_json(project / "runs" / "sweeps" / "evil.json", {
        "schema": "variantctl.sweep/1", "sweep": "evil", "status": "done", "points": [
            {"index": 1, "name": "good@evil-01", "status": "measured",
             "run_id": "aaaaaaaaaa-1", "values": {"env.X_SETTING": IMG}},
            {"index": 2, "name": "bad@evil-02", "status": "failed", "run_id": "bbbbbbbbbb-1",
             "verdict": "failed"},
            {"index": 3, "name": "good@evil-03", "status": "skipped",
             "skip": {"reason": "predicted", "rule": "r", "signature": "s",
                      "message": f"log says {SCRIPT}"}}]})
    out = project / "rep"
    res = run_cli(["report", "evil", "--out", str(out), "--title", f"t {SCRIPT}"],
                  project=project)
    assert res.code == 0, res.output
    md = (out / "report.md").read_text()
    assert "log:3: ValueError: &lt;script&gt;alert(1)&lt;/script&gt; &lt;img" in md
    assert 'env.X_SETTING=&lt;img src=x onerror="alert(2)"&gt;' in md
    assert "log says &lt;script&gt;" in md
    assert "# t &lt;script&gt;" in md
    assert_inert(md)
    # the HTML report stays inert as it was
    res = run_cli(["report", "evil", "--out", str(project / "h"), "--format", "html",
                   "--title", f"t {SCRIPT}"], project=project)
    assert res.code == 0, res.output
    html = (project / "h" / "report.html").read_text()
    assert "<script" not in html and "<img src=x" not in html
