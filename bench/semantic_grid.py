"""The semantic tier's fusion tuned on cached similarities (issue 27): LoCoMo's questions and
known-item queries asked once of each conversation's home, their lexical orders kept, every
item and query embedded once (a cache), then every setting of a grid ranked as `Tier.fused`
ranks (the lexical 20 and the nearest 20 by int8 vectors, `fusion`'s sum, the same words said
again shown once), in seconds a setting.

Each conversation of `--data` is a home of its own (locomo.py's `each` mode), asked its
questions of categories 1-4 and `--known` known-item queries of each cell (3 and 8 words,
exact and with one word wrong: `queries._known`, as bench/recall.py makes them) drawn from its
own items. The vectors are cached by text in `--cache` (`<model's folder name>.npz`): a second
run embeds nothing.

    python bench/semantic_grid.py --model all-mpnet-base-v2 --cache /tmp/mpnet_work
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

import queries
from locomo import DATA_DEFAULT, RecallLog, memoryd_recall
from locomo_data import conversations, write_logs
from memoryd.config import SemanticConfig
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.items import Hit
from memoryd.labels import DataClass
from memoryd.semantic import fusion, worker
from memoryd.semantic.encoder import Encoder
from memoryd.semantic.held import SCALE, quantised
from memoryd.semantic.tier import NEAREST, Tier
from memoryd.serve.service import Service
from memoryd.text.secrets import redact
from runs import log

K = 5


class Recorder:
    """A fuser that keeps the lexical order recall gives it and shows that order."""

    def __init__(self) -> None:
        self.orders: list[list[int]] = []

    def fused(
        self, index: Index, query: str, hits: list[Hit], k: int, highest: DataClass | None
    ) -> list[Hit]:
        """Keep the lexical hits' row ids; the lexical first `k`."""
        self.orders.append([hit.id for hit in hits])
        return hits[:k]


@dataclass
class Case:
    """One query of one home: its text, lexical order, and what counts as found."""

    home: int
    text: str
    kind: str  # "locomo-<category>", "known", "wrong"
    lexical: list[int]
    evidence: frozenset[int] = frozenset()  # row ids, LoCoMo's
    target: str | None = None  # a known item's text, digits ignored


@dataclass
class Home_:
    """A home's items: row ids, (who, text) for the shown-once rule, int8 vectors."""

    ids: np.ndarray
    said: dict[int, tuple[str, str]]
    texts: dict[int, str]
    vectors: np.ndarray | None = None


def cases_of(root: Path, data: Path, known: int) -> tuple[list[Home_], list[Case]]:
    """Each conversation's home written and asked; its items and the queries' lexical orders."""
    homes: list[Home_] = []
    cases: list[Case] = []
    paths = sorted(data.glob("*.json")) if data.is_dir() else [data]
    every = [c for path in paths for c in conversations(path)]
    for number, conversation in enumerate(every):
        home = Home(root / f"home-{number}")
        home.create()
        keys = write_logs(home.sessions, conversation)
        service = Service.open(home)
        recorder = Recorder()
        service.semantic = recorder  # type: ignore[assignment]
        try:
            index = service.indexes.index
            rows = index.conn.execute(
                "SELECT id, key, who, text FROM items WHERE kind != 'dropped' ORDER BY id"
            ).fetchall()
            by_key = {str(key): int(id_) for id_, key, _, _ in rows}
            homes.append(
                Home_(
                    np.array([r[0] for r in rows], dtype=np.int64),
                    {int(r[0]): (str(r[2]), str(r[3])) for r in rows},
                    {int(r[0]): str(r[3]) for r in rows},
                )
            )
            recalls = RecallLog(home.recalls)
            recalls.new()
            asked: list[tuple[str, str, frozenset[int], str | None]] = []
            for question in conversation.questions:
                evidence = frozenset(by_key[keys[d]] for d in question.evidence)
                asked.append((question.text, f"locomo-{question.category}", evidence, None))
            vocab = queries.vocabulary(index.conn)
            rng = random.Random(f"semantic-grid-{number}")
            items = int(index.conn.execute("SELECT max(id) FROM items").fetchone()[0])
            for words, wrong in itertools.product((3, 8), (None, vocab.mid)):
                for _ in range(known):
                    q = queries._known(rng, index.conn, items, words, wrong)
                    asked.append((q.text, q.kind, frozenset(), q.target))
            for text, kind, evidence, target in asked:
                before = len(recorder.orders)
                memoryd_recall(service, recalls, text)
                lexical = recorder.orders[-1] if len(recorder.orders) > before else []
                cases.append(Case(number, text, kind, lexical, evidence, target))
        finally:
            service.close()
    return homes, cases


