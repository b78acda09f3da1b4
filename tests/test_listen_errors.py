"""`--listen` as a newcomer meets it: a port out of range, a port in use (and who holds it)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memoryd.errors import MemorydError
from memoryd.home import Home
from memoryd.serve.listen import parse_listen
from memoryd.serve.port_holder import holder, in_use, listening_inodes


def memoryd(*args: str) -> subprocess.CompletedProcess[str]:
    """`memoryd ARGS` as a user runs it, with the test's home ($MEMORYD_HOME)."""
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


@pytest.fixture
def taken() -> Iterator[int]:
    """A port this test holds, listening on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_a_port_out_of_range_is_said_so_with_the_range(home: Home, command: str) -> None:
    done = memoryd(command, "--listen", "127.0.0.1:99999")
    assert done.returncode == 1
    assert done.stderr == (
        "memoryd: --listen: the port is out of range: give one from 1 to 65535 (0 lets the "
        "system pick a free one), like 127.0.0.1:8765\n"
    )


PAST_THE_LAST = st.integers(min_value=65536, max_value=999_999).map(str) | st.from_regex(
    r"[0-9]{6,6000}", fullmatch=True
).filter(lambda digits: digits.lstrip("0")[:1] != "" and len(digits.lstrip("0")) > 5)
"""A port's digits past 65535, up to more than Python turns into an int (4,300 digits)."""


@given(PAST_THE_LAST)
@example("9" * 5000)
def test_every_port_past_the_last_is_out_of_range_and_not_echoed(port: str) -> None:
    with pytest.raises(MemorydError, match="out of range") as refused:
        parse_listen(f"127.0.0.1:{port}", False)
    assert port not in str(refused.value)


@given(st.integers(min_value=0, max_value=65535))
def test_every_port_in_range_is_taken(port: int) -> None:
    assert parse_listen(f"127.0.0.1:{port}", False) == ("127.0.0.1", port)


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_a_port_in_use_names_the_process_holding_it(home: Home, taken: int, command: str) -> None:
    done = memoryd(command, "--listen", f"127.0.0.1:{taken}")
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{taken}: the port is in use by process {os.getpid()} (" in (
        done.stderr
    )
    assert f"stop it (kill {os.getpid()}), or pick another port" in done.stderr
    assert done.stderr.count("\n") == 1


def test_the_holder_is_found_through_proc(taken: int) -> None:
    found = holder(taken)
    assert found is not None
    assert found.pid == os.getpid()
    assert "python" in found.command


def test_a_holder_that_cannot_be_seen_is_looked_for_with_ss(tmp_path: Path, taken: int) -> None:
    # Another user's process: its socket is in the tables, its descriptors cannot be read.
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    for table in ("tcp", "tcp6"):
        (proc / "net" / table).write_text(Path(f"/proc/net/{table}").read_text())
    said = in_use(taken, proc)
    assert said.startswith("the port is in use by a process this user cannot see")
    assert f"`ss -ltnp 'sport = :{taken}'`" in said
    assert "or pick another port" in said


def test_a_socket_listening_on_any_address_holds_the_port() -> None:
    table = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode\n"
        "   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 "
        "       0 4242 1 0 100 0 0 10 0\n"
        "   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000 "
        "       0 4343 1 0 100 0 0 10 0\n"
        "   2: not a line of the table\n"
    )
    assert listening_inodes(table, 8080) == {"4242"}
    assert listening_inodes(table, 8081) == set()


def test_a_command_line_is_shown_as_one_line_without_its_secrets(
    tmp_path: Path, taken: int
) -> None:
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    for table in ("tcp", "tcp6"):
        (proc / "net" / table).write_text(Path(f"/proc/net/{table}").read_text())
    (proc / "net" / "tcp6").write_text("")
    inode = next(iter(listening_inodes(Path("/proc/net/tcp").read_text(), taken)))
    (proc / "77" / "fd").mkdir(parents=True)
    os.symlink(f"socket:[{inode}]", proc / "77" / "fd" / "3")
    key = "sk-ant-api03-" + "a" * 90
    (proc / "77" / "cmdline").write_bytes(f"server\0--key\0{key}\0\x1b[31mred\nline\0".encode())
    said = in_use(taken, proc)
    assert said.startswith("the port is in use by process 77 (server --key ")
    assert key not in said
    assert "\x1b" not in said and "\n" not in said
