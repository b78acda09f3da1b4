"""The semantic tier (issue 27): items embedded by a local sentence-embedding model, their
similarity to a query fused with the lexical ranking. Optional and offline: off unless
`[semantic] enabled = true`, and numpy and `tokenizers` (the extra `memoryd[semantic]`) are
imported only then.

`models` names the supported models and finds one's folder (never a download; `split`, a model
shipped as one zip in several packages, unpacked once), `encoder` is the model's forward pass in
numpy (`mpnet`, what an MPNet encoder does apart from a BERT one), `store` the vectors in the
index (`vectors`, int8, with the model that made them), `held` the vectors a daemon holds in
memory and their nearest to a query, `fusion` the lexical ranking and the similarities as one
order (pure), `tier` what recall and status ask of it, `worker` the daemon's background
embedding.
"""
