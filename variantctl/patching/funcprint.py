"""PURE: the structural fingerprint of one function's source (``replace-function``).

A ``replace-function`` operation names its pristine function by this fingerprint
instead of carrying the vendor's text, and recognises the applied state by the
fingerprint of its ``to`` text. The fingerprint is a sha256 of the builtin
``ast`` dump (no line numbers): whitespace and comments inside the function do not
change it, so a release that only reformats the function still matches. Only the
builtin ``ast`` is used, so the patchset loader can check it without libcst.
"""

from __future__ import annotations

import ast
import hashlib
import textwrap

PREFIX = "sha256:"
#: hex digits kept: 64 bits tell two versions of one function apart
DIGITS = 16
PATTERN = PREFIX + "[0-9a-f]{" + str(DIGITS) + "}"


def parse_function(source: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The single (possibly decorated) function ``source`` defines, else None."""
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0],
                                             (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    return tree.body[0]


def fingerprint(source: str) -> str | None:
    """``sha256:…`` of the function's syntax, or None when ``source`` is not one function."""
    node = parse_function(source)
    if node is None:
        return None
    return PREFIX + hashlib.sha256(ast.dump(node).encode("utf-8")).hexdigest()[:DIGITS]