def cached(encoder: Encoder, texts: list[str], path: Path) -> dict[str, np.ndarray]:
    """Each text's vector, embedded once: those already in `path` read, the others embedded and
    added (saved every batch, so a stopped run loses one batch)."""
    found: dict[str, np.ndarray] = {}
    if path.exists():
        held = np.load(path, allow_pickle=False)
        found = dict(zip(held["texts"].tolist(), held["vectors"], strict=True))
    missing = sorted({t for t in texts if t not in found}, key=len)
    started = time.perf_counter()
    for start in range(0, len(missing), 256):
        part = missing[start : start + 256]
        found.update(zip(part, encoder.embed(part), strict=True))
        done = start + len(part)
        rate = done / (time.perf_counter() - started)
        log(f"  embedded {done}/{len(missing)} ({rate:.1f} texts/s)")
        keys = list(found)
        partial = path.with_suffix(".part.npz")
        np.savez(partial, texts=np.array(keys), vectors=np.stack([found[k] for k in keys]))
        partial.replace(path)
    return found


def likeness(home: Home_, case: Case, query: np.ndarray) -> dict[int, float]:
    """The similarities `Tier.fused` reads for a query: its nearest `NEAREST` by the int8
    vectors (ties by row id), and each lexical hit's."""
    assert home.vectors is not None
    scores = (home.vectors.astype(np.float32) @ query) / np.float32(SCALE)
    take = min(NEAREST, len(scores))
    chosen = np.argpartition(-scores, take - 1)[:take]
    order = np.lexsort((home.ids[chosen], -scores[chosen]))
    similar = {int(home.ids[chosen[i]]): float(scores[chosen[i]]) for i in order}
    where = {int(id_): n for n, id_ in enumerate(home.ids)}
    for id_ in case.lexical:
        if id_ not in similar and id_ in where:
            similar[id_] = float(scores[where[id_]])
    return similar


def shown(
    home: Home_, case: Case, similar: dict[int, float], weight: float, floor: float, places: float
) -> list[int]:
    """The row ids a recall shows (its first 20) as `Tier.fused` orders them, with the fusion's
    constants as given."""
    with constants(weight, floor, places):
        ordered = fusion.fused(case.lexical, similar)
    out: list[int] = []
    seen: set[tuple[str, str]] = set()
    for id_ in ordered:
        said = home.said.get(id_)
        if said is None or said in seen:
            continue
        seen.add(said)
        out.append(id_)
        if len(out) == 20:
            break
    return out


class constants:
    """`fusion`'s constants set for a while (the bench's own process only)."""

    def __init__(self, weight: float, floor: float, places: float) -> None:
        self.new = (weight, floor, places)

    def __enter__(self) -> None:
        self.old = (fusion.WEIGHT, fusion.FLOOR, fusion.PLACES)
        fusion.WEIGHT, fusion.FLOOR, fusion.PLACES = self.new

    def __exit__(self, *_: object) -> None:
        fusion.WEIGHT, fusion.FLOOR, fusion.PLACES = self.old


