"""PURE: detect the state of a patchset's operations in a source text and transform it.

One libcst parse per content. Each operation walks only the part of the tree
it can match in (the ``within`` functions, the ``scope`` body), so a 3,300-line
``arg_utils.py`` costs a parse, two small walks and one code generation. The
changed nodes are swapped in by rebuilding only their ancestors (not a full
transformer pass), and the result is verified with the builtin ``compile()``.

Expressions compare by syntax: both sides are normalised through the builtin
``ast`` (whitespace, comments, redundant parentheses and quote style do not
matter), so ``True,  # vendor`` matches ``from: "True"`` and a string literal
containing ``enforce_eager=True`` never does.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from variantctl.patching.model import Operation
from variantctl.patching.scopes import Candidate, Chain, body_statements, scopes
from variantctl.patching.states import (
    APPLIED,
    DRIFTED,
    ERROR,
    PRISTINE,
    FileAnalysis,
    Found,
    OpState,
    combine,
)
from variantctl.patching.userhooks import CustomOpError

# ``custom``, ``instrument`` and ``funcprint`` are imported by the operations that need
# them (CustomOpError, their error, comes from the small module that defines it), so that
# the usual set-keyword patchset never loads them: ``apply`` of a 3,300-line file spends a
# fifth of its time starting up.

# -- expressions -------------------------------------------------------------

_NORM_CACHE: dict[str, str | None] = {}


def normalise(code: str) -> str | None:
    """A canonical form of an expression's syntax (None if it is not one)."""
    hit = _NORM_CACHE.get(code, "")
    if hit != "":
        return hit
    try:
        # the newlines keep a trailing comment from swallowing the closing paren
        out: str | None = ast.dump(ast.parse("(\n" + code + "\n)", mode="eval").body)
    except SyntaxError:
        out = None
    if len(_NORM_CACHE) < 4096:
        _NORM_CACHE[code] = out
    return out


@dataclass(frozen=True)
class _Pattern:
    text: str
    norm: str
    node: cst.BaseExpression
    #: fast path: a bare name such as True or None
    name: str | None


_PATTERNS: dict[str, _Pattern] = {}


def pattern(text: str) -> _Pattern:
    p = _PATTERNS.get(text)
    if p is None:
        node = cst.parse_expression(text.strip())
        norm = normalise(text.strip())
        assert norm is not None, text
        name = node.value if isinstance(node, cst.Name) else None
        p = _Pattern(text, norm, node, name)
        _PATTERNS[text] = p
    return p


class Matcher:
    """Compares nodes of one module with patterns (code of a node computed once), and
    keeps the module's scopes and the calls below a scope once walked: the operations of
    a patchset often look in the same functions (eager-allreduce's two both search
    ``create_engine_config``, a few hundred lines)."""

    def __init__(self, module: cst.Module):
        self.module = module
        self._code: dict[int, str] = {}
        self._scopes: list[tuple[str, cst.CSTNode, Chain]] | None = None
        self._calls: dict[int, list[tuple[cst.Call, Chain]]] = {}

    def scopes(self) -> list[tuple[str, cst.CSTNode, Chain]]:
        """:func:`~variantctl.patching.scopes.scopes` of the module."""
        if self._scopes is None:
            self._scopes = list(scopes(self.module))
        return self._scopes

    def calls(self, root: cst.CSTNode, chain: Chain) -> list[tuple[cst.Call, Chain]]:
        """:func:`_calls` below ``root`` (a node's ancestors are always the same chain)."""
        found = self._calls.get(id(root))
        if found is None:
            found = self._calls[id(root)] = _calls(root, chain)
        return found

    def code(self, node: cst.CSTNode) -> str:
        key = id(node)
        c = self._code.get(key)
        if c is None:
            c = self.module.code_for_node(node).strip()
            self._code[key] = c
        return c

    def equals(self, node: cst.CSTNode, pat: _Pattern) -> bool:
        if pat.name is not None:
            if isinstance(node, cst.Name):
                return node.value == pat.name
            if not getattr(node, "lpar", None):
                return False
        elif (
            type(node) is not type(pat.node)
            and not getattr(node, "lpar", None)
            # different node types can still be equal syntax in a few cases
            # (e.g. implicit string concatenation); ast decides those
            and not isinstance(node, (cst.BaseString, cst.UnaryOperation))
        ):
            return False
        return normalise(self.code(node)) == pat.norm

    def classify(self, node: cst.CSTNode, op: Operation) -> str:
        assert op.from_ is not None and op.to is not None
        if self.equals(node, pattern(op.from_)):
            return "from"
        if self.equals(node, pattern(op.to)):
            return "to"
        return "other"


