"""Every bad-input case names file:line:column and the key path, and the CLI shows no traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.variants.conftest import write_project
from variantctl.config.variants import Catalog
from variantctl.errors import ConfigError

MakeCatalog = Callable[..., Catalog]


def error_of(make_catalog: MakeCatalog, files: dict[str, str],
             environ: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as exc:
        make_catalog(files, environ)
    return exc.value


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        # a typo in a top-level key: position of the key and the closest known key
        ("port: 1\nextend: base\n", "variants/v.yaml:2:1: extend: unknown key 'extend' in variant",
         "did you mean 'extends'?"),
        ("startup:\n  redy_timeout: 5\n",
         "variants/v.yaml:2:3: startup.redy_timeout: unknown key 'redy_timeout' in startup",
         "did you mean 'ready_timeout'?"),
        ("vendor:\n  backport: [x]\n",
         "variants/v.yaml:2:3: vendor.backport: unknown key 'backport' in vendor",
         "did you mean 'backports'?"),
    ],
)
def test_unknown_keys_suggest_the_closest(make_catalog: MakeCatalog, text: str, message: str,
                                          hint: str) -> None:
    err = error_of(make_catalog, {"v.yaml": text})
    assert (err.message, err.hint) == (message, hint)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("port: eighty\n", "variants/v.yaml:1:7: port: expected an integer, got a string"),
        ("port: 70000\n", "variants/v.yaml:1:7: port: must be at most 65535, got 70000"),
        ("args: [a, b]\n", "variants/v.yaml:1:7: args: expected a mapping, got a list"),
        ("args:\n  x: {a: 1}\n",
         "variants/v.yaml:2:6: args.x: expected a string, number, true/false, null or a list, "
         "got a mapping"),
        ("args:\n  x: [a, true]\n",
         "variants/v.yaml:2:10: args.x[1]: expected a string or number in a repeated flag, "
         "got a boolean"),
        ("args:\n  x: []\n",
         "variants/v.yaml:2:6: args.x: an empty list renders no flag; write null to remove it"),
        ("env:\n  FLAG: true\n",
         "variants/v.yaml:2:9: env.FLAG: expected a string or an integer or a number, "
         "got a boolean"),
        ("requires: 3\n", "variants/v.yaml:1:11: requires: expected a patchset name, "
                          "got an integer"),
        ("startup:\n  stall: fast\n",
         "variants/v.yaml:2:10: startup.stall: expected a number, got a string"),
        ("vllm_version: latest\n",
         "variants/v.yaml:1:15: vllm_version: 'latest' is not a vLLM version such as 0.6.3"),
        ("command: []\n", "variants/v.yaml:1:10: command: expected a string or a list of a "
                          "string, got a list"),
        ("command: \"python 'unclosed\"\n",
         "variants/v.yaml:1:10: command: cannot split command: No closing quotation"),
        ("- a\n- b\n", "variants/v.yaml:1:1: expected a mapping (variant), got a list"),
        ("", "variants/v.yaml:1:1: empty variant file"),
    ],
)
def test_wrong_types_name_what_was_expected(make_catalog: MakeCatalog, text: str,
                                            message: str) -> None:
    assert error_of(make_catalog, {"v.yaml": text}).message == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("env:\n  BAD-NAME: x\n",
         "variants/v.yaml:2:13: env.BAD-NAME: 'BAD-NAME' is not an environment variable name"),
        ("env:\n  '1X': x\n",
         "variants/v.yaml:2:9: env.1X: '1X' is not an environment variable name"),
        ("args:\n  'bad flag': 1\n",
         "variants/v.yaml:2:3: args.bad flag: 'bad flag' is not a valid flag name "
         "(lower-case letters, digits and dashes)"),
        ("args:\n  'x;rm': 1\n",
         "variants/v.yaml:2:3: args.x;rm: 'x;rm' is not a valid flag name "
         "(lower-case letters, digits and dashes)"),
        ("args:\n  no-enable-chunked-prefill: true\n",
         "variants/v.yaml:2:3: args.no-enable-chunked-prefill: write "
         "`enable-chunked-prefill: false` instead of `no-enable-chunked-prefill`"),
        ("args:\n  port: 1\n",
         "variants/v.yaml:2:3: args.port: set the top-level `port` key instead of args.port"),
        ("args:\n  tp: 1\n  tensor-parallel-size: 2\n",
         "variants/v.yaml:3:3: args.tensor-parallel-size: 'tensor-parallel-size' and 'tp' are "
         "the same flag --tensor-parallel-size"),
        ("log: /x/{run}.log\n",
         "variants/v.yaml:1:6: log: unknown placeholder {run} in log template; "
         "known: {workdir}, {name}, {host}, {port}"),
        ("log: /x/{name.log\n",
         "variants/v.yaml:1:6: log: invalid log template: expected '}' before end of string "
         "(write literal braces as {{ and }})"),
        ("model: ${MISSING}/m\n",
         "variants/v.yaml:1:8: model: environment variable MISSING is not set"),
        ("port: 1\nport: 2\n",
         "variants/v.yaml:2:1: port: duplicate key 'port' (first defined at line 1)"),
        ("args: {a: 1\n", "variants/v.yaml:2:1: invalid YAML: expected ',' or '}', but got "
                          "'<stream end>'"),
        ("model: !!python/object:os.system x\n",
         "variants/v.yaml:1:8: invalid YAML: could not determine a constructor for the tag "
         "'tag:yaml.org,2002:python/object:os.system'"),
        ("extends: v\n", "variants/v.yaml:1:10: extends: variant 'v' extends itself"),
    ],
)
def test_invalid_names_and_values(make_catalog: MakeCatalog, text: str, message: str) -> None:
    assert error_of(make_catalog, {"v.yaml": text}).message == message


def test_missing_parent_is_named_with_a_suggestion(make_catalog: MakeCatalog) -> None:
    err = error_of(make_catalog, {"base.yaml": "port: 1\n", "child.yaml": "extends: [bsae]\n"})
    assert err.message == "variants/child.yaml:1:11: extends: unknown parent variant 'bsae'"
    assert err.hint == "did you mean 'base'?"


def test_extends_cycle_is_named(make_catalog: MakeCatalog) -> None:
    err = error_of(make_catalog, {
        "a.yaml": "extends: c\n",
        "b.yaml": "extends: a\n",
        "c.yaml": "port: 1\nextends: [b]\n",
    })
    # found walking from a; located at the edge that closes the loop
    assert err.message == "variants/b.yaml:1:10: extends: extends cycle: a -> c -> b -> a"
    assert err.hint == "a variant cannot inherit from itself, even indirectly"


def test_two_files_defining_one_name(make_catalog: MakeCatalog) -> None:
    err = error_of(make_catalog, {"a.yaml": "port: 1\n", "b.yaml": "name: a\n"})
    assert err.message == "variants/b.yaml: variant 'a' is defined twice (also in variants/a.yaml)"


def test_hosts_file_errors_are_located(make_catalog: MakeCatalog) -> None:
    err = error_of(make_catalog,
                   {"hosts.yaml": "gpu:\n  vendor:\n    attention_backend_default: 3\n"})
    assert err.message == ("variants/hosts.yaml:3:32: gpu.vendor.attention_backend_default: "
                           "expected an attention backend name, got an integer")
    err = error_of(make_catalog, {"hosts.yaml": "gpu:\n  vllm_versoin: 0.6.3\n"})
    assert err.message == ("variants/hosts.yaml:2:3: gpu.vllm_versoin: "
                           "unknown key 'vllm_versoin' in host")
    assert err.hint == "did you mean 'vllm_version'?"


@pytest.mark.parametrize("command", [["list"], ["show", "v"], ["render", "v"],
                                     ["diff", "v", "v"], ["check", "--all"]])
def test_cli_reports_one_line_without_traceback(tmp_path: Path, run_cli: Callable[..., object],
                                                command: list[str]) -> None:
    project = write_project(tmp_path / "p", {"v.yaml": "args:\n  max-modle-len: [\n"})
    res = run_cli(command, project=project)
    assert res.code == 2  # type: ignore[attr-defined]
    assert res.stdout == ""  # type: ignore[attr-defined]
    assert res.stderr.startswith("error: variants/v.yaml:3:1: invalid YAML")  # type: ignore[attr-defined]
    assert "Traceback" not in res.stderr  # type: ignore[attr-defined]
    assert len(res.stderr.strip().splitlines()) == 1  # type: ignore[attr-defined]


def test_cli_unknown_variant_has_a_hint(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    project = write_project(tmp_path / "p", {"cpu-eager.yaml": "port: 1\n"})
    res = run_cli(["render", "cpu-eagre"], project=project)
    assert res.code == 2  # type: ignore[attr-defined]
    assert res.stderr == ("error: unknown variant 'cpu-eagre'\n"  # type: ignore[attr-defined]
                          "hint: did you mean 'cpu-eager'?\n")


def test_cli_unknown_host_has_a_hint(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    project = write_project(tmp_path / "p", {"v.yaml": "host: cpux\n",
                                             "hosts.yaml": "cpu:\n  python: /bin/py\n"})
    res = run_cli(["render", "v"], project=project)
    assert res.code == 2  # type: ignore[attr-defined]
    assert res.stderr == "error: unknown host 'cpux'\nhint: did you mean 'cpu'?\n"  # type: ignore[attr-defined]
