"""The index (SPEC section 5): the SQLite projection of the session logs, kept up to date.

`db` is the index itself (`Index`: the SQL it runs over items, their FTS5 text and each log's
read state), `items` what it holds, `schema` its migrations, `store` what fails on its file,
`integrity` whether the file is sound, `segments` FTS5's segments merged off the request path,
`term_counts` and `common` what is counted and kept ordered at index time, `speakers` who said
each item and to whom, as names apart from its text, `relevance` bm25 and the tokens as
FTS5 counts them, and `ties` which of the rows of equal score a ranking's cut keeps.
`indexer` catches the index up with the logs, `scan` tells what changed in them since,
`rewrites` what a log rewritten where it was read leaves trusted.

Imports the rooms `memoryd.logs` and `memoryd.text` and, of the top level, `memoryd.errors`,
`memoryd.home`, `memoryd.labels` and `memoryd.writers` alone: never the search, the memory
files nor a command (rebuilding from the journal too is `memoryd.reindex`'s, above).
"""