# -- walking -----------------------------------------------------------------

_FIELDS: dict[type, tuple[str, ...]] = {}

# fields that only ever hold tokens and whitespace: never worth descending into
_TOKEN_FIELDS = frozenset({
    "lpar", "rpar", "comma", "leading_lines", "lines_after_decorators", "header", "footer",
    "trailing_whitespace", "semicolon", "colon", "equal", "operator", "dot", "newline",
    "asynchronous", "star_tok", "walrus", "arrow",
})


def _fields(node: cst.CSTNode) -> tuple[str, ...]:
    names = _FIELDS.get(type(node))
    if names is None:
        names = tuple(
            f.name for f in dataclasses.fields(node)
            if f.name not in _TOKEN_FIELDS and not f.name.startswith("whitespace")
        )
        _FIELDS[type(node)] = names
    return names


def _children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    for name in _fields(node):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, cst.CSTNode):
                    yield item




def _calls(root: cst.CSTNode, chain: Chain) -> list[tuple[cst.Call, Chain]]:
    """Every Call below ``root`` with its ancestors (``chain`` ends at ``root``)."""
    out: list[tuple[cst.Call, Chain]] = []
    parents: list[cst.CSTNode] = list(chain)
    fields = _fields
    node_type = cst.CSTNode

    def rec(node: cst.CSTNode) -> None:
        if isinstance(node, cst.Call):
            out.append((node, tuple(parents)))
        parents.append(node)
        for name in fields(node):
            value = getattr(node, name)
            if isinstance(value, node_type):
                rec(value)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    if isinstance(item, node_type):
                        rec(item)
        parents.pop()

    parents.pop()
    rec(root)
    return out


