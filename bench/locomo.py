"""Evidence recall on LoCoMo: memoryd's `recall` asked the questions of long two-person
conversations, against the raw FTS5 query and a stemmed query without stop words (issue 10).

The data is LoCoMo (Maharana et al., ACL 2024, snap-research/locomo): its conversations as
published, by default the five in `../shared/data/locomo-dev` beside the repository, one JSON
file each (its README.md says what they hold). memoryd does not ship them: `--data` names
another folder of JSON files, or one file (`locomo10.json`, a list of conversations).

The homes are made in temporary folders, removed afterwards, in each mode `--modes` names
(`locomo_homes.py`): `each`, every conversation a fresh home of its own; `one`, every
conversation in one home; `copies`, that home beside `--copies` (10) copies of every
conversation whose speakers are renamed, asked nothing (issue 27: a home of many people). One
LoCoMo session is one memoryd session, its messages paired as `user` and `final` records, each
naming its speaker (`locomo_data.py` says how), and `Service.open` indexes the logs as the
daemon does. Every question of categories 1-4 (1 multi-hop, 2 temporal, 3 open-domain, 4
single-hop) is asked once, its text as the query, at k = 20, by:

- memoryd: `Service.open(home).begin_recall(question, 20, None)()`, what a loop's `recall` runs; the
  keys of the items it shows, in order, are read from the recall log it writes
  (`memory/recalls/YYYY-MM.jsonl`, docs/decisions.md);
- raw: the query's terms (runs of alphanumeric characters, each once) double-quoted and joined
  by OR, `ORDER BY rank LIMIT 20`, on memoryd's index (`Index.search`): it follows the index's
  tokenizer, whatever that is;
- porter-no-stop: the texts of the same items in an in-memory FTS5 table of its own, tokenized
  `porter unicode61 remove_diacritics 2`, asked the query's terms that are not English stop
  words (NLTK's list, `STOP_WORDS`; every term when all of them are), joined by OR, by bm25;
- speaker-text: porter-no-stop over each text written `Speaker: text`, its LoCoMo speaker's
  name first (issue 27's experiment).

Evidence recall@k of a question is the share of its evidence messages among the first k items;
the figures are means over the questions, overall and per category. Evidence ids are read as
written, save typos that name one message unmistakably (`D:11:26`, `D8:6; D9:17`); an id naming
no message is left out, and a question left with none is not asked. The report also counts the
evidence messages memoryd holds no item for (none since issue 27: a session's last message with
no final is indexed too). Latency is each question's time in `begin_recall` (its rendering and
its log line included) and in the raw query, which of the two runs first alternating by
question; the report gives p50 and p95 per mode.

    python bench/locomo.py [--data DIR|FILE] [--modes each,one,copies] [--copies N] [--json PATH]
"""

from __future__ import annotations

import argparse
import functools
import json
import shlex
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from indexes import code_version
from locomo_data import Conversation, conversations, write_logs
from locomo_homes import distractors
from locomo_report import MODES, Asked, Coverage, K, figures, mean_recall, report, share
from memoryd.config import SemanticConfig
from memoryd.errors import RecallError
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.semantic import worker
from memoryd.semantic.tier import Tier
from memoryd.serve.service import Service
from runs import log

DATA_DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev"
COPIES = 10
"""Renamed copies of each conversation beside it in the `copies` mode."""
TARGET = 0.60
"""Issue 10's target: memoryd's evidence R@5, categories 1-4, on the five conversations."""

