"""One access policy at one boundary, on the real server (issue 38, items 1 and 2).

A real `glossator serve` on the test PostgreSQL, two small books pushed with the real git
client and indexed once for the module, the MCP SDK's client over streamable HTTP. With
reads closed, MCP is closed too (it once answered anyone, even from an address the
throttle had blocked); each token reads only its repositories, on every face.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gitserver_support import ServeProcess, git
from tests.plugins.serve import TOKEN, server_env

pytestmark = pytest.mark.slow

GLOSSATOR = str(Path(sys.executable).with_name("glossator"))
READ_ALL = "e2e-read-all-token"

# Two books, each with words no other text has: the first is asked for, the second never
# is (a request may echo what it asked, its path included: no title holds it), and every
# paragraph holds it, so an answer that carries it carries that book's text.
BOOKS = {
    "kestrel": (
        "ALPHA BOOK\n\nby An Author\n\n\nCHAPTER I. OF CARAVANS\n\n"
        "The zanzibarine caravans crossed the quillwort plains at dawn, laden with cloves.\n\n"
        "CHAPTER II. OF RETURNS\n\n"
        "Every zanzibarine merchant returned to the quillwort before the monsoon.\n",
        ("zanzibarine", "quillwort"),
    ),
    "osprey": (
        "BETA BOOK\n\nby Another Author\n\n\nCHAPTER I. OF GLACIERS\n\n"
        "The xylophagous beetles of the vorticella moraine feed on the glacier's driftwood.\n\n"
        "CHAPTER II. OF THAWS\n\n"
        "A thaw wakes the xylophagous larvae under the vorticella moss.\n",
        ("xylophagous", "vorticella"),
    ),
}


def glossator(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("GLOSSATOR_", "GIT_"))}
    full.update(env)
    return subprocess.run(
        [GLOSSATOR, *args], env=full, cwd=cwd, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def module_db(pg_server) -> Iterator[str]:
    """A database of the module's own, from the test template (tests/plugins/db.py)."""
    name = pg_server.create_database()
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop_database(name)


@pytest.fixture(scope="module")
def closed(module_db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """`glossator serve` with reads closed, both books pushed and indexed."""
    tmp = tmp_path_factory.mktemp("access")
    env = server_env(
        tmp,
        module_db,
        GLOSSATOR_ANONYMOUS_READ="false",
        GLOSSATOR_READ_TOKENS=READ_ALL,
        GLOSSATOR_SUMMARIZER="extractive",
    )
    server = ServeProcess(tmp, env).start(timeout=300)
    try:
        for name, (text, _) in BOOKS.items():
            assert glossator(env, "repo", "create", name, cwd=tmp).returncode == 0
            (tmp / f"{name}.txt").write_text(text)
            done = glossator(env, "corpus", "import", f"{name}.txt", name, cwd=tmp)
            assert done.returncode == 0, done.stderr
            git("remote", "add", "glossator", server.url(name, token=TOKEN), cwd=tmp / name)
            git("push", "-q", "glossator", "main", cwd=tmp / name, timeout=300)
        auth = {"Authorization": f"Bearer {READ_ALL}"}
        for name in BOOKS:
            jobs = server.wait_idle(name, timeout=600, headers=auth)
            assert all(j["status"] == "done" for j in jobs), jobs
        yield server
    finally:
        server.stop()


def mcp_post(server: ServeProcess, headers: dict[str, str] | None = None) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "zanzibarine caravans"}},
    }
    accept = {"Accept": "application/json, text/event-stream"}
    return httpx.post(
        f"{server.base}/mcp", json=body, headers={**accept, **(headers or {})}, timeout=30
    )


