"""Hostile input in what issue 27 added: speakers searched as names, the turn being answered,
time words, the semantic tier's config and status.

- A name whose capital is a title-case letter (`ǅemal`: the capital of a digraph, neither upper
  nor lower case) is written as a name is, so a query naming the person prefers their items.
- A message waiting for its reply is hidden from its own session alone, whichever session is
  named like it (in another case, with one more character); a connected host's session
  (`claude-code`, `codex`, its model's) is every one of the host's conversations, so the prompt
  each is answering is hidden from it.
- Time words read in work linear in the words, at any moment datetime holds, and recall still
  answers.
- `[semantic] model` holding a control or format character is refused, naming the key; what a
  model's own files make the loader say reaches status as one line with no secret; a secret
  planted in every field an append carries, with the tier on, is in no byte of the home.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import unicodedata
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logs import AT, turn, write_log
from memoryd import config as config_file
from memoryd.connect.commands import HOSTS
from memoryd.errors import ConfigError
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.index.relevance import tokens
from memoryd.recall import local, recall
from memoryd.search.named import capitalised
from memoryd.semantic import worker
from memoryd.serve.service import Service
from memoryd.text import time_rules
from memoryd.text import times as time_text
from memoryd.text.time_words import LEAD
from test_connect import cc_path, codex_path, connect, log
from test_hostile import (
    FORGES,
    HEADER,
    REAL_HEADER,
    SECRETS,
    TAGS,
    check_answer,
    check_files,
    check_no_secret,
)
from test_semantic import SRC, embedded
from test_semantic_mpnet import FIXTURE
from transcripts import Claude, Codex, at, write

NOW = datetime(2026, 10, 1, tzinfo=UTC)
NAMES = Names("boxmaker", "kyle")
KEY = SECRETS[1]
"""A key as a model's files or a config might hold it (`ghp_...`)."""


def _heads(home: Home, query: str, k: int = 2) -> list[str]:
    """The header lines of the recall's items."""
    with Index(home.index) as index:
        catch_up(index, home.sessions, NAMES)
        text = recall(index, query, k, None, NOW, home.recalls).text
    return text.splitlines()[::2]


# --- speakers as names ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ǅemal", "ǈubo", "ǋikola", "ǲenan"])
def test_a_name_whose_capital_is_a_title_case_letter_names_its_speaker(
    home: Home, name: str
) -> None:
    # The word is in more texts than the person speaks in: only written as a name is it one.
    for n in range(12):
        write_log(home, f"pad-{n}", turn("the kingfisher nest", "ok", speaker=f"Person{n}"))
    for n in range(3):
        write_log(home, f"met-{n}", turn(f"I met {name.lower()} at the lake", "ok"))
    write_log(home, "named", turn("the kingfisher nest", "fine", speaker=name))
    first = _heads(home, f"{name} kingfisher")[0]
    assert f"· {name} said," in first, first


@settings(max_examples=300)
@given(
    # Title case apart: 31 letters of thousands, drawn as often as the others.
    first=st.one_of(st.characters(categories=("Lt",)), st.characters(categories=("Lu", "Ll"))),
    rest=st.text(st.characters(categories=("Ll",)), max_size=6),
)
def test_a_word_is_written_with_its_capital_when_its_first_letter_is_upper_or_title_case(
    first: str, rest: str
) -> None:
    term = first + rest
    written = capitalised([term])
    assert written <= set(tokens(term)[:1])
    if unicodedata.category(first) in ("Lu", "Lt"):
        assert written == set(tokens(term)[:1])
    else:
        assert not written


OPERATORS = ["NEAR(", '"', "*", "AND", "OR", "NOT", "^", "-", ":", "(", ")", "{speaker}"]


@pytest.mark.parametrize("operator", OPERATORS)
def test_a_query_naming_a_person_with_an_fts5_operator_is_searched_as_words(
    home: Home, operator: str
) -> None:
    # The name holds the operator too: neither side may reach SQLite as syntax.
    for n in range(12):
        write_log(home, f"pad-{n}", turn("the heron pond", "ok", speaker=f"Person{n}"))
    write_log(home, "wren", turn("the heron pond", "fine", speaker=f"Wren {operator}x"))
    for query in (f"{operator}Wren heron", f"Wren{operator} heron {operator}", f"{operator}x"):
        heads = _heads(home, query, 5)
        for head in heads:
            assert REAL_HEADER.match(head) or head.startswith("(no matches"), head
    assert "Wren" in _heads(home, f"what did Wren {operator} say of the heron")[0]


