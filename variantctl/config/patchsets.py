"""Patchsets: YAML files in ``<project>/patchsets/``, one per patchset.

A patchset names the modules it patches (dotted names resolved inside each
root) and an ordered list of operations. Every operation states its ``from``
and ``to`` expression so its state is decidable and it is reversible::

    name: eager-allreduce
    description: Stop hard-coding eager mode and custom all-reduce.
    module: vllm.engine.arg_utils
    operations:
      - id: enforce-eager
        op: set-keyword
        callee: ModelConfig
        within: [EngineArgs.create_model_config, EngineArgs.create_engine_config]
        keyword: enforce_eager
        from: "True"
        to: self.enforce_eager

Expressions are only checked for syntax here (with the builtin ``ast``, so
listing patchsets never imports libcst); ``variantctl.patching`` compares them
structurally.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from variantctl.config.schema import (
    Any_,
    Bool,
    Field,
    Int,
    ListOf,
    Str,
    Struct,
    StructData,
    did_you_mean,
)
from variantctl.config.yamlload import Document, KeyPath, load_yaml_file
from variantctl.errors import ConfigError, NotFoundError
from variantctl.patching import funcprint
from variantctl.patching.model import Operation, Patchset

OP_KINDS = ("set-keyword", "set-assignment", "set-default", "replace-expression",
            "replace-function", "custom", "instrument")

DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
NAME_RE = r"[a-z0-9][a-z0-9_.-]*"

#: ``{file}`` base name of the patched file, ``{date}`` YYYYMMDD (UTC),
#: ``{name}`` patchset name, ``{slug}`` patchset name with ``-``/``.`` as ``_``
DEFAULT_BACKUP_TEMPLATE = "{file}.bak_{date}_{slug}"


def _expr_problem(text: str) -> str | None:
    try:
        ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        return f"not a Python expression: {text!r} ({exc.msg})"
    return None


def _template_problem(text: str, modules: Sequence[str] = ()) -> str | None:
    """Why a backup template cannot be used (see config/templates.py); also for
    ``apply --backup-template``."""
    from variantctl.config.templates import backup_template_problem

    return backup_template_problem(text, modules)


_EXPR = Str(what="a Python expression")
_QUAL = Str(pattern=DOTTED, what="a qualified name like Class.method")

_COMMON = {
    "id": Field(Str(pattern=NAME_RE, what="an id (lowercase letters, digits, - _ .)")),
    "op": Field(Str(), required=True),
    "module": Field(Str(pattern=DOTTED, what="a dotted module name")),
    "description": Field(Str()),
    "count": Field(Int(min=1)),
}

_OP_SCHEMAS: dict[str, Struct[StructData]] = {
    "set-keyword": Struct("set-keyword operation", {
        **_COMMON,
        "callee": Field(Str(pattern=DOTTED, what="a dotted callee name"), required=True),
        "keyword": Field(Str(pattern=r"[A-Za-z_][A-Za-z0-9_]*", what="a keyword name"),
                         required=True),
        "within": Field(ListOf(_QUAL, single=True)),
        "from": Field(_EXPR, required=True),
        "to": Field(_EXPR, required=True),
    }),
    "set-assignment": Struct("set-assignment operation", {
        **_COMMON,
        "target": Field(Str(pattern=DOTTED, what="a name or attribute like self.x"),
                        required=True),
        "scope": Field(_QUAL),
        "from": Field(_EXPR, required=True),
        "to": Field(_EXPR, required=True),
    }),
    "set-default": Struct("set-default operation", {
        **_COMMON,
        "function": Field(_QUAL, required=True),
        "param": Field(Str(pattern=r"[A-Za-z_][A-Za-z0-9_]*", what="a parameter name"),
                       required=True),
        "from": Field(_EXPR, required=True),
        "to": Field(_EXPR, required=True),
    }),
    "replace-expression": Struct("replace-expression operation", {
        **_COMMON,
        "within": Field(ListOf(_QUAL, single=True)),
        "from": Field(_EXPR, required=True),
        "to": Field(_EXPR, required=True),
    }),
    "replace-function": Struct("replace-function operation", {
        **_COMMON,
        "function": Field(_QUAL, required=True),
        "from": Field(Str(pattern=funcprint.PATTERN,
                          what="the pristine function's fingerprint (sha256:16 hex digits)"),
                      required=True),
        "to": Field(Str(what="the new function's source"), required=True),
    }),
    "custom": Struct("custom operation", {
        **_COMMON,
        "file": Field(Str(pattern=r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.py",
                          what="a .py file name next to the patchset"), required=True),
        "class": Field(Str(pattern=r"[A-Za-z_][A-Za-z0-9_]*", what="a class name"),
                       required=True),
    }),
    "instrument": Struct("instrument operation", {
        **_COMMON,
        "functions": Field(ListOf(_QUAL, min_len=1, single=True), required=True),
        "sync": Field(Bool()),
    }),
}

def _check_operation(raw: object, path: KeyPath, doc: Document) -> StructData:
    if not isinstance(raw, dict):
        raise doc.error(path, "an operation must be a mapping")
    kind = raw.get("op")
    if kind is None:
        raise doc.error(path, "missing required key 'op' in operation",
                        hint=f"one of: {', '.join(OP_KINDS)}")
    if kind not in _OP_SCHEMAS:
        hint = did_you_mean(str(kind), OP_KINDS) or f"known operations: {', '.join(OP_KINDS)}"
        raise doc.error((*path, "op"), f"unknown operation {kind!r}", hint=hint)
    data = _OP_SCHEMAS[kind].check(raw, path, doc)
    if kind == "replace-function":
        _check_function(data, path, doc)
        return data
    for key in ("from", "to"):
        if key in data:
            problem = _expr_problem(data[key])
            if problem:
                raise doc.error((*path, key), problem)
    if "from" in data and _same_expr(data["from"], data["to"]):
        raise doc.error((*path, "to"), "`from` and `to` are the same expression")
    return data


def _check_function(data: StructData, path: KeyPath, doc: Document) -> None:
    node = funcprint.parse_function(data["to"])
    name = data["function"].rsplit(".", 1)[-1]
    if node is None:
        raise doc.error((*path, "to"), "not the source of one function (a `def`, with its "
                        "decorators)")
    if node.name != name:
        raise doc.error((*path, "to"), f"defines {node.name!r}, not {name!r}")
    if funcprint.fingerprint(data["to"]) == data["from"]:
        raise doc.error((*path, "to"), "`to` has the pristine function's fingerprint "
                        "(nothing would change)")


def _same_expr(a: str, b: str) -> bool:
    return ast.dump(ast.parse(a.strip(), mode="eval")) == ast.dump(ast.parse(b.strip(),
                                                                            mode="eval"))


def load_patchset_file(path: Path, *, display: str | None = None) -> Patchset:
    """Load and validate one patchset YAML (ConfigError with file:line on any problem)."""
    doc = load_yaml_file(path, display=display)
    source = doc.source
    if not isinstance(doc.data, dict):
        raise doc.error((), "a patchset must be a mapping with name, module and operations")
    top_schema = Struct("patchset", {
        "name": Field(Str(pattern=NAME_RE, what="a patchset name (lowercase, digits, - _ .)"),
                      required=True),
        "description": Field(Str(), default=""),
        "module": Field(Str(pattern=DOTTED, what="a dotted module name")),
        "modules": Field(ListOf(Str(pattern=DOTTED, what="a dotted module name"), min_len=1)),
        "backup": Field(Str()),
        "operations": Field(ListOf(_AnyValue(), min_len=1), required=True),
    })
    top = top_schema.check(doc.data, (), doc)
    if "module" in top and "modules" in top:
        raise doc.error(("modules",), "give either `module` or `modules`, not both")
    modules: tuple[str, ...] = (top["module"],) if "module" in top else top.get("modules", ())
    if not modules:
        raise doc.error((), "missing required key 'module' in patchset",
                        hint="the dotted module to patch, e.g. vllm.engine.arg_utils")
    if len(set(modules)) != len(modules):
        raise doc.error(("modules",), "a module is listed twice")
    template = top.get("backup", DEFAULT_BACKUP_TEMPLATE)
    problem = _template_problem(template, modules)
    if problem:
        raise doc.error(("backup",), problem)
    if path.stem != top["name"]:
        raise doc.error(("name",), f"name {top['name']!r} does not match the file name "
                        f"{path.name!r}", hint=f"rename the file to {top['name']}.yaml")

    digest = hashlib.sha256(path.read_bytes())
    ops: list[Operation] = []
    seen: dict[str, int] = {}
    instrumented: dict[str, int] = {}
    for i, raw in enumerate(top["operations"]):
        opath: KeyPath = ("operations", i)
        data = _check_operation(raw, opath, doc)
        module = data.get("module")
        if module is None:
            if len(modules) > 1:
                raise doc.error(opath, "operation needs `module` (the patchset has several)")
            module = modules[0]
        elif module not in modules:
            raise doc.error((*opath, "module"), f"module {module!r} is not in the patchset's "
                            f"modules", hint=did_you_mean(module, modules))
        op_id = data.get("id") or f"op{i + 1}"
        if op_id in seen:
            raise doc.error((*opath, "id"), f"duplicate operation id {op_id!r} "
                            f"(also operation {seen[op_id] + 1})")
        seen[op_id] = i
        if data["op"] == "instrument":
            _check_instrument(data, module, instrumented, i, opath, doc)
        m = doc.mark(opath)
        custom_file = data.get("file")
        custom_impl = None
        if custom_file is not None:
            cpath = path.parent / custom_file
            if not cpath.is_file():
                raise doc.error((*opath, "file"), f"custom transformer file {custom_file!r} "
                                f"not found next to the patchset")
            digest.update(cpath.read_bytes())
            custom_file = str(cpath)
            custom_impl = _import_custom(custom_file, data["class"], doc, (*opath, "file"))
        ops.append(Operation(
            id=op_id,
            kind=data["op"],
            module=module,
            where=f"{source}:{m.line}",
            from_=data.get("from"),
            to=data.get("to"),
            callee=data.get("callee"),
            keyword=data.get("keyword"),
            within=tuple(data.get("within", ())),
            target=data.get("target"),
            scope=data.get("scope", ""),
            function=data.get("function"),
            param=data.get("param"),
            count=data.get("count", 1),
            custom_file=custom_file,
            custom_class=data.get("class"),
            custom_impl=custom_impl,
            functions=tuple(data.get("functions", ())),
            sync=bool(data.get("sync", False)),
        ))
    return Patchset(
        name=top["name"],
        description=top["description"],
        modules=tuple(modules),
        operations=tuple(ops),
        backup_template=template,
        source=source,
        fingerprint=digest.hexdigest(),
    )


def _check_instrument(data: StructData, module: str, instrumented: dict[str, int],
                      index: int, path: KeyPath, doc: Document) -> None:
    # one instrument operation per module: its state then covers the inlined
    # recorder and every decorator, so it stays decidable and exactly reversible
    if module in instrumented:
        raise doc.error(path, f"a second instrument operation for module {module!r} "
                        f"(also operation {instrumented[module] + 1})",
                        hint="list every function of the module in one operation's `functions`")
    instrumented[module] = index
    functions = data["functions"]
    dup = sorted({f for f in functions if functions.count(f) > 1})
    if dup:
        raise doc.error((*path, "functions"), f"{dup[0]!r} is listed twice")
    if "count" in data:
        raise doc.error((*path, "count"), "`count` does not apply to instrument (every "
                        "definition of a listed function is instrumented)")


def _import_custom(file: str, class_name: str, doc: Document, path: KeyPath) -> type[Any]:
    # imported now, so a module that raises (SystemExit too) or lacks the class is
    # bad input (exit 2) at its `file:` key, not a surprise while a root is locked
    from variantctl.config.customcode import load_class
    from variantctl.patching.userhooks import CustomOpError

    try:
        return load_class(file, class_name)
    except CustomOpError as exc:
        raise doc.error(path, str(exc), hint="fix the transformer file; loading it runs "
                                             "its code") from None


class _AnyValue(Any_):
    """Accept anything (each operation is checked by its own schema)."""

    expected = "an operation"


def patchset_names(patchsets_dir: Path) -> list[str]:
    """Names of the patchsets in a directory (file stems), sorted."""
    if not patchsets_dir.is_dir():
        return []
    return sorted(p.stem for p in patchsets_dir.glob("*.yaml") if p.is_file())


def load_patchset(patchsets_dir: Path, name: str) -> Patchset:
    """The named patchset, or NotFoundError with a did-you-mean."""
    if not re.fullmatch(NAME_RE, name):
        raise NotFoundError(f"unknown patchset {name!r}", hint="patchset names are file stems "
                            "in patchsets/, e.g. eager-allreduce")
    path = patchsets_dir / f"{name}.yaml"
    if not path.is_file():
        names = patchset_names(patchsets_dir)
        hint = did_you_mean(name, names) or (
            f"known patchsets: {', '.join(names)}" if names else f"no patchsets in {patchsets_dir}"
        )
        raise NotFoundError(f"unknown patchset {name!r}", hint=hint)
    return load_patchset_file(path)


def load_all_patchsets(patchsets_dir: Path) -> list[Patchset | ConfigError]:
    """Every patchset in the directory; a broken file is returned as its error, not raised."""
    out: list[Patchset | ConfigError] = []
    for name in patchset_names(patchsets_dir):
        try:
            out.append(load_patchset_file(patchsets_dir / f"{name}.yaml"))
        except ConfigError as exc:
            out.append(exc)
    return out
