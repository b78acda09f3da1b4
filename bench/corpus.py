"""Benchmark homes: session logs made from real chat text, built once and cached.

The text is the chitchat-dataset package (7,168 human chat conversations, MIT), read from the
JSON file the package ships, so nothing is fetched at run time. Each conversation becomes one
session: consecutive messages by one sender form a run (its messages joined by a line break),
the opener's runs are `user` records and the other participant's runs are the `final` replies.
A finished turn (user + final) is two index items; a trailing user run without a reply is an
unfinished turn, written and indexed (one item, its user's text) but not counted in `items`.
A session with more than 6 turns keeps turns 1-4 in `0.jsonl` and continues in `1.jsonl` after
a `compaction` line (SPEC section 3).

A home of `items` items takes the conversations in the dataset's order until it holds
`ceil(items / 2)` finished turns, cutting the last conversation short. Past one copy of the
corpus (133,706 items) the corpus repeats: copy `c` has session ids `cc-<c>-<nnnn>`, its own
speaker names and every digit `d` written as `(d + c) % 10`. Everything is deterministic, and a
smaller home is a prefix of a larger one (same ids, texts and times).

Homes live in `<cache>/items-<n>/home`, with `done.json` beside the home written last; the cache
is `bench/.cache/` unless `MEMORYD_BENCH_CACHE` names another folder.

    python bench/corpus.py --items 100000
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib.resources import files
from pathlib import Path
from typing import Any

VERSION = 1
SIZES = (10_000, 100_000, 1_000_000)
JOIN = "\n"
BASE = datetime(2024, 1, 1, tzinfo=UTC)
KEEP_TURNS = 4  # turns left in epoch 0 of a long session
LONG_SESSION = 6  # a session with more turns than this gets epoch 1
NAMES = (
    "Ada", "Ben", "Cleo", "Dan", "Eva", "Finn", "Gwen", "Hugo",
    "Iris", "Jack", "Kira", "Leo", "Maya", "Nico", "Olga", "Paul",
    "Quinn", "Rosa", "Sam", "Tara", "Umar", "Vera", "Will", "Xena",
    "Yuri", "Zoe", "Anil", "Bea", "Carl", "Dora", "Emil", "Fay",
)  # fmt: skip


@dataclass(frozen=True)
class Session:
    """One conversation as a session: its id, the user's name and its turns in order.

    Each turn is `(user text, reply text)`; the reply is None for an unfinished last turn.
    """

    sid: str
    speaker: str
    turns: tuple[tuple[str, str | None], ...]


def cache_dir() -> Path:
    """The cache folder: `$MEMORYD_BENCH_CACHE`, else `bench/.cache` beside this file."""
    env = os.environ.get("MEMORYD_BENCH_CACHE")
    return Path(env) if env else Path(__file__).resolve().parent / ".cache"


def _dataset_version() -> str:
    try:
        return importlib.metadata.version("chitchat-dataset")
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError(
            "the benchmark corpus needs the chitchat-dataset package: "
            "pip install 'chitchat-dataset==0.9.0' (or pip install -e '.[bench]')"
        ) from None


@functools.cache
def _conversations() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The dataset's conversations in file order: (the opener's sender id, each run's text)."""
    _dataset_version()
    raw = files("chitchat_dataset").joinpath("dataset.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(raw)
    out: list[tuple[str, tuple[str, ...]]] = []
    for conv in data.values():
        runs: list[tuple[str, list[str]]] = []
        for group in conv["messages"]:
            for message in group:
                sender: str = message["sender"]
                if runs and runs[-1][0] == sender:
                    runs[-1][1].append(message["text"])
                else:
                    runs.append((sender, [message["text"]]))
        # Empty messages (33 in the dataset) are dropped from their run's text.
        texts = tuple(JOIN.join(m for m in run if m) for _, run in runs)
        out.append((runs[0][0], texts))
    return tuple(out)


def _speaker(sender: str, copy: int) -> str:
    """A first name for a sender id: the same person keeps one name within a copy."""
    h = int.from_bytes(hashlib.sha256(sender.encode()).digest()[:4], "big")
    return NAMES[(h + 7 * copy) % len(NAMES)]


def sessions(items: int) -> Iterator[Session]:
    """Yield the sessions of a home of `items` index items, in order (see the module doc)."""
    want = -(-items // 2)  # finished turns
    have = 0
    convs = _conversations()
    copy = 0
    while have < want:
        shift = "".join(str((d + copy) % 10) for d in range(10))
        digits = str.maketrans("0123456789", shift)
        for n, (sender, runs) in enumerate(convs):
            if have >= want:
                return
            texts = [run.translate(digits) for run in runs] if copy else list(runs)
            turns = [
                (texts[i], texts[i + 1] if i + 1 < len(texts) else None)
                for i in range(0, len(texts), 2)
            ]
            if have + len(texts) // 2 > want:
                turns = turns[: want - have]
            have += sum(1 for _, reply in turns if reply is not None)
            yield Session(f"cc-{copy}-{n:04d}", _speaker(sender, copy), tuple(turns))
        copy += 1


def messages(items: int) -> Iterator[tuple[str, str]]:
    """Yield `(key, text)` for every index item of the home of `items` items, in log order.

    The key is `<session_id>:<turn>:user` or `<session_id>:<turn>:reply`, turns from 1 across
    every epoch. Only finished turns make items. Computed from the dataset, not the logs.
    """
    for s in sessions(items):
        for turn, (user, reply) in enumerate(s.turns, start=1):
            if reply is not None:
                yield f"{s.sid}:{turn}:user", user
                yield f"{s.sid}:{turn}:reply", reply


def _stamp(minute: int) -> str:
    return (BASE + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _line(record: dict[str, str]) -> str:
    return json.dumps(record, separators=(",", ":")) + "\n"


def render(s: Session, minute: int) -> tuple[list[str], int]:
    """The text of each epoch file of a session whose first record is at `minute`.

    Returns the epochs' contents (`0.jsonl`, `1.jsonl`) and the minute after the last record;
    records are one minute apart.
    """
    epochs = [[_line({"type": "session", "class": "private", "channel": "chitchat"})]]
    for turn, (user, reply) in enumerate(s.turns, start=1):
        if turn == KEEP_TURNS + 1 and len(s.turns) > LONG_SESSION:
            summary = f"{s.speaker} and the agent chatted; turns 1 to {KEEP_TURNS} compacted."
            epochs.append([_line({"type": "compaction", "summary": summary, "at": _stamp(minute)})])
            minute += 1
        user_record = {"type": "user", "text": user, "speaker": s.speaker, "at": _stamp(minute)}
        epochs[-1].append(_line(user_record))
        minute += 1
        if reply is not None:
            epochs[-1].append(_line({"type": "final", "text": reply, "at": _stamp(minute)}))
            minute += 1
    return ["".join(lines) for lines in epochs], minute


def _done(folder: Path, items: int) -> dict[str, Any] | None:
    """The marker of a complete home of this version and dataset, or None."""
    try:
        done: dict[str, Any] = json.loads((folder / "done.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = (done.get("version"), done.get("dataset"), done.get("asked")) == (
        VERSION,
        _dataset_version(),
        items,
    )
    return done if ok else None


def build_home(items: int, root: Path | None = None) -> Path:
    """Return the home of `items` items under `root` (default `cache_dir()`), building it if needed.

    A home whose `done.json` is missing or stale is deleted and built again.
    """
    folder = (root if root is not None else cache_dir()) / f"items-{items}"
    home = folder / "home"
    if _done(folder, items) is not None:
        return home
    if folder.exists():
        shutil.rmtree(folder)
    counts = {"sessions": 0, "turns": 0, "items": 0, "unfinished": 0, "files": 0, "bytes": 0}
    minute = 0
    for s in sessions(items):
        epochs, minute = render(s, minute)
        target = home / "sessions" / s.sid
        target.mkdir(parents=True)
        for n, text in enumerate(epochs):
            data = text.encode("utf-8")
            (target / f"{n}.jsonl").write_bytes(data)
            counts["files"] += 1
            counts["bytes"] += len(data)
        finished = sum(1 for _, reply in s.turns if reply is not None)
        counts["sessions"] += 1
        counts["turns"] += len(s.turns)
        counts["items"] += 2 * finished
        counts["unfinished"] += len(s.turns) - finished
    home.mkdir(parents=True, exist_ok=True)
    marker = {"version": VERSION, "dataset": _dataset_version(), "asked": items, **counts}
    tmp = folder / "done.json.tmp"
    tmp.write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
    tmp.replace(folder / "done.json")
    return home


def home_counts(home: Path) -> dict[str, int]:
    """The counts recorded when `home` was built: sessions, turns, items, unfinished, files, bytes.

    `turns` counts every user record, `items` is twice the finished turns, `bytes` is the logs'
    total size. Raises FileNotFoundError for a home that `build_home` did not finish.
    """
    done = json.loads((home.parent / "done.json").read_text(encoding="utf-8"))
    return {k: int(v) for k, v in done.items() if k not in ("version", "dataset")}


def main(argv: list[str] | None = None) -> int:
    """Build (or find) the home of `--items` items; print its path and counts."""
    parser = argparse.ArgumentParser(description="Build a cached benchmark home of session logs.")
    parser.add_argument("--items", type=int, default=SIZES[0], help="index items (default 10000)")
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="cache folder (default: $MEMORYD_BENCH_CACHE or bench/.cache)",
    )
    args = parser.parse_args(argv)
    root: Path = args.cache if args.cache is not None else cache_dir()
    reused = _done(root / f"items-{args.items}", args.items) is not None
    start = time.perf_counter()
    home = build_home(args.items, root)
    seconds = time.perf_counter() - start
    c = home_counts(home)
    print(home)
    print(
        f"sessions {c['sessions']}, turns {c['turns']} ({c['unfinished']} unfinished), "
        f"items {c['items']}, files {c['files']}, bytes {c['bytes']} "
        f"({'reused' if reused else 'built'} in {seconds:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