async def mcp_search(server: ServeProcess, token: str | None, query: str) -> str:
    """A real MCP client's `search` over streamable HTTP: the text of its answer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    async with http, Client(streamable_http_client(f"{server.base}/mcp", http_client=http)) as c:
        r = await c.call_tool("search", {"query": query, "mode": "bm25"})
    return " ".join(getattr(block, "text", "") for block in r.content)


# -- the matrix: every route and MCP tool × five callers × reads open or closed -----------

A, B = "kestrel", "osprey"
CALLERS = ("anonymous", "read A", "read all", "push B", "admin")


@pytest.fixture(scope="module")
def tokens(closed: ServeProcess) -> dict[str, str | None]:
    """A token of each caller, made by `glossator token create` (the stored kind)."""
    made: dict[str, str | None] = {"anonymous": None}
    for caller, args in (
        ("read A", ["--read", A]),
        ("read all", ["--read", "*"]),
        ("push B", ["--push", B]),
        ("admin", ["--admin"]),
    ):
        r = glossator(closed.env, "token", "create", *args, cwd=closed.tmp)
        assert r.returncode == 0, r.stderr
        made[caller] = r.stdout.strip()
    return made


@pytest.fixture(scope="module")
def opened(closed: ServeProcess) -> Iterator[ServeProcess]:
    """A second server on the same database and repositories, reads open to anyone."""
    tmp = closed.tmp / "open"
    tmp.mkdir()
    env = {**closed.env, "GLOSSATOR_ANONYMOUS_READ": "true", "GLOSSATOR_DATA_DIR": str(tmp)}
    server = ServeProcess(tmp, env, args=("--no-worker",)).start(timeout=300)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def files(module_db: str, closed: ServeProcess) -> dict[str, dict[str, str]]:
    """Each book's first paragraph file and its work summary, as cited."""
    out: dict[str, dict[str, str]] = {}
    with psycopg.connect(module_db) as conn:
        for repo in BOOKS:
            rows = dict(
                conn.execute(
                    "SELECT level, min(source_file) FROM hierarchical_content_nodes"
                    " WHERE repository = %s GROUP BY level",
                    (repo,),
                ).fetchall()
            )
            out[repo] = {"text": rows[0], "work": rows[3]}
    return out


def reads(caller: str, repo: str, open_: bool) -> bool:
    return (
        open_ or caller in ("read all", "admin") or (caller, repo) in (("read A", A), ("push B", B))
    )


def reads_any(caller: str, open_: bool) -> bool:
    return open_ or caller != "anonymous"


def pushes(caller: str, repo: str) -> bool:
    return caller == "admin" or (caller, repo) == ("push B", B)


def per_repository(caller: str, repo: str, open_: bool) -> int:
    """A route naming `repo`: 200, 401 for anyone where reads are closed, 404 for a token
    whose scope leaves `repo` out (to it, the repository does not exist)."""
    if reads(caller, repo, open_):
        return 200
    return 401 if caller == "anonymous" else 404


def forbidden(caller: str, open_: bool, *, names: bool) -> list[str]:
    """Words no answer to `caller` may hold: each unreadable book's own (and its name,
    where the request did not name it)."""
    out: list[str] = []
    for repo, (_, (_asked, secret)) in BOOKS.items():
        if not reads(caller, repo, open_):
            out += [secret, *((repo,) if names else ())]
    return out


def routes(files: dict[str, dict[str, str]]) -> list[tuple[str, str, dict, object]]:
    """(method, path, options, expected) for every HTTP route: `expected` is a status, or
    a function (caller, open) → status; the second item of a tuple: the repository named."""
    both = "zanzibarine xylophagous caravans beetles"
    out: list[tuple[str, str, dict, object]] = [
        ("GET", "/healthz", {}, 200),
        ("GET", "/", {}, 200),
        ("GET", "/", {"headers": {"Accept": "text/html"}}, "any"),
        ("GET", f"/search?q={both}&mode=bm25", {}, "any"),
        ("GET", "/jobs", {}, "any"),
        ("GET", f"/api/search?q={both}&mode=bm25", {}, "any"),
        ("GET", f"/api/search?q={both}&mode=bm25&format=text", {}, "any"),
        ("GET", "/api/outline?excerpts=true", {}, "any"),
        ("GET", f"/api/context?q={both}", {}, "any"),
        ("GET", "/api/jobs", {}, "any"),
        ("GET", "/api/repos", {}, "any"),  # each caller sees the repositories it reads
        ("POST", "/api/repos", {"json": {"name": "../x"}}, "admin"),
    ]
    for repo in BOOKS:
        text, work = files[repo]["text"], files[repo]["work"]
        out += [
            ("GET", f"/read/{repo}", {}, ("repo", repo)),
            ("GET", f"/read/{repo}/{text}", {}, ("repo", repo)),
            ("GET", f"/api/nodes/{repo}/{text}", {}, ("repo", repo)),
            ("GET", f"/api/nodes/{repo}/{text}/parent", {}, ("repo", repo)),
            ("GET", f"/api/nodes/{repo}/{work}/children", {}, ("repo", repo)),
            ("GET", f"/api/outline?repository={repo}", {}, ("repo", repo)),
            ("GET", f"/api/search?q={both}&repository={repo}", {}, ("repo", repo)),
            ("GET", f"/{repo}.git/info/refs?service=git-upload-pack", {}, ("git", repo)),
            ("GET", f"/{repo}.git/info/refs?service=git-receive-pack", {}, ("push", repo)),
        ]
    return out


