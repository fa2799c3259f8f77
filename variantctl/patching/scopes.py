"""PURE: the scopes of a parsed module and the candidate nodes an operation can match.

Shared by the patch engine (``engine.py``) and the profile instrumentation
(``instrument.py``), so neither imports the other's internals.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import libcst as cst

Chain = tuple[cst.CSTNode, ...]


def body_statements(node: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, Chain]]:
    """Statements of a module/class/function body, looking through if/try/with/for/while
    (which do not open a scope), each with its ancestors below ``node``."""

    def suite(container: cst.CSTNode, chain: Chain) -> Iterator[tuple[cst.CSTNode, Chain]]:
        body: Any = getattr(container, "body", ())
        if isinstance(body, cst.CSTNode):  # IndentedBlock / SimpleStatementSuite
            chain = (*chain, body)
            body = getattr(body, "body", ())
        for stmt in body:
            yield stmt, chain
            if isinstance(stmt, cst.BaseCompoundStatement) and not isinstance(
                stmt, (cst.ClassDef, cst.FunctionDef)
            ):
                yield from compound(stmt, (*chain, stmt))

    def compound(stmt: cst.CSTNode, chain: Chain) -> Iterator[tuple[cst.CSTNode, Chain]]:
        yield from suite(stmt, chain)
        for handler in getattr(stmt, "handlers", ()):
            yield from suite(handler, (*chain, handler))
        for name in ("orelse", "finalbody"):
            other = getattr(stmt, name, None)
            if isinstance(other, cst.If):  # elif
                yield other, chain
                yield from compound(other, (*chain, other))
            elif isinstance(other, cst.CSTNode):
                yield from suite(other, (*chain, other))

    yield from suite(node, ())


def scopes(module: cst.Module) -> Iterator[tuple[str, cst.CSTNode, Chain]]:
    """Every class and function with its qualified name and ancestors."""

    def rec(node: cst.CSTNode, prefix: str, chain: Chain) -> Iterator[
            tuple[str, cst.CSTNode, Chain]]:
        for stmt, sub in body_statements(node):
            if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
                qual = f"{prefix}{stmt.name.value}"
                full = (*chain, *sub)
                yield qual, stmt, full
                yield from rec(stmt, qual + ".", (*full, stmt))

    yield from rec(module, "", (module,))


@dataclass
class Candidate:
    node: cst.CSTNode
    chain: Chain
    kind: str  # from / to / other
    code: str