# --- the turn being answered ----------------------------------------------------------------


@pytest.mark.parametrize("other", ["S1", "s1.", "s1-", "s1_", "s10", "s"])
def test_a_waiting_message_is_hidden_from_its_own_session_alone_whatever_the_others_names(
    home: Home, index: Index, other: str
) -> None:
    waiting = {"type": "user", "text": "where did I moor the kayak", "at": AT}
    write_log(home, "s1", [*turn("hello", "hi"), waiting])
    write_log(home, other, turn("good morning", "morning"))
    catch_up(index, home.sessions, NAMES)
    said = datetime.fromisoformat(AT)

    def shown(session: str) -> list[str]:
        found = local(index, "kayak moor", 5, session, said, home.recalls)
        return [hit.item.key for hit in found.hits]

    assert "s1:2:user" not in shown("s1")
    assert "s1:2:user" in shown(other)


def test_a_hosts_session_is_every_one_of_its_conversations_each_answering_its_own_turn(
    home: Home, index: Index, tmp_path: Path
) -> None:
    # The host's model recalls as `claude-code` (its MCP entry); a pass of the connector
    # (`--follow`, another conversation's Stop hook) writes a prompt its model still answers.
    root = tmp_path / "claude"
    asked = "Where is the kayak moored this winter?"
    write(cc_path(root), [Claude().prompt(asked, 1)])
    write(cc_path(root, "odd name"), [Claude("odd name").prompt(f"{asked} (odd)", 1)])
    rollouts = tmp_path / "codex"
    x = Codex()
    write(codex_path(rollouts), [x.meta(), *x.prompt(f"{asked} (codex)", 1)])
    write_log(home, "kayak-1", [{"type": "user", "text": f"{asked} (loop)", "at": at(1)}])
    for host, folder in zip(HOSTS, (root, rollouts), strict=True):
        assert connect(home, host, folder).prompts == (2 if host.name == "claude-code" else 1)
    catch_up(index, home.sessions, NAMES)
    conversations = {s for s in index.log_states() if s.startswith("claude-code")}
    assert any(s.startswith("claude-code.h-") for s in conversations), conversations
    said = datetime.fromisoformat(at(11))

    def shown(session: str | None, now: datetime = said) -> set[str]:
        found = local(index, "kayak moored winter", 10, session, now, home.recalls)
        return {hit.item.text for hit in found.hits}

    claude = {asked, f"{asked} (odd)"}
    every = {*claude, f"{asked} (codex)", f"{asked} (loop)"}
    assert shown("claude-code") == every - claude
    assert shown("codex") == every - {f"{asked} (codex)"}
    # A loop's session named like a conversation, the CLI: not a host's own.
    assert shown("kayak") == shown(None) == every
    assert shown("claude-code", said + timedelta(hours=1)) == every


def test_a_hosts_compaction_in_the_middle_of_a_turn_keeps_the_prompt_from_its_own_model(
    home: Home, index: Index, tmp_path: Path
) -> None:
    # Claude Code and Codex compact their context when it fills, in the middle of a turn of
    # tool calls; the model goes on answering the prompt, and recalls as the host's session.
    asked = "Where is the kayak moored this winter?"
    c = Claude()
    before = [c.reply("Let me look in the shed.", 2, stop="tool_use")]
    before += c.tool("Bash", {"command": "ls"}, "shed.txt", 2)
    claude = [c.prompt(asked, 1), *before, *c.compaction("kayak", 3)]
    write(cc_path(tmp_path / "claude"), [*claude, c.reply("Not in the shed.", 4, stop=None)])
    x = Codex()
    codex = [x.meta(), *x.prompt(f"{asked} (codex)", 1), *x.reply("Looking.", 2, last=False)]
    write(codex_path(tmp_path / "codex"), [*codex, *x.compaction("kayak", 3)])
    folders = (tmp_path / "claude", tmp_path / "codex")
    for host, folder in zip(HOSTS, folders, strict=True):
        connect(home, host, folder)
    catch_up(index, home.sessions, NAMES)
    said = datetime.fromisoformat(at(11))

    def shown(session: str | None) -> set[str]:
        found = local(index, "kayak moored winter", 10, session, said, home.recalls)
        return {hit.item.text for hit in found.hits}

    assert shown(None) == {asked, f"{asked} (codex)"}
    assert shown("claude-code") == {f"{asked} (codex)"}
    assert shown("codex") == {asked}
    # The turn ends after the compaction: its reply is what the model said last, in the
    # epoch the compaction began, and the prompt is its own model's to recall.
    write(cc_path(tmp_path / "claude"), [c.reply("On the trailer by the gate.", 5)])
    connect(home, HOSTS[0], folders[0])
    catch_up(index, home.sessions, NAMES)
    (conversation,) = {s for s in index.log_states() if s.startswith("claude-code-")}
    records = log(home, conversation) + log(home, conversation, 1)
    assert [r["type"] for r in records if r["type"] in ("final", "compaction")] == [
        "compaction",
        "final",
    ]
    assert records[-1]["text"] == "On the trailer by the gate."
    assert asked in shown("claude-code")


