"""`memoryd service install|uninstall|status` on the test's user's files, with systemd's real
`systemctl --user` (which enables on the unit files alone when no manager runs, as here) and
`systemd-analyze verify`; launchd's agent through the same verbs, without launchctl."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.errors import ServiceError
from memoryd.home import Home
from memoryd.service import agent, commands
from memoryd.service.launchd import Launchd
from memoryd.service.unit import unit_name
from service_user import Manager, User, environment, everything, exec_start, tool, verify
from test_connect import run
from test_serve_daemon import Daemon


def named(user: User, home: Path) -> Path:
    """The unit file of `home`."""
    return user.units / unit_name(home, commands.default_home())


def test_print_shows_the_unit_and_writes_nothing(
    user: User,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = tmp_path / "a home %h $HOME"
    code, out, err = run(capsys, "service", "install", "--print", "--home", str(home))
    assert (code, err) == (0, "")
    assert exec_start(out) == [*commands.program(), "serve", "--home", str(home)]
    assert out.startswith("# written by memoryd service install\n")
    assert everything(user.folder) == {} and not home.exists()


def test_install_writes_a_unit_systemd_verifies_and_enables_it_with_one_link(
    user: User,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = tmp_path / "a home %h $HOME"
    _, printed, _ = run(capsys, "service", "install", "--print", "--home", str(home))
    code, out, err = run(capsys, "service", "install", "--home", str(home))
    assert (code, err) == (0, ""), err
    unit = named(user, home)
    assert unit.read_text() == printed
    assert stat.S_IMODE(unit.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    checked = verify(user, unit)
    assert checked.returncode == 0 and not checked.stderr.strip(), checked.stderr
    link = user.units / "default.target.wants" / unit.name
    assert link.readlink() == unit
    enabled = subprocess.run(
        [tool("systemctl"), "--user", "is-enabled", unit.name],
        capture_output=True,
        text=True,
        env=environment(user),
        timeout=60,
        check=False,
    )
    assert enabled.stdout.strip() == "enabled", enabled.stderr
    assert f"wrote {unit}" in out and "it starts at your next login" in out

    first = everything(user.folder)
    code, out, err = run(capsys, "service", "install", "--home", str(home))
    assert (code, err) == (0, "") and "nothing written" in out
    assert everything(user.folder) == first
    assert sorted(first) == [
        ".config",
        ".config/systemd",
        ".config/systemd/user",
        ".config/systemd/user/default.target.wants",
        f".config/systemd/user/default.target.wants/{unit.name}",
        f".config/systemd/user/{unit.name}",
    ]


def test_the_default_home_is_memoryd_service_and_its_log_the_journal_of_it(
    user: User,
    capsys: pytest.CaptureFixture[str],
) -> None:
    default = user.folder / ".local" / "share" / "memoryd"
    code, out, _ = run(capsys, "service", "install", "--home", str(default))
    assert code == 0 and (user.units / "memoryd.service").is_file(), out
    code, out, _ = run(capsys, "service", "status", "--home", str(default))
    assert code == 0
    assert out.splitlines() == [
        f"home     {default}",
        f"unit     {user.units / 'memoryd.service'} (systemd user unit, starts at login)",
        f"running  no daemon answers on {default / 'memoryd.sock'} (no service manager to ask)",
        "log      journalctl --user -u memoryd.service",
    ]


def test_a_reinstall_after_memoryd_moved_rewrites_its_own_unit(
    user: User,
    home: Home,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(capsys, "service", "install")[0] == 0
    unit = named(user, home.root)
    unit.write_text(unit.read_text().replace(commands.program()[0], "/old/bin/memoryd"))
    code, out, err = run(capsys, "service", "install")
    assert (code, err) == (0, "") and f"wrote {unit}" in out
    assert exec_start(unit.read_text())[0] == commands.program()[0]


@pytest.mark.parametrize(
    "theirs",
    [
        "[Service]\nExecStart=/usr/bin/memoryd serve\n",
        "# written by memoryd service install\n[Service]\nExecStart=/bin/true\n",
        "# written by memoryd\n# home: {home}\n[Service]\n",
        b"\xff\xfe not UTF-8",
    ],
)
def test_a_unit_the_user_wrote_is_never_overwritten_nor_removed(
    user: User,
    home: Home,
    capsys: pytest.CaptureFixture[str],
    theirs: str | bytes,
) -> None:
    unit = named(user, home.root)
    unit.parent.mkdir(parents=True)
    made = theirs if isinstance(theirs, bytes) else theirs.format(home=home.root).encode()
    unit.write_bytes(made)
    for verb in ("install", "uninstall"):
        code, out, err = run(capsys, "service", verb)
        assert code == 1 and out == "", out
        assert "memoryd leaves it alone" in err and str(unit) in err
    assert unit.read_bytes() == made
    assert not (user.units / "default.target.wants").exists()
    code, out, _ = run(capsys, "service", "status")
    assert code == 0 and "memoryd leaves it alone" in out


def test_a_link_in_the_units_place_is_the_users(
    user: User,
    home: Home,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(capsys, "service", "install", "--print")[0] == 0
    kept = tmp_path / "dotfiles" / "memoryd.service"
    kept.parent.mkdir()
    kept.write_text(capsys.readouterr().out)
    unit = named(user, home.root)
    unit.parent.mkdir(parents=True)
    unit.symlink_to(kept)
    code, _, err = run(capsys, "service", "install")
    assert code == 1 and "not a regular file" in err
    assert unit.is_symlink() and kept.exists()


def test_the_default_homes_unit_written_for_another_home_is_refused(
    user: User,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    default = user.folder / ".local" / "share" / "memoryd"
    assert run(capsys, "service", "install", "--home", str(default))[0] == 0
    unit = user.units / "memoryd.service"
    unit.write_text(unit.read_text().replace(f"# home: {default}", "# home: /elsewhere"))
    before = unit.read_bytes()
    code, _, err = run(capsys, "service", "install", "--home", str(default))
    assert code == 1 and "serves another home (/elsewhere)" in err
    assert "memoryd service uninstall --home /elsewhere" in err
    assert unit.read_bytes() == before


def test_uninstall_removes_exactly_what_install_wrote(
    user: User,
    home: Home,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The user's own: another unit's link beside enable's, and a drop-in of settings added.
    wants = user.units / "default.target.wants"
    wants.mkdir(parents=True)
    (user.units / "other.service").write_text("[Service]\nExecStart=/bin/true\n")
    (wants / "other.service").symlink_to(user.units / "other.service")
    drop_in = user.units / f"{named(user, home.root).name}.d" / "override.conf"
    drop_in.parent.mkdir()
    drop_in.write_text("[Service]\nEnvironment=HONCHO_KEY=x\n")
    before = everything(user.folder)
    assert run(capsys, "service", "install")[0] == 0
    assert everything(user.folder) != before
    code, out, err = run(capsys, "service", "uninstall")
    assert (code, err) == (0, "")
    assert f"removed {wants / named(user, home.root).name}" in out
    assert everything(user.folder) == before
    code, out, _ = run(capsys, "service", "uninstall")
    assert code == 0 and "nothing to remove" in out


def test_uninstall_leaves_no_file_and_no_folder_enable_made(
    user: User,
    home: Home,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(capsys, "service", "install")[0] == 0
    assert run(capsys, "service", "uninstall")[0] == 0
    assert everything(user.folder) == {
        ".config": "/",
        ".config/systemd": "/",
        ".config/systemd/user": "/",
    }


def test_xdg_config_home_is_where_the_unit_goes(
    user: User,
    home: Home,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    assert run(capsys, "service", "install")[0] == 0
    unit = config / "systemd" / "user" / named(user, home.root).name
    assert unit.is_file()
    assert (config / "systemd" / "user" / "default.target.wants" / unit.name).readlink() == unit
    assert everything(user.folder) == {}
    assert run(capsys, "service", "uninstall")[0] == 0
    assert not unit.exists()


def test_status_says_a_daemon_answers_when_one_serves_the_home(
    user: User,
    home: Home,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "service", "status")
    assert code == 0
    assert f"unit     none (`memoryd service install` writes {named(user, home.root)})" in out
    assert "running  no daemon answers" in out
    serving = Daemon(home)
    try:
        serving.wait_ready()
        code, out, _ = run(capsys, "service", "status")
    finally:
        serving.stop()
    assert code == 0 and "running  yes, a daemon answers" in out


def test_the_unit_runs_the_memoryd_beside_this_python(home: Home) -> None:
    found = commands.program()
    beside = Path(sys.executable).with_name("memoryd")
    assert found == ([str(beside)] if beside.exists() else [sys.executable, "-m", "memoryd"])
    assert os.path.isabs(found[0])


def test_the_launchd_agent_is_written_once_and_removed_exactly(
    user: User,
    home: Home,
) -> None:
    # On Linux, as on a Mac without launchctl: the files alone (launchctl's calls are untested).
    launchd = Launchd()
    first = commands.install(launchd, home, False)
    name = f"{agent.label(home.root, commands.default_home())}.plist"
    plist = user.folder / "Library" / "LaunchAgents" / name
    assert first[0].startswith(f"wrote {plist}") and "no launchctl here" in first[1]
    assert agent.written_for(plist.read_text()) == home.root
    assert stat.S_IMODE(plist.stat().st_mode) == 0o600
    log = home.root / "memoryd.log"
    assert log.is_file() and stat.S_IMODE(log.stat().st_mode) == 0o600
    written = everything(user.folder)
    assert "nothing written" in commands.install(launchd, home, False)[0]
    assert everything(user.folder) == written
    lines = commands.status(launchd, home)
    assert lines[1] == f"unit     {plist} (launchd agent, starts at login)"
    assert lines[3] == f"log      {log}"
    assert commands.uninstall(launchd, home) == [f"removed {plist}"]
    assert everything(user.folder) == {"Library": "/", "Library/LaunchAgents": "/"}


def test_a_launchd_agent_the_user_wrote_is_left_alone(
    user: User,
    home: Home,
    capsys: pytest.CaptureFixture[str],
) -> None:
    launchd = Launchd()
    plist = launchd.folder() / f"{agent.label(home.root, commands.default_home())}.plist"
    plist.parent.mkdir(parents=True)
    plist.write_text("<plist><dict/></plist>\n")
    with pytest.raises(ServiceError, match="memoryd leaves it alone"):
        commands.install(launchd, home, False)
    with pytest.raises(ServiceError, match="memoryd leaves it alone"):
        commands.uninstall(launchd, home)
    assert plist.read_text() == "<plist><dict/></plist>\n"


def test_with_a_manager_running_install_starts_status_asks_uninstall_stops(
    user: User,
    home: Home,
    manager: Manager,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = named(user, home.root).name
    show = "--user show --property=Version"
    code, out, err = run(capsys, "service", "install")
    assert (code, err) == (0, ""), err
    assert manager.said() == [
        f"--user enable {name}",
        show,
        "--user daemon-reload",
        f"--user restart {name}",
    ]
    assert f"enabled and started {name}" in out
    assert (user.units / "default.target.wants" / name).is_symlink()
    assert run(capsys, "service", "install")[0] == 0
    assert manager.said() == [f"--user enable {name}", show, f"--user start {name}"]
    code, out, _ = run(capsys, "service", "status")
    assert code == 0 and f"running  active ({name})" in out
    assert manager.said() == [show, f"--user is-active {name}"]
    code, out, err = run(capsys, "service", "uninstall")
    assert (code, err) == (0, ""), err
    assert manager.said() == [show, f"--user stop {name}", show, "--user daemon-reload"]
    assert everything(user.units) == {}
    code, out, _ = run(capsys, "service", "uninstall")
    assert code == 0 and "nothing to remove" in out
    assert manager.said() == []


def test_a_start_the_manager_refuses_is_an_error_saying_where_to_look(
    user: User,
    home: Home,
    manager: Manager,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MEMORYD_TEST_FAILING", "restart")
    code, out, err = run(capsys, "service", "install")
    name = named(user, home.root).name
    assert code == 1 and out == ""
    assert err == (
        f"memoryd: systemctl --user restart {name} failed (Job for {name} failed because the "
        "control process exited with error code.): see `journalctl --user -xe`, then run "
        "`memoryd service install` again\n"
    )
    assert named(user, home.root).is_file()
