"""Which catalog regular expressions can backtrack catastrophically (and are refused).

Python's ``re`` is a backtracking engine: a pattern that can match one stretch of a line
in many ways tries every way before it gives up on a line that *almost* matches, and
``classify`` hangs. The three classic families are refused when a signature loads:

- **nested repetition** — an unbounded repeat inside an unbounded repeat: ``(a+)+``,
  ``(\\w+ )*`` (a literal space is ``\\s+`` in a catalog pattern);
- **counted repetition** — a repeat that runs more than once (``{2,}``, ``{1,60}``,
  ``*``) around a variable-length part that is not closed by a delimiter it cannot
  consume: ``(a{1,30}){1,30}``, ``(.*a){20}``, ``(\\w+\\s?){1,60}``; the delimited
  ``(?:[^,]+,){0,3}`` and ``(\\d{1,3}\\.){3}`` stay allowed;
- **overlapping alternation** — alternatives under a repeat that can start with the same
  character (or two that can be empty): ``(a|a)+``, ``(\\d|\\d\\d)+``, ``(x|xy|\\w)*``.

The analysis reads the stdlib's own parse tree (exact, no guessing) and works on sets of
characters sampled from ASCII and a few non-ASCII letters; case is folded because catalog
patterns match case-insensitively. Possessive repeats and atomic groups never backtrack
and are allowed.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

#: the characters the sets are sampled on (ASCII plus non-ASCII letters and spaces)
_ALPHABET = frozenset(chr(c) for c in range(128)) | frozenset("éßİ中\u00a0\u2028")
_ANY = _ALPHABET
#: counted repeats whose count exceeds this are as good as unbounded
_UNBOUNDED_OVER = 64


def _sre() -> Any:
    # the stdlib's regex parser: private, hence untyped
    return importlib.import_module("re._parser")


def _fold(chars: frozenset[str]) -> frozenset[str]:
    return frozenset(c.lower() for c in chars) | frozenset(c.upper() for c in chars)


def _category(name: str) -> frozenset[str]:
    probe = {"CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s",
             "CATEGORY_NOT_SPACE": r"\S", "CATEGORY_WORD": r"\w",
             "CATEGORY_NOT_WORD": r"\W"}.get(name)
    if probe is None:
        return _ANY
    rx = re.compile(probe)
    return frozenset(c for c in _ALPHABET if rx.fullmatch(c))


class _Analyzer:
    def __init__(self) -> None:
        self.sre = _sre()

    def is_repeat(self, op: Any) -> bool:
        return op in (self.sre.MAX_REPEAT, self.sre.MIN_REPEAT, self.sre.POSSESSIVE_REPEAT)

    def char_set(self, op: Any, arg: Any) -> frozenset[str] | None:
        """The characters one single-character item matches; None if not such an item."""
        s = self.sre
        if op == s.LITERAL:
            return _fold(frozenset(chr(arg)))
        if op == s.NOT_LITERAL:
            return _ALPHABET - _fold(frozenset(chr(arg)))
        if op == s.ANY:
            return _ANY
        if op == s.CATEGORY:
            return _category(str(arg))
        if op == s.IN:
            negate = False
            out: set[str] = set()
            for sub_op, sub_arg in arg:
                if sub_op == s.NEGATE:
                    negate = True
                elif sub_op == s.RANGE:
                    lo, hi = sub_arg
                    out |= {c for c in _ALPHABET if lo <= ord(c) <= hi}
                else:
                    out |= self.char_set(sub_op, sub_arg) or _ANY
            chars = _fold(frozenset(out))
            return _ALPHABET - chars if negate else chars
        return None

    def flatten(self, items: Any) -> list[tuple[Any, Any]]:
        """A sequence with plain groups inlined (they change nothing about matching)."""
        out: list[tuple[Any, Any]] = []
        for op, arg in items:
            if op == self.sre.SUBPATTERN:
                out.extend(self.flatten(arg[-1]))
            else:
                out.append((op, arg))
        return out

    def nullable(self, items: Any) -> bool:
        return all(self.item_nullable(op, arg) for op, arg in items)

    def item_nullable(self, op: Any, arg: Any) -> bool:
        s = self.sre
        if self.char_set(op, arg) is not None:
            return False
        if self.is_repeat(op):
            return bool(arg[0] == 0 or self.nullable(arg[2]))
        if op == s.SUBPATTERN:
            return self.nullable(arg[-1])
        if op == s.ATOMIC_GROUP:
            return self.nullable(arg)
        if op == s.BRANCH:
            return any(self.nullable(b) for b in arg[1])
        if op == s.GROUPREF:
            return True
        return op in (s.AT, s.ASSERT, s.ASSERT_NOT)

    def first(self, items: Any) -> frozenset[str]:
        """The characters a match of the sequence can start with."""
        out: frozenset[str] = frozenset()
        for op, arg in items:
            out |= self.item_first(op, arg)
            if not self.item_nullable(op, arg):
                break
        return out

    def item_first(self, op: Any, arg: Any) -> frozenset[str]:
        s = self.sre
        chars = self.char_set(op, arg)
        if chars is not None:
            return chars
        if self.is_repeat(op):
            return self.first(arg[2])
        if op == s.SUBPATTERN:
            return self.first(arg[-1])
        if op == s.ATOMIC_GROUP:
            return self.first(arg)
        if op == s.BRANCH:
            out: frozenset[str] = frozenset()
            for branch in arg[1]:
                out |= self.first(branch)
            return out
        if op == s.GROUPREF:
            return _ANY
        return frozenset()

    def consumed(self, op: Any, arg: Any) -> frozenset[str]:
        """Every character the item can consume (a superset is fine: it only refuses more)."""
        chars = self.char_set(op, arg)
        if chars is not None:
            return chars
        out: frozenset[str] = frozenset()
        for sub_op, sub_arg in self.children(op, arg):
            out |= self.consumed(sub_op, sub_arg)
        return _ANY if op == self.sre.GROUPREF else out

    def children(self, op: Any, arg: Any) -> list[tuple[Any, Any]]:
        s = self.sre
        if self.is_repeat(op):
            return list(arg[2])
        if op == s.SUBPATTERN:
            return list(arg[-1])
        if op == s.ATOMIC_GROUP:
            return list(arg)
        if op == s.BRANCH:
            return [item for branch in arg[1] for item in branch]
        if op in (s.ASSERT, s.ASSERT_NOT):
            return list(arg[1])
        return []

    def overlapping_branch(self, arg: Any) -> bool:
        branches = arg[1]
        if sum(1 for b in branches if self.nullable(b)) >= 2:
            return True
        firsts = [self.first(b) for b in branches]
        return any(firsts[i] & firsts[j]
                   for i in range(len(firsts)) for j in range(i + 1, len(firsts)))

    def variable(self, op: Any, arg: Any) -> bool:
        """An item whose length varies (the source of more than one way to match)."""
        if self.is_repeat(op):
            return bool(op != self.sre.POSSESSIVE_REPEAT and arg[0] != arg[1])
        if op == self.sre.BRANCH:
            return any(self.nullable(b) for b in arg[1])
        return False

    def walk(self, items: Any, inside_unbounded: bool) -> str | None:
        """The first risky construct found in the sequence, or None."""
        s = self.sre
        for op, arg in items:
            if self.is_repeat(op):
                _lo, hi, body = arg
                possessive = op == s.POSSESSIVE_REPEAT
                unbounded = hi == s.MAXREPEAT or hi > _UNBOUNDED_OVER
                if unbounded and inside_unbounded and not possessive:
                    return "nested repetition"
                if hi > 1 and not possessive:
                    found = self.repeated_body(body, "nested repetition" if unbounded
                                               else "counted repetition")
                    if found:
                        return found
                found = self.walk(body, inside_unbounded or (unbounded and not possessive))
            elif op == s.ATOMIC_GROUP:
                found = self.walk(arg, False)
            else:
                found = None
                for sub_op, sub_arg in self.children(op, arg):
                    found = self.walk([(sub_op, sub_arg)], inside_unbounded)
                    if found:
                        break
            if found:
                return found
        return None

    def repeated_body(self, body: Any, family: str) -> str | None:
        """A body repeated more than once: an overlapping alternation, or a variable part
        that the next item (wrapping round to the body's start) can also begin with."""
        seq = self.flatten(body)
        for k, (op, arg) in enumerate(seq):
            if op == self.sre.BRANCH and self.overlapping_branch(arg):
                return "overlapping alternation"
            if not self.variable(op, arg):
                continue
            following = self.first(seq[k + 1:] + seq)
            if self.consumed(op, arg) & following:
                return family
        return None


def backtracking_risk(pattern: str) -> str | None:
    """The family of catastrophic backtracking the pattern belongs to ("nested
    repetition", "counted repetition", "overlapping alternation"), None when it has none
    (or does not parse: compiling reports that)."""
    analyzer = _Analyzer()
    try:
        tree = analyzer.sre.parse(pattern)
    except re.error:
        return None
    return analyzer.walk(list(tree), False)
