"""Located YAML loading and schema errors: file:line:column, key path, did-you-mean."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from variantctl.config.schema import (
    Bool,
    Enum,
    Field,
    Int,
    ListOf,
    MapOf,
    Nullable,
    Str,
    Struct,
)
from variantctl.config.yamlload import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    load_yaml_file,
    load_yaml_text,
)
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


# -- limits: no file can exhaust memory or the stack (issue 8, family 3) -----------

def _laughs(levels: int = 9) -> str:
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    prev = "a"
    for name in "bcdefghijk"[: levels - 1]:
        text += f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]\n"
        prev = name
    return text


def test_billion_laughs_is_refused_at_the_line_that_crosses_the_limit() -> None:
    text = _laughs()
    assert len(text) < 700  # the 700-byte file: 9**9 strings once expanded
    with pytest.raises(ConfigError) as exc:
        load_yaml_text(text, "lol.yaml")
    # 9**6 = 531441 nodes is the first level above MAX_NODES: line 6 (`f: &f [...]`)
    assert str(exc.value).startswith("lol.yaml:6:")
    assert f"more than {MAX_NODES} nodes once aliases are expanded" in str(exc.value)


def test_aliases_within_the_limit_still_work() -> None:
    doc = load_yaml_text("base: &b [1, 2]\nx: *b\ny: {k: *b}\n", "ok.yaml")
    assert doc.data == {"base": [1, 2], "x": [1, 2], "y": {"k": [1, 2]}}
    assert doc.mark(("y", "k", 1)).line == 1  # an alias's children point at the anchor


@pytest.mark.parametrize("text,line,col", [
    ("tags: &a [*a]\n", 1, 11),
    ("x: &m {k: [1, *m]}\n", 1, 15),
])
def test_recursive_alias_is_refused_where_it_is_used(text: str, line: int, col: int) -> None:
    with pytest.raises(ConfigError) as exc:
        load_yaml_text(text, "rec.yaml")
    assert str(exc.value).startswith(f"rec.yaml:{line}:{col}: recursive alias")


def test_absurd_nesting_is_refused_not_a_stack_overflow() -> None:
    with pytest.raises(ConfigError) as exc:
        load_yaml_text("x: " + "[" * 500 + "]" * 500 + "\n", "deep.yaml")
    assert str(exc.value).startswith("deep.yaml:1:")
    assert f"nesting deeper than {MAX_DEPTH} levels" in str(exc.value)
    ok = MAX_DEPTH - 1  # the mapping is one level, the lists the rest
    assert load_yaml_text("x: " + "[" * ok + "]" * ok + "\n", "d.yaml").data is not None


def test_nesting_through_aliases_counts_the_expanded_depth() -> None:
    text = "a: &x " + "[" * 60 + "]" * 60 + "\nb: " + "[" * 60 + "*x" + "]" * 60 + "\n"
    with pytest.raises(ConfigError) as exc:
        load_yaml_text(text, "d.yaml")
    assert str(exc.value).startswith("d.yaml:2:")
    assert "deeper than" in str(exc.value)


def test_oversized_file_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"# " + b"x" * MAX_FILE_BYTES + b"\n")
    with pytest.raises(ConfigError) as exc:
        load_yaml_file(big, display="big.yaml")
    assert str(exc.value).startswith("big.yaml: larger than")


@pytest.mark.parametrize("text,where", [
    ('args:\n  x: "a\\0b"\n', "nul.yaml:2:6: args.x: "),
    ('env:\n  K: ["ok", "\\x00"]\n', "nul.yaml:2:13: env.K[1]: "),
    ('"k\\u0000": 1\n', "nul.yaml:1:1: "),
])
def test_nul_in_any_string_is_refused(text: str, where: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_yaml_text(text, "nul.yaml")
    assert str(exc.value).startswith(where)
    assert "NUL character" in str(exc.value)


@pytest.mark.parametrize("make", ["device", "fifo"])
def test_a_device_or_fifo_is_refused_unread(tmp_path: Path, make: str) -> None:
    # before: a link to /dev/zero was read without end (gigabytes), a FIFO blocked forever
    path = tmp_path / "hosts.yaml"
    if make == "device":
        path.symlink_to("/dev/zero")
    else:
        os.mkfifo(path)
    with pytest.raises(ConfigError) as exc:
        load_yaml_file(path, display="variants/hosts.yaml")
    assert str(exc.value) == "variants/hosts.yaml: not a regular file (a device, FIFO or socket)"


def _shaped_structs() -> list[Struct]:
    """Every Struct that declares a TypedDict shape, nested ones included."""
    from variantctl.config import hosts, signatures, sweeps, variants

    found: list[Struct] = []
    todo: list[object] = [hosts._SSH, hosts.VENDOR, hosts._SLURM, hosts._HOST, sweeps._SWEEP,
                          signatures.BUILTIN_FILE, signatures.USER_FILE, variants._VARIANT]
    while todo:
        schema = todo.pop()
        if isinstance(schema, Struct) and schema not in found:
            found.append(schema)
            todo.extend(f.schema for f in schema.fields.values())
        elif isinstance(schema, ListOf):
            todo.append(schema.item)
        elif isinstance(schema, MapOf):
            todo.append(schema.value)
        elif isinstance(schema, Nullable):
            todo.append(schema.inner)
    return [s for s in found if s.shape is not None]


def test_a_struct_shape_has_exactly_its_fields_keys() -> None:
    # the shape is the type the loaders read a checked mapping as: a key the schema
    # checks but the shape lacks (or the other way round) would be typed wrong
    from variantctl.config import schema as schema_module

    shaped = _shaped_structs()
    assert {s.what for s in shaped} >= {"ssh", "vendor", "slurm", "host", "gpu", "sweep",
                                        "bench", "grid", "stop", "signature", "phase",
                                        "context", "signature catalog", "signature file",
                                        "variant", "startup"}
    for s in shaped:
        assert s.shape is not None
        assert set(s.shape.__annotations__) == set(s.fields), s.what
        # a key the schema requires or fills with a default is always there
        always = {name for name, f in s.fields.items()
                  if f.required or f.default is not schema_module._MISSING}
        assert set(s.shape.__required_keys__) == always, s.what