# --- time words -----------------------------------------------------------------------------


def _reads(text: str, now: datetime | None) -> int:
    """How many places of `text` the time rules were tried at (`time_rules.read`'s calls)."""
    calls = 0

    def counted(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call" and getattr(frame, "f_code", None) is time_rules.read.__code__:
            calls += 1

    sys.setprofile(counted)
    try:
        time_text.named(text, now)
    finally:
        sys.setprofile(None)
    return calls


TIME_PIECES = st.sampled_from(
    [
        "before the",
        "the week before",
        "the day after",
        "between",
        "and",
        "from",
        "to",
        "last",
        "next",
        "this past",
        "ago",
        "of",
        "in",
        "May",
        "99999999",
        "1e309",
        "2023",
        "9999",
        "0001",
        "Feb",
        "30",
        "31st",
        "٢٠٢٣",
        "２０２３",
        "yesterday",
        "weeks",
        "the",
        "since",
        "until",
        "summer",
        "on the",
        "15th",
        "a couple of",
        "days",
    ]
)
"""Time words and the numbers and scripts a hostile query writes around them."""

MOMENTS = st.one_of(
    st.none(),
    st.sampled_from(
        [
            datetime(1, 1, 1, tzinfo=UTC),
            datetime(1970, 1, 1, tzinfo=UTC),
            datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        ]
    ),
    st.datetimes(timezones=st.just(UTC)),
)


@settings(max_examples=150)
@given(
    pieces=st.lists(TIME_PIECES, min_size=1, max_size=12), times=st.integers(1, 300), now=MOMENTS
)
def test_time_words_are_read_in_work_linear_in_the_words_at_any_moment(
    pieces: list[str], times: int, now: datetime | None
) -> None:
    # The rules are tried at most `LEAD + 1` places an anchor: never once per pair of words.
    text = " ".join(pieces * times)
    assert _reads(text, now) <= (LEAD + 1) * len(time_text.tokens(text))
    for found in time_text.named(text, now):
        assert found.span.start < found.span.end


@pytest.mark.parametrize(
    "now",
    [
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ],
)
def test_recall_answers_hostile_time_words_at_the_ends_of_time(home: Home, now: datetime) -> None:
    for n, said in enumerate(["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", AT]):
        write_log(home, f"s{n}", turn("I painted the sunrise yesterday", "last week", at=said))
    queries = [
        "when did I paint the sunrise",
        "sunrise in May 99999999",
        "sunrise last 1e309 weeks",
        "sunrise " + "before the " * 40 + "trip",
        "sunrise on Feb 30",
        "sunrise in ٢٠٢٣",
        "sunrise the day after 9999-12-31",
        "sunrise tomorrow",
    ]
    with Index(home.index) as index:
        catch_up(index, home.sessions, NAMES)
        for query in queries:
            text = recall(index, query, 3, None, now, home.recalls).text
            assert "painted the sunrise" in text, (query, text)


# --- the semantic tier's config and status --------------------------------------------------

UNSHOWN = ["\n", "\r", "\t", "\x1b[2J", "\x85", "\u2028", "\u202e", "\u200b", "\ufeff"]


@pytest.mark.parametrize("char", UNSHOWN)
def test_a_model_holding_a_control_or_format_character_is_refused_naming_the_key(
    tmp_path: Path, char: str
) -> None:
    path = tmp_path / "memoryd.toml"
    model = f"/models/mini{char}{HEADER}"
    path.write_text(f"[semantic]\nenabled = true\nmodel = {json.dumps(model)}\n")
    with pytest.raises(ConfigError, match=r"\[semantic\]: model holds a control or format") as e:
        config_file.load(path)
    assert char not in str(e.value) and HEADER not in str(e.value)
    # A path with spaces, a dot or a name of another script is a path.
    path.write_text('[semantic]\nenabled = true\nmodel = "/models/my model · ミニ"\n')
    assert config_file.load(path).semantic == config_file.SemanticConfig("/models/my model · ミニ")


def _model(folder: Path, model_type: str = "mpnet", tensor: str = "ok") -> Path:
    """A model's folder: the tiny MPNet's config and tokenizer, and a `model.safetensors`
    holding one tensor, of a type the encoder does not read, named `tensor`."""
    folder.mkdir()
    config = json.loads((FIXTURE / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": model_type}))
    shutil.copy(FIXTURE / "tokenizer.json", folder / "tokenizer.json")
    header = json.dumps({tensor: {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}})
    data = header.encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(data)) + data + b"\0\0")
    return folder


def _shown(text: str) -> None:
    """Status as a terminal shows it: no control or format character, nothing forged, no key."""
    assert KEY.marker not in text
    for line in text.splitlines():
        assert not line.startswith(("[1]", "eve")), line
        assert all(unicodedata.category(c) not in ("Cc", "Cf") for c in line), repr(line)


def test_a_model_type_its_files_say_is_shown_in_status_as_one_line_without_a_key(
    home: Home, tmp_path: Path
) -> None:
    said = f"roberta{FORGES[0]}\u202e {KEY.value}"
    folder = _model(tmp_path / "odd", model_type=said)
    home.config.write_text(f'[semantic]\nenabled = true\nmodel = "{folder}"\n')
    for flags in ([], ["--json"]):
        done = subprocess.run(
            [sys.executable, "-m", "memoryd", "status", *flags, "--home", str(home.root)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "PYTHONPATH": str(SRC)},
        )
        assert done.returncode == 0, done.stderr
        assert "model_type 'robertaeve [1] memory - owner" in done.stdout, done.stdout
        _shown(done.stdout)
    refused = subprocess.run(
        [sys.executable, "-m", "memoryd", "serve", "--home", str(home.root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert refused.returncode == 1 and "model_type 'roberta" in refused.stderr, refused.stderr
    _shown(refused.stderr)


def test_what_a_models_files_make_the_loader_say_reaches_status_as_one_line_without_a_key(
    home: Home, tmp_path: Path
) -> None:
    folder = _model(tmp_path / "odd", tensor=f"weight{FORGES[0]}\u202e {KEY.value}")
    home.config.write_text(f'[semantic]\nenabled = true\nmodel = "{folder}"\n')
    write_log(home, "s1", turn("the heron pond", "fine"))
    service = Service.open(home)
    tier = service.semantic
    assert tier is not None
    worker.run(service, tier, threading.Event())  # the load fails: the worker returns
    error = service.status()["semantic"]["error"]
    assert "could not be loaded" in error and "which is not read" in error, error
    _shown(error)
    assert "heron pond" in service.begin_recall("heron", 5, None)().text  # lexical
    service.close()


def test_a_secret_in_every_field_an_append_carries_reaches_no_byte_of_the_home_with_the_tier_on(
    home: Home,
) -> None:
    home.config.write_text(f'[semantic]\nenabled = true\nmodel = "{FIXTURE}"\n')
    service = Service.open(home)
    for n, secret in enumerate(SECRETS):
        speaker = f"Wren {secret.value} {TAGS[n % len(TAGS)]}"
        said = {"at": AT, "speaker": speaker}
        records = [
            {"type": "user", "text": f"the heron pond {secret.value}", **said},
            {"type": "final", "text": f"noted {secret.value}", **said},
        ]
        service.append(f"s{n}", records)
    assert embedded(service) == 2 * len(SECRETS)
    for query in ("what did Wren say of the heron pond", f"Wren {SECRETS[1].value} heron"):
        answer = service.begin_recall(query, 10, "s0")().text
        check_answer(answer)
        assert "heron pond" in answer
    check_no_secret(json.dumps(service.status()))
    service.close()
    check_files(home)
