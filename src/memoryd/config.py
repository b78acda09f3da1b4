"""`memoryd.toml` into a `Config`: the only reader of configuration."""

from __future__ import annotations

import ipaddress
import os
import re
import stat
import tomllib
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.errors import ConfigError
from memoryd.labels import DataClass
from memoryd.memory.files import DEFAULT_FILES, FILE_NAME, FileSpec, Kind, ordered
from memoryd.recall_limits import UNANSWERED_AFTER_MAX, UNANSWERED_AFTER_S
from memoryd.text import boundary
from memoryd.text.secrets import has_secret

# Tables read by later parts of memoryd; accepted here so that a home configured for them
# still starts.
_KNOWN = {"agent", "owner", "honcho", "memory", "connect", "semantic", "recall"}

CONNECT_HOSTS = ("claude-code", "codex")
"""The hosts `memoryd connect` follows, as `[connect.<host>]` names them."""

TOOL_NAME = re.compile(r"[A-Za-z0-9_.:\-]{1,100}")
"""A tool name the owner may trust, as hosts spell them (`Bash`, `mcp__github__get_issue`)."""


# Honcho's ids (workspaces, peers, sessions): RESOURCE_NAME_PATTERN, 1 to 512 characters.
HONCHO_ID = re.compile(r"[a-zA-Z0-9_-]{1,512}")


@dataclass(frozen=True)
class FleetSource:
    """`[honcho.fleet]`: the workspace every agent of the fleet shares."""

    workspace: str
    untrusted: bool = True
    data_class: DataClass = DataClass.PUBLIC


@dataclass(frozen=True)
class ReadSource:
    """One `[[honcho.read]]`: another agent's workspace that `recall` asks."""

    name: str
    workspace: str
    peer: str
    untrusted: bool = False
    data_class: DataClass = DataClass.PRIVATE


@dataclass(frozen=True)
class HonchoConfig:
    """`[honcho]`: where the agent's Honcho is and what it reads besides its own workspace.

    The API key is not kept here: `key()` reads it from the environment variable `key_env`
    each time, so it never sits in a config object that could be printed or logged.
    """

    url: str
    workspace: str
    key_env: str = "HONCHO_API_KEY"
    wait_ms: int = 5000
    fleet: FleetSource | None = None
    read: tuple[ReadSource, ...] = ()

    def key(self) -> str | None:
        """The API key from `$key_env`, or None when it is unset or empty (no auth);
        ConfigError when no header could carry it."""
        value = os.environ.get(self.key_env, "").strip()
        if not (value.isascii() and value.isprintable()):
            # It is sent in a header, which carries printable ASCII only: every call would end
            # in a traceback (a line break inside passed for "unreachable").
            raise ConfigError(
                f"${self.key_env} holds a character an HTTP header cannot carry (not printable "
                "ASCII): set it to the key alone"
            )
        return value or None


@dataclass(frozen=True)
class SemanticConfig:
    """`[semantic]`: the semantic tier switched on, and its model: one of the supported models
    by name (`memoryd.semantic.models`), or the path of a model folder the owner gives."""

    model: str


@dataclass(frozen=True)
class Config:
    """What memoryd needs to know about the agent and its owner."""

    agent: str = "agent"
    owner: str = "owner"
    files: tuple[FileSpec, ...] = DEFAULT_FILES
    honcho: HonchoConfig | None = None
    connect: dict[str, frozenset[str]] = field(default_factory=dict)
    """`[connect.<host>] trusted_tools`: the tools the owner trusts beyond the built-in table."""
    semantic: SemanticConfig | None = None
    """`[semantic] enabled = true`: the semantic tier; None, as by default, when it is off."""
    unanswered_after_s: int = UNANSWERED_AFTER_S
    """`[recall] unanswered_after_s`: how long a session's own recall leaves out its last
    message while no reply has come (`answering`)."""

    def trusted_tools(self, host: str) -> frozenset[str]:
        """The tools the owner marked trusted for `host` (none by default)."""
        return self.connect.get(host, frozenset())


def _name(raw: dict[str, Any], key: str, default: str, path: Path) -> str:
    return _text(raw, key, str(path), default) if key in raw else default


CONFIG_LIMIT = 1024 * 1024
"""The most bytes of memoryd.toml read: a config is a few lines."""


