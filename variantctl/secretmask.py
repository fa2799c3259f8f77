"""What is a secret, and how it is shown: ``***`` (PURE).

The one rule, for every output except ``render`` and ``show`` (which print what launch
runs, and say so): an environment variable or a server argument is a **secret** when its
name, upper-cased with ``-`` read as ``_``, matches one of :data:`PATTERNS` —
``*TOKEN*``, ``*KEY*``, ``*SECRET*``, ``*PASSWORD*``, ``HF_TOKEN``, ``*_API_KEY`` — or a
name or pattern of the project's own list (``secrets:`` in ``variants/hosts.yaml``).
Words that count tokens are not credentials: ``TOKENS`` and ``TOKENIZER`` inside a name
do not match the built-in patterns (``max-num-batched-tokens``, ``tokenizer-mode`` are
settings to compare; a project may still list them).

The same rule reaches into values that hold a command line — a variant's ``command``,
an argument whose value is a list of words or a text: the word after a secret-named
flag (``--api-key sk-…``), a secret flag's ``--api-key=sk-…`` and a secret-named
``NAME=value`` prefix (``HF_TOKEN=hf_… vllm serve``) are shown with the value ``***``
(:meth:`SecretRule.mask_value`).
Its value is shown as :data:`MASK` in ``compare`` (which still says *that* it differs),
``bisect``'s plan and results, ``sweep --dry-run``, the report's labels and files, and
the run listings. Stored run records keep the value (bisect relaunches from them); what
is printed from them is masked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, TypeVar

V = TypeVar("V")

#: the names (shell patterns, matched upper-cased) that are secrets in every project
PATTERNS = ("*TOKEN*", "*KEY*", "*SECRET*", "*PASSWORD*", "HF_TOKEN", "*_API_KEY")
#: what a secret's value is shown as
MASK = "***"
#: the settings sections whose keys are names the rule applies to
_NAMED = ("args", "env", "host.env")


#: the words inside a name that count tokens rather than hold one
_COUNTING = re.compile(r"TOKEN(?:S|IZER)")
#: ``NAME=value`` (an environment prefix) and ``--flag=value`` as one word
#: (a flag's value is the rest of its word; a variable's ends at a blank: one word may be
#: a shell line, ``bash -c "HF_TOKEN=… vllm serve"``)
_ASSIGN = re.compile(r"(--?[A-Za-z][A-Za-z0-9_.-]*)=(.*)|([A-Za-z_][A-Za-z0-9_]*)=(\S*)", re.S)
#: in free text: ``--flag value``, ``--flag=value``, ``NAME=value`` (a value quoted or a
#: run of non-blanks; every part bounded by its delimiter: linear, no backtracking)
_IN_TEXT = re.compile(
    r"(?<![\w.-])(?P<name>--?[A-Za-z][A-Za-z0-9_.-]*(?P<sep>=|[ \t]+)"
    r"|[A-Za-z_][A-Za-z0-9_]*(?P<eq>=))"
    r"(?P<value>'[^']*'|\"[^\"]*\"|[^\s'\"]+)")


def _normal(name: str) -> str:
    return name.strip().lstrip("-").upper().replace("-", "_")


@dataclass(frozen=True)
class SecretRule:
    """:data:`PATTERNS` plus the project's ``extra`` names or patterns."""

    extra: tuple[str, ...] = ()

    def is_secret(self, name: str) -> bool:
        """Whether a variable or argument called ``name`` holds a secret."""
        n = _normal(name)
        if not n:
            return False
        counting = _COUNTING.sub("#", n)
        return (any(fnmatchcase(counting, p) for p in PATTERNS)
                or any(fnmatchcase(n, _normal(p)) for p in self.extra))

    def is_secret_setting(self, key: str) -> bool:
        """``env.HF_TOKEN``, ``args.api-key``, ``host.env.X``: a secret's setting (the
        name after the section); a bare name is judged as it is."""
        for section in _NAMED:
            if key.startswith(section + "."):
                return self.is_secret(key[len(section) + 1:])
        return self.is_secret(key.rpartition(".")[2])

    def mask(self, name: str, value: V) -> V | str:
        """``value``, or :data:`MASK` when ``name`` (``HF_TOKEN``, ``env.HF_TOKEN``) is a
        secret and the value is set; any other value with the secrets it holds inline
        masked (:meth:`mask_value`: ``command``, ``args.x: [--api-key, …]``)."""
        if value is not None and self.is_secret_setting(name):
            return MASK
        return self.mask_value(value)

    def mask_value(self, value: V) -> V:
        """``value`` with the secrets it holds inline shown as ``***``: in a list of words
        (a command), the word after a secret flag (``--api-key``), the value of
        ``--api-key=…`` and of a ``HF_TOKEN=…`` prefix; in a text the same, read from the
        text. Anything else is returned as it is."""
        if isinstance(value, str):
            return self.mask_text(value)  # type: ignore[return-value]
        if isinstance(value, (list, tuple)):
            return type(value)(self.mask_words(value))
        return value

    def mask_words(self, words: Iterable[object]) -> list[object]:
        """A command line as a list of words, its inline secrets masked."""
        out: list[object] = []
        after_flag = False
        for w in words:
            if not isinstance(w, str):
                out.append(self.mask_value(w))
                after_flag = False
                continue
            if after_flag and not w.startswith("-"):
                out.append(MASK)
                after_flag = False
                continue
            after_flag = False
            m = _ASSIGN.fullmatch(w)
            if m and self.is_secret(m.group(1) or m.group(3)):
                out.append(f"{m.group(1) or m.group(3)}={MASK}")
            elif w.startswith("-") and "=" not in w and self.is_secret(w):
                out.append(w)
                after_flag = True
            else:
                out.append(self.mask_text(w))
        return out

    def mask_text(self, text: str) -> str:
        """Free text (a shell line, ``bash -c '…'``) with every secret flag's or
        secret-named variable's value shown as ``***``."""
        return self._scan(text, [])

    def _scan(self, text: str, found: list[str]) -> str:
        """One pass over ``text``: a name that is not a secret's is stepped over (its
        value is scanned too: ``-c "HF_TOKEN=… vllm"``); a secret's value is masked and
        collected into ``found``."""
        out: list[str] = []
        pos = 0
        while (m := _IN_TEXT.search(text, pos)) is not None:
            name, value = m.group("name"), m.group("value")
            if not self.is_secret(name.rstrip("= \t")) or (
                    m.group("eq") is None and m.group("sep") != "=" and value.startswith("-")):
                out.append(text[pos:m.end("name")])
                pos = m.end("name")
                continue
            found.append(value.strip("'\""))
            out.append(text[pos:m.start("value")] + MASK)
            pos = m.end()
        out.append(text[pos:])
        return "".join(out)

    def inline_values(self, value: object) -> list[str]:
        """The secret values :meth:`mask_value` hides in ``value`` (to scrub them from a
        launch script that quotes them differently)."""
        found: list[str] = []
        if isinstance(value, str):
            self._scan(value, found)
        elif isinstance(value, (list, tuple)):
            for shown, raw in zip(self.mask_words(value), value, strict=True):
                if shown == MASK and isinstance(raw, str):
                    found.append(raw)
                elif shown != raw and isinstance(raw, str):
                    m = _ASSIGN.fullmatch(raw)
                    if m and shown == f"{m.group(1) or m.group(3)}={MASK}":
                        found.append(m.group(2) if m.group(1) else m.group(4))
                    else:
                        found += self.inline_values(raw)
                elif not isinstance(raw, str):
                    found += self.inline_values(raw)
        return [v for v in found if len(v) >= 4]

    def mask_mapping(self, values: Mapping[str, V]) -> dict[str, V | str]:
        """A copy with every secret's value masked."""
        return {k: self.mask(k, v) for k, v in values.items()}

    def names_in(self, names: Iterable[str]) -> list[str]:
        """The secrets among ``names``, sorted."""
        return sorted({n for n in names if self.is_secret(n)})

    def secret_values(self, sections: Iterable[Mapping[str, object]]) -> list[str]:
        """The text values of the secrets in ``sections`` (to scrub from free text)."""
        out: list[str] = []
        for s in sections:
            for k, v in s.items():
                if self.is_secret(k) and isinstance(v, str) and len(v) >= 4:
                    out.append(v)
                elif not self.is_secret(k):
                    out += self.inline_values(v)
        return out


