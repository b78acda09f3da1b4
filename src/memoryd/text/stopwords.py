"""Function words: the words of a question that say nothing of what it is about.

A query is a sentence the model wrote ("When did Calvin first travel to Tokyo?"); its `when`,
`did` and `to` hold in most items, so requiring them would hide the answer and matching them
alone would show noise. The list is the Snowball project's English stop words (the list its
English stemmer ships, as published on snowballstem.org), with their contracted forms split as
the index splits them (`don't` is `don` and `t`), plus every single letter and digit.
"""

from __future__ import annotations

import string

_SNOWBALL = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she
her hers herself it its itself they them their theirs themselves what which who whom this that
these those am is are was were be been being have has had having do does did doing would should
could ought a an the and but if or because as until while of at by for with about against
between into through during before after above below to from up down in out on off over under
again further then once here there when where why how all any both each few more most other
some such no nor not only own same so than too very
s t d ll m re ve don doesn didn isn aren wasn weren hasn haven hadn won wouldn shan shouldn
can cannot couldn mustn let
"""

STOP_WORDS = frozenset(_SNOWBALL.split()) | frozenset(string.ascii_lowercase + string.digits)
"""The folded tokens a query leaves out when it holds others."""


def content(tokens: list[str]) -> list[str]:
    """The tokens of a query that say what it is about: its non-stop words, or, when it holds
    only stop words, all of them (then the search keeps the rarest, as for common words)."""
    kept = [token for token in tokens if token not in STOP_WORDS]
    return kept or tokens
