"""`glossator search`, `glossator mcp` and `glossator eval` (over `search/`).

    glossator search "la pétition des chandelles" [--mode hybrid|bm25|vector]
                     [--level 0-3] [--work W] [--k 10] [--repository R] [--json]
    glossator mcp                       # MCP over stdio, for desktop clients
    glossator eval bench/queries.jsonl [--k 10] [--repository R] [--json]
                   [--foreign bench/offtopic.jsonl]   # and the context gate's verdicts

Each opens the database the settings name (the embedded PostgreSQL by default);
stdout carries results only (and the MCP protocol for `mcp`), logs go to stderr.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from core.vocabulary import DEFAULT_BRANCH
from glossator.commands.base import Context, out_console, pass_context
from search.options import MAX_K
from search.results import MODES, SearchResponse

if TYPE_CHECKING:  # the engine (numpy, psycopg) is imported where a command runs it
    from glossator.settings import Settings
    from search.evaluation import Judged, Miss, ModeReport
    from search.tuning import Tuning

EXCERPT = 420


def _embedder(settings: Settings) -> Any:
    from glossator.providers import get_embedder

    return get_embedder(settings)


@click.command("search")
@click.argument("query")
@click.option("--mode", type=click.Choice(MODES), default="hybrid", show_default=True)
@click.option(
    "--level", type=click.IntRange(0, 3), help="0 paragraphs, 1 chapter, 2 part, 3 work summaries."
)
@click.option("--work", help="Only this work (its folder name under corpus/).")
@click.option("--k", "-k", type=click.IntRange(1, MAX_K), default=10, show_default=True)
@click.option("--repository", help="Only this repository (default: all).")
@click.option(
    "--branch",
    help="Only this branch (default: each repository's own, the branch its HEAD names).",
)
@click.option("--no-rerank", is_flag=True, help="Skip the configured reranker.")
@click.option("--parent", "with_parent", is_flag=True, help="Show each hit's parent summary.")
@click.option("--json", "as_json", is_flag=True, help="Print the response as JSON.")
@pass_context
def search(
    obj: Context,
    query: str,
    mode: str,
    level: int | None,
    work: str | None,
    k: int,
    repository: str | None,
    branch: str | None,
    no_rerank: bool,
    with_parent: bool,
    as_json: bool,
) -> None:
    """Search the indexed corpus; print hits with citations and scores.

    When a server runs on this data directory, it answers (it holds the model already:
    no 2-4 s of loading here), unless --no-rerank or --parent asks what its API has not."""
    settings = obj.settings
    response = None
    if not no_rerank and not with_parent:
        response = _ask_server(settings, query, mode, level, work, k, repository, branch)
    if response is None:
        response = _search_here(
            settings, query, mode, level, work, k, repository, branch, no_rerank, with_parent
        )
    if as_json:
        click.echo(json.dumps(asdict(response), ensure_ascii=False, indent=2))
    else:
        print_response(out_console(), response)


def _ask_server(
    settings: Settings,
    query: str,
    mode: str,
    level: int | None,
    work: str | None,
    k: int,
    repository: str | None,
    branch: str | None,
) -> SearchResponse | None:
    """The running server's answer to the same search, or None (glossator.remote)."""
    from pydantic import TypeAdapter

    from glossator.remote import ask

    params = {
        "q": query,
        "mode": mode,
        "level": level,
        "work": work,
        "k": k,
        "repository": repository,
        "branch": branch,
        # what a search here does: no cap per chapter (k per chapter never binds on k hits)
        "max_per_chapter": k,
        "format": "response",
    }
    answered = ask(settings, "/api/search", params)
    if answered is None:
        return None
    return TypeAdapter(SearchResponse).validate_python(answered.json())


