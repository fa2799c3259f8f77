"""Located YAML loading and schema errors: file:line:column, key path, did-you-mean."""

from __future__ import annotations

from pathlib import Path

import pytest

from variantctl.config.schema import Bool, Enum, Field, Int, ListOf, MapOf, Str, Struct
from variantctl.config.yamlload import load_yaml_file, load_yaml_text
from variantctl.errors import ConfigError

SCHEMA = Struct(
    "thing",
    {
        "name": Field(Str(), required=True),
        "port": Field(Int(min=1, max=65535)),
        "eager": Field(Bool()),
        "mode": Field(Enum("fast", "slow")),
        "tags": Field(ListOf(Str())),
        "env": Field(MapOf(Str(), Str())),
    },
)


def test_marks_point_at_values() -> None:
    doc = load_yaml_text("name: a\nargs:\n  tp: 4\n  list:\n    - x\n    - y\n", "f.yaml")
    assert doc.data == {"name": "a", "args": {"tp": 4, "list": ["x", "y"]}}
    assert (doc.mark(("args", "tp")).line, doc.mark(("args", "tp")).column) == (3, 7)
    assert doc.mark(("args", "list", 1)).line == 6
    assert doc.mark(("args", "tp"), key=True).column == 3


def test_syntax_error_names_line_and_column() -> None:
    with pytest.raises(ConfigError) as exc:
        load_yaml_text("name: a\nargs: [1, 2\nport: 3\n", "bad.yaml")
    assert str(exc.value).startswith("bad.yaml:3:")
    assert "invalid YAML" in str(exc.value)


def test_duplicate_key_is_an_error() -> None:
    with pytest.raises(ConfigError) as exc:
        load_yaml_text("name: a\nport: 1\nport: 2\n", "dup.yaml")
    msg = str(exc.value)
    assert msg.startswith("dup.yaml:3:1: port: duplicate key 'port'")
    assert "line 2" in msg


def test_unsafe_tags_are_refused() -> None:
    with pytest.raises(ConfigError) as exc:
        load_yaml_text("x: !!python/object/apply:os.system ['echo pwned']\n", "evil.yaml")
    assert "evil.yaml:1:" in str(exc.value)


def test_unknown_key_suggests_closest() -> None:
    doc = load_yaml_text("name: a\nprot: 80\n", "t.yaml")
    with pytest.raises(ConfigError) as exc:
        SCHEMA.check(doc.data, (), doc)
    assert str(exc.value) == "t.yaml:2:1: prot: unknown key 'prot' in thing"
    assert exc.value.hint == "did you mean 'port'?"


def test_wrong_type_names_expected() -> None:
    doc = load_yaml_text("name: a\nport: eighty\n", "t.yaml")
    with pytest.raises(ConfigError) as exc:
        SCHEMA.check(doc.data, (), doc)
    assert str(exc.value) == "t.yaml:2:7: port: expected an integer, got a string"


def test_nested_path_and_range() -> None:
    doc = load_yaml_text("name: a\nport: 70000\n", "t.yaml")
    with pytest.raises(ConfigError, match=r"t.yaml:2:7: port: must be at most 65535"):
        SCHEMA.check(doc.data, (), doc)
    doc = load_yaml_text("name: a\ntags: [ok, 3]\n", "t.yaml")
    with pytest.raises(ConfigError, match=r"t.yaml:2:12: tags\[1\]: expected a string, got an int"):
        SCHEMA.check(doc.data, (), doc)


def test_missing_required_and_enum_hint() -> None:
    doc = load_yaml_text("port: 1\n", "t.yaml")
    with pytest.raises(ConfigError, match="missing required key 'name'"):
        SCHEMA.check(doc.data, (), doc)
    doc = load_yaml_text("name: a\nmode: fsat\n", "t.yaml")
    with pytest.raises(ConfigError) as exc:
        SCHEMA.check(doc.data, (), doc)
    assert exc.value.hint == "did you mean 'fast'?"


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_yaml_file(tmp_path / "nope.yaml")
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"name: a\nx: caf\xe9\n")
    with pytest.raises(ConfigError, match=r"latin1.yaml:2: not valid UTF-8 \(byte 0xe9\)"):
        load_yaml_file(bad)
