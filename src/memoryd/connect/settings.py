"""Setting a host up to use memoryd: its MCP server entry and hooks, printed or installed.

Nothing is written unless asked (`--install`): then each settings file is backed up first
(`<file>.memoryd-backup-<time>`), changed only where memoryd's entries are missing, replaced
atomically, and the way back is said. A settings file that is not what the host writes
(not JSON, not TOML, a value of the wrong shape) is left alone, with what to fix.
"""

from __future__ import annotations

import errno
import json
import os
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memoryd.errors import ConnectError


def executable() -> str:
    """The `memoryd` the hooks and MCP entries run: the one beside this Python, else on PATH."""
    beside = Path(sys.executable).with_name("memoryd")
    return str(beside) if beside.exists() else "memoryd"


def _claude_dir() -> Path:
    config = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(config) if config else Path.home() / ".claude"


def _codex_dir() -> Path:
    config = os.environ.get("CODEX_HOME")
    return Path(config) if config else Path.home() / ".codex"


def _claude_mcp_file() -> Path:
    # `claude mcp add --scope user` keeps user-scoped servers in ~/.claude.json.
    config = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(config) / ".claude.json" if config else Path.home() / ".claude.json"


def _mcp(home: Path, session: str) -> dict[str, Any]:
    return {
        "type": "stdio",
        "command": executable(),
        "args": ["mcp", "--home", str(home), "--session", session],
    }


def _hooks(home: Path) -> dict[str, list[dict[str, Any]]]:
    run, at = shlex.quote(executable()), shlex.quote(str(home))
    return {
        # Its output goes into the conversation's context: the memory block.
        "SessionStart": [
            {
                "matcher": "",
                "hooks": [
                    {"type": "command", "command": f"{run} block --home {at} --session claude-code"}
                ],
            }
        ],
        # After each reply: the transcript so far becomes memoryd's session log, the reply its
        # final at once (the hook's input holds it, before the transcript may).
        "Stop": [{"hooks": [{"type": "command", "command": f"{_stop(home)} --hook"}]}],
    }


def _stop(home: Path) -> str:
    """The Stop hook's command as memoryd first wrote it (without `--hook`): an install
    upgrades that one in place."""
    return (
        f"{shlex.quote(executable())} connect claude-code --home {shlex.quote(str(home))} --quiet"
    )


def _toml(value: Any) -> str:
    # JSON's strings and arrays of strings are TOML's basic strings and arrays.
    return json.dumps(value, ensure_ascii=False)


def _codex_mcp(home: Path) -> str:
    entry = _mcp(home, "codex")
    return (
        f"[mcp_servers.memoryd]\ncommand = {_toml(entry['command'])}\n"
        f"args = {_toml(entry['args'])}\n"
    )


def _notify(home: Path) -> list[str]:
    return [executable(), "connect", "codex", "--home", str(home), "--quiet"]


def _codex_notify(home: Path) -> str:
    return f"notify = {_toml(_notify(home))}\n"


def printed(host: str, home: Path) -> str:
    """What the owner would add to the host's settings, with where it goes."""
    if host == "claude-code":
        mcp = {"mcpServers": {"memoryd": _mcp(home, "claude-code")}}
        return (
            f"# memoryd's MCP server (the recall and memory tools), in {_claude_mcp_file()}\n"
            "# (or run: claude mcp add --scope user memoryd -- "
            f"{shlex.join([executable(), *_mcp(home, 'claude-code')['args']])})\n"
            f"{json.dumps(mcp, indent=2)}\n\n"
            f"# The hooks, in {_claude_dir() / 'settings.json'}: SessionStart puts the memory "
            "block in the context,\n# Stop writes each reply's transcript into memoryd\n"
            f"{json.dumps({'hooks': _hooks(home)}, indent=2)}\n"
        )
    return (
        f"# In {_codex_dir() / 'config.toml'}: notify (at the top, before any table) writes\n"
        "# each turn's transcript into memoryd; the MCP server gives the recall and memory\n"
        "# tools and the memory block (prompt memory_block)\n"
        f"{_codex_notify(home)}\n{_codex_mcp(home)}"
    )


def install(host: str, home: Path) -> list[str]:
    """Write the host's entries into its settings (backed up first); what was done, and how
    to undo it."""
    if host == "claude-code":
        return [
            _json_file(_claude_mcp_file(), lambda s: _add_mcp(s, home)),
            _json_file(_claude_dir() / "settings.json", lambda s: _add_hooks(s, home)),
        ]
    return [_toml_file(_codex_dir() / "config.toml", home)]