# NLTK's English stop words (nltk_data, corpora/stopwords/english: 179 words, the Snowball
# list and its contractions), typed in. A query's terms are runs of alphanumeric characters,
# so `don't` reaches the list as `don` and `t`, both in it.
STOP_WORDS = frozenset(
    (
        "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "you're", "you've",
        "you'll", "you'd", "your", "yours", "yourself", "yourselves", "he", "him", "his", "himself",
        "she", "she's", "her", "hers", "herself", "it", "it's", "its", "itself", "they", "them",
        "their", "theirs", "themselves", "what", "which", "who", "whom", "this", "that", "that'll",
        "these", "those", "am", "is", "are", "was", "were", "be", "been", "being", "have", "has",
        "had", "having", "do", "does", "did", "doing", "a", "an", "the", "and", "but", "if", "or",
        "because", "as", "until", "while", "of", "at", "by", "for", "with", "about", "against",
        "between", "into", "through", "during", "before", "after", "above", "below", "to", "from",
        "up", "down", "in", "out", "on", "off", "over", "under", "again", "further", "then", "once",
        "here", "there", "when", "where", "why", "how", "all", "any", "both", "each", "few", "more",
        "most", "other", "some", "such", "no", "nor", "not", "only", "own", "same", "so", "than",
        "too", "very", "s", "t", "can", "will", "just", "don", "don't", "should", "should've",
        "now", "d", "ll", "m", "o", "re", "ve", "y", "ain", "aren", "aren't", "couldn", "couldn't",
        "didn", "didn't", "doesn", "doesn't", "hadn", "hadn't", "hasn", "hasn't", "haven",
        "haven't", "isn", "isn't", "ma", "mightn", "mightn't", "mustn", "mustn't", "needn",
        "needn't", "shan", "shan't", "shouldn", "shouldn't", "wasn", "wasn't", "weren", "weren't",
        "won", "won't", "wouldn", "wouldn't"
    )
)  # fmt: skip


def words(query: str) -> list[str]:
    """The query's terms as the baselines take them: runs of alphanumeric characters, each once
    (case-insensitively). They stay so whatever memoryd's own terms become."""
    found: dict[str, str] = {}
    run: list[str] = []
    for char in query + " ":
        if char.isalnum():
            run.append(char)
        elif run:
            term = "".join(run)
            found.setdefault(term.casefold(), term)
            run = []
    return list(found.values())


def any_of(terms: Iterable[str]) -> str:
    """The FTS5 expression for the items holding any of the terms (a term holds no quote)."""
    return " OR ".join(f'"{term}"' for term in terms)


class RecallLog:
    """A home's recall log, read as it grows."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.read: dict[Path, int] = {}

    def new(self) -> list[list[str]]:
        """The keys each recall logged since the last call showed, in order."""
        found = []
        for path in sorted(self.folder.glob("*.jsonl")):
            start = self.read.get(path, 0)
            with path.open("rb") as f:
                f.seek(start)
                data = f.read()
            end = data.rfind(b"\n") + 1
            self.read[path] = start + end
            for line in data[:end].splitlines():
                entry = json.loads(line)
                found.append([str(hit["key"]) for hit in entry["hits"]])
        return found


class Stemmed:
    """The porter-no-stop baseline: items' texts in an in-memory FTS5 table that stems."""

    def __init__(self, items: Iterable[tuple[str, str]]) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute(
            "CREATE VIRTUAL TABLE items USING fts5(key UNINDEXED, text, "
            "tokenize='porter unicode61 remove_diacritics 2')"
        )
        self.conn.executemany("INSERT INTO items VALUES (?, ?)", items)

    def search(self, query: str, k: int) -> list[str]:
        """The keys of the `k` best items for the query's terms that are not stop words."""
        terms = words(query)
        kept = [t for t in terms if t.casefold() not in STOP_WORDS] or terms
        if not kept:
            return []
        rows = self.conn.execute(
            "SELECT key FROM items WHERE items MATCH ? ORDER BY rank LIMIT ?", (any_of(kept), k)
        ).fetchall()
        return [str(row[0]) for row in rows]

    def close(self) -> None:
        """Close the table's connection."""
        self.conn.close()


def memoryd_recall(service: Service, recalls: RecallLog, query: str) -> list[str]:
    """The keys of the items memoryd's `recall` shows for the query, in order."""
    try:
        service.begin_recall(query, K, None)()
    except RecallError:
        return []  # refused (no word to search for): nothing shown, nothing logged
    logged = recalls.new()
    if len(logged) != 1:
        raise RuntimeError(f"one recall wrote {len(logged)} lines to the recall log, not 1")
    return logged[0]


def raw_search(index: Index, query: str) -> list[str]:
    """The keys of the raw query's hits: every term quoted, joined by OR, bm25, at most K."""
    terms = words(query)
    return [hit.item.key for hit in index.search(any_of(terms), K)] if terms else []


def items(index: Index) -> list[tuple[str, str]]:
    """The key and text of every item of the sessions' turns, in the order they were added."""
    # A read of the index's own table, as bench/queries.py does: no public call lists them.
    rows = index.conn.execute("SELECT key, text FROM items WHERE kind != 'dropped' ORDER BY id")
    return [(str(key), str(text)) for key, text in rows]


