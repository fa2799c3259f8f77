"""The package graph has no cycles, and the pure packages stay pure.

Every ``import`` in ``variantctl/`` counts, the lazy ones inside functions too (a
cycle through a lazy import is still a cycle a maintainer has to reason about), and so
do those in ``if TYPE_CHECKING:`` blocks: a type named upward is a loop a reader has to
follow all the same (issue 27.7), so shared types move down instead.
"""

from __future__ import annotations

import ast
import re
from collections import Counter, defaultdict
from functools import cache
from itertools import pairwise
from pathlib import Path

PKG = Path(__file__).resolve().parents[3] / "variantctl"

#: packages that plan and analyse: no file, process or network access
PURE = {"patching", "variants", "logs"}
EFFECTS = {"os", "subprocess", "fabric", "paramiko", "socket", "shutil", "tempfile"}


@cache
def _tree(path: Path) -> ast.Module:
    """A file of the package parsed once for all the checks here (they only read it)."""
    return ast.parse(path.read_text())


def _unit(module: str) -> str:
    """``variantctl.config.hosts`` -> ``config``; a top-level module stands alone."""
    parts = module.split(".")
    if len(parts) >= 2 and (PKG / parts[1]).is_dir():
        return parts[1]
    return parts[1] if len(parts) >= 2 else parts[0]


def _imports(tree: ast.AST) -> list[str]:
    out: list[str] = []

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
    return out


def package_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], list[str]]]:
    edges: dict[str, set[str]] = defaultdict(set)
    where: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        src = _unit(".".join(rel.parts))
        for name in _imports(_tree(path)):
            if not name.startswith("variantctl."):
                continue
            dst = _unit(name)
            if dst != src:
                edges[src].add(dst)
                where[(src, dst)].append(str(path.relative_to(PKG.parent)))
    return edges, where


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    for start in sorted(edges):
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(edges.get(node, ())):
                if nxt == start:
                    cyc = [*path, start]
                    if min(cyc[:-1]) == start:  # report each cycle once
                        found.append(cyc)
                elif nxt not in path and nxt > start:
                    stack.append((nxt, [*path, nxt]))
    return found


def test_no_import_cycles_between_packages() -> None:
    edges, where = package_graph()
    cycles = _cycles(edges)
    detail = [
        " -> ".join(c) + "  (" + "; ".join(
            f"{a}->{b}: {', '.join(sorted(set(where[(a, b)]))[:3])}" for a, b in pairwise(c)
        ) + ")"
        for c in cycles
    ]
    assert not cycles, "import cycles between packages:\n" + "\n".join(detail)


def test_pure_packages_do_no_io() -> None:
    bad = []
    for pkg in sorted(PURE):
        for path in sorted((PKG / pkg).rglob("*.py")):
            for name in _imports(_tree(path)):
                if name.split(".")[0] in EFFECTS:
                    bad.append(f"{path.relative_to(PKG.parent)} imports {name}")
    assert not bad, "\n".join(bad)


def test_type_only_imports_count() -> None:
    """An import only for types is an edge like any other (issue 27.7)."""
    tree = ast.parse("from typing import TYPE_CHECKING\n"
                     "if TYPE_CHECKING:\n    from variantctl.cli.x import T\n")
    assert "variantctl.cli.x" in _imports(tree)
    assert "variantctl.cli.x.T" in _module_imports(tree, "variantctl.render")


