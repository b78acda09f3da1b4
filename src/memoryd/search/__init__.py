"""The search behind `recall` (SPEC section 5): a query's terms, the index's candidates, ranked.

`parts` is the search itself (`terms`, `search`: the items holding every term, all but one,
some of them, and when Python or FTS5 ranks each part), `expressions` the FTS5 expressions it
asks, `merged` the some-term part merged from each word's best rows, `weights` what scoring a
row needs and a bound on its score, `tally` and `profiles` each text it reads counted once,
`ranking` the order of the candidates and the items next to them, `timing` what a query's time
words lift in that order, and `named` a query's words that name speakers, weighed apart from
the text.

Imports the rooms below it, `memoryd.index`, `memoryd.logs` and `memoryd.text`, and, of the
top level, `memoryd.errors`, `memoryd.home`, `memoryd.labels` and `memoryd.writers` alone: never
a command, the memory files nor Honcho (`memoryd.recall`, above, makes the answer).
"""