def timed(run: Callable[[], list[str]]) -> tuple[float, list[str]]:
    """Seconds a search took, and its keys."""
    start = time.perf_counter()
    keys = run()
    return time.perf_counter() - start, keys


def speakers(conversation: Conversation, keys: dict[str, str]) -> dict[str, str]:
    """Each item key's LoCoMo speaker, from the keys of the conversation's messages."""
    said = {m.dia_id: m.speaker for s in conversation.sessions for m in s.messages}
    return {key: said[dia_id] for dia_id, key in keys.items()}


APPROXIMATE_FROM: int | None = None
"""The vectors from which the tier's search is approximate (`--semantic-approximate`; None: the
tier's own threshold, which no LoCoMo home reaches)."""


def with_semantic(service: Service, model: str) -> Tier:
    """The semantic tier of `model` for `service`, every item embedded as the daemon's worker
    embeds them (`semantic.worker`)."""
    tier = Tier.of(SemanticConfig(model))
    assert tier is not None
    if APPROXIMATE_FROM is not None:
        # Every vector in the lists, none compared exactly beside them: the search measured is
        # the approximate one alone.
        tier.held.approximate_from, tier.held.recent = APPROXIMATE_FROM, 0
    after = 0
    while last := worker.embed_pending(service, tier, after):
        after = last
    return tier


def ask(
    asked: list[Conversation], beside: list[Conversation], root: Path, semantic: str | None = None
) -> tuple[list[Asked], Coverage, int]:
    """Write the conversations' home under `root` (`beside` too, asked nothing), open it as
    the daemon does (which indexes it), and ask every question of every ranker; give the
    questions asked, the coverage of their evidence, and how many items the home holds. With
    `semantic`, memoryd with the semantic tier of that model too (`memoryd+semantic`)."""
    home = Home(root / "home")
    home.create()
    alone = len(asked) + len(beside) == 1
    keys: dict[str, dict[str, str]] = {}
    speaker: dict[str, str] = {}
    for conversation in (*asked, *beside):
        prefix = "" if alone else f"{conversation.name}-"
        keys[conversation.name] = write_logs(home.sessions, conversation, prefix)
        speaker.update(speakers(conversation, keys[conversation.name]))
    service = Service.open(home)
    tier = None if semantic is None else with_semantic(service, semantic)
    try:
        index = service.indexes.index
        texts = items(index)
        stemmed = Stemmed(texts)
        spoken = Stemmed((key, f"{speaker[key]}: {text}") for key, text in texts)
        recalls = RecallLog(home.recalls)
        recalls.new()
        done = []
        questions = [(c, q) for c in asked for q in c.questions]
        for n, (conversation, question) in enumerate(questions):
            mine = functools.partial(memoryd_recall, service, recalls, question.text)
            raw = functools.partial(raw_search, index, question.text)
            if n % 2 == 0:
                mine_seconds, mine_keys = timed(mine)
                raw_seconds, raw_keys = timed(raw)
            else:
                raw_seconds, raw_keys = timed(raw)
                mine_seconds, mine_keys = timed(mine)
            hits = {
                "memoryd": mine_keys,
                "raw": raw_keys,
                "porter-no-stop": stemmed.search(question.text, K),
                "speaker-text": spoken.search(question.text, K),
            }
            if tier is not None:
                service.semantic = tier
                hits["memoryd+semantic"] = memoryd_recall(service, recalls, question.text)
                service.semantic = None
            found = tuple(keys[conversation.name][dia_id] for dia_id in question.evidence)
            done.append(Asked(conversation.name, question, found, hits, mine_seconds, raw_seconds))
        stemmed.close()
        spoken.close()
    finally:
        service.close()
    held_keys = {key for key, _ in texts}
    coverage = Coverage()
    for conversation in asked:
        mine_keys = keys[conversation.name]
        wanted = {mine_keys[dia_id] for q in conversation.questions for dia_id in q.evidence}
        held = wanted & held_keys
        ends = {mine_keys[dia_id] for dia_id in conversation.unfinished()} & (wanted - held)
        coverage += Coverage(len(wanted), len(held), len(ends))
    return done, coverage, len(texts)