def _search_here(
    settings: Settings,
    query: str,
    mode: str,
    level: int | None,
    work: str | None,
    k: int,
    repository: str | None,
    branch: str | None,
    no_rerank: bool,
    with_parent: bool,
) -> SearchResponse:
    from glossator.search_wiring import open_database, search_service

    with open_database(settings) as db:
        service = search_service(settings, db.pool, reranker=None if no_rerank else "settings")
        response = service.search(
            query,
            mode=mode,
            k=k,
            repository=repository,
            branch=branch,
            work=work,
            level=level,
            rerank=not no_rerank,
            with_parent=with_parent,
        )
    return response


def print_response(console: Console, response: SearchResponse) -> None:
    from search.citation import cite
    from search.excerpt import excerpt as matched_excerpt
    from search.excerpt import query_words

    if not response.hits:
        console.print(f'No hit for "{response.query}" ({response.mode}).')
        for f in response.index:
            console.print(f"index {f.repository}@{f.branch}: {f.status} — {f.note}", style="dim")
        _print_notes(console, response.notes)
        return
    marks = query_words(response.query)
    for hit in response.hits:
        c = hit.citation
        cited = cite(c.repository, c.source_file, c.chunk_index, c.line_start, c.line_end)
        head = Text(f"{hit.rank:>2}. ", style="bold")
        head.append(c.heading_path, style="bold cyan")
        console.print(head, soft_wrap=True)
        # soft_wrap: a citation cut in two cannot be copied
        console.print(
            f"    {cited} · level {hit.level}",  # search.citation: what `show` takes
            style="dim",
            highlight=False,
            soft_wrap=True,
        )
        s = hit.scores
        parts = [f"fused {s.fused:.4f}"]
        if s.keyword is not None:
            parts.append(f"bm25 {s.keyword:.2f} (#{s.keyword_rank})")
        if s.vector is not None:
            parts.append(f"cosine {s.vector:.3f} (#{s.vector_rank})")
        if s.chapter is not None:
            parts.append(f"chapter +{s.chapter:.4f}")
        if s.phrase:
            parts.append("quoted phrase")
        if s.rerank is not None:
            parts.append(f"rerank {s.rerank:.3f}")
        console.print("    " + " · ".join(parts), style="dim", highlight=False)
        # the part of a long passage that holds the query's words (search.excerpt)
        excerpt = matched_excerpt(hit.text, marks, EXCERPT)
        console.print(Padding(Text(excerpt), (0, 0, 0, 4), expand=False))
        if hit.parent is not None:
            console.print(f"    ↑ {hit.parent.heading_path}", style="green", highlight=False)
    r = response.rerank
    timing = ", ".join(f"{k} {v:.0f} ms" for k, v in response.timings_ms.items())
    console.print(
        f"rerank: {r.status}" + (f" ({r.detail})" if r.detail else "") + f" · {timing}", style="dim"
    )
    for f in response.index:
        console.print(
            f"index {f.repository}@{f.branch}: {f.status} — {f.note}", style="dim", highlight=False
        )
    _print_notes(console, response.notes)


def _print_notes(console: Console, notes: list[str]) -> None:
    """What the answer says about the branches it read (search.scope): never only dim."""
    for note in notes:
        console.print(f"note: {note}", style="yellow", highlight=False, soft_wrap=True)


@click.command("mcp")
@pass_context
def mcp(obj: Context) -> None:
    """Serve the MCP tools over stdio (for desktop MCP clients).

    When a server runs on this data directory, its tools answer (glossator.mcp_relay):
    it holds the query model already, so the first answer does not wait for one here."""
    settings = obj.settings
    if _relay_to_server(settings):
        return
    from glossator.search_wiring import open_database, search_service
    from search.mcp.server import build_server

    with open_database(settings) as db:
        build_server(search_service(settings, db), log_level=settings.log_level).run("stdio")


