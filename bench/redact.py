"""What finding secrets costs on real text: `redact` and `boundary.name`, in CPU time.

The texts are the chitchat corpus's (`bench/corpus.py`, ASCII), and three variants that make the
normalised copy work: a non-ASCII word added to every fourth text, the apostrophes of every
second written `’`, and a Russian sentence (every character in it non-ASCII); then two that make
the keys' rule read the whole text: a word holding a prefix added to every text (`risk-...`,
`task-...`: glued to the word before it, the prefix is tried as a key), and a key glued to a word
in every tenth. With `--locomo DIR`, LoCoMo's messages too (every `text` of every session of each
conversation's JSON file). Each set is timed `--runs` times and the best is kept: a loaded machine
slows some runs, none speeds one up.

    .venv/bin/python bench/redact.py --texts 100000 --locomo ../shared/data/locomo-dev
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

from corpus import messages
from memoryd.text import boundary
from memoryd.text.secrets import redact

WORDS = ("café", "naïve", "Привет", "σπίτι", "—", "“ok”", "日本語", "Zoë")
RUSSIAN = "Привет, как дела? Сегодня хорошая погода, и мы пойдём гулять в парк. " * 3
PREFIXED = ("risk-assessment", "task-manager", "desk-lamp", "flask-app", "laughs_at", "MSG.text")
GLUED = "the token" + "sk-proj-" + "Qw3eRt5y" * 6


def locomo(folder: Path) -> list[str]:
    """Every message's text of every conversation in `folder`."""
    texts = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for name, session in data.items():
            if name.startswith("session_") and isinstance(session, list):
                texts += [message["text"] for message in session]
    return texts


def best_us(work: Callable[[str], object], texts: list[str], runs: int) -> float:
    """The best of `runs` passes of `work` over `texts`, in CPU microseconds a text."""
    passes = []
    for _ in range(runs):
        started = time.process_time()
        for text in texts:
            work(text)
        passes.append(time.process_time() - started)
    return min(passes) * 1e6 / len(texts)


def main() -> None:
    """Print the cost of each set."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=100_000, help="the corpus's first N texts")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--locomo", type=Path, help="a folder of LoCoMo conversations' JSON files")
    options = parser.parse_args()
    texts = [text for _, text in messages(options.texts)]
    sets: dict[str, tuple[Callable[[str], object], list[str]]] = {
        "the corpus (ASCII)": (redact, texts),
        "a non-ASCII word in every 4th": (
            redact,
            [f"{t} {WORDS[i % len(WORDS)]}" if i % 4 == 0 else t for i, t in enumerate(texts)],
        ),
        "’ for ' in every 2nd": (
            redact,
            [t.replace("'", "\u2019") if i % 2 == 0 else t for i, t in enumerate(texts)],
        ),
        "a Russian text of 210 characters": (redact, [RUSSIAN] * (len(texts) // 5)),
        "a prefix inside a word in each": (
            redact,
            [f"{t} {PREFIXED[i % len(PREFIXED)]}" for i, t in enumerate(texts)],
        ),
        "a glued key in every 10th": (
            redact,
            [f"{t} {GLUED}" if i % 10 == 0 else t for i, t in enumerate(texts)],
        ),
        "names (boundary.name)": (
            boundary.name,
            [f"Ann{i} Lee" if i % 3 else f"Zoë Ωmega{i}" for i in range(len(texts) // 5)],
        ),
    }
    if options.locomo is not None:
        sets["LoCoMo's messages"] = (redact, locomo(options.locomo))
    for name, (work, data) in sets.items():
        print(f"{name:34s} {best_us(work, data, options.runs):7.2f} us a text ({len(data)})")


if __name__ == "__main__":
    main()