def test_the_cycle_check_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _module_imports(tree: ast.AST, package: str) -> list[str]:
    """Modules a file imports (``from pkg import mod`` names the module ``pkg.mod``),
    relative imports resolved against ``package``; ``TYPE_CHECKING`` blocks included."""
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            out.append(base)
            out.extend(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def module_graph() -> dict[str, set[str]]:
    """File -> the files of ``variantctl/`` it imports, lazy imports included."""
    names = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(PKG.parent).with_suffix("").parts
        is_init = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_init else parts)
        names[module] = (path, module if is_init else module.rpartition(".")[0])
    edges: dict[str, set[str]] = {}
    for module, (path, package) in names.items():
        found = _module_imports(_tree(path), package)
        edges[module] = {n for n in found if n in names and n != module}
    return edges


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other (each group sorted), one per circle."""
    reach: dict[str, set[str]] = {}
    for start in edges:
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(edges.get(node, ()))
        reach[start] = seen
    groups = {tuple(sorted({m} | {o for o in reach[m] if m in reach.get(o, ())}))
              for m in edges if m in reach[m]}
    return sorted(list(g) for g in groups)


def test_no_import_circles_between_files() -> None:
    """No two files import each other, directly or round a circle (issue 18.5: launcher,
    servers and slurm did; so did the patch engine and the profile instrumentation)."""
    edges = module_graph()
    circles = _circles(edges)
    detail = ["  ".join(f"{m} -> {sorted(edges[m] & set(c))}" for m in c) for c in circles]
    assert not circles, "import circles between files:\n" + "\n".join(detail)


def test_the_circle_check_sees_a_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": set()}
    assert _circles(edges) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


#: names called by a framework, never by name in this code: libcst visitors, click's
#: group hooks, urllib's redirect handler, a click command whose name differs
FRAMEWORK_HOOKS = re.compile(
    r"(visit|leave)_[A-Za-z]+|get_command|format_commands|redirect_request|list_")


def test_no_unused_functions() -> None:
    """Every function, method and class of ``variantctl/`` is named somewhere besides its
    definition (the package, tests, scripts or benchmarks): dead code is removed, not kept
    (issue 18.5)."""
    root = PKG.parent
    words: Counter[str] = Counter()
    for folder in ("variantctl", "tests", "scripts", "benchmarks"):
        for path in (root / folder).rglob("*.py"):
            words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", path.read_text()))
    unused = [
        f"{path.relative_to(root)}:{node.lineno} {node.name}"
        for path in sorted(PKG.rglob("*.py"))
        for node in ast.walk(_tree(path))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and not node.name.startswith("__") and words[node.name] <= 1
        and not FRAMEWORK_HOOKS.fullmatch(node.name)
    ]
    assert not unused, "defined but never used:\n" + "\n".join(unused)


#: suffixes of files that are not modules (``run.json``, ``hosts.yaml``)
_DATA_FILES = {"json", "md", "yaml", "yml", "log", "lock", "sh", "txt"}


def _named_but_missing(doc: str) -> tuple[int, list[str]]:
    """How many ``pkg/module.py`` / ``pkg/module.name`` a document names, and those that do
    not exist (the module, or the name defined in it). A path under ``variantctl/`` may
    be written with or without that prefix; ``tests/``, ``scripts/`` and ``benchmarks/``
    paths are files of the checkout."""
    text = (PKG.parent / doc).read_text()
    named = re.findall(r"`([a-z_]+(?:/[a-z_]+)*)(?:\.py|\.([A-Za-z_][A-Za-z0-9_.]*))`", text)
    wrong = []
    for module, attr in named:
        if module.split("/")[0] == "docs" or attr in _DATA_FILES:  # ``docs/x.md``, ``run.json``
            continue
        if module.split("/")[0] in ("tests", "scripts", "benchmarks"):
            if not (PKG.parent / f"{module}.py").is_file():
                wrong.append(f"{module}.py does not exist")
            continue
        path = PKG / f"{module.removeprefix('variantctl/')}.py"
        if not path.is_file():
            wrong.append(f"{module}.py does not exist")
            continue
        names = [n for n in attr.split("/") if n] if attr else []
        for name in names[:1] + [n.split(".")[0] for n in names[1:]]:
            name = name.split(".")[0]
            if not re.search(rf"^\s*(?:async def|def|class) {name}\b|^{name}\b",
                             path.read_text(), re.M):
                wrong.append(f"{module}.py defines no {name}")
    return len(named), wrong


def test_architecture_doc_names_real_modules() -> None:
    """docs/architecture.md stays true to the code: every ``pkg/module.py`` and
    ``pkg/module.name`` it names exists (the module, and the name defined in it)."""
    count, wrong = _named_but_missing("docs/architecture.md")
    assert count > 30
    assert not wrong, "docs/architecture.md:\n" + "\n".join(wrong)


def test_developers_guide_names_real_modules() -> None:
    """DEVELOPERS.md names the current modules (issue 27.7), checked as the architecture
    page is."""
    count, wrong = _named_but_missing("DEVELOPERS.md")
    assert count > 10
    assert not wrong, "DEVELOPERS.md:\n" + "\n".join(wrong)
