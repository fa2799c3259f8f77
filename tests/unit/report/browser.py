"""Open an HTML report in headless Chromium: a screenshot and the console's messages.

Debian's ``chromium`` (installed by ``scripts/ensure-chromium.sh``, which ``make
test`` runs). Console messages are read from Chromium's own log on stderr
(``INFO:CONSOLE``); "the plots are drawn" is read from the screenshot's pixels:
matplotlib's first two line colours must cover a visible area.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pytest
from PIL import Image

#: matplotlib's default first and second colours (tab:blue, tab:orange)
BLUE, ORANGE = (31, 119, 180), (255, 127, 14)
_CONSOLE = re.compile(r":(INFO|WARNING|ERROR|FATAL):CONSOLE[^\]]*\] (?P<msg>.*)")


@dataclass(frozen=True)
class PageShot:
    screenshot: Path
    console: tuple[str, ...]
    stderr: str

    @cached_property
    def _colours(self) -> list[tuple[int, tuple[int, int, int]]]:
        """(count, colour) of every colour of the screenshot, read once (the page is
        1200 × 7000 pixels: a histogram per question would cost a second each)."""
        img = Image.open(self.screenshot).convert("RGB")
        return img.getcolors(maxcolors=1 << 24) or []

    def pixels_near(self, colour: tuple[int, int, int], tolerance: int = 40) -> int:
        count = 0
        for n, (r, g, b) in self._colours:
            if abs(r - colour[0]) + abs(g - colour[1]) + abs(b - colour[2]) <= tolerance:
                count += n
        return count


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is missing: run `make chromium` (make test does it) or "
                    "scripts/ensure-chromium.sh")
    return exe


def screenshot(html: Path, out: Path, width: int = 1200, height: int = 7000) -> PageShot:
    """Render ``html`` headless into ``out`` (PNG); the console messages it printed."""
    proc = subprocess.run(
        [chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--disable-extensions", f"--user-data-dir={out.parent / 'chrome'}",
         "--enable-logging=stderr", "--v=0", f"--window-size={width},{height}",
         f"--screenshot={out}", html.resolve().as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and out.is_file(), proc.stderr[-3000:]
    console = tuple(m.group("msg") for m in map(_CONSOLE.search, proc.stderr.splitlines())
                    if m)
    return PageShot(out, console, proc.stderr)