def dotted(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


# -- candidates per operation -------------------------------------------------


def _scope_roots(m: Matcher, names: Sequence[str]) -> list[tuple[cst.CSTNode, Chain]]:
    if not names:
        return [(m.module, (m.module,))]
    wanted = set(names)
    return [(node, (*chain, node)) for qual, node, chain in m.scopes() if qual in wanted]


def _find_keyword(module: cst.Module, op: Operation, m: Matcher) -> list[Candidate]:
    assert op.callee is not None
    out: list[Candidate] = []
    seen: set[int] = set()
    for root, chain in _scope_roots(m, op.within):
        for node, parents in m.calls(root, chain):
            name = dotted(node.func)
            if name is None or not (name == op.callee or name.endswith("." + op.callee)):
                continue
            for arg in node.args:
                if arg.keyword is None or arg.keyword.value != op.keyword:
                    continue
                if id(arg.value) in seen:
                    continue
                seen.add(id(arg.value))
                out.append(Candidate(arg.value, (*parents, node, arg),
                                      m.classify(arg.value, op), m.code(arg.value)))
    return out


def _find_default(module: cst.Module, op: Operation, m: Matcher) -> list[Candidate]:
    out: list[Candidate] = []
    for qual, node, chain in m.scopes():
        if qual != op.function or not isinstance(node, cst.FunctionDef):
            continue
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value != op.param:
                continue
            if param.default is None:
                out.append(Candidate(param.name, (*chain, node, params, param), "other",
                                      f"{op.param} (no default)"))
            else:
                out.append(Candidate(param.default, (*chain, node, params, param),
                                      m.classify(param.default, op), m.code(param.default)))
    return out


def _find_assignment(module: cst.Module, op: Operation, m: Matcher) -> list[Candidate]:
    roots = _scope_roots(m, [op.scope]) if op.scope else [(module, (module,))]
    out: list[Candidate] = []
    for root, chain in roots:
        for stmt, sub in body_statements(root):
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                value: cst.BaseExpression | None = None
                if (isinstance(small, cst.Assign) and any(
                    dotted(t.target) == op.target for t in small.targets
                )) or (isinstance(small, cst.AnnAssign) and dotted(small.target) == op.target):
                    value = small.value
                if value is None:
                    continue
                out.append(Candidate(value, (*chain, *sub, stmt, small),
                                      m.classify(value, op), m.code(value)))
    return out


def _find_expression(module: cst.Module, op: Operation, m: Matcher) -> list[Candidate]:
    assert op.from_ is not None and op.to is not None
    pats = (pattern(op.from_), pattern(op.to))
    out: list[Candidate] = []
    for root, chain in _scope_roots(m, op.within):
        stack: list[tuple[cst.CSTNode, Chain]] = [(root, chain[:-1])]
        while stack:
            node, parents = stack.pop()
            if isinstance(node, cst.BaseExpression) and node is not root:
                kind = ("from" if m.equals(node, pats[0])
                        else "to" if m.equals(node, pats[1]) else None)
                if kind is not None:
                    # never look inside a match: `to` may contain `from`
                    out.append(Candidate(node, parents, kind, m.code(node)))
                    continue
            sub = (*parents, node)
            stack.extend((c, sub) for c in reversed(list(_children(node))))
    return out


def function_source(module: cst.Module, node: cst.FunctionDef) -> str:
    """A function's own text as ``replace-function`` records it: decorators, ``def`` and
    body, dedented (libcst generates a nested node at column 0), without the blank
    lines and comments above it (those belong to its surroundings)."""
    return module.code_for_node(node.with_changes(leading_lines=()))


def _find_function(module: cst.Module, op: Operation, m: Matcher) -> list[Candidate]:
    from variantctl.patching import funcprint

    assert op.function is not None and op.to is not None
    applied = funcprint.fingerprint(op.to)
    out: list[Candidate] = []
    for qual, node, chain in m.scopes():
        if qual != op.function or not isinstance(node, cst.FunctionDef):
            continue
        found = funcprint.fingerprint(function_source(module, node))
        kind = "from" if found == op.from_ else "to" if found == applied else "other"
        out.append(Candidate(node, chain, kind, f"def {node.name.value} ({found})"))
    return out


def _function_replacement(op: Operation, module: cst.Module, old: cst.CSTNode,
                          reverse: bool) -> cst.CSTNode:
    """The ``to`` function parsed in the module's own indentation and newline style,
    keeping the blank lines and comments above the one it replaces."""
    if reverse:
        raise CustomOpError(f"replace-function {op.function}: the pristine function "
                                   "is known only by its fingerprint; only its backup can "
                                   "undo it")
    assert op.to is not None and isinstance(old, cst.FunctionDef)
    new = cst.parse_statement(op.to, config=module.config_for_parsing)
    return new.with_changes(leading_lines=old.leading_lines)


_FINDERS = {
    "replace-function": _find_function,
    "set-keyword": _find_keyword,
    "set-default": _find_default,
    "set-assignment": _find_assignment,
    "replace-expression": _find_expression,
}


# -- rebuilding ---------------------------------------------------------------

_NO_PARENS_PARENTS = (cst.Arg, cst.Assign, cst.AnnAssign, cst.Param, cst.Return, cst.Expr,
                      cst.Element, cst.DictElement, cst.Index)
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.BaseNumber, cst.SimpleString,
          cst.List, cst.Dict, cst.Set, cst.Ellipsis, cst.FormattedString)


def _replacement(text: str, parent: cst.CSTNode | None) -> cst.BaseExpression:
    node = cst.parse_expression(text.strip())
    if isinstance(node, _ATOMS) or isinstance(parent, _NO_PARENS_PARENTS) or node.lpar:
        return node
    # keep precedence when an operator expression lands inside another one
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _rebuild(node: cst.CSTNode, swaps: dict[int, cst.CSTNode], ancestors: set[int]
             ) -> cst.CSTNode:
    hit = swaps.get(id(node))
    if hit is not None:
        return hit
    if id(node) not in ancestors:
        return node
    changes: dict[str, object] = {}
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if isinstance(value, cst.CSTNode):
            new = _rebuild(value, swaps, ancestors)
            if new is not value:
                changes[f.name] = new
        elif isinstance(value, (list, tuple)):
            items = [_rebuild(v, swaps, ancestors) if isinstance(v, cst.CSTNode) else v
                     for v in value]
            if any(a is not b for a, b in zip(items, value, strict=True)):
                changes[f.name] = type(value)(items)
    return node.with_changes(**changes) if changes else node


