"""memoryd's MPNet forward pass (`memoryd.semantic.encoder`) against the reference, transformers'
`MPNetModel` and sentence-transformers (issue 27): run in a scratch venv that has torch, never in
memoryd's own (torch is no dependency of memoryd).

    python3.11 -m venv /tmp/mpnet_ref
    /tmp/mpnet_ref/bin/pip install torch==2.13.0 transformers sentence-transformers
    PYTHONPATH=src /tmp/mpnet_ref/bin/python bench/mpnet_reference.py compare /path/to/model
    PYTHONPATH=src /tmp/mpnet_ref/bin/python bench/mpnet_reference.py fixture tests/fixtures/mpnet

`compare` embeds a few texts with the real model both ways and prints each cosine; `fixture`
writes a tiny MPNet of random weights (a few layers, a few dozen components, a vocabulary of the
texts' words), its reference embeddings, and the reference's bucket of every relative position,
for `tests/test_semantic_mpnet.py` to run without torch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
from transformers import MPNetConfig, MPNetModel
from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

from memoryd.semantic.encoder import Encoder

TEXTS = [
    "What did Caroline research?",
    "I've been looking into adoption agencies lately, it's a big step.",
    "x",
    "ERROR 0x80070005 in deploy-7f3a: access denied",
    " ".join(["the boat on the lake at dawn"] * 14),
    "Melanie painted a sunrise last week, the colours were amazing!",
]
"""Short, long (past 64 tokens: the far buckets), a lone letter, an error code."""

SPECIAL = ["<s>", "<pad>", "</s>", "<unk>"]


def reference(model: MPNetModel, tokenizer: Tokenizer, texts: list[str]) -> np.ndarray:
    """Mean-pooled, normalised embeddings as sentence-transformers makes them, padded batch."""
    encoded = [tokenizer.encode(t).ids for t in texts]
    longest = max(len(e) for e in encoded)
    ids = torch.full((len(texts), longest), 1, dtype=torch.long)
    mask = torch.zeros((len(texts), longest), dtype=torch.long)
    for n, e in enumerate(encoded):
        ids[n, : len(e)] = torch.tensor(e)
        mask[n, : len(e)] = 1
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask).last_hidden_state
    m = mask[:, :, None].float()
    pooled = (out * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=1).numpy()


def compare(folder: Path) -> int:
    """The real model: ours against sentence-transformers' and transformers' embeddings."""
    from sentence_transformers import SentenceTransformer

    ours = Encoder(folder).embed(TEXTS)
    theirs = SentenceTransformer(str(folder), device="cpu").encode(TEXTS, normalize_embeddings=True)
    model = MPNetModel.from_pretrained(str(folder)).eval()
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads to 128, which the mask must not count
    plain = reference(model, tokenizer, TEXTS)
    worst = 1.0
    for n, text in enumerate(TEXTS):
        st = float(ours[n] @ theirs[n])
        tf = float(ours[n] @ plain[n])
        worst = min(worst, st, tf)
        print(f"{st:.7f} {tf:.7f}  {text[:60]!r}")
    print(f"worst cosine {worst:.7f}")
    return 0 if worst >= 0.9999 else 1


def tokenizer_of(texts: list[str]) -> Tokenizer:
    """A WordPiece tokenizer of the texts' words and letters, `<s> ... </s>` as MPNet's."""
    split = pre_tokenizers.BertPreTokenizer().pre_tokenize_str
    words = sorted({word for t in texts for word, _ in split(t.lower())})
    letters = sorted({c for t in texts for c in t.lower() if not c.isspace()})
    vocab = {token: n for n, token in enumerate(SPECIAL)}
    for token in [*words, *letters, *(f"##{c}" for c in letters)]:
        vocab.setdefault(token, len(vocab))
    made = Tokenizer(models.WordPiece(vocab, unk_token="<unk>"))
    made.normalizer = normalizers.BertNormalizer(lowercase=True)
    made.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    made.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )
    return made


def fixture(out: Path) -> int:
    """A tiny random MPNet, its tokenizer, and what the reference makes of it."""
    torch.manual_seed(27)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = tokenizer_of(TEXTS[:4])
    tokenizer.save(str(out / "tokenizer.json"))
    config = MPNetConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=24,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=160,
        relative_attention_num_buckets=32,
        layer_norm_eps=1e-5,
        pad_token_id=1,
    )
    model = MPNetModel(config).eval()
    # Every weight random and large enough to count: as initialised (0.02, norms at 1, biases
    # at 0), a layer's attention adds next to nothing to its residual, and a forward pass that
    # left the position bias out would still match.
    with torch.no_grad():
        for name, value in model.named_parameters():
            if "LayerNorm.weight" in name:
                value.normal_(1, 0.3)
            else:
                value.normal_(0, 1.0 if "relative" in name else 0.3)
    model.save_pretrained(str(out), safe_serialization=True)
    texts = [*TEXTS[:4], " ".join([TEXTS[1]] * 9)]  # the last past 128 tokens
    expected = reference(model, tokenizer, texts)
    distances = list(range(-300, 301))
    bucketed = MPNetEncoder.relative_position_bucket(torch.tensor(distances), num_buckets=32)
    (out / "expected.json").write_text(
        json.dumps(
            {
                "texts": texts,
                "embeddings": expected.round(7).tolist(),
                "distances": distances,
                "buckets": bucketed.tolist(),
            }
        )
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Compare the real model, or write the fixture."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("compare", "fixture"))
    parser.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    return compare(args.folder) if args.what == "compare" else fixture(args.folder)


if __name__ == "__main__":
    sys.exit(main())