def _add_mcp(settings: dict[str, Any], home: Path) -> bool:
    servers = settings.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConnectError('"mcpServers" is not an object')
    entry = _mcp(home, "claude-code")
    if servers.get("memoryd") == entry:
        return False
    servers["memoryd"] = entry
    return True


def _add_hooks(settings: dict[str, Any], home: Path) -> bool:
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConnectError('"hooks" is not an object')
    changed = False
    for event, groups in _hooks(home).items():
        present = hooks.setdefault(event, [])
        if not isinstance(present, list):
            raise ConnectError(f'"hooks.{event}" is not a list')
        found = [
            hook
            for group in present
            if isinstance(group, dict) and isinstance(group.get("hooks"), list)
            for hook in group["hooks"]
            if isinstance(hook, dict)
        ]
        for hook in found:
            if hook.get("command") == _stop(home):
                hook["command"] = f"{_stop(home)} --hook"  # the earlier Stop hook, upgraded
                changed = True
        commands = {hook.get("command") for hook in found}
        for group in groups:
            if group["hooks"][0]["command"] not in commands:
                present.append(group)
                changed = True
    return changed


def _json_file(path: Path, add: Any) -> str:
    before = _held(path)
    try:
        settings = {} if before is None else json.loads(before)
        if not isinstance(settings, dict):
            raise ConnectError("it is not a JSON object")
        changed = add(settings)
    except (ValueError, RecursionError, ConnectError) as e:  # nested past the parser's depth
        problem = e if isinstance(e, ConnectError) else "it is not JSON"
        raise ConnectError(
            f"{path} was not changed: {problem}; fix it, or add the entries "
            "`memoryd connect claude-code --print` shows by hand"
        ) from None
    if not changed:
        return f"{path} already holds memoryd's entries: nothing written"
    return _write(path, before, (json.dumps(settings, indent=2) + "\n").encode("utf-8"))


def _toml_file(path: Path, home: Path) -> str:
    # tomlkit costs 50 ms to import: only an install into Codex's config needs it, not a hook.
    from memoryd.connect import codex_config

    before = _held(path)
    try:
        text = "" if before is None else before.decode("utf-8")
        entry = _mcp(home, "codex")
        server = {"command": entry["command"], "args": entry["args"]}
        new = codex_config.added(text, _notify(home), server)
    except (UnicodeDecodeError, ConnectError) as e:
        problem = e if isinstance(e, ConnectError) else "it is not UTF-8 (TOML is)"
        raise ConnectError(
            f"{path} was not changed: {problem}; fix it, or add the entries "
            "`memoryd connect codex --print` shows by hand"
        ) from None
    if new is None:
        return f"{path} already holds memoryd's entries (or a notify of its own): nothing written"
    return _write(path, before, new.encode("utf-8"))


def _held(path: Path) -> bytes | None:
    """What a settings file holds; None when there is none yet."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _new_backup(backup: Path, mode: int) -> tuple[Path, int]:
    """A backup file made new (never one written over), open for writing: `backup`, else
    `backup-2`, `-3`, ... (a second change in the same second keeps the first's backup)."""
    for n in range(1, 1000):
        name = backup if n == 1 else backup.with_name(f"{backup.name}-{n}")
        try:
            return name, os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "a thousand backups in one second", str(backup))


def _write(path: Path, before: bytes | None, content: bytes) -> str:
    """Replace `path` with `content`, keeping a backup of what it held; the way back. A
    settings file that is a link (kept in a dotfiles folder) is written where it points, so
    the link stays."""
    path = path.resolve() if path.is_symlink() else path
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    backup = path.with_name(f"{path.name}.memoryd-backup-{stamp}")
    temp = path.with_name(f".{path.name}.memoryd-tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = 0o600 if before is None else os.stat(path).st_mode & 0o777
        if before is not None:
            backup, fd = _new_backup(backup, mode)
            with os.fdopen(fd, "wb") as f:
                f.write(before)
        temp.unlink(missing_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except OSError as e:
        raise ConnectError(f"{path} was not changed: {e.strerror or e}") from None
    if before is None:
        return f"made {path}; to undo: rm {shlex.quote(str(path))}"
    return (
        f"changed {path} (backup: {backup}); to undo: "
        f"mv {shlex.quote(str(backup))} {shlex.quote(str(path))}"
    )