def _splice(module: cst.Module, text: str, swaps: dict[int, cst.CSTNode], ancestors: set[int],
            chains: Sequence[Chain]) -> str | None:
    """The patched text, generating code for the changed statements only.

    Regenerating a 3,300-line module costs as much as a third of parsing it.
    Instead, each changed simple statement is generated in the indentation context
    of its enclosing blocks (:func:`_statement_codes`: as found, and rebuilt), and
    the unique occurrence of the old text is replaced by the new. libcst
    round-trips exactly, so the statement's code *is* a substring of the file
    at its position; when it is not unique (or the statement is not a simple
    one, or is the file's last line) this returns None and the caller
    regenerates the whole module. The result is compiled by the caller either way.
    """
    statements: dict[int, tuple[cst.SimpleStatementLine, list[str]]] = {}
    swapped_in: dict[int, int] = {}  # statement -> how many swapped nodes it holds
    for chain in chains:
        indents: list[str] = []
        stmt: cst.SimpleStatementLine | None = None
        for node in chain:
            if isinstance(node, cst.IndentedBlock):
                indents.append(module.default_indent if node.indent is None else node.indent)
            elif isinstance(node, cst.SimpleStatementLine):
                stmt = node
                break
        if stmt is None:
            return None  # e.g. in a compound statement's header: regenerate everything
        statements[id(stmt)] = (stmt, indents)
        swapped_in[id(stmt)] = swapped_in.get(id(stmt), 0) + 1

    out = text
    for stmt, indents in statements.values():
        old, new = _statement_codes(module, stmt, indents, swaps, ancestors,
                                    swapped_in[id(stmt)])
        if out.count(old) != 1:
            return None
        out = out.replace(old, new, 1)
    return out


def _codegen(module: cst.Module, node: cst.CSTNode, indents: list[str]) -> str:
    """``node``'s code inside blocks indented by ``indents``."""
    from libcst._nodes.internal import CodegenState

    state = CodegenState(default_indent=module.default_indent,
                         default_newline=module.default_newline, indent_tokens=list(indents))
    node._codegen(state)
    return "".join(state.tokens)


def _statement_codes(module: cst.Module, stmt: cst.SimpleStatementLine, indents: list[str],
                     swaps: dict[int, cst.CSTNode], ancestors: set[int], expected: int
                     ) -> tuple[str, str]:
    """A simple statement's code as found and with its ``expected`` swapped nodes
    replaced.

    The statement (a call of forty keywords, in ``arg_utils.py``) is generated once,
    noting where each swapped node's tokens start and end (``before_codegen`` and
    ``after_codegen``, the hooks libcst's own span metadata uses); the rebuilt
    statement's code is that text with each span replaced by its new node's code. A
    node's code is the same inside a statement as on its own when the parent passes
    nothing to its codegen (an element's default comma would): that is checked on the
    old node, and a statement where it does not hold, or where not every swapped node
    was seen, is generated a second time, rebuilt.
    """
    from libcst._nodes.internal import CodegenState

    spans: list[tuple[int, int, cst.CSTNode]] = []
    starts: dict[int, int] = {}
    seen = 0

    class Spans(CodegenState):
        def before_codegen(self, node: cst.CSTNode) -> None:
            nonlocal seen
            if id(node) not in swaps:
                return
            seen += 1
            # a swapped node inside another one is replaced with it (as _rebuild does)
            if not starts:
                starts[id(node)] = len(self.tokens)

        def after_codegen(self, node: cst.CSTNode) -> None:
            start = starts.pop(id(node), None)
            if start is not None:
                spans.append((start, len(self.tokens), node))

    state = Spans(default_indent=module.default_indent,
                  default_newline=module.default_newline, indent_tokens=list(indents))
    stmt._codegen(state)
    tokens = state.tokens
    # the rebuild raises what libcst's validation of the new parents would raise
    rebuilt = _rebuild(stmt, swaps, ancestors)
    if seen != expected:
        return "".join(tokens), _codegen(module, rebuilt, indents)
    parts: list[str] = []
    done = 0
    for start, end, node in spans:
        if _codegen(module, node, indents) != "".join(tokens[start:end]):
            return "".join(tokens), _codegen(module, rebuilt, indents)
        parts += (*tokens[done:start], _codegen(module, swaps[id(node)], indents))
        done = end
    parts += tokens[done:]
    return "".join(tokens), "".join(parts)