def measured(
    mode: str, every: list[Conversation], copies: int, semantic: str | None = None
) -> tuple[list[Asked], Coverage, int]:
    """Every question of `every` conversation asked in the mode's homes (`MODES`), with
    `semantic` the tier of that model too (`ask`)."""
    if mode == "each":
        done: list[Asked] = []
        coverage = Coverage()
        items_held = 0
        for conversation in every:
            with tempfile.TemporaryDirectory(prefix="memoryd-locomo-") as tmp:
                asked, covered, held = ask([conversation], [], Path(tmp), semantic)
            done += asked
            coverage += covered
            items_held += held
            log(
                f"  {conversation.name}: {len(conversation.sessions)} sessions, "
                f"{conversation.messages} messages, {len(asked)} questions, "
                f"memoryd R@5 {share(mean_recall(asked, 'memoryd', 5))}"
            )
        return done, coverage, items_held
    beside = list(distractors(every, copies)) if mode == "copies" else []
    with tempfile.TemporaryDirectory(prefix="memoryd-locomo-") as tmp:
        return ask(every, beside, Path(tmp), semantic)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the report (and write its figures to `--json`)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--data",
        type=Path,
        default=DATA_DEFAULT,
        help="LoCoMo conversations: a folder of JSON files or one file (default: "
        "../shared/data/locomo-dev beside the repository)",
    )
    parser.add_argument(
        "--modes",
        default=",".join(MODES),
        help="the homes asked, comma-separated: each (one per conversation), one (all in one "
        "home), copies (that home beside renamed copies) (default %(default)s)",
    )
    parser.add_argument(
        "--copies",
        type=int,
        default=COPIES,
        help="renamed copies of each conversation in the copies mode (default %(default)s)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument(
        "--semantic",
        nargs="?",
        const="all-MiniLM-L6-v2",
        default=None,
        help="also ask memoryd with the semantic tier of this model (all-MiniLM-L6-v2 when "
        "none is named), in the same run: memoryd+semantic",
    )
    parser.add_argument(
        "--semantic-approximate",
        type=int,
        default=None,
        metavar="N",
        help="with --semantic, the tier's search approximate from N vectors (0: always), every "
        "vector in its lists, as past 200,000 in a daemon",
    )
    args = parser.parse_args(argv)
    global APPROXIMATE_FROM
    APPROXIMATE_FROM = args.semantic_approximate
    modes = [m for m in args.modes.split(",") if m]
    if not modes or any(m not in MODES for m in modes) or args.copies < 1:
        parser.error(f"--modes takes some of {', '.join(MODES)}; --copies at least 1")
    data: Path = args.data
    paths = sorted(data.glob("*.json")) if data.is_dir() else [data] if data.is_file() else []
    if not paths:
        parser.error(
            f"no LoCoMo conversations (*.json) at {data}: memoryd does not ship them; pass "
            "--data with the data/locomo10.json of snap-research/locomo, or a folder of such "
            "JSON files"
        )
    command = shlex.join(["python", *(sys.argv if argv is None else ["bench/locomo.py", *argv])])
    version = code_version()  # the code as imported, before anyone edits it during the run
    log(version)
    start = time.perf_counter()
    every = [c for path in paths for c in conversations(path)]
    found_modes = {}
    coverage = Coverage()
    for mode in modes:
        log(f"== {mode}: {MODES[mode]}")
        asked, coverage, items_held = measured(mode, every, args.copies, args.semantic)
        found_modes[mode] = figures(asked, items_held)
        log(f"  memoryd R@5 {share(found_modes[mode]['rankers']['memoryd']['R@5'])}")
    each = found_modes.get("each")
    memoryd5 = None if each is None else each["rankers"]["memoryd"]["R@5"]
    found: dict[str, Any] = {
        "modes": found_modes,
        "command": command,
        "version": version,
        "data": str(data),
        "k": K,
        "copies": args.copies if "copies" in modes else 0,
        "conversations": [c.name for c in every],
        "coverage": {
            "messages": coverage.messages,
            "held": coverage.held,
            "unfinished": coverage.unfinished,
        },
        "left_out": {
            "evidence": sum(c.unknown for c in every),
            "questions": sum(c.unasked for c in every),
        },
        "target": {"R@5": TARGET, "memoryd": memoryd5, "pass": (memoryd5 or 0.0) >= TARGET},
    }
    text = report(found, command, time.perf_counter() - start)
    print(text, end="")
    if args.json is not None:
        args.json.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
