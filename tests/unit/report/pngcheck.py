"""What the report tests check of a PNG the report drew."""

from __future__ import annotations

import io

from PIL import Image


def png_ok(data: bytes) -> tuple[int, int]:
    """``data`` is a PNG with a drawn plot on it; its size."""
    img = Image.open(io.BytesIO(data))
    assert img.format == "PNG"
    # a drawn plot has axes, markers, lines and text: many colours, not a blank canvas
    colours = img.convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 50
    return img.size
