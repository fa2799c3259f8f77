"""What renderers return: blocks of output, each saying which stream it belongs on.

Renderers build these and never print; the CLI prints them in order
(:func:`variantctl.terminal.output.emit`). A report that puts its table on stdout and
its problems on stderr is one list of blocks, so the interleaving a person sees on a
terminal is decided here, once, not by the order of print calls in each command.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from variantctl.jsontypes import Json
from variantctl.logs.bounded import clipped, clipped_lines, visible_lines

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.text import Text


@dataclass(frozen=True)
class Block:
    """One renderable (or text) and how to print it.

    ``markup``/``highlight``/``soft_wrap`` are rich's ``Console.print`` options; None
    means the console's default (markup and highlighting on, long lines folded).
    """

    body: RenderableType
    err: bool = False
    markup: bool | None = None
    highlight: bool | None = None
    soft_wrap: bool | None = None


def text(line: str, *, err: bool = False) -> Block:
    """A literal line: no markup, no highlighting, never folded (paths, log excerpts).

    Literal lines carry what servers and logs said (a model id, a log line, an error
    body): control characters are shown as ``\\xNN`` (:func:`visible_lines`, the one
    filter) so that an escape sequence in them never reaches the terminal raw."""
    return Block(visible_lines(line), err=err, markup=False, highlight=False, soft_wrap=True)


def rich_line(line: str, *, err: bool = False) -> Block:
    """A line with rich markup (``[bold]…[/]``), not highlighted, never folded."""
    return Block(line, err=err, highlight=False, soft_wrap=True)


def error_lines(message: str, hint: str | None) -> list[Block]:
    """``error: …`` and ``hint: …`` on stderr: the one form of every error line."""
    # as terminal/failure.report_error prints the error that ends a command (folded like it)
    # bounded too: a message can quote a server's error body or a file's value
    out = [Block(f"error: {clipped_lines(message)}", err=True, markup=False, highlight=False)]
    if hint:
        out.append(Block(f"hint: {clipped_lines(hint)}", err=True, markup=False,
                         highlight=False))
    return out


def cell(value: object, limit: int = 200) -> Text:
    """A table cell holding text from a file, a log or a server (a name, a description,
    a path, a fact): literal (never markup), escaped and cut to ``limit`` characters
    (:func:`variantctl.logs.bounded.clipped`); None is empty."""
    from rich.text import Text

    return Text("" if value is None else clipped(str(value), limit))


#: DEL and the C1 controls, which ``json.dumps(ensure_ascii=False)`` writes raw (it
#: escapes only C0): as ``\u00NN`` escapes the document is the same JSON, and a C1 CSI
#: (``\x9b``) from a server's text cannot act on the terminal the JSON is printed on
_JSON_C1 = {c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0))}


def json_text(data: Json) -> str:
    """``data`` as the indented JSON document ``--json`` prints (no trailing newline);
    every control character escaped (C0 by ``json``, DEL and C1 here)."""
    return json.dumps(data, indent=2, sort_keys=False, default=str,
                      ensure_ascii=False).translate(_JSON_C1)


def json_list_chunks(key: str, items: Iterable[Json], batch: int = 256) -> Iterator[str]:
    """:func:`json_text` of ``{key: [items...]}``, ``batch`` items at a time (the same
    text), so a listing of ten thousand runs is never one string in memory."""
    head = json_text({key: []})[:-len("[]\n}")]  # '{\n  "key": '
    first = True
    for part in _batches(items, batch):
        inner = json_text(part)[2:-2]  # '[\n  A,\n  B\n]' less its brackets
        # strings hold no raw newline: each line one level deeper
        yield (f"{head}[\n" if first else ",\n") + "  " + inner.replace("\n", "\n  ")
        first = False
    yield f"{head}[]\n}}" if first else "\n  ]\n}"


def _batches(items: Iterable[Json], size: int) -> Iterator[list[Json]]:
    part: list[Json] = []
    for item in items:
        part.append(item)
        if len(part) == size:
            yield part
            part = []
    if part:
        yield part