def expected(rule: object, caller: str, open_: bool) -> int:
    if isinstance(rule, int):
        return rule
    if rule == "any":
        return 200 if reads_any(caller, open_) else 401
    if rule == "admin":
        return {"anonymous": 401, "admin": 0}.get(caller, 403)
    kind, repo = rule  # type: ignore[misc]
    if kind == "push":
        if pushes(caller, repo):
            return 200
        if caller == "anonymous":
            return 401
        return 403 if reads(caller, repo, open_) else 404
    return per_repository(caller, repo, open_)


async def mcp_answers(
    server: ServeProcess, token: str | None, files: dict[str, dict[str, str]]
) -> list[tuple[str, str | None, bool, str]]:
    """Every MCP tool through a real client: (tool, repository named, error, text)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=120)
    out: list[tuple[str, str | None, bool, str]] = []

    def text(r) -> str:  # type: ignore[no-untyped-def]
        return " ".join(getattr(b, "text", "") for b in r.content) + str(r.structured_content)

    both = "zanzibarine xylophagous caravans beetles"
    async with http, Client(streamable_http_client(f"{server.base}/mcp", http_client=http)) as c:
        for tool, args in (
            ("search", {"query": both, "mode": "bm25"}),
            ("context", {"question": both}),
            ("outline", {"excerpts": True}),
        ):
            r = await c.call_tool(tool, args)
            out.append((tool, None, bool(r.is_error), text(r)))
        for repo in BOOKS:
            for tool, args in (
                ("get_node", {"source_file": files[repo]["text"]}),
                ("get_parent", {"source_file": files[repo]["text"]}),
                ("get_children", {"source_file": files[repo]["work"]}),
                ("outline", {"repository": repo}),
                ("search", {"query": both, "repository": repo, "mode": "bm25"}),
            ):
                r = await c.call_tool(tool, {**args, "repository": repo})
                out.append((tool, repo, bool(r.is_error), text(r)))
    return out


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("open_", [False, True], ids=["reads closed", "reads open"])
async def test_every_face_answers_each_caller_within_its_scope(
    caller: str,
    open_: bool,
    closed: ServeProcess,
    opened: ServeProcess,
    tokens: dict[str, str | None],
    files: dict[str, dict[str, str]],
) -> None:
    server = opened if open_ else closed
    token = tokens[caller]
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    for method, path, options, rule in routes(files):
        want = expected(rule, caller, open_)
        if want == 0:  # the admin's: the list, and a bad name refused for its name
            want = 400 if method == "POST" else 200
        headers = {**auth, **options.get("headers", {})}
        kwargs = {k: v for k, v in options.items() if k != "headers"}
        r = httpx.request(method, server.base + path, headers=headers, timeout=120, **kwargs)
        assert r.status_code == want, (caller, open_, method, path, r.status_code, r.text[:300])
        names = not isinstance(rule, tuple)  # a path naming a repository echoes its name
        body = r.text.lower()
        for word in forbidden(caller, open_, names=names):
            assert word not in body, (caller, open_, path, word)
    # the books a caller may read are really there (the matrix is not all refusals)
    for repo, (_, words) in BOOKS.items():
        if reads(caller, repo, open_):
            r = httpx.get(f"{server.base}/api/search?q={words[0]}&mode=bm25", headers=auth)
            assert words[0] in r.text.lower(), (caller, open_, repo)
    # MCP: every tool through the SDK's client over streamable HTTP
    if not reads_any(caller, open_):
        refused = mcp_post(server, auth)
        assert refused.status_code == 401 and "zanzibar" not in refused.text.lower()
        return
    for tool, repo, error, text in await mcp_answers(server, token, files):
        where = (caller, open_, tool, repo)
        if repo is not None:
            assert error is not reads(caller, repo, open_), (*where, text[:300])
        else:
            assert not error, (*where, text[:300])
        for word in forbidden(caller, open_, names=repo is None):
            assert word not in text.lower(), (*where, word)


async def test_a_web_session_reads_what_its_token_reads(
    closed: ServeProcess, tokens: dict[str, str | None]
) -> None:
    """Logged in with a token scoped to A, a browser's session reads A only; revoked, the
    token stops at once, its session too."""
    import re

    with httpx.Client(base_url=closed.base, timeout=120) as web:
        form = web.get("/-/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)[1]  # type: ignore[index]
        done = web.post("/-/login", data={"token": tokens["read A"], "csrf": csrf, "next": "/"})
        assert done.status_code in (200, 303), done.text
        page = web.get("/search", params={"q": "zanzibarine xylophagous", "mode": "bm25"})
        assert page.status_code == 200 and "zanzibarine" in page.text.lower()
        assert "vorticella" not in page.text.lower()  # the other book: never asked, never shown
        assert web.get(f"/read/{B}").status_code == 404
        listed = glossator(closed.env, "token", "list", cwd=closed.tmp).stdout
        token_id = next(line.split("\t")[0] for line in listed.splitlines() if f"\t{A}\t" in line)
        assert glossator(closed.env, "token", "revoke", token_id, cwd=closed.tmp).returncode == 0
        assert web.get("/search", params={"q": "zanzibarine"}).status_code == 401
    bearer = {"Authorization": f"Bearer {tokens['read A']}"}
    assert httpx.get(f"{closed.base}/api/outline", headers=bearer).status_code == 401


# -- last: it leaves this address blocked by the closed server's throttle -------------------


async def test_closed_reads_close_mcp_even_from_a_throttled_address(closed: ServeProcess) -> None:
    """The hole of issue 38: with reads closed and no GLOSSATOR_MCP_TOKEN, an anonymous
    `POST /mcp` answered 200 and `search` returned book text."""
    anonymous = mcp_post(closed)
    assert anonymous.status_code == 401, anonymous.text
    assert "zanzibar" not in anonymous.text.lower()
    assert anonymous.headers["www-authenticate"].startswith("Bearer")
    # a read token gets the book through a real MCP client
    assert "zanzibarine" in (await mcp_search(closed, READ_ALL, "zanzibarine caravans")).lower()
    # the start-up log says who can read what
    log = closed.log()
    assert "reads: tokens only" in log and "MCP: tokens only" in log
    # wrong tokens at MCP's door count against the address, as at every other door
    # (the revoked token of the test above was one already, when it ran)
    codes: list[int] = []
    while not codes or (codes[-1] == 401 and len(codes) <= 10):
        codes.append(mcp_post(closed, {"Authorization": f"Bearer wrong-{len(codes)}"}).status_code)
    assert codes[-1] == 429 and set(codes[:-1]) == {401} and len(codes) >= 10, codes
    held = mcp_post(closed, {"Authorization": f"Bearer {READ_ALL}"})
    assert held.status_code == 429 and int(held.headers["retry-after"]) > 60
    assert "zanzibar" not in held.text.lower()
    for path in ("/api/search?q=zanzibarine", "/kestrel.git/info/refs?service=git-upload-pack"):
        r = httpx.get(closed.base + path, auth=("git", READ_ALL), timeout=30)
        assert r.status_code == 429, (path, r.status_code)
    blocked = mcp_post(closed)  # anonymous, from the blocked address: still closed
    assert blocked.status_code == 401 and "zanzibar" not in blocked.text.lower()