# -- analysis -----------------------------------------------------------------


def _decode(data: bytes) -> tuple[str | None, str | None, int | None]:
    try:
        return data.decode("utf-8"), None, None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return None, f"not valid UTF-8 (byte 0x{data[exc.start]:02x} on line {line})", line


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def state_in(module: cst.Module, op: Operation, matcher: Matcher) -> str:
    """The state of one structural operation in an already parsed module (``patch
    record`` tries many candidate operations on the same two parses)."""
    return _op_state(op, _FINDERS[op.kind](module, op, matcher))[0]


def _op_state(op: Operation, cands: list[Candidate]) -> tuple[str, str]:
    n_from = sum(c.kind == "from" for c in cands)
    n_to = sum(c.kind == "to" for c in cands)
    if n_from == op.count and n_to == 0:
        return PRISTINE, ""
    if n_to == op.count and n_from == 0:
        return APPLIED, ""
    if n_from + n_to == 0:
        if not cands:
            return DRIFTED, "not found"
        return DRIFTED, "found neither `from` nor `to`"
    want = "once" if op.count == 1 else f"{op.count} times"
    return DRIFTED, f"expected {want}, found `from` {n_from}x and `to` {n_to}x"


def analyze(
    ops: Sequence[Operation],
    data: bytes,
    *,
    display: str = "<file>",
    reverse: bool = False,
    with_lines: bool = False,
) -> FileAnalysis:
    """State of ``ops`` in ``data`` and, in one pass, the transformed bytes.

    Forward (``reverse=False``) replaces ``from`` by ``to`` for every pristine
    operation; reverse replaces ``to`` by ``from`` for every applied one. The
    caller decides whether the file's overall state allows writing the result.
    Line numbers are computed when asked for, or when something drifted.
    """
    digest = sha256(data)
    # a UTF-8 byte-order mark is kept byte for byte but not shown to the parser
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    text, problem, line = _decode(data[len(bom):])
    if text is None:
        return FileAnalysis(digest, ERROR, error=problem, error_line=line)
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        # Python's own parser gives the clearer one-line message and the right line
        try:
            ast.parse(text, display)
        except SyntaxError as syn:
            return FileAnalysis(digest, ERROR, error=f"syntax error on line {syn.lineno}: "
                                f"{syn.msg}", error_line=syn.lineno)
        first = str(exc.message).splitlines()[0] if str(exc.message) else "cannot parse"
        return FileAnalysis(digest, ERROR, error=f"libcst cannot parse line {exc.raw_line}: "
                            f"{first}", error_line=exc.raw_line)
    except Exception as exc:  # libcst rejects some inputs with other errors
        return FileAnalysis(digest, ERROR, error=f"cannot parse: {exc}")

    m = Matcher(module)
    found: list[tuple[Operation, list[Candidate], str, str]] = []
    swaps: dict[int, cst.CSTNode] = {}
    ancestors: set[int] = set()
    swapped_chains: list[Chain] = []
    changed: list[str] = []
    custom_states: list[tuple[Operation, str, str]] = []
    for op in ops:
        if op.kind == "custom":
            from variantctl.patching import custom

            state, reason = custom.detect(op, module, display=display)
            custom_states.append((op, state, reason))
            found.append((op, [], state, reason))
            continue
        if op.kind == "instrument":  # a whole-module transform, like custom
            from variantctl.patching import instrument

            state, reason, cands = instrument.detect(op, module)
            custom_states.append((op, state, reason))
            found.append((op, cands, state, reason))
            continue
        cands = _FINDERS[op.kind](module, op, m)
        state, reason = _op_state(op, cands)
        found.append((op, cands, state, reason))
        source_kind, new_text = ("to", op.from_) if reverse else ("from", op.to)
        if state == (APPLIED if reverse else PRISTINE):
            assert new_text is not None
            for c in cands:
                if c.kind != source_kind:
                    continue
                if op.kind == "replace-function":
                    try:
                        swaps[id(c.node)] = _function_replacement(op, module, c.node, reverse)
                    except CustomOpError as exc:
                        return FileAnalysis(digest, ERROR, error=f"operation {op.id}: {exc}")
                else:
                    swaps[id(c.node)] = _replacement(new_text, c.chain[-1] if c.chain else None)
                ancestors.update(id(a) for a in c.chain)
                swapped_chains.append(c.chain)
            changed.append(op.id)

    new_module = module
    spliced: str | None = None
    if swaps:
        if not any(state == (APPLIED if reverse else PRISTINE) for _, state, _ in custom_states):
            spliced = _splice(module, text, swaps, ancestors, swapped_chains)
        if spliced is None:
            rebuilt = _rebuild(module, swaps, ancestors)
            assert isinstance(rebuilt, cst.Module)
            new_module = rebuilt
    for op, state, _ in custom_states:
        if state == (APPLIED if reverse else PRISTINE):
            # imported above, when this operation's state was detected
            from variantctl.patching import custom, instrument

            try:
                new_module = (instrument if op.kind == "instrument" else custom).transform(
                    op, new_module, reverse=reverse, display=display)
            except CustomOpError as exc:
                return FileAnalysis(digest, ERROR, error=f"operation {op.id}: {exc}")
            changed.append(op.id)

    lines: dict[int, int] = {}
    drifted = any(s == DRIFTED for _, _, s, _ in found)
    if with_lines or drifted:
        lines = _lines(module, [c for _, cands, _, _ in found for c in cands])
    states = tuple(
        OpState(
            op_id=op.id,
            kind=op.kind,
            description=op.describe,
            state=state,
            from_=op.from_,
            to=op.to,
            found=tuple(Found(c.code, lines.get(id(c.node)), c.kind) for c in cands),
            reason=reason,
        )
        for op, cands, state, reason in found
    )
    overall = combine(s.state for s in states)
    if not changed:
        return FileAnalysis(digest, overall, states)
    new_text = spliced if spliced is not None else new_module.code
    try:
        compile(new_text, display, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return FileAnalysis(digest, ERROR, states,
                            error=f"the patched text does not compile (line {exc.lineno}: "
                            f"{exc.msg}); nothing written")
    new_data = bom + new_text.encode("utf-8")
    return FileAnalysis(digest, overall, states, new_data, sha256(new_data), tuple(changed))


def _lines(module: cst.Module, cands: list[Candidate]) -> dict[int, int]:
    """1-based line of each candidate node.

    Cheaper than libcst's PositionProvider (a metadata pass costs about two parses):
    swap every node for a unique marker name (rebuilding only their ancestors),
    generate the code once and count the newlines before each marker.
    """
    if not cands:
        return {}
    swaps: dict[int, cst.CSTNode] = {}
    ancestors: set[int] = set()
    markers: dict[str, int] = {}
    for i, c in enumerate(cands):
        name = f"__variantctl_line_marker_{i}__"
        if isinstance(c.node, cst.FunctionDef):  # its line is the `def` line
            swaps[id(c.node)] = c.node.with_changes(name=cst.Name(name))
        elif c.chain and isinstance(c.node, cst.BaseExpression):
            swaps[id(c.node)] = cst.Name(name)
        else:
            continue
        markers[name] = id(c.node)
        ancestors.update(id(a) for a in c.chain)
    rebuilt = _rebuild(module, swaps, ancestors)
    assert isinstance(rebuilt, cst.Module)
    code = rebuilt.code
    out: dict[int, int] = {}
    for name, node_id in markers.items():
        pos = code.find(name)
        if pos >= 0:
            out[node_id] = code.count("\n", 0, pos) + 1
    return out
