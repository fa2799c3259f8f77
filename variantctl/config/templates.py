"""PURE: validation of the ``{placeholder}`` templates in config files (a patchset's
``backup``, a variant's ``log``).

Templates are filled with ``str.format``, which also understands format specs
(``{file:>99999999999}`` allocates gigabytes, ``{date:d}`` raises), conversions
(``{file!r}``), attribute and index access (``{file.__class__}``) and positional
fields (``{}``). None of these is meaningful in a file name, so they are refused
when the file loads, with the key named, instead of failing (or worse) when the
template is used. The checks here return a problem text or None; the loaders
turn it into a ConfigError naming file:line and the key.
"""

from __future__ import annotations

import posixpath
import string
from collections.abc import Mapping, Sequence

#: the suffix of variantctl's temp files: recovery removes such files, so a backup
#: may never be named like one
TEMP_SUFFIX = ".variantctl-tmp"


def template_problem(text: str, fields: Sequence[str], *, required: Sequence[str] = (),
                     what: str = "template") -> str | None:
    """Why ``text`` is not a template of plain ``{field}`` placeholders from ``fields``
    (with every ``required`` one present); None when it is."""
    if "\0" in text:
        return f"{what} contains a NUL character"
    known = ", ".join("{" + f + "}" for f in fields)
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        return f"invalid {what}: {exc} (write literal braces as {{{{ and }}}})"
    seen: set[str] = set()
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        shown = "{" + name + (f"!{conversion}" if conversion else "") + \
            (f":{spec}" if spec else "") + "}"
        if name == "" or name.isdigit():
            return f"placeholder {shown} in {what} has no name; known: {known}"
        if conversion or spec:
            kind = "conversion" if conversion else "format spec"
            return (f"placeholder {shown} in {what} has a {kind}; only plain placeholders "
                    f"are allowed: {known}")
        if name not in fields:
            return f"unknown placeholder {shown} in {what}; known: {known}"
        seen.add(name)
    for name in required:
        if name not in seen:
            return f"{what} must contain {{{name}}}"
    return None


def fill(text: str, values: Mapping[str, str]) -> str:
    """A validated template with its placeholders replaced."""
    return text.format_map(dict(values))


BACKUP_FIELDS = ("file", "date", "name", "slug")


def backup_template_problem(text: str, modules: Sequence[str] = ()) -> str | None:
    """A patchset's ``backup``: a file name next to the patched file that can never be
    that file, another file of the patchset, nothing, or a variantctl temp file."""
    if "/" in text or "\\" in text:
        return "backup template must be a file name, not a path"
    problem = template_problem(text, BACKUP_FIELDS, required=("file",),
                               what="backup template")
    if problem:
        return problem
    files = [posixpath.join(*m.split(".")) + ".py" for m in modules] or ["module.py"]
    for rel in files:
        directory, base = posixpath.split(rel)
        # {date} and {name}/{slug} are never empty, so one sample shows what the name is
        name = fill(text, {"file": base, "date": "20260101", "name": "x", "slug": "x"})
        if name.strip() in ("", ".", ".."):
            return f"backup template {text!r} names no file"
        if name == base:
            return (f"backup template {text!r} names the file itself: the backup would be "
                    f"the file it protects (add a suffix, e.g. {{file}}.bak_{{date}})")
        siblings = {posixpath.basename(r) for r in files if posixpath.dirname(r) == directory}
        if name in siblings:
            return f"backup template {text!r} names {name}, another file of the patchset"
        if name.endswith(TEMP_SUFFIX):
            return f"backup template {text!r} names a variantctl temp file (*{TEMP_SUFFIX})"
    return None


LOG_FIELDS = ("workdir", "name", "host", "port")
#: where variantctl keeps its own files under a host's workdir (run records, pid files,
#: launch scripts): a log template may not point there
_PROTECTED_DIRS = ("run", "scripts")


def log_template_problem(text: str) -> str | None:
    """A variant's ``log``: plain placeholders, and a path that is a file outside
    variantctl's own directories of the host's workdir."""
    problem = template_problem(text, LOG_FIELDS, what="log template")
    if problem:
        return problem
    workdir = "/WORKDIR"
    path = fill(text, {"workdir": workdir, "name": "NAME", "host": "HOST", "port": "8000"})
    if not path.strip() or path.endswith("/") or path.endswith("/.") or path.endswith("/.."):
        return f"log template {text!r} names no file"
    norm = posixpath.normpath(path)
    if "{workdir}" in text and norm == workdir:
        return f"log template {text!r} names the work directory itself, not a file"
    for d in _PROTECTED_DIRS:
        protected = posixpath.join(workdir, d)
        if "{workdir}" in text and (norm == protected or norm.startswith(protected + "/")):
            return (f"log template {text!r} points into {{workdir}}/{d}/, where variantctl "
                    f"keeps its own files")
    return None