def scored(home: Home_, case: Case, ids: list[int], k: int = K) -> float:
    """A LoCoMo question's evidence recall@k, or a known item's found (1) or not (0)."""
    top = ids[:k]
    if case.target is not None:
        return float(any(queries.same_text(home.texts[i]) == case.target for i in top))
    return sum(i in top for i in case.evidence) / len(case.evidence)


def measured(
    homes: list[Home_],
    cases: list[Case],
    asked: list[dict[int, float]],
    setting: tuple[float, float, float] | None,
) -> dict[str, float]:
    """R@5 and R@10 of LoCoMo, temporal R@5, known and one-wrong R@5 (3 and 8 words) with the
    tier at `setting` (weight, floor, places), or lexical when None."""
    parts: dict[str, list[float]] = {}
    for case, similar in zip(cases, asked, strict=True):
        home = homes[case.home]
        ids = case.lexical[:20] if setting is None else shown(home, case, similar, *setting)
        if case.kind.startswith("locomo"):
            parts.setdefault("R@5", []).append(scored(home, case, ids))
            parts.setdefault("R@10", []).append(scored(home, case, ids, 10))
            if case.kind == "locomo-2":
                parts.setdefault("temporal", []).append(scored(home, case, ids))
        else:
            parts.setdefault(case.kind, []).append(scored(home, case, ids))
    return {name: statistics.fmean(values) for name, values in parts.items()}


def main(argv: list[str] | None = None) -> int:
    """Ask, embed (or read the cache), and print the grid's best settings beside lexical."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA_DEFAULT)
    parser.add_argument("--model", default="all-mpnet-base-v2")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--known", type=int, default=20, help="queries of each known cell")
    args = parser.parse_args(argv)
    tier = Tier.of(SemanticConfig(args.model))
    assert tier is not None
    with tempfile.TemporaryDirectory(prefix="memoryd-grid-") as tmp:
        homes, cases = cases_of(Path(tmp), args.data, args.known)
    log(f"{len(cases)} queries over {sum(len(h.ids) for h in homes)} items")
    encoder = tier.loaded()
    args.cache.mkdir(parents=True, exist_ok=True)
    given = [[worker.said(*home.said[int(i)]) for i in home.ids] for home in homes]
    texts = [t for these in given for t in these] + [redact(c.text) for c in cases]
    vectors = cached(encoder, texts, args.cache / f"{tier.model.folder.name}.npz")
    for home, these in zip(homes, given, strict=True):
        home.vectors = np.frombuffer(
            b"".join(quantised(np.stack([vectors[t] for t in these]))), np.int8
        ).reshape(len(home.ids), -1)
    asked = [likeness(homes[c.home], c, vectors[redact(c.text)]) for c in cases]
    rows = [("lexical", measured(homes, cases, asked, None))]
    rows.append(
        ("as set", measured(homes, cases, asked, (fusion.WEIGHT, fusion.FLOOR, fusion.PLACES)))
    )
    grid = itertools.product(
        (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0),
        (0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6),
        (2.0, 4.0, 8.0),
    )
    found = [(s, measured(homes, cases, asked, s)) for s in grid]
    lexical = rows[0][1]
    fair = [
        (s, f)
        for s, f in found
        if f["known"] >= lexical["known"] - 1e-9 and f["wrong"] >= lexical["wrong"] - 0.01
    ]
    fair.sort(key=lambda sf: -sf[1]["R@5"])
    rows += [(f"w {s[0]} floor {s[1]} places {s[2]}", f) for s, f in fair[:15]]
    best = max(found, key=lambda sf: sf[1]["R@5"])
    rows.append((f"best any: w {best[0][0]} floor {best[0][1]} places {best[0][2]}", best[1]))
    names = ("R@5", "R@10", "temporal", "known", "wrong")
    print(f"| ranking ({tier.model.name}) | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for name, f in rows:
        print(f"| {name} | " + " | ".join(f"{f[n]:.3f}" for n in names) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