def _config_text(path: Path) -> str:
    """The config's text: a regular file of at most CONFIG_LIMIT bytes. A FIFO there would hold
    every command, and a sparse file of gigabytes fill its memory."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"{path} is not a file (a folder, FIFO or device): make it one")
        data = b""
        while len(data) <= CONFIG_LIMIT and (chunk := os.read(fd, CONFIG_LIMIT + 1 - len(data))):
            data += chunk
    finally:
        os.close(fd)
    if len(data) > CONFIG_LIMIT:
        raise ConfigError(f"{path} is over {CONFIG_LIMIT:,} bytes: fix it or remove it")
    return data.decode("utf-8")


def load(path: Path) -> Config:
    """The config at `path`; the defaults when it does not exist."""
    try:
        raw = tomllib.loads(_config_text(path))
    except FileNotFoundError:
        return Config()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}") from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path} is not valid TOML: {e}; fix it or remove it") from e
    except RecursionError:
        raise ConfigError(
            f"{path} nests arrays or tables deeper than TOML's parser reads: fix it or remove it"
        ) from None
    unknown = sorted(set(raw) - _KNOWN)
    if unknown:
        raise ConfigError(
            f"{path}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(_KNOWN))}"
        )
    config = Config(
        agent=_name(raw, "agent", "agent", path),
        owner=_name(raw, "owner", "owner", path),
        files=_files(raw.get("memory", {}), path),
        honcho=_honcho(raw["honcho"], path) if "honcho" in raw else None,
        connect=_connect(raw.get("connect", {}), path),
        semantic=_semantic(raw.get("semantic", {}), path),
        unanswered_after_s=_unanswered_after(raw.get("recall", {}), path),
    )
    if config.agent.casefold() == config.owner.casefold():
        # Every item says who spoke: the agent's own words would read as the owner's.
        raise ConfigError(f"{path}: `agent` and `owner` name the same one: give each a name")
    if config.honcho is not None:
        for key in ("agent", "owner"):
            if not HONCHO_ID.fullmatch(getattr(config, key)):
                raise ConfigError(
                    f"{path}: with [honcho], `{key}` is a Honcho peer id: letters, digits, "
                    "_ and - only"
                )
    return config


def _files(memory: Any, path: Path) -> tuple[FileSpec, ...]:
    """The memory files: the defaults, changed or joined by `[memory.files."name.md"]`."""
    if not isinstance(memory, dict) or set(memory) - {"files"}:
        raise ConfigError(f'{path}: [memory] holds only [memory.files."name.md"] tables')
    tables = memory.get("files", {})
    if not isinstance(tables, dict):
        raise ConfigError(f'{path}: write each memory file as [memory.files."name.md"]')
    specs = {spec.name: spec for spec in DEFAULT_FILES}
    for name, table in tables.items():
        if not FILE_NAME.fullmatch(name):
            # Not echoed: a name that is no file name may hold a line break or a pasted key.
            raise ConfigError(
                f'{path}: a [memory.files."name.md"] table names no memory file: a memory file '
                "is named like notes.md, without a folder"
            )
        where = f'{path}: [memory.files."{name}"]'
        if not isinstance(table, dict) or set(table) - {"kind", "budget", "class"}:
            raise ConfigError(f"{where}: the keys are kind, budget and class")
        known = specs.get(name)
        try:
            kind = Kind(table.get("kind", known.kind if known else "notes"))
            data_class = DataClass.parse(
                table.get("class", (known.data_class if known else DataClass.PRIVATE).value)
            )
        except (ValueError, TypeError):
            # The value is not quoted: a key pasted in the wrong place must not be echoed.
            raise ConfigError(
                f'{where}: kind is "identity" or "notes", class public, private or secret'
            ) from None
        if known is not None and kind is not known.kind:
            raise ConfigError(
                f'{where}: {name} is of kind {known.kind}: write kind = "{known.kind}"'
            )
        budget = table.get("budget", known.budget if known else kind.budget)
        if not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= 100_000:
            raise ConfigError(f"{where}: budget is a number of characters, 1 to 100000")
        specs[name] = FileSpec(name, kind, budget, data_class)
    folded: dict[str, str] = {}
    for name in specs:
        other = folded.setdefault(name.lower(), name)
        if other != name:
            # On a disk that ignores case (macOS, Windows) both would be one file.
            raise ConfigError(
                f'{path}: [memory.files."{name}"] and "{other}" differ only in case: rename one'
            )
    return ordered(specs.values())


def _connect(table: Any, path: Path) -> dict[str, frozenset[str]]:
    """`[connect.<host>]`: `trusted_tools`, a list of tool names, for each known host."""
    where = f"{path}: [connect]"
    _table(table, set(CONNECT_HOSTS), where)
    found = {}
    for host, host_table in table.items():
        host_where = f"{path}: [connect.{host}]"
        _table(host_table, {"trusted_tools"}, host_where)
        tools = host_table.get("trusted_tools", [])
        if not isinstance(tools, list) or not all(
            isinstance(tool, str) and TOOL_NAME.fullmatch(tool) for tool in tools
        ):
            # The value is not quoted: a key pasted in the wrong place must not be echoed.
            raise ConfigError(
                f"{host_where}: trusted_tools is a list of tool names as the host spells "
                'them (letters, digits, _ . : -, at most 100), like trusted_tools = ["Bash"]'
            )
        found[host] = frozenset(tools)
    return found


SEMANTIC_MODEL = "all-MiniLM-L6-v2"
"""The model the semantic tier runs when `[semantic]` names none."""

_UNSHOWN = frozenset(("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))
"""The Unicode categories no shown value holds: controls, format characters (bidi, zero-width),
surrogates, private and unassigned code points, line and paragraph separators."""


def _semantic(table: Any, path: Path) -> SemanticConfig | None:
    """`[semantic]`: `enabled` (false by default) and `model`, a name or a folder's path."""
    where = f"{path}: [semantic]"
    _table(table, {"enabled", "model"}, where)
    enabled = table.get("enabled", False)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}: enabled is true or false, like enabled = true")
    model = table.get("model", SEMANTIC_MODEL)
    if not isinstance(model, str) or not model.strip() or len(model) > 4096 or has_secret(model):
        # Not echoed: a value in the wrong place may be a pasted key.
        raise ConfigError(
            f'{where}: model is a supported model\'s name, like model = "{SEMANTIC_MODEL}", or '
            "the path of a folder holding a sentence-transformers model"
        )
    if any(unicodedata.category(c) in _UNSHOWN for c in model):
        # Status and the daemon's refusals show the model as written: a line break there would
        # start a line of its own, an escape would drive the terminal.
        raise ConfigError(
            f"{where}: model holds a control or format character (a line break, a tab, an "
            "escape, a bidi or zero-width mark): write the name or the folder's path as plain "
            f'text, like model = "{SEMANTIC_MODEL}"'
        )
    return SemanticConfig(model.strip()) if enabled else None