def _relay_to_server(settings: Settings) -> bool:
    """Whether the running server's MCP tools were served (glossator.mcp_relay)."""
    from glossator.remote import server_base

    base = server_base(settings)
    if base is None:
        return False
    import anyio

    from glossator.mcp_relay import relay
    from glossator.settings import reveal

    return anyio.run(relay, base.rstrip("/") + "/mcp/", reveal(settings.mcp_token) or None)


@click.command("eval")
@click.argument("queries", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--k", "-k", type=click.IntRange(1, MAX_K), default=10, show_default=True)
@click.option("--repository", help="Only this repository (default: all).")
@click.option("--branch", default=DEFAULT_BRANCH, show_default=True)
@click.option(
    "--split",
    type=click.Choice(["both", "tune", "test", "all"]),
    default="both",
    show_default=True,
    help="Which half of a split query file (both: each half in its own table).",
)
@click.option("--rrf-k", type=click.IntRange(1, 1000), help="RRF k (default: the setting).")
@click.option("--bm25-weight", type=click.FloatRange(0), help="Weight of the keyword list.")
@click.option("--vector-weight", type=click.FloatRange(0), help="Weight of the vector list.")
@click.option(
    "--chapter-weight",
    type=click.FloatRange(0),
    help="Weight of the chapter rankings in hybrid (0: off; default: the setting).",
)
@click.option(
    "--max-per-chapter", type=click.IntRange(1, MAX_K), help="Cap the rows of every mode."
)
@click.option(
    "--foreign-keyword-weight",
    type=click.FloatRange(0),
    help="Weight of the keyword evidence of repositories not in the query's language "
    "(default: search/tuning.py's).",
)
@click.option(
    "--by-kind",
    is_flag=True,
    help="Also print MRR / recall / top-1 per kind and per query language.",
)
@click.option(
    "--misses",
    is_flag=True,
    help="Also list the queries hybrid as agents run it gets wrong: the rank of the first "
    "relevant hit, how many items it found, its first three hits.",
)
@click.option(
    "--foreign",
    "foreign_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A file of questions the corpus does not answer (JSONL: query, kind, lang; "
    "repeatable): also print the context gate's verdicts on them and on QUERIES, and the "
    "precision and recall of its `found`.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@pass_context
def eval_command(
    obj: Context,
    queries: Path,
    k: int,
    repository: str | None,
    branch: str,
    split: str,
    rrf_k: int | None,
    bm25_weight: float | None,
    vector_weight: float | None,
    chapter_weight: float | None,
    max_per_chapter: int | None,
    foreign_keyword_weight: float | None,
    by_kind: bool,
    misses: bool,
    foreign_files: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Recall@k, MRR, nDCG@10, top-1 and paraphrase MRR of each mode on QUERIES.jsonl.

    A query file whose lines carry "split": "tune" / "test" is reported half by
    half: tune the fusion on one, check it on the other. With --foreign, the context
    gate is judged too: one `context` pack per question, as agents get it.
    """
    from glossator.providers import get_reranker
    from glossator.search_wiring import open_database, search_defaults
    from search.evaluation import PrecomputedQueries, evaluate, load_foreign, load_queries
    from search.language import LanguageDetector

    settings = obj.settings
    judged = load_queries(queries)
    foreign = [q for path in foreign_files for q in load_foreign(path)]
    parts = _selected_halves(judged, split, queries)
    fusion = {
        key: value
        for key, value in {
            "rrf_k": rrf_k,
            "bm25_weight": bm25_weight,
            "vector_weight": vector_weight,
            "chapter_weight": chapter_weight,
        }.items()
        if value is not None
    }
    options = search_defaults(settings).replace(repository=repository, branch=branch, **fusion)
    embedder = PrecomputedQueries(_embedder(settings), judged)
    tuning = _tuning(foreign_keyword_weight)
    detector = LanguageDetector()
    with open_database(settings) as db:
        results = {
            name: evaluate(
                db.pool,
                qs,
                k=k,
                options=options,
                embedder=embedder,
                reranker=get_reranker(settings),
                max_per_chapter=max_per_chapter,
                detector=detector,
                tuning=tuning,
            )
            for name, qs in parts.items()
        }
        gates = _gates(settings, db.pool, parts, foreign, repository, branch)
    missed = _agents_misses(results, parts) if misses else {}
    if as_json:
        out = _eval_json(results, missed)
        if gates:
            out["gate"] = {
                name: asdict(g) | {"precision": g.precision, "recall": g.recall}
                for name, g in gates.items()
            }
        click.echo(json.dumps(out, ensure_ascii=False, indent=2))
        return
    _print_eval_report(results, missed, gates, embedder, k, by_kind)


def _print_eval_report(
    results: dict[str, list[ModeReport]],
    missed: dict[str, tuple[ModeReport, list[Miss]]],
    gates: dict[str, Any],
    embedder: Any,
    k: int,
    by_kind: bool,
) -> None:
    """`eval`'s tables: each half's modes, the agents' misses, then the gate's flags."""
    console = out_console()
    for name, reports in results.items():
        title = (
            f"{name}: {reports[0].n} queries, k={k}; latency without the query embedding "
            f"({embedder.model}: p50 {embedder.p50_ms:.1f} ms, p95 {embedder.p95_ms:.1f} ms)"
        )
        _print_eval(console, title, reports, k, by_kind)
        if name in missed:
            _print_misses(console, name, *missed[name], k)
    for name, gate in gates.items():
        _print_gate(console, name, gate)


def _gates(
    settings: Settings,
    pool: Any,
    parts: dict[str, list[Judged]],
    foreign: list[Any],
    repository: str | None,
    branch: str,
) -> dict[str, Any]:
    """Each half's `GateReport` (none without foreign questions): the context gate's
    verdict on every question, each asked once (the foreign ones serve every half)."""
    from glossator.search_wiring import search_service
    from search.evaluation import gate_report, verdict_of

    if not foreign:
        return {}
    service = search_service(settings, pool, reranker="settings")
    asked: dict[str, Any] = {}

    def ask(question: str) -> Any:
        if question not in asked:
            pack = service.context(question, repository=repository, branch=branch)
            asked[question] = verdict_of(pack)
        return asked[question]

    return {
        name: gate_report([(q, ask(q.query)) for q in qs], [(q, ask(q.query)) for q in foreign])
        for name, qs in parts.items()
    }


def _print_gate(console: Console, half: str, gate: Any) -> None:
    """The gate's verdicts: one row per kind of question, shares of each verdict."""
    from search.evaluation import FOUND, NOTHING, UNCERTAIN

    precision = "-" if gate.precision is None else f"{gate.precision:.0%}"
    table = Table(
        title=f"{half}: context gate, precision of found {precision}, recall {gate.recall:.0%} "
        f"({gate.found_holding} of {gate.found_on_topic} on-topic found hold a judged chapter)"
    )
    for col in ("questions", "n", "found", "uncertain", "nothing relevant", "other"):
        table.add_column(col, justify="left" if col == "questions" else "right")
    rows = [("on-topic", gate.on_topic)]
    rows += [(f"foreign, {kind}", shares) for kind, shares in gate.foreign.items()]
    for label, shares in rows:
        table.add_row(
            label,
            str(shares["n"]),
            *(f"{shares[v]:.0%}" for v in (FOUND, UNCERTAIN, NOTHING, "other")),
        )
    console.print(table)


def _selected_halves(judged: list[Judged], split: str, queries: Path) -> dict[str, list[Judged]]:
    """The halves `--split` names: both (tune and test when the file has them, else all
    its queries as one), all (one, the split ignored), or tune or test alone."""
    from search.evaluation import halves

    if split == "all":
        return {"all": judged}
    parts = halves(judged)
    if split == "both":
        return parts
    if split not in parts:
        raise click.UsageError(f"{queries} has no query with split {split!r}")
    return {split: parts[split]}


def _tuning(foreign_keyword_weight: float | None) -> Tuning:
    """search/tuning.py's tuning, with `--foreign-keyword-weight` in its fusion when given."""
    from search.tuning import TUNING

    if foreign_keyword_weight is None:
        return TUNING
    return replace(
        TUNING, fusion=replace(TUNING.fusion, foreign_keyword_weight=foreign_keyword_weight)
    )


def _agents_misses(
    results: dict[str, list[ModeReport]], parts: dict[str, list[Judged]]
) -> dict[str, tuple[ModeReport, list[Miss]]]:
    """Each half's misses of the mode agents get (hybrid, one row per chapter), else of
    its last mode."""
    from search.evaluation import misses

    out = {}
    for name, reports in results.items():
        report = next((r for r in reports if "agents" in r.name), reports[-1])
        out[name] = (report, misses(report, parts[name]))
    return out


def _eval_json(
    results: dict[str, list[ModeReport]], missed: dict[str, tuple[ModeReport, list[Miss]]]
) -> dict[str, Any]:
    """`eval --json`: each half's figures per mode (without the per-query rows), and the
    misses when asked."""
    out: dict[str, Any] = {
        name: [
            {key: v for key, v in asdict(r).items() if key != "per_query"}
            | {"paraphrase_mrr": r.paraphrase_mrr}
            for r in reports
        ]
        for name, reports in results.items()
    }
    if missed:
        out["misses"] = {
            name: {"mode": r.name, "queries": [asdict(m) for m in ms]}
            for name, (r, ms) in missed.items()
        }
    return out


def _print_misses(console: Console, half: str, report: Any, ms: list[Any], k: int) -> None:
    table = Table(title=f"{half}: {len(ms)} of {report.n} queries missed something ({report.name})")
    for col in ("kind", "query", "first relevant", "found", "first hits"):
        right = col in ("first relevant", "found")
        table.add_column(col, justify="right" if right else "left", overflow="fold")
    for m in ms:
        table.add_row(
            m.kind,
            m.query,
            f"beyond {k}" if m.first is None else str(m.first),
            f"{m.found}/{m.relevant}",
            "\n".join(m.top),
        )
    console.print(table)


def _print_eval(console: Console, title: str, reports: list[Any], k: int, by_kind: bool) -> None:
    table = Table(title=title)
    cols = ("mode", f"recall@{k}", f"MRR@{k}", "nDCG@10", "top-1", "paraphrase MRR")
    for col in (*cols, "p50 ms", "p95 ms"):
        table.add_column(col, justify="right" if col != "mode" else "left")
    for r in reports:
        para = r.paraphrase_mrr
        table.add_row(
            r.name,
            f"{r.recall:.3f}",
            f"{r.mrr:.3f}",
            f"{r.ndcg10:.3f}",
            f"{r.top1:.3f}",
            "-" if para is None else f"{para:.3f}",
            f"{r.p50_ms:.1f}",
            f"{r.p95_ms:.1f}",
        )
    console.print(table)
    if by_kind:
        console.print(_breakdown(reports, "by_kind", "kind", "kind"))
        console.print(_breakdown(reports, "by_lang", "query language", "language"))


def _breakdown(reports: list[Any], attr: str, label: str, column: str) -> Table:
    """MRR / recall / top-1 of each report for each key of its `attr` (by_kind,
    by_lang), in the first report's order."""
    table = Table(title=f"MRR / recall / top-1 by {label}")
    table.add_column(column)
    for r in reports:
        table.add_column(r.name, justify="right")
    for key, first in getattr(reports[0], attr).items():
        table.add_row(
            f"{key} ({first['n']:.0f})",
            *(
                "{mrr:.3f} / {recall:.3f} / {top1:.3f}".format(**getattr(r, attr)[key])
                for r in reports
            ),
        )
    return table
