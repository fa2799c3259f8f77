"""The ``instrument`` operation: schema, states, transform/inverse, the inlined recorder at
run time (in real child processes), and apply/status/rollback end to end on real roots."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.support.prof_project import prof_project
from variantctl.bench.profiledata import breakdown, parse_lines
from variantctl.config.patchsets import load_patchset_file
from variantctl.errors import ConfigError
from variantctl.patching.engine import analyze
from variantctl.patching.model import Operation
from variantctl.patching.states import APPLIED, DRIFTED, PRISTINE

SAMPLE = textwrap.dedent('''\
    """A module shaped like vLLM's model runner."""
    from __future__ import annotations

    import functools

    FLAG = True


    def _keep(fn):
        @functools.wraps(fn)
        def inner(*a, **k):
            return fn(*a, **k)
        return inner


    class Runner:
        @_keep
        def execute_model(self, x):
            return self._forward(x) + sample(x)

        def _forward(self, x):
            return x * 2

        @staticmethod
        def helper(y):
            return y

        class Inner:
            def deep(self):
                return 1


    if FLAG:
        def sample(v):
            return v + 1
    else:
        def sample(v):
            return v - 1


    async def serve(x):
        return x
    ''')

FUNCS = ("Runner.execute_model", "Runner._forward", "Runner.helper", "Runner.Inner.deep",
         "sample", "serve")


def op(functions: tuple[str, ...] = FUNCS, sync: bool = False) -> Operation:
    return Operation(id="prof", kind="instrument", module="pkg.runner", where="t.yaml:1",
                     functions=functions, sync=sync)


# -- schema -------------------------------------------------------------------


def write_patchset(tmp_path: Path, ops: str, name: str = "prof") -> Path:
    p = tmp_path / f"{name}.yaml"
    p.write_text(f"name: {name}\nmodules: [pkg.runner, pkg.other]\noperations:\n{ops}")
    return p


def test_schema_reads_functions_and_sync(tmp_path: Path) -> None:
    ps = load_patchset_file(write_patchset(tmp_path, (
        "  - op: instrument\n    module: pkg.runner\n"
        "    functions: [Runner.execute_model, sample]\n    sync: true\n")))
    (o,) = ps.operations
    assert o.kind == "instrument" and o.functions == ("Runner.execute_model", "sample")
    assert o.sync is True
    assert o.describe == "profile points Runner.execute_model, sample (sync)"


@pytest.mark.parametrize(("ops", "message"), [
    ("  - op: instrument\n    module: pkg.runner\n    functions: [a]\n"
     "  - op: instrument\n    module: pkg.runner\n    functions: [b]\n",
     "prof.yaml:7:5: operations[1]: a second instrument operation for module 'pkg.runner'"),
    ("  - op: instrument\n    module: pkg.runner\n    function: [a]\n", "function"),
    ("  - op: instrument\n    module: pkg.runner\n    functions: [a, a]\n", "'a' is listed twice"),
    ("  - op: instrument\n    module: pkg.runner\n    functions: [a]\n    count: 2\n",
     "`count` does not apply to instrument"),
    ("  - op: instrument\n    module: pkg.runner\n    functions: [not a name]\n",
     "operations[0].functions[0]"),
    ("  - op: instrument\n    module: pkg.runner\n    functions: [a]\n    sync: maybe\n", "sync"),
])
def test_schema_refuses_bad_instrument_ops(tmp_path: Path, ops: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_patchset_file(write_patchset(tmp_path, ops))
    text = str(err.value) + (err.value.hint or "")
    assert message in text, text


def test_unknown_function_key_suggests_functions(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_patchset_file(write_patchset(
            tmp_path, "  - op: instrument\n    module: pkg.runner\n    function: [a]\n"))
    assert "functions" in (err.value.hint or "") + str(err.value)


# -- states and transform -------------------------------------------------------


def test_apply_then_reverse_is_the_identity_and_states_are_decided() -> None:
    data = SAMPLE.encode()
    a = analyze([op()], data, with_lines=True)
    assert a.state == PRISTINE
    (s,) = a.ops
    # both definitions of `sample` (if/else) count: every definition is instrumented
    assert [(f.code, f.line, f.kind) for f in s.found] == [
        ("Runner.execute_model", 18, "from"), ("Runner._forward", 21, "from"),
        ("Runner.helper", 25, "from"), ("Runner.Inner.deep", 29, "from"),
        ("sample", 34, "from"), ("sample", 37, "from"), ("serve", 41, "from")]
    assert s.shown.startswith("Runner.execute_model:18, Runner._forward:21")
    assert a.new_data is not None
    new = a.new_data.decode()
    compile(new, "runner.py", "exec")
    # innermost: existing decorators keep wrapping what they wrapped
    assert ('    @_keep\n    @_variantctl_profile("Runner.execute_model")\n'
            '    def execute_model') in new
    assert '    @staticmethod\n    @_variantctl_profile("Runner.helper")\n    def helper' in new
    assert new.count('@_variantctl_profile("sample")') == 2
    # the recorder comes right after the docstring and the __future__ import
    assert new.index("from __future__ import annotations") < new.index(
        "def _variantctl_profile(") < new.index("import functools")

    b = analyze([op()], a.new_data, with_lines=True)
    assert b.state == APPLIED and b.new_data is None
    assert [f.kind for f in b.ops[0].found] == ["to"] * 7
    back = analyze([op()], a.new_data, reverse=True)
    assert back.state == APPLIED and back.new_data == data


def test_sync_option_is_written_and_checked() -> None:
    a = analyze([op(("Runner._forward",), sync=True)], SAMPLE.encode())
    assert a.new_data is not None
    assert '@_variantctl_profile("Runner._forward", sync=True)' in a.new_data.decode()
    # the same file seen by an operation without sync: instrumented differently → drifted
    other = analyze([op(("Runner._forward",))], a.new_data)
    assert other.state == DRIFTED
    assert "instrumented with other options: Runner._forward" in other.ops[0].reason


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda t: t, "not in this file: Runner.gone"),
    (lambda t: t.replace('    @_variantctl_profile("Runner._forward")\n', ""),
     "recorder present but not instrumented: Runner._forward"),
    (lambda t: t[: t.index("# variantctl instrument")] + t[t.rindex("import functools"):],
     "instrumented without the recorder block"),
])
def test_drift_is_named(edit, reason: str) -> None:  # type: ignore[no-untyped-def]
    funcs = ("Runner.execute_model", "Runner._forward")
    applied = analyze([op(funcs)], SAMPLE.encode()).new_data
    assert applied is not None
    text = edit(applied.decode())
    ops = [op((*funcs, "Runner.gone"))] if "gone" in reason else [op(funcs)]
    a = analyze(ops, text.encode())
    assert a.state == DRIFTED and a.new_data is None
    assert reason in a.ops[0].reason


# -- the recorder at run time ----------------------------------------------------


def _package(tmp_path: Path, funcs: tuple[str, ...] = FUNCS) -> Path:
    applied = analyze([op(funcs)], SAMPLE.encode()).new_data
    assert applied is not None
    pkg = tmp_path / "site" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "runner.py").write_bytes(applied)
    return tmp_path / "site"


CHILD = textwrap.dedent("""\
    import asyncio, json, sys
    from pkg import runner
    r = runner.Runner()
    for i in range(int(sys.argv[1])):
        r.execute_model(i)
    runner.Runner.helper(1)
    asyncio.run(runner.serve(1))
    print(json.dumps({
        "wrapped": hasattr(runner.Runner.execute_model, "__wrapped__")
                   and hasattr(runner.Runner.execute_model.__wrapped__, "__wrapped__"),
        "runtime": "_variantctl_profile_runtime_1" in sys.modules,
        "result": r.execute_model(3)}))
    """)


def _child(site: Path, n: int, profile: Path | None, script: str = CHILD) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "VARIANTCTL_PROFILE"}
    env["PYTHONPATH"] = str(site)
    if profile is not None:
        env["VARIANTCTL_PROFILE"] = str(profile)
    out = subprocess.run([sys.executable, "-c", script, str(n)], env=env, capture_output=True,
                         text=True, timeout=60, check=True)
    result: dict[str, object] = json.loads(out.stdout.splitlines()[-1])
    return result


def _events(directory: Path) -> dict[int, list]:  # type: ignore[type-arg]
    out = {}
    for f in sorted(directory.glob("prof-*.jsonl")):
        pid = int(f.stem.split("-")[1])
        out[pid] = parse_lines(f.read_text(), pid).events
    return out


def test_unset_variable_leaves_the_original_functions(tmp_path: Path) -> None:
    site = _package(tmp_path)
    res = _child(site, 5, None)
    # only _keep's own wrapper: no profiling wrapper, no runtime loaded, same results
    assert res == {"wrapped": False, "runtime": False, "result": 10}
    assert not list(tmp_path.rglob("prof-*.jsonl"))


def test_set_variable_records_calls_with_parents(tmp_path: Path) -> None:
    site = _package(tmp_path)
    prof = tmp_path / "prof"
    res = _child(site, 5000, prof)
    assert res == {"wrapped": True, "runtime": True, "result": 10}
    (events,) = _events(prof).values()  # one process, one file; everything flushed at exit
    names: dict[str, int] = {}
    for e in events:
        names[e.name] = names.get(e.name, 0) + 1
    assert names == {"Runner.execute_model": 5001, "Runner._forward": 5001, "sample": 5001,
                     "Runner.helper": 1, "serve": 1}
    fwd = [e for e in events if e.name == "Runner._forward"]
    assert {e.parent for e in fwd} == {"Runner.execute_model"} and {e.depth for e in fwd} == {1}
    b = breakdown(events)
    assert b["step"] == "Runner.execute_model"
    step = next(p for p in b["points"] if p["name"] == "Runner.execute_model")
    child = next(p for p in b["points"] if p["name"] == "Runner._forward")
    assert step["calls"] == 5001 and 0 < child["share_of_parent"] < 1
    (un,) = [u for u in b["unaccounted"] if u["parent"] == "Runner.execute_model"]
    assert 0 < un["total_s"] < step["total_s"]


def test_forked_child_writes_its_own_file(tmp_path: Path) -> None:
    site = _package(tmp_path)
    prof = tmp_path / "prof"
    script = textwrap.dedent("""\
        import json, os, sys
        from pkg import runner
        runner.sample(1)
        pid = os.fork()
        if pid == 0:
            runner.sample(2); runner.sample(3)
            sys.exit(0)
        os.waitpid(pid, 0)
        print(json.dumps({"child": pid}))
        """)
    child = _child(site, 0, prof, script)["child"]
    by_pid = _events(prof)
    assert sorted(by_pid) == sorted([child, *(p for p in by_pid if p != child)])
    assert len(by_pid) == 2
    assert len(by_pid[child]) == 2  # not the parent's buffered event
    (parent,) = (evs for p, evs in by_pid.items() if p != child)
    assert len(parent) == 1


def test_buffer_is_bounded_when_writing_fails(tmp_path: Path) -> None:
    from variantctl.runtime import profile_recorder as recorder

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    rec = recorder.Recorder(str(blocker / "prof"))
    rec.flusher = object()  # type: ignore[assignment]  # no background thread in this test
    for i in range(recorder.MAX_BUFFER * 3):
        rec.add(("f", i, 1, 1, None, 0))
    assert len(rec.buf) <= recorder.MAX_BUFFER
    rec.flush()
    assert len(rec.buf) == 0 and rec.dropped >= recorder.MAX_BUFFER * 2


# -- end to end through the CLI -----------------------------------------------------


def test_apply_status_rollback_on_two_roots(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    project = tmp_path / "project"
    (project / "patchsets").mkdir(parents=True)
    (project / "patchsets" / "prof.yaml").write_text(
        "name: prof\nmodule: pkg.runner\noperations:\n"
        "  - op: instrument\n    functions: [Runner.execute_model, Runner._forward]\n")
    roots = []
    for name in ("a", "b"):
        root = tmp_path / name
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "runner.py").write_text(SAMPLE)
        roots.append(root)
    args = [a for r in roots for a in ("--root", str(r))]

    r: CliResult = run_cli(["status", "prof", *args], project=project)
    assert r.code == 0, r.output
    assert "Runner.execute_model:18, Runner._forward:21" in r.stdout

    r = run_cli(["apply", "prof", *args], project=project)
    assert r.code == 0, r.output
    assert "2 file(s) written in 2 root(s)" in r.stdout
    for root in roots:
        assert "@_variantctl_profile(" in (root / "pkg" / "runner.py").read_text()

    r = run_cli(["status", "prof", "--json", *args], project=project)
    assert r.code == 0, r.output
    files = json.loads(r.stdout)["reports"][0]["files"]
    assert len(files) == 2
    assert {o["state"] for f in files for o in f["operations"]} == {"applied"}
    assert files[0]["operations"][0]["found"][0]["line"] > 200  # after the inlined block

    r = run_cli(["rollback", "prof", *args], project=project)
    assert r.code == 0, r.output
    for root in roots:
        assert (root / "pkg" / "runner.py").read_text() == SAMPLE
        assert not list((root / "pkg").glob("runner.py.bak_*"))

    # the inverse transform (rollback --force, no backup used) is exact too
    assert run_cli(["apply", "prof", *args], project=project).code == 0
    for root in roots:
        for bak in (root / "pkg").glob("runner.py.bak_*"):
            bak.unlink()
    r = run_cli(["rollback", "prof", "--force", *args], project=project)
    assert r.code == 0, r.output
    for root in roots:
        assert (root / "pkg" / "runner.py").read_text() == SAMPLE


def test_check_warns_when_the_hosts_vllm_lacks_a_required_point(tmp_path: Path,
                                                                 run_cli) -> None:  # type: ignore[no-untyped-def]
    project, root = tmp_path / "project", tmp_path / "root"
    prof_project(project, root, SAMPLE)
    (project / "variants" / "hosts.yaml").write_text(
        f"box:\n  python: {sys.executable}\n  site_roots: [{root}]\n")
    (project / "variants" / "v.yaml").write_text(
        "host: box\nmodel: some/model\nport: 8000\nrequires: [prof]\n")
    r = run_cli(["check", "v"], project=project)
    assert r.code == 0, r.output  # a warning, not an error
    assert "warning [profile-points-missing]" in r.stdout, r.output
    assert "lacks the profile point(s) MultiStep.execute_model in " + str(root) in r.stdout
    # the point exists: nothing to say
    (project / "patchsets" / "prof.yaml").write_text(
        "name: prof\nmodule: pkg.runner\noperations:\n"
        "  - op: instrument\n    functions: [Runner.execute_model]\n")
    r = run_cli(["check", "v"], project=project)
    assert "profile-points-missing" not in r.stdout, r.output