def _unanswered_after(table: Any, path: Path) -> int:
    """`[recall] unanswered_after_s`: whole seconds, 1 to a week."""
    where = f"{path}: [recall]"
    _table(table, {"unanswered_after_s"}, where)
    value = table.get("unanswered_after_s", UNANSWERED_AFTER_S)
    if type(value) is int and 1 <= value <= UNANSWERED_AFTER_MAX:  # a bool is no int here
        return value
    raise ConfigError(
        f"{where}: unanswered_after_s is a number of seconds, 1 to {UNANSWERED_AFTER_MAX}"
    )


def _honcho(table: Any, path: Path) -> HonchoConfig:
    """`[honcho]`, `[honcho.fleet]` and every `[[honcho.read]]`, checked."""
    where = f"{path}: [honcho]"
    keys = {"url", "key_env", "workspace", "wait_ms", "fleet", "read"}
    _table(table, keys, where)
    url = _url(table, where)
    key_env = table.get("key_env", "HONCHO_API_KEY")
    if not isinstance(key_env, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key_env):
        raise ConfigError(
            f"{where}: key_env names an environment variable that holds the key, like "
            'key_env = "HONCHO_API_KEY" (never write the key itself in the file)'
        )
    wait_ms = table.get("wait_ms", 5000)
    if not isinstance(wait_ms, int) or isinstance(wait_ms, bool) or not 1 <= wait_ms <= 600_000:
        raise ConfigError(f"{where}: wait_ms is a number of milliseconds, 1 to 600000")
    workspace = _id(table, "workspace", where)
    fleet = None
    if "fleet" in table:
        fleet_where = f"{path}: [honcho.fleet]"
        raw_fleet = table["fleet"]
        _table(raw_fleet, {"workspace", "trust", "class"}, fleet_where)
        fleet = FleetSource(
            workspace=_id(raw_fleet, "workspace", fleet_where),
            untrusted=_untrusted(raw_fleet, "untrusted", fleet_where),
            data_class=_class(raw_fleet, DataClass.PUBLIC, fleet_where),
        )
        if fleet.workspace == workspace:
            raise ConfigError(
                f"{fleet_where}: the fleet's workspace must differ from the agent's own "
                f"({workspace!r})"
            )
    raw_read = table.get("read", [])
    if not isinstance(raw_read, list):
        raise ConfigError(f"{where}: write each source to read as a [[honcho.read]] table")
    read = tuple(_read(item, n, workspace, path) for n, item in enumerate(raw_read, start=1))
    names = [source.name for source in read]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(f"{path}: two [[honcho.read]] tables are named {name!r}")
    return HonchoConfig(url.rstrip("/"), workspace, key_env, wait_ms, fleet, read)


