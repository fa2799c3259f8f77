"""``variantctl logs``: the server's log text is printed as lines, with escape sequences
and other control characters made visible (a log is hostile input), UTF-8 split
between two reads decoded whole, and nothing printed by the library (values only)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from variantctl.hostmodel import Host
from variantctl.launch.logs import LogText, log_stream
from variantctl.targets.local import LocalTarget

HOSTILE = ("INFO loading\n"
           "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x1b[0m\n"
           "progress 10%\rprogress 20%\n"
           "tab\tkept, caf\u00e9 kept\n").encode()


def _log(tmp_path: Path, data: bytes) -> Path:
    logs = tmp_path / "work" / "logs"
    logs.mkdir(parents=True)
    path = logs / "v-20261201T100000Z.log"
    path.write_bytes(data)
    return path


def test_control_characters_are_made_visible_and_lines_kept(tmp_path: Path) -> None:
    _log(tmp_path, HOSTILE)
    host = Host(name="local", workdir=str(tmp_path / "work"))
    (item,) = list(log_stream(LocalTarget(), host, "v"))
    assert isinstance(item, LogText)
    assert item.text == ("INFO loading\n"
                         "\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mred\\x1b[0m\n"
                         "progress 10%\\x0dprogress 20%\n"
                         "tab\tkept, caf\u00e9 kept\n")
    assert "\x1b" not in item.text and "\r" not in item.text
    (last,) = list(log_stream(LocalTarget(), host, "v", lines=1))
    assert last == LogText("tab\tkept, caf\u00e9 kept\n")


def test_following_decodes_a_character_split_between_reads(tmp_path: Path) -> None:
    path = _log(tmp_path, b"caf" + "\u00e9".encode()[:1])
    rest = iter(["\u00e9".encode()[1:] + b"\x1b[K done\n"])

    def sleep(_s: float) -> None:  # the server writes the rest between two polls
        with path.open("ab") as fh:
            fh.write(next(rest, b""))

    host = Host(name="local", workdir=str(tmp_path / "work"))
    items = list(log_stream(LocalTarget(), host, "v", follow=True, poll=0, sleep=sleep))
    text = "".join(i.text for i in items if isinstance(i, LogText))
    assert text == "caf\u00e9\\x1b[K done\n"


def test_the_cli_prints_the_visible_text(run_cli: Callable[..., CliResult],
                                         tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "variants").mkdir(parents=True)
    (project / "variants" / "hosts.yaml").write_text(
        f"local:\n  workdir: {tmp_path / 'work'}\n")
    (project / "variants" / "v.yaml").write_text("model: m\nhost: local\n")
    _log(tmp_path, HOSTILE)
    res = run_cli(["logs", "v"], project=project)
    assert res.code == 0, res.output
    assert "\x1b" not in res.stdout and "\\x1b[31mred" in res.stdout


class _Spy(LocalTarget):
    """LocalTarget counting what is read (and failing on a whole-file read)."""

    def __init__(self) -> None:
        super().__init__()
        self.read = 0

    def read_bytes(self, path: str) -> bytes:
        assert not path.endswith(".log"), "the whole log was read"
        return super().read_bytes(path)

    def read_from(self, path: str, offset: int, limit: int = 1 << 20) -> bytes:
        data = super().read_from(path, offset, min(limit, 7))  # short reads, as SFTP may
        self.read += len(data)
        return data


def test_the_last_lines_of_a_big_log_are_read_from_its_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import variantctl.launch.logs as logs

    monkeypatch.setattr(logs, "BLOCK", 64)
    body = b"".join(b"line %05d\n" % i for i in range(5000))  # 55 kB
    _log(tmp_path, body)
    host = Host(name="local", workdir=str(tmp_path / "work"))
    spy = _Spy()
    for n in (1, 3, 20):
        spy.read = 0
        (item,) = list(log_stream(spy, host, "v", lines=n))
        assert item == LogText("".join(f"line {i:05d}\n" for i in range(5000 - n, 5000)))
        assert spy.read <= 64 * (n // 5 + 2)  # a few blocks from the end, not 55 kB
    # an unterminated last line counts as a line
    (tmp_path / "work" / "logs" / "v-20261201T100000Z.log").write_bytes(body + b"tail")
    (item,) = list(log_stream(spy, host, "v", lines=2))
    assert item == LogText("line 04999\ntail")
    assert list(log_stream(spy, host, "v", lines=0)) == []
    # the whole log streams through the same bounded reads
    whole = "".join(i.text for i in log_stream(spy, host, "v")
                    if isinstance(i, LogText))
    assert whole == (body + b"tail").decode()
