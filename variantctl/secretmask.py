"""What is a secret, and how it is shown: ``***`` (PURE).

The one rule, for every output except ``render`` and ``show`` (which print what launch
runs, and say so): an environment variable or a server argument is a **secret** when its
name, upper-cased with ``-`` read as ``_``, matches one of :data:`PATTERNS` —
``*TOKEN*``, ``*KEY*``, ``*SECRET*``, ``*PASSWORD*``, ``HF_TOKEN``, ``*_API_KEY`` — or a
name or pattern of the project's own list (``secrets:`` in ``variants/hosts.yaml``).
Its value is shown as :data:`MASK` in ``compare`` (which still says *that* it differs),
``bisect``'s plan and results, ``sweep --dry-run``, the report's labels and files, and
the run listings. Stored run records keep the value (bisect relaunches from them); what
is printed from them is masked.
"""

from __future__ import annotations

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


def _normal(name: str) -> str:
    return name.strip().lstrip("-").upper().replace("-", "_")


@dataclass(frozen=True)
class SecretRule:
    """:data:`PATTERNS` plus the project's ``extra`` names or patterns."""

    extra: tuple[str, ...] = ()

    def is_secret(self, name: str) -> bool:
        """Whether a variable or argument called ``name`` holds a secret."""
        n = _normal(name)
        return any(fnmatchcase(n, _normal(p)) for p in (*PATTERNS, *self.extra))

    def is_secret_setting(self, key: str) -> bool:
        """``env.HF_TOKEN``, ``args.api-key``, ``host.env.X``: a secret's setting (the
        name after the section); a bare name is judged as it is."""
        for section in _NAMED:
            if key.startswith(section + "."):
                return self.is_secret(key[len(section) + 1:])
        return self.is_secret(key.rpartition(".")[2])

    def mask(self, name: str, value: V) -> V | str:
        """``value``, or :data:`MASK` when ``name`` (``HF_TOKEN``, ``env.HF_TOKEN``) is a
        secret and the value is set."""
        return MASK if value is not None and self.is_secret_setting(name) else value

    def mask_mapping(self, values: Mapping[str, V]) -> dict[str, V | str]:
        """A copy with every secret's value masked."""
        return {k: self.mask(k, v) for k, v in values.items()}

    def names_in(self, names: Iterable[str]) -> list[str]:
        """The secrets among ``names``, sorted."""
        return sorted({n for n in names if self.is_secret(n)})

    def secret_values(self, sections: Iterable[Mapping[str, object]]) -> list[str]:
        """The text values of the secrets in ``sections`` (to scrub from free text)."""
        return [str(v) for s in sections for k, v in s.items()
                if self.is_secret(k) and isinstance(v, str) and len(v) >= 4]


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
    if not isinstance(section, Mapping):
        return dict(data)
    return {**data, key: rule.mask_mapping(section)}


def masked_record(record: Mapping[str, Any], rule: SecretRule = DEFAULT) -> dict[str, Any]:
    """A stored run record (``RunRecord.to_json``) as shown to people: the variant's and
    the host's ``env`` and ``args``, the logged ``facts.config`` with ``***`` for every
    secret, and each secret's value scrubbed from the launch ``script`` and the server
    record's text (the record on disk keeps them: bisect relaunches from it)."""
    variant = record.get("variant")
    host = record.get("host")
    values: list[str] = []
    out = dict(record)
    if isinstance(variant, Mapping):
        values += rule.secret_values(s for s in (variant.get("env"), variant.get("args"))
                                     if isinstance(s, Mapping))
        out["variant"] = _mask_section(_mask_section(variant, "env", rule), "args", rule)
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
