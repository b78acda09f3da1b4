"""What finding secrets costs on real text: `redact` and `boundary.name`, in CPU time.

The texts are the chitchat corpus's (`bench/corpus.py`, ASCII), and three variants that make the
normalised copy work: a non-ASCII word added to every fourth text, the apostrophes of every
second written `’`, and a Russian sentence (every character in it non-ASCII). Each set is timed
`--runs` times and the best is kept: a loaded machine slows some runs, none speeds one up.

    .venv/bin/python bench/redact.py --texts 100000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from corpus import messages
from memoryd.text import boundary
from memoryd.text.secrets import redact

WORDS = ("café", "naïve", "Привет", "σπίτι", "—", "“ok”", "日本語", "Zoë")
RUSSIAN = "Привет, как дела? Сегодня хорошая погода, и мы пойдём гулять в парк. " * 3


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
        "names (boundary.name)": (
            boundary.name,
            [f"Ann{i} Lee" if i % 3 else f"Zoë Ωmega{i}" for i in range(len(texts) // 5)],
        ),
    }
    for name, (work, data) in sets.items():
        print(f"{name:34s} {best_us(work, data, options.runs):7.2f} us a text ({len(data)})")


if __name__ == "__main__":
    main()
