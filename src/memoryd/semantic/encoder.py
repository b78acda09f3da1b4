"""A sentence-embedding model's forward pass in numpy: a BERT or MPNet encoder read from its
`model.safetensors`, mean-pooled and normalised as sentence-transformers does (what MPNet does
apart: `mpnet`).

numpy and `tokenizers` are the semantic extra's: this module is imported only when the tier is
switched on (`semantic.models.load`), never by a default memoryd.
"""

from __future__ import annotations

import json
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from memoryd.semantic import mpnet

Vectors = npt.NDArray[np.float32]
"""Embeddings, one row an input, each of length 1."""

_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64}

BATCH = 32
"""Texts embedded in one forward pass: sorted by length first, so a batch pads little."""

# Abramowitz and Stegun 7.1.26: erf within 1.5e-7, so GELU as BERT computes it (with erf, which
# numpy lacks) to the float32 precision the weights hold.
_ERF = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_ERF_P = 0.3275911


def _erf(x: Vectors) -> Vectors:
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + _ERF_P * a)
    a1, a2, a3, a4, a5 = _ERF
    poly = ((((a5 * t + a4) * t + a3) * t + a2) * t + a1) * t
    found: Vectors = (sign * (1.0 - poly * np.exp(-a * a))).astype(np.float32)
    return found


def _gelu(x: Vectors) -> Vectors:
    found: Vectors = (0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0))))).astype(np.float32)
    return found


def _norm(x: Vectors, weight: Vectors, bias: Vectors, eps: float) -> Vectors:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    found: Vectors = ((x - mean) / np.sqrt(var + eps) * weight + bias).astype(np.float32)
    return found


def tensors(path: Path) -> dict[str, npt.NDArray[np.generic]]:
    """The tensors of a `.safetensors` file, as arrays over a read-only map of it (the kernel's
    pages, shared with every process that maps the file, not copied)."""
    with path.open("rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    (size,) = struct.unpack("<Q", mapped[:8])
    header = json.loads(mapped[8 : 8 + size])
    found: dict[str, npt.NDArray[np.generic]] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(spec["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name} is {spec['dtype']}, which is not read")
        start, end = spec["data_offsets"]
        data = np.frombuffer(
            mapped,
            dtype=dtype,
            count=(end - start) // np.dtype(dtype).itemsize,
            offset=8 + size + start,
        )
        found[name] = data.reshape(spec["shape"])
    return found


@dataclass(frozen=True)
class Shape:
    """What the model's `config.json` says of its layers."""

    layers: int
    heads: int
    eps: float
    longest: int
    kind: str = "bert"
    padding: int = 0
    """MPNet's padding id, from which its positions are counted."""

    @classmethod
    def of(cls, folder: Path) -> Shape:
        """The shape of the model in `folder` (its `config.json`, `sentence_bert_config.json`)."""
        config = json.loads((folder / "config.json").read_text())
        kind = config.get("model_type", "bert")
        padding = int(config.get("pad_token_id", 1)) if kind == "mpnet" else 0
        # MPNet's first text position is the padding id's next: the table holds that many
        # fewer tokens than rows.
        longest = config.get("max_position_embeddings", 512) - (
            padding + 1 if kind == "mpnet" else 0
        )
        sentence = folder / "sentence_bert_config.json"
        if sentence.exists():
            longest = min(longest, json.loads(sentence.read_text()).get("max_seq_length", longest))
        return cls(
            config["num_hidden_layers"],
            config["num_attention_heads"],
            float(config.get("layer_norm_eps", 1e-12)),
            int(longest),
            kind,
            padding,
        )


class Encoder:
    """A BERT or MPNet sentence encoder: texts in, normalised mean-pooled embeddings out."""

    def __init__(self, folder: Path) -> None:
        """The model in `folder`: `model.safetensors`, `tokenizer.json`, `config.json`."""
        self.shape = Shape.of(folder)
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.shape.longest)
        self.tokenizer.no_padding()
        found = tensors(folder / "model.safetensors")
        kind = self.shape.kind
        prefix = f"{kind}." if f"{kind}.embeddings.word_embeddings.weight" in found else ""
        named = mpnet.renamed if kind == "mpnet" else str
        # As float32, the forward pass's type: a no-op on float32 weights (the map is read in
        # place), a copy of float16 ones; the position ids (int64) are not weights.
        self._w: dict[str, Vectors] = {
            named(name.removeprefix(prefix)): np.asarray(value, dtype=np.float32)
            for name, value in found.items()
            if value.dtype != np.int64
        }
        self.dimensions = int(self._w["embeddings.word_embeddings.weight"].shape[1])

    def embed(self, texts: list[str]) -> Vectors:
        """One normalised embedding a text, in the order given."""
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        encoded = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda n: len(encoded[n].ids))
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            longest = max(len(encoded[n].ids) for n in batch)
            ids = np.zeros((len(batch), longest), dtype=np.int64)
            mask = np.zeros((len(batch), longest), dtype=np.float32)
            for row, n in enumerate(batch):
                these = encoded[n].ids
                ids[row, : len(these)] = these
                mask[row, : len(these)] = 1.0
            out[batch] = self._forward(ids, mask)
        return out

    def _forward(self, ids: npt.NDArray[np.int64], mask: Vectors) -> Vectors:
        w = self._w
        eps = self.shape.eps
        batch, length = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids]
        # A padded position is never attended to: its score drops by far more than any other.
        hidden = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)
        if self.shape.kind == "mpnet":
            x = (
                x
                + w["embeddings.position_embeddings.weight"][
                    mpnet.positions(mask, self.shape.padding)
                ]
            )
            hidden = hidden + mpnet.bias(w["encoder.relative_attention_bias.weight"], length)
        else:
            x = (
                x
                + w["embeddings.position_embeddings.weight"][:length]
                + w["embeddings.token_type_embeddings.weight"][0]
            )
        x = _norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        heads = self.shape.heads
        size = self.dimensions // heads
        scale = np.float32(1.0 / np.sqrt(size))
        for n in range(self.shape.layers):
            at = f"encoder.layer.{n}."

            def dense(v: Vectors, name: str, at: str = at) -> Vectors:
                # As one matrix: numpy multiplies a stack of them one BLAS call a text.
                flat = v.reshape(batch * length, v.shape[-1])
                out = flat @ w[at + name + ".weight"].T + w[at + name + ".bias"]
                return out.reshape(batch, length, -1)

            def split(v: Vectors) -> Vectors:
                return v.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)

            q = split(dense(x, "attention.self.query"))
            k = split(dense(x, "attention.self.key"))
            v = split(dense(x, "attention.self.value"))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + hidden
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, -1)
            x = _norm(
                x + dense(context, "attention.output.dense"),
                w[at + "attention.output.LayerNorm.weight"],
                w[at + "attention.output.LayerNorm.bias"],
                eps,
            )
            inner = _gelu(dense(x, "intermediate.dense"))
            x = _norm(
                x + dense(inner, "output.dense"),
                w[at + "output.LayerNorm.weight"],
                w[at + "output.LayerNorm.bias"],
                eps,
            )
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        normalised: Vectors = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return normalised
