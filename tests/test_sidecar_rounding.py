"""round_vector in numpy writes the bytes the per-float round() wrote (sidecars are committed
to users' repositories: a byte of difference would churn every vectorized file in git)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from indexer.corpus import sidecar_format as sidecar
from indexer.corpus.sidecar_format import VECTOR_DECIMALS, dumps, loads, round_vector

EXAMPLE = Path(__file__).resolve().parents[1] / "example" / "corpus"


def reference(vector: list[float] | np.ndarray) -> list[float]:
    """What round_vector was: one round() a component."""
    return [round(float(x), VECTOR_DECIMALS) for x in vector]


def same_bytes(a: list[float], b: list[float]) -> bool:
    return json.dumps(a) == json.dumps(b)


def test_random_float32_vectors_round_to_the_same_floats() -> None:
    rng = np.random.default_rng(26)
    for scale in (0.05, 1.0, 1e-4, 1e-6, 30.0, 999.0):
        vectors = (rng.standard_normal((400, 384)) * scale).astype(np.float32)
        for v in vectors:
            assert same_bytes(round_vector(v), reference(v))
            assert same_bytes(round_vector(v.tolist()), reference(v.tolist()))


def test_ties_signs_and_edges_round_as_round_does() -> None:
    # exact binary ties at the 7th decimal (j/128: x * 10^6 ends in .5 exactly; round() takes
    # the even neighbour), their float32 neighbours, signed zeros, tiny values written in
    # exponent notation, values beyond the vectorised range, and float32's own extremes
    ties = [j / 128 for j in range(-300, 301)]
    neighbours = [float(np.nextafter(np.float32(t), np.float32(s))) for t in ties for s in (-1, 1)]
    edges = [0.0, -0.0, 1e-7, -1e-7, 5e-7, -5e-7, 4.9999999e-7, 1.5e-6, -2.5e-6, 1.2e-5,
             9.99999e-5, 1e-4, 0.5, -0.5, 1.0, -1.0, 999.9999995, 1000.0, 1234.5678905,
             -98765.4321, 3.4028235e38, -3.4028235e38, 1.17549435e-38]  # fmt: skip
    values = ties + neighbours + edges
    assert same_bytes(round_vector(values), reference(values))
    assert same_bytes(round_vector(np.array(values)), reference(values))
    float32 = np.array(values, dtype=np.float32)
    assert same_bytes(round_vector(float32), reference(float32))


def test_non_finite_components_are_left_to_round() -> None:
    values = [0.1, float("nan"), float("inf"), -float("inf")]
    out = round_vector(values)
    assert out[0] == 0.1 and np.isnan(out[1]) and out[2:] == [float("inf"), -float("inf")]
    assert same_bytes(out, reference(values))
    row = {"embedding": out}
    with pytest.raises(ValueError):  # allow_nan=False: a sidecar never holds NaN
        sidecar._dumps(row)


def test_the_examples_committed_sidecars_reserialise_to_their_bytes() -> None:
    files = sorted(EXAMPLE.rglob("*.md.jsonl"))
    vectorized = 0
    for path in files:
        data = path.read_bytes()
        parsed = loads(str(path), data)
        vectorized += parsed.vectorized
        assert dumps(parsed) == data, path
        for chunk in parsed.chunks:
            if chunk.embedding is not None:
                # the stored floats, and the same floats as float32 (what the embedders give)
                assert round_vector(chunk.embedding) == reference(chunk.embedding)
                f32 = np.array(chunk.embedding, dtype=np.float32)
                assert same_bytes(round_vector(f32), reference(f32))
    assert len(files) >= 80 and vectorized >= 80, (len(files), vectorized)
