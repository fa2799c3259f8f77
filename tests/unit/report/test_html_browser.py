"""The HTML report in a real browser: plots drawn, no console errors (headless Chromium)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult
from tests.unit.report.browser import BLUE, ORANGE, screenshot
from tests.unit.report.builders import gpu, level, record, result, store_run
from variantctl.runs.store import RunStore


def test_html_report_draws_its_plots_in_chromium(run_cli: Callable[..., CliResult],
                                                 tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "variants").mkdir(parents=True)
    store = RunStore(project / "runs")
    for rid, name, scale in (("aaaaaaaaaa-1", "tp1", 1.0), ("bbbbbbbbbb-1", "tp2", 1.5)):
        store_run(store, record(rid, name), [result([
            level(c, agg=60 * c ** 0.7 * scale, ttft_p90_ms=40.0 * c, tps_p10=50 / c ** 0.3,
                  tps_p50=60 / c ** 0.3, devices=[gpu(20 + c / 3, 40 + c / 3, 20000, 100)])
            for c in (1, 8, 16, 32)])])
    out = tmp_path / "rep"
    res = run_cli(["report", "aaaa", "bbbb", "--format", "html", "--out", str(out)],
                  project=project)
    assert res.code == 0, res.output
    shot = screenshot(out / "report.html", tmp_path / "shot.png")
    assert shot.console == (), shot.console
    # five plots with two series each: both line colours drawn over a visible area
    # (a broken image or an unloaded data URI leaves none of either)
    assert shot.pixels_near(BLUE) > 800, shot.pixels_near(BLUE)
    assert shot.pixels_near(ORANGE) > 800, shot.pixels_near(ORANGE)


def test_the_console_check_sees_errors_and_the_pixel_check_sees_no_plot(
        tmp_path: Path) -> None:
    # the checks above must be able to fail: a page with a script error and a broken image
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body><img src="data:image/png;base64,AAAA">'
                    '<script>console.error("boom")</script></body></html>')
    shot = screenshot(page, tmp_path / "bad.png", height=600)
    assert any("boom" in m for m in shot.console)
    assert shot.pixels_near(BLUE) == 0


def test_html_report_of_a_tune_draws_its_curve_in_chromium(
        run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    from tests.unit.report.test_tune_report import tune_state

    project = tmp_path / "proj"
    (project / "variants").mkdir(parents=True)
    RunStore(project / "runs").write_tune_state("t", tune_state())
    out = tmp_path / "rep"
    res = run_cli(["report", "--tune", "t", "--format", "html", "--out", str(out)],
                  project=project)
    assert res.code == 0, res.output
    shot = screenshot(out / "report.html", tmp_path / "shot.png", height=2000)
    assert shot.console == (), shot.console
    # the trials' markers (blue) and the best-so-far step (orange) are drawn: a broken
    # image or an unloaded data URI leaves neither
    assert shot.pixels_near(BLUE) > 100, shot.pixels_near(BLUE)
    assert shot.pixels_near(ORANGE) > 500, shot.pixels_near(ORANGE)
