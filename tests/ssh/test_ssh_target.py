"""SshTarget against a real OpenSSH server: files, atomic writes, lock, run, faults."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ssh.conftest import ssh_host
from tests.support.sshd import SshLab, SshServer, free_port, keygen
from variantctl.errors import TargetError
from variantctl.exitcodes import ExitCode
from variantctl.hostmodel import Host, SshSpec
from variantctl.targets.connect import on_hosts, open_target
from variantctl.targets.ssh import SshTarget

pytestmark = pytest.mark.ssh


def test_files_round_trip(gpu1: Host, tmp_path: Path) -> None:
    root = tmp_path / "root"
    with open_target(gpu1) as t:
        assert isinstance(t, SshTarget)
        t.makedirs(str(root / "a" / "b"))
        assert (root / "a" / "b").is_dir()
        p = str(root / "a" / "b" / "f.py")
        t.write_new(p, b"one\n")
        assert Path(p).read_bytes() == b"one\n"
        with pytest.raises(TargetError) as ei:
            t.write_new(p, b"two\n")
        assert ei.value.kind == "exists"
        assert Path(p).read_bytes() == b"one\n"
        os.chmod(p, 0o640)
        t.write_atomic(p, b"three\n")
        assert Path(p).read_bytes() == b"three\n"
        assert (os.stat(p).st_mode & 0o777) == 0o640
        assert t.read_bytes(p) == b"three\n"
        st = t.stat(p)
        assert st is not None and st.size == 6
        assert t.stat(p + ".missing") is None
        assert t.listdir(str(root / "a" / "b")) == ["f.py"]
        t.rename(p, p + ".moved")
        assert not Path(p).exists() and Path(p + ".moved").exists()
        t.remove(p + ".moved")
        t.remove(p + ".moved")  # missing: not an error
        with pytest.raises(TargetError) as ei:
            t.read_bytes(str(root / "nope"))
        assert ei.value.kind == "not-found"
        assert "gpu1" in str(ei.value) and "nope" in str(ei.value)
        with pytest.raises(TargetError) as ei:
            t.listdir(str(root / "nope"))
        assert ei.value.kind == "not-found"
    # no temp files left behind
    assert sorted(os.listdir(root / "a" / "b")) == []


def test_tilde_paths_are_the_remote_home(gpu1: Host) -> None:
    with open_target(gpu1) as t:
        assert isinstance(t, SshTarget)
        assert t.path("~/x") == str(Path.home() / "x")
        res = t.run(["sh", "-c", "echo $HOME"])
        assert res.stdout.strip() == str(Path.home())


def test_run_quotes_env_cwd_input_and_codes(gpu1: Host, tmp_path: Path) -> None:
    with open_target(gpu1) as t:
        res = t.run(
            ["sh", "-c", 'printf "%s|%s|" "$A" "$(pwd)"; cat; echo err >&2; exit 3'],
            env={"A": "it's $HOME; `x`"},
            cwd=str(tmp_path),
            input=b"stdin data",
        )
        assert res.returncode == 3
        assert res.stdout == f"it's $HOME; `x`|{tmp_path}|stdin data"
        assert res.stderr == "err\n"
        big = t.run(["python3", "-c", "import sys; sys.stdout.write('x'*3000000); "
                     "sys.stderr.write('y'*3000000)"])
        assert len(big.stdout) == 3000000 and len(big.stderr) == 3000000
        with pytest.raises(TargetError) as ei:
            t.run(["sleep", "5"], timeout=0.5)
        assert "did not finish" in str(ei.value)
        with pytest.raises(TargetError) as ei:
            t.run(["no-such-program-xyz"])
        assert ei.value.kind == "not-found"


def test_remote_lock_excludes_and_is_released_when_holder_dies(
    gpu1: Host, tmp_path: Path
) -> None:
    lock = str(tmp_path / "l.lock")
    with open_target(gpu1) as a, open_target(gpu1) as b:
        with a.lock(lock):
            with pytest.raises(TargetError) as ei, b.lock(lock, timeout=0.3):
                pass
            assert ei.value.kind == "busy"
        with b.lock(lock):
            pass
    # a holder whose connection dies releases the lock
    holder = SshTarget(gpu1).connect()
    cm = holder.lock(lock)
    cm.__enter__()
    with open_target(gpu1) as b:
        with pytest.raises(TargetError), b.lock(lock, timeout=0.2):
            pass
        holder.close()  # like a crash: the channel goes away without unlocking
        with b.lock(lock, timeout=5):
            pass


def test_lock_waits_for_release(gpu1: Host, tmp_path: Path) -> None:
    lock = str(tmp_path / "w.lock")
    with open_target(gpu1) as a, open_target(gpu1) as b:
        ctx = a.lock(lock)
        ctx.__enter__()
        threading.Timer(0.4, lambda: ctx.__exit__(None, None, None)).start()
        t0 = time.monotonic()
        with b.lock(lock, timeout=5):
            assert time.monotonic() - t0 >= 0.3


def test_unreachable_host(run_cli, tmp_path: Path, ssh_lab: SshLab) -> None:  # type: ignore[no-untyped-def]
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host dead\n  HostName 127.0.0.1\n  Port {free_port()}\n  User root\n")
    host = Host("dead", ssh=SshSpec(alias="dead", config_file=str(cfg)))
    with pytest.raises(TargetError) as ei, open_target(host):
        pass
    assert ei.value.kind == "unreachable"
    assert ei.value.exit_code == ExitCode.UNREACHABLE
    assert str(ei.value).startswith("dead: ")
    assert "connection refused" in str(ei.value)


def test_auth_failure(ssh_lab: SshLab, tmp_path: Path) -> None:
    stranger = keygen(tmp_path / "stranger")
    server = ssh_lab.servers["gpu1"]
    cfg = tmp_path / "ssh_config"
    cfg.write_text(server.ssh_config_entry(alias="gpu1", key=stranger))
    host = Host("gpu1", ssh=SshSpec(alias="gpu1", config_file=str(cfg)))
    with pytest.raises(TargetError) as ei, open_target(host):
        pass
    assert ei.value.kind == "auth"
    assert "gpu1" in str(ei.value) and "authentication failed" in str(ei.value)


def test_changed_and_unknown_host_key(ssh_lab: SshLab, tmp_path: Path) -> None:
    server = ssh_lab.servers["gpu2"]
    other = keygen(tmp_path / "other_host_key")
    pub = (tmp_path / "other_host_key.pub").read_text().split()
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{server.port} {pub[0]} {pub[1]}\n")
    cfg = tmp_path / "ssh_config"
    cfg.write_text(server.ssh_config_entry().replace(str(server.known_hosts), str(kh)))
    host = Host("gpu2", ssh=SshSpec(alias="gpu2", config_file=str(cfg)))
    with pytest.raises(TargetError) as ei, open_target(host):
        pass
    assert ei.value.kind == "host-key"
    assert "CHANGED" in str(ei.value)
    assert kh.read_text().split()[2] == pub[1]  # nothing was rewritten
    assert other.exists()

    kh.write_text("")
    with pytest.raises(TargetError) as ei, open_target(host):
        pass
    assert ei.value.kind == "host-key"
    assert "unknown" in str(ei.value)
    assert kh.read_text() == ""  # not added silently


def test_missing_ssh_config_file(tmp_path: Path) -> None:
    host = Host("x", ssh=SshSpec(alias="x", config_file=str(tmp_path / "nope")))
    with pytest.raises(TargetError) as ei, open_target(host):
        pass
    assert "does not exist" in str(ei.value)
    # a typo in hosts.yaml is bad input, not an unreachable host
    assert (ei.value.kind, ei.value.exit_code) == ("config", ExitCode.USAGE)


def test_missing_key_file_is_bad_input_naming_the_key(run_cli, ssh_lab: SshLab,  # type: ignore[no-untyped-def]
                                                      tmp_path: Path) -> None:
    server = ssh_lab.servers["gpu1"]
    key = tmp_path / "keys" / "id_missing"
    cfg = tmp_path / "ssh_config"  # no IdentityFile: the key comes from hosts.yaml alone
    cfg.write_text(server.ssh_config_entry(alias="keyed").replace(
        f"    IdentityFile {ssh_lab.client_key}\n", ""))
    project = tmp_path / "proj"
    (project / "variants").mkdir(parents=True)
    (project / "variants" / "hosts.yaml").write_text(
        f"keyed:\n  ssh:\n    alias: keyed\n    key: {key}\n    config: {cfg}\n"
        f"  workdir: {tmp_path / 'w'}\n")
    res = run_cli(["ps", "--host", "keyed"], project=project)
    assert res.code == ExitCode.USAGE, res.output
    assert res.stderr.startswith(f"error: keyed: ssh key file {key} does not exist\n")
    hosts_yaml = project / "variants" / "hosts.yaml"
    assert f"hint: fix `ssh.key` of host keyed ({hosts_yaml}:1)" in res.stderr
    res = run_cli(["ps", "--host", "keyed", "--json"], project=project)
    assert res.code == ExitCode.USAGE
    (err,) = json.loads(res.stdout)["errors"]
    assert (err["host"], err["error"]["kind"], err["error"]["where"]) == ("keyed", "config",
                                                                        "keyed")
    # the same key, present: the host is reached with it (the check is not a false alarm)
    key.parent.mkdir()
    shutil.copy(ssh_lab.client_key, key)
    key.chmod(0o600)
    res = run_cli(["ps", "--host", "keyed"], project=project)
    assert res.code == 0, res.output
    # an IdentityFile of the ssh config that does not exist is skipped, as ssh does
    cfg.write_text(server.ssh_config_entry(alias="keyed").replace(
        f"    IdentityFile {ssh_lab.client_key}\n",
        f"    IdentityFile {tmp_path / 'gone'}\n    IdentityFile {ssh_lab.client_key}\n"))
    (project / "variants" / "hosts.yaml").write_text(
        f"keyed:\n  ssh:\n    alias: keyed\n    config: {cfg}\n  workdir: {tmp_path / 'w'}\n")
    res = run_cli(["ps", "--host", "keyed"], project=project)
    assert res.code == 0, res.output
    key.chmod(0o000)
    (project / "variants" / "hosts.yaml").write_text(
        f"keyed:\n  ssh:\n    alias: keyed\n    key: {key}\n    config: {cfg}\n"
        f"  workdir: {tmp_path / 'w'}\n")
    if os.geteuid() != 0:  # root reads any file: only a non-root run can see this refusal
        res = run_cli(["ps", "--host", "keyed"], project=project)
        assert res.code == ExitCode.USAGE and "cannot be read" in res.stderr


@pytest.fixture
def nosftp(ssh_lab: SshLab, tmp_path: Path) -> Iterator[Host]:
    """A host whose sshd has no ``Subsystem sftp`` line (exec channels work)."""
    server = SshServer("nosftp", tmp_path / "nosftp-sshd", ssh_lab.client_key, sftp=False)
    server.start()
    cfg = tmp_path / "nosftp_config"
    cfg.write_text(server.ssh_config_entry())
    try:
        yield Host("nosftp", ssh=SshSpec(alias="nosftp", config_file=str(cfg)),
                   python=sys.executable, workdir=str(tmp_path / "nosftp-work"))
    finally:
        server.stop()


def test_host_without_sftp_is_named(nosftp: Host, tmp_path: Path) -> None:
    with open_target(nosftp) as t:
        assert t.run(["echo", "hi"]).stdout == "hi\n"  # the connection itself is fine
        with pytest.raises(TargetError) as ei:
            t.read_bytes(str(tmp_path / "anything"))
        assert ei.value.kind == "no-sftp" and ei.value.exit_code == ExitCode.UNREACHABLE
        assert str(ei.value).startswith("nosftp: SFTP is unavailable on nosftp")
        assert ei.value.hint is not None and "Subsystem sftp" in ei.value.hint
        assert t.run(["echo", "still"]).stdout == "still\n"  # not mistaken for a lost link


def test_cli_names_a_host_without_sftp(run_cli, nosftp: Host, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert nosftp.ssh is not None
    project = tmp_path / "proj"
    (project / "variants").mkdir(parents=True)
    (project / "variants" / "hosts.yaml").write_text(
        f"nosftp:\n  ssh:\n    alias: nosftp\n    config: {nosftp.ssh.config_file}\n"
        f"  python: {sys.executable}\n  workdir: {nosftp.workdir}\n")
    (project / "variants" / "v.yaml").write_text("host: nosftp\nmodel: /m\nport: 8100\n")
    res = run_cli(["launch", "v", "--json"], project=project)
    assert res.code == ExitCode.UNREACHABLE, res.output
    err = json.loads(res.stdout)["error"]
    assert (err["kind"], err["where"]) == ("no-sftp", "nosftp")
    assert "error: nosftp: SFTP is unavailable on nosftp" in res.stderr
    assert "Channel closed" not in res.output and "Traceback" not in res.output
    res = run_cli(["hosts", "check", "nosftp", "--json"], project=project)
    (row,) = json.loads(res.stdout)["hosts"]
    assert not row["ok"] and any("SFTP is unavailable" in p for p in row["problems"]), row
    assert res.code != 0


def test_cli_json_error_for_an_unreachable_launch(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host dead\n  HostName 127.0.0.1\n  Port {free_port()}\n  User root\n")
    project = tmp_path / "proj"
    (project / "variants").mkdir(parents=True)
    (project / "variants" / "hosts.yaml").write_text(
        f"dead:\n  ssh:\n    alias: dead\n    config: {cfg}\n")
    (project / "variants" / "v.yaml").write_text("host: dead\nmodel: /m\nport: 8100\n")
    res = run_cli(["launch", "v", "--json"], project=project)
    assert res.code == ExitCode.UNREACHABLE
    assert json.loads(res.stdout) == {"error": {
        "kind": "unreachable", "where": "dead",
        "message": res.stderr.splitlines()[0].removeprefix("error: "),
        "hint": "is the host up and sshd listening? (check HostName/Port in the ssh config)"}}
    assert "connection refused" in res.stdout


def test_parallel_hosts_one_failing_does_not_stop_others(
    ssh_lab: SshLab, tmp_path: Path
) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(ssh_lab.ssh_config.read_text()
                   + f"Host dead\n  HostName 127.0.0.1\n  Port {free_port()}\n  User root\n")
    hosts = [
        Host("gpu1", ssh=SshSpec(alias="gpu1", config_file=str(cfg))),
        Host("dead", ssh=SshSpec(alias="dead", config_file=str(cfg))),
        ssh_host(ssh_lab, "gpu2", tmp_path),
    ]
    outcomes = on_hosts(hosts, lambda h, t: t.run(["hostname"]).returncode)
    assert [o.host.name for o in outcomes] == ["gpu1", "dead", "gpu2"]
    assert outcomes[0].value == 0 and outcomes[2].value == 0
    assert outcomes[1].error is not None and "dead" in str(outcomes[1].error)


def test_jump_host_from_ssh_config(ssh_lab: SshLab, tmp_path: Path) -> None:
    """ProxyJump in the ssh config: reach gpu1 through gpu2; both host keys are checked."""
    gpu1 = ssh_lab.servers["gpu1"]
    cfg = tmp_path / "ssh_config"
    cfg.write_text(ssh_lab.ssh_config.read_text()
                   + gpu1.ssh_config_entry(alias="behind").replace(
                       "    ConnectTimeout 5\n", "    ConnectTimeout 5\n    ProxyJump gpu2\n"))
    host = Host("behind", ssh=SshSpec(alias="behind", config_file=str(cfg)))
    with open_target(host) as t:
        assert t.run(["echo", "hi"]).stdout == "hi\n"
        assert isinstance(t, SshTarget) and t._conn.gateway is not None
    # the jump host's own key is checked too
    gpu2 = ssh_lab.servers["gpu2"]
    cfg.write_text(cfg.read_text().replace(str(gpu2.known_hosts), str(tmp_path / "empty")))
    (tmp_path / "empty").write_text("")
    with pytest.raises(TargetError) as ei, open_target(host):
        pass
    assert ei.value.kind == "host-key"
    assert str(ei.value).startswith(f"behind: host key of [127.0.0.1]:{gpu2.port} (jump host) "
                                    "is unknown")


def test_cli_reports_auth_and_host_key_failures(run_cli, ssh_lab: SshLab, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = ssh_lab.servers["gpu1"]
    stranger = keygen(tmp_path / "stranger")
    cfg = tmp_path / "ssh_config"
    cfg.write_text(server.ssh_config_entry(alias="badkey", key=stranger)
                   + server.ssh_config_entry(alias="nokh").replace(str(server.known_hosts),
                                                                   str(tmp_path / "nokh")))
    (tmp_path / "nokh").write_text("")
    project = tmp_path / "proj"
    (project / "variants").mkdir(parents=True)
    (project / "variants" / "hosts.yaml").write_text(
        f"badkey:\n  ssh:\n    alias: badkey\n    config: {cfg}\n"
        f"nokh:\n  ssh:\n    alias: nokh\n    config: {cfg}\n")
    res = run_cli(["ps", "--host", "badkey"], project=project)
    assert res.code == ExitCode.UNREACHABLE
    assert res.stderr.startswith("error: badkey: authentication failed for root@127.0.0.1:")
    assert "hint:" in res.stderr and "Traceback" not in res.output
    res = run_cli(["logs", "x", "--host", "nokh"], project=project)
    assert res.code == ExitCode.UNREACHABLE
    assert "error: nokh: host key of root@127.0.0.1" in res.stderr and "unknown" in res.stderr


def test_run_never_loses_output_that_arrives_after_the_exit_status(gpu1: Host) -> None:
    """sshd may send exit-status while output is still in flight: run() must read to EOF.

    (A truncated process table once made a live server look stale in CI.) The race
    depends on timing, so this repeats the pattern that exposed it — a burst of
    output right before exit — and checks every byte arrived.
    """
    from variantctl.targets.process import process_table

    script = ("import sys\nfor i in range(200):\n"
              "    sys.stdout.write(f'{i:05d} ' + 'x' * 1000 + '\\n')\n")
    expected = "".join(f"{i:05d} " + "x" * 1000 + "\n" for i in range(200))
    with open_target(gpu1) as t:
        for _ in range(25):
            res = t.run([gpu1.python, "-c", script])
            assert res.returncode == 0
            assert len(res.stdout) == len(expected) and res.stdout == expected
        for _ in range(25):
            pids = {p.pid for p in process_table(t)}
            assert os.getpid() in pids  # this test process is on the "host" too


def test_threads_that_ended_leave_no_sftp_session_behind(gpu1: Host, tmp_path: Path) -> None:
    """Every SFTP session is a channel sshd counts against MaxSessions (10, as the lab
    and a default sshd have it). A sweep opens an event loop per level, so new executor
    threads keep reading files: 30 short-lived threads must leave commands working, and
    no more sessions open than threads alive."""
    (tmp_path / "f").write_text("x")
    with open_target(gpu1) as t:
        assert isinstance(t, SshTarget)
        for _ in range(30):
            worker = threading.Thread(target=t.read_bytes, args=(str(tmp_path / "f"),))
            worker.start()
            worker.join()
        assert t.read_bytes(str(tmp_path / "f")) == b"x"  # this thread's own session
        assert t.sftp_sessions <= 2
        assert t.run(["true"]).returncode == 0  # a session channel of its own


def test_a_refused_session_is_not_called_a_lost_connection(gpu1: Host) -> None:
    """Holding sshd's ten sessions (MaxSessions) makes the eleventh fail while the
    connection lives: the error says so instead of "the SSH connection was lost"."""
    with open_target(gpu1) as t:
        assert isinstance(t, SshTarget)
        import paramiko

        held = []
        try:
            # open_target's own SFTP session counts: take whatever is left of the ten
            with pytest.raises(paramiko.ChannelException):
                for _ in range(11):
                    held.append(t._transport().open_session())
            assert len(held) < 11
            with pytest.raises(TargetError) as err:
                t.run(["true"])
            assert "refused a new session" in err.value.message
            assert "MaxSessions" in (err.value.hint or "")
        finally:
            for chan in held:
                chan.close()
        # sshd frees a session once it has seen the close: a moment later
        deadline = time.monotonic() + 10
        while True:
            try:
                assert t.run(["true"]).returncode == 0
                break
            except TargetError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