# Honcho's address alone: a user, password, query or fragment could hold a key, and the URL is
# logged and kept in the sync state; the key goes in `$key_env`.
_URL = re.compile(
    r"https?://(?P<host>[A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\])(?::(?P<port>[0-9]{1,5}))?(?:/[!-~]*)?"
)

URL_LIMIT = 2000
"""The longest Honcho URL taken: httpx refuses a request's URL over 65,536 characters, and an
id is up to 512 of them."""


def _host_usable(host: str) -> bool:
    """Whether httpx and the resolver can use `host`: an IP address written as one, or names of
    1 to 63 characters between dots (else httpx or the IDNA codec raises on every request)."""
    try:
        if host.startswith("["):
            ipaddress.IPv6Address(host[1:-1])
            return True
        if re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+", host):
            ipaddress.IPv4Address(host)
            return True
    except ValueError:
        return False
    labels = host.removesuffix(".").split(".")
    return len(host) <= 253 and all(1 <= len(label) <= 63 for label in labels)


def _url(table: dict[str, Any], where: str) -> str:
    """`url`: http(s), a host, a port and a path, nothing else; never echoed (it may hold a key)."""
    fix = 'like url = "http://127.0.0.1:8000"'
    value = table.get("url")
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: `url` must be a non-empty string, {fix}")
    url = value.strip()
    found = _URL.fullmatch(url)
    port = found and found.group("port")
    if (
        not found
        or len(url) > URL_LIMIT
        or not _host_usable(found.group("host"))
        or (port and not 1 <= int(port) <= 65535)
        or any(c in url for c in "?#\\")
        or has_secret(url)
    ):
        raise ConfigError(
            f"{where}: url is an http(s) URL of Honcho alone (a host, a port, a path: no user, "
            f"password, query or fragment; at most {URL_LIMIT} characters), {fix}; the key goes "
            "in the variable key_env names"
        )
    return url


def _read(item: Any, n: int, own: str, path: Path) -> ReadSource:
    where = f"{path}: [[honcho.read]] number {n}"
    _table(item, {"name", "workspace", "peer", "trust", "class"}, where)
    source = ReadSource(
        name=_text(item, "name", where, "boxmaker2"),
        workspace=_id(item, "workspace", where),
        peer=_id(item, "peer", where),
        untrusted=_untrusted(item, "trusted", where),
        data_class=_class(item, DataClass.PRIVATE, where),
    )
    if boundary.name(f"{source.name}:") != f"{source.name}:":
        # A source that does not answer is the line `{name}: unavailable` of the answer.
        raise ConfigError(
            f"{where}: `name` is a chat role (like Human or Assistant): the line saying it did "
            "not answer would read as a turn of the conversation; give it another name"
        )
    if source.workspace == own:
        raise ConfigError(
            f"{where} names the agent's own workspace {own!r}: recall never reads it from "
            "Honcho (the local index holds it); remove that table"
        )
    return source


def _table(value: Any, keys: set[str], where: str) -> None:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(value) - keys)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(keys))}"
        )


def _text(table: dict[str, Any], key: str, where: str, example: str) -> str:
    """A name from the config: headers and answer lines show it, so it must already be what
    the boundary would make of it, and start with a letter or digit (never like `[1] `)."""
    value = table.get(key)
    fix = f'like {key} = "{example}"'
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: `{key}` must be a non-empty string, {fix}")
    value = value.strip()
    if boundary.name(value) != value or not value[0].isalnum():
        raise ConfigError(
            f"{where}: `{key}` must be one line of at most {boundary.NAME} characters starting "
            f"with a letter or digit, with no control character, chat tag or secret, {fix}"
        )
    return value


def _id(table: dict[str, Any], key: str, where: str) -> str:
    value = _text(table, key, where, "boxmaker")
    if not HONCHO_ID.fullmatch(value):
        raise ConfigError(f"{where}: {key} is not a Honcho id: letters, digits, _ and - only")
    return value


def _untrusted(table: dict[str, Any], default: str, where: str) -> bool:
    value = table.get("trust", default)
    if value not in ("trusted", "untrusted"):
        raise ConfigError(f'{where}: trust is "trusted" or "untrusted"')
    return bool(value == "untrusted")


def _class(table: dict[str, Any], default: DataClass, where: str) -> DataClass:
    try:
        return DataClass.parse(table.get("class", default.value))
    except (ValueError, TypeError):
        raise ConfigError(f"{where}: class is public, private or secret") from None
