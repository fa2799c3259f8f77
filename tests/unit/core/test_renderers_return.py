"""Renderers return what to show; only the CLI prints (DEVELOPERS.md, "Architecture").

A static check over the rendering modules of the CLI's commands: no call that
writes to a console or stream, and no function that is handed an Environment or a
Console to print on. The exceptions are named, with the reason.
"""

from __future__ import annotations

import ast

import pytest

from tests.conftest import REPO

PKG = REPO / "variantctl"
MODULES = [*sorted(str(p.relative_to(PKG)) for p in (PKG / "render").glob("*.py")
                   if p.name != "__init__.py"), "launch/ui.py", "launch/logs.py"]
#: (module, top-level name) allowed to print
#: (none: the live progress display launch reports to is the CLI's, terminal/launchview.py)
ALLOWED: set[tuple[str, str]] = set()
PRINTING = {"print", "rule", "status", "log", "write", "flush", "echo"}
CONSOLES = {"Environment", "Console"}


def _offences(rel: str, source: str | None = None) -> list[str]:
    tree = ast.parse((PKG / rel).read_text() if source is None else source, filename=rel)
    out: list[str] = []
    for top in tree.body:
        if getattr(top, "name", None) and (rel, top.name) in ALLOWED:  # type: ignore[attr-defined]
            continue
        for node in ast.walk(top):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in PRINTING):
                out.append(f"{rel}:{node.lineno}: calls .{node.func.attr}()")
            if isinstance(node, ast.arg) and node.annotation is not None:
                names = {n.id for n in ast.walk(node.annotation) if isinstance(n, ast.Name)}
                names |= {n.value for n in ast.walk(node.annotation)
                          if isinstance(n, ast.Constant) and isinstance(n.value, str)}
                if names & CONSOLES:
                    out.append(f"{rel}:{node.lineno}: takes {node.arg}: {names & CONSOLES}")
    return out


@pytest.mark.parametrize("rel", MODULES)
def test_rendering_modules_do_not_print(rel: str) -> None:
    assert _offences(rel) == []


def test_the_check_finds_a_printing_renderer() -> None:
    """The check itself can fail: a renderer that prints is reported with its line."""
    found = _offences("render/probe.py",
                      "def show(env: 'Environment') -> None:\n    env.stdout.print('x')\n")
    assert found == ["render/probe.py:1: takes env: {'Environment'}",
                     "render/probe.py:2: calls .print()"]