#: the rule without a project
DEFAULT = SecretRule()


def scrub(text: str, values: Iterable[str]) -> str:
    """``text`` with every occurrence of a secret's value replaced by :data:`MASK`
    (a command line, a script: free text that may quote a secret)."""
    for v in sorted(set(values), key=len, reverse=True):
        text = text.replace(v, MASK)
    return text


def unmasked_note(names: Iterable[str]) -> str | None:
    """What ``render`` / ``show`` say when they print secrets as launch passes them."""
    listed = list(names)
    if not listed:
        return None
    return (f"note: this prints what launch runs, secrets included ({', '.join(listed)}); "
            f"every other output shows them as {MASK}")


def _mask_section(data: Mapping[str, Any], key: str, rule: SecretRule) -> dict[str, Any]:
    section = data.get(key)
    if isinstance(section, (list, tuple, str)):  # a command line
        return {**data, key: rule.mask_value(section)}
    if not isinstance(section, Mapping):
        return dict(data)
    return {**data, key: rule.mask_mapping(section)}


def masked_record(record: Mapping[str, Any], rule: SecretRule = DEFAULT) -> dict[str, Any]:
    """A stored run record (``RunRecord.to_json``) as shown to people: the variant's and
    the host's ``env`` and ``args``, the logged ``facts.config`` with ``***`` for every
    secret and the variant's ``command`` with its inline secrets masked, and each secret's
    value scrubbed from the launch ``script`` and the server record's text (the record on
    disk keeps them: bisect relaunches from it)."""
    variant = record.get("variant")
    host = record.get("host")
    values: list[str] = []
    out = dict(record)
    if isinstance(variant, Mapping):
        values += rule.secret_values(s for s in (variant.get("env"), variant.get("args"))
                                     if isinstance(s, Mapping))
        values += rule.inline_values(variant.get("command"))
        out["variant"] = _mask_section(_mask_section(_mask_section(
            variant, "env", rule), "args", rule), "command", rule)
    if isinstance(host, Mapping):
        if isinstance(host.get("env"), Mapping):
            values += rule.secret_values([host["env"]])
        out["host"] = _mask_section(host, "env", rule)
    facts = record.get("facts")
    if isinstance(facts, Mapping):
        out["facts"] = _mask_section(facts, "config", rule)
    for key in ("script", "server"):
        if key in out:
            out[key] = _scrub_json(out[key], values)
    return out


def _scrub_json(value: Any, values: list[str]) -> Any:
    if isinstance(value, str):
        return scrub(value, values)
    if isinstance(value, Mapping):
        return {k: _scrub_json(v, values) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub_json(v, values) for v in value]
    return value
