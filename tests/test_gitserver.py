"""The git server: repository store, auth, and smart HTTP with the real `git` client.

No database here: the hooks run (they are real), the post-receive finds no
database in its environment and says so; the indexing pipeline has its own tests.
"""

from __future__ import annotations

import base64
import gzip
import os
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pygit2
import pytest
from starlette.datastructures import Headers

from core.access import AccessPolicy, Role
from gitserver.app import create_app
from gitserver.auth import Access, basic_credentials, required_access, token_matches
from gitserver.errors import RepositoryExists, RepositoryNameError
from gitserver.repos import RepoStore, check_name, hook_entry, hook_script
from glossator import githooks
from tests.gitserver_support import ServerThread, commit_all, git, init_work, write_files

TOKEN = "push-s3cret"
READ = "read-t0ken"
ADMIN = "adm1n"

GOOD = "---\ntitle: Un chapitre\n---\n\nPremier paragraphe.\n\nSecond paragraphe.\n"
BAD = "---\ntitle: [unclosed\n---\n\nTexte.\n"
CH1 = "corpus/oeuvre/partie-1/chapitre-01/source.md"
CH2 = "corpus/oeuvre/partie-1/chapitre-02/source.md"


@pytest.fixture
def store(tmp_path: Path) -> RepoStore:
    return RepoStore(tmp_path / "repos", data_dir=tmp_path / "data")


def policy(anonymous_read: bool = True) -> AccessPolicy:
    return AccessPolicy.from_tokens(
        anonymous_read=anonymous_read, push=(TOKEN,), read=(READ,), admin=(ADMIN,)
    )


def make_app(store: RepoStore, *, anonymous_read: bool = True, throttle=None):
    return create_app(store, policy(anonymous_read), throttle=throttle)


# -- repository store ------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["", "..", "a/b", "../x", "UPPER", "-x", ".x", "a..b", "x" * 65, "a b", "c.git", "é"]
)
def test_bad_names_are_refused(store: RepoStore, name: str) -> None:
    with pytest.raises(RepositoryNameError):
        check_name(name)
    with pytest.raises(RepositoryNameError):
        store.create(name)
    assert not store.exists(name)


def test_create_configures_and_hooks(store: RepoStore) -> None:
    path = store.create("bastiat")
    assert path == store.root / "bastiat.git"
    repo = pygit2.Repository(str(path))
    assert repo.is_bare
    assert repo.config.get_bool("http.receivepack")
    assert repo.config.get_bool("uploadpack.allowFilter")
    assert repo.config["core.filesRefLockTimeout"] == "10000"
    assert not repo.config.get_bool("receive.autogc")  # no `git gc --auto` after each push
    assert repo.head_is_unborn and repo.references["HEAD"].target == "refs/heads/main"
    bash = shutil.which("bash")
    assert bash, "the hooks are bash where bash is (Debian's: always)"
    for hook in ("pre-receive", "post-receive"):
        script = path / "hooks" / hook
        assert script.stat().st_mode & stat.S_IXUSR
        text = script.read_text()
        # bash, asking the server; its fallback the Python entry point, isolated, without
        # site, on its own file (glossator.githooks)
        assert text.startswith(f"#!{bash}\n") and f"\nhook={hook}\n" in text
        assert text.endswith(hook_entry().with_name("githooks.bash").read_text())
        assert f"\nentry={hook_entry()}\n" in text
        assert f" -E -P -S {hook_entry()} {hook}\n" in text
        assert hook_entry().samefile(githooks.__file__)
        assert "DATABASE_URL" not in text.split("\n", 4)[-1]  # no secret on disk
        # where there is no bash: a POSIX shell that execs the Python entry point
        plain = hook_script(hook, data_dir=store.data_dir, repos_dir=store.root, bash=None)
        assert plain.startswith("#!/bin/sh\n")
        assert plain.endswith(f"exec {sys.executable} -E -P -S {hook_entry()} {hook}\n")
    assert store.names() == ["bastiat"]
    with pytest.raises(RepositoryExists):
        store.create("bastiat")


def test_symlink_in_store_is_not_a_repository(store: RepoStore, tmp_path: Path) -> None:
    outside = tmp_path / "outside.git"
    pygit2.init_repository(str(outside), bare=True)
    store.root.mkdir(parents=True)
    (store.root / "evil.git").symlink_to(outside)
    assert not store.exists("evil")
    assert store.names() == []


# -- auth --------------------------------------------------------------------------


def _basic(user: str, password: str) -> Headers:
    raw = base64.b64encode(f"{user}:{password}".encode()).decode()
    return Headers({"authorization": f"Basic {raw}"})


def test_auth_rules() -> None:
    assert basic_credentials(_basic("x", "a:b")).token == "a:b"  # type: ignore[union-attr]
    assert basic_credentials(Headers({"authorization": "Basic !!!"})) is None
    assert basic_credentials(Headers({})) is None
    assert token_matches("t", ("a", "t"))
    assert not token_matches("", ("",)) and not token_matches(None, ("t",))
    assert required_access("info/refs", "git-receive-pack") is Access.PUSH
    assert required_access("git-receive-pack", None) is Access.PUSH
    assert required_access("git-upload-pack", None) is Access.READ
    from core.access import token_digest

    closed = AccessPolicy.from_tokens(anonymous_read=False, push=("p",), read=("r",))
    assert not closed.caller(None).may_read("x")
    reader = closed.caller(closed.grant(token_digest("r")))
    assert reader.may_read("x") and not reader.may_push("x")
    pusher = closed.caller(closed.grant(token_digest("p")))
    assert pusher.may_read("x") and pusher.may_push("x") and not pusher.admin
    assert closed.grant(token_digest("wrong")) is None


def test_the_policy_is_built_from_the_settings_by_the_composition_root() -> None:
    from core.access import token_digest
    from glossator.settings import Settings
    from glossator.wiring import access_policy

    env = {"GLOSSATOR_PUSH_TOKENS": "p1,p2", "GLOSSATOR_ANONYMOUS_READ": "false"}
    closed = access_policy(Settings.from_env(env))
    assert not closed.anonymous_read
    for token in ("p1", "p2"):
        assert closed.grant(token_digest(token)).role is Role.PUSH  # type: ignore[union-attr]
    opened = access_policy(Settings.from_env({}))
    assert opened.anonymous_read and opened.env_grants == () and opened.mcp_open


# -- in-process HTTP -------------------------------------------------------------------


async def test_read_routes_follow_the_read_policy(store: RepoStore) -> None:
    """/api/jobs and the like name repositories, commits and errors: the same policy
    as clone and fetch guards them (anonymous only when anonymous reads are on)."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def secret(request: Request) -> JSONResponse:
        return JSONResponse({"jobs": ["livre/main"]})

    for anonymous, expected in ((True, 200), (False, 401)):
        app = create_app(
            store, policy(anonymous), extra_routes=[Route("/api/jobs", secret, methods=["GET"])]
        )
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            r = await client.get("/api/jobs")
            assert r.status_code == expected
            if expected == 401:
                assert "livre" not in r.text and r.headers["www-authenticate"].startswith("Basic")
            assert (await client.get("/api/jobs", auth=("u", READ))).status_code == 200
            assert (await client.get("/api/jobs", auth=("u", TOKEN))).status_code == 200
            bearer = {"Authorization": f"Bearer {READ}"}
            assert (await client.get("/api/jobs", headers=bearer)).status_code == 200
            bad = await client.get("/api/jobs", auth=("u", "wrong"))
            assert bad.status_code == expected


async def test_admin_route(store: RepoStore) -> None:
    transport = httpx.ASGITransport(app=make_app(store))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        r = await client.post("/api/repos", json={"name": "livre"})
        assert r.status_code == 401 and "Bearer" in r.headers["www-authenticate"]
        auth = {"Authorization": f"Bearer {ADMIN}"}
        r = await client.post("/api/repos", json={"name": "livre"}, headers=auth)
        assert r.status_code == 201, r.text
        assert r.json() == {"name": "livre", "url": "http://test/livre.git"}
        r = await client.post("/api/repos", json={"name": "livre"}, headers=auth)
        assert r.status_code == 409 and r.json() == {"error": "repository 'livre' already exists"}
        assert str(store.root) not in r.text  # no server path reaches a client
        r = await client.post("/api/repos", json={"name": "../etc"}, headers=auth)
        assert r.status_code == 400 and "invalid repository name" in r.json()["error"]
        r = await client.get("/api/repos", headers=auth)
        assert r.json() == [{"name": "livre", "branches": {}}]
        assert (await client.get("/healthz")).text == "ok\n"


async def test_receive_pack_needs_a_token_in_process(store: RepoStore) -> None:
    store.create("livre")
    transport = httpx.ASGITransport(app=make_app(store))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        r = await client.get("/livre.git/info/refs", params={"service": "git-receive-pack"})
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Basic")
        r = await client.post("/livre.git/git-receive-pack", content=b"0000")
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Basic")
        r = await client.get(
            "/livre.git/info/refs",
            params={"service": "git-receive-pack"},
            auth=("anyone", TOKEN),
        )
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/x-git-receive-pack-advertisement"
        assert (await client.get("/livre.git/objects/info/packs")).status_code == 404
        assert (await client.get("/livre.git/HEAD")).status_code == 404  # dumb HTTP: no
        # nor the dumb protocol's ref list (info/refs without ?service=), issue 23
        for params in ({}, {"service": "git-nothing"}):
            dumb = await client.get("/livre.git/info/refs", params=params, auth=("a", TOKEN))
            assert dumb.status_code == 404 and "smart HTTP" in dumb.text, dumb.text
        anonymous = await client.get("/livre.git/info/refs")
        assert anonymous.status_code == 404
        assert (await client.get("/livre/HEAD")).status_code == 404
        assert (await client.get("/nope.git/info/refs")).status_code == 404
        assert (await client.get("/livre.git/git-upload-pack")).status_code == 405


async def test_gzip_request_body_and_protocol_v2(store: RepoStore, tmp_path: Path) -> None:
    work = init_work(tmp_path / "w", {CH1: GOOD})
    head = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    git("push", "-q", str(store.create("livre")), "main", cwd=work)
    # protocol v2 `ls-refs`, gzip-compressed as git does for large requests
    body = b"0014command=ls-refs\n0001" + b"0009peel\n" + b"0000"
    transport = httpx.ASGITransport(app=make_app(store))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        r = await client.post(
            "/livre/git-upload-pack",
            content=gzip.compress(body),
            headers={
                "Content-Type": "application/x-git-upload-pack-request",
                "Content-Encoding": "gzip",
                "Git-Protocol": "version=2",
            },
        )
    assert r.status_code == 200, r.text
    assert f"{head} refs/heads/main".encode() in r.content


# -- the real git client against uvicorn --------------------------------------------------


def test_clone_push_and_auth_with_real_git(store: RepoStore, tmp_path: Path) -> None:
    store.create("livre")
    with ServerThread(make_app(store)) as server:
        work = init_work(tmp_path / "work", {CH1: GOOD}, origin=server.url("livre"))
        refused = git("push", "origin", "main", cwd=work, check=False)
        assert refused.returncode != 0
        # the server asked for credentials (401) and git, unable to prompt, gave up
        assert "could not read Username" in refused.stderr
        wrong = git("push", server.url("livre", token="nope"), "main", cwd=work, check=False)
        assert wrong.returncode != 0 and "Authentication failed" in wrong.stderr
        assert store.branches("livre") == {}

        pushed = git("push", server.url("livre", token=TOKEN), "main", cwd=work)
        assert "remote: glossator: indexing not queued" in pushed.stderr
        assert TOKEN not in pushed.stderr
        head = git("rev-parse", "HEAD", cwd=work).stdout.strip()
        assert store.branches("livre") == {"main": head}

        clone = tmp_path / "clone"
        git("clone", "-q", server.url("livre"), str(clone))
        assert (clone / CH1).read_text() == GOOD

        # protocol v2 is what the client speaks and what the server answers
        traced = git(
            "-c", "protocol.version=2", "ls-remote", server.url("livre"),
            env={"GIT_TRACE_PACKET": "1"},
        )  # fmt: skip
        assert "< version 2" in traced.stderr
        assert f"{head}\trefs/heads/main" in traced.stdout

        # partial clone: no blobs at clone time, fetched lazily on checkout
        partial = tmp_path / "partial"
        git("clone", "-q", "--no-checkout", "--filter=blob:none", server.url("livre"), str(partial))
        missing = git("rev-list", "--objects", "--missing=print", "HEAD", cwd=partial).stdout
        assert any(line.startswith("?") for line in missing.splitlines())
        git("checkout", "-q", "main", cwd=partial)
        assert (partial / CH1).read_text() == GOOD

        # a second push on top, from the clone, is a fast-forward
        write_files(clone, {CH2: GOOD.replace("Un chapitre", "Deux")})
        commit_all(clone, "second chapter")
        git("push", "-q", server.url("livre", token=TOKEN), "main", cwd=clone)
        git("pull", "-q", "--ff-only", "origin", "main", cwd=work)
        assert (work / CH2).exists()


def test_a_push_under_way_is_marked_with_its_refs(
    store: RepoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While git receives a push, the server's marker names the refs it updates and the
    commits it asks for (the commit-backs of those branches wait for it,
    core.receiving); once git has answered, it is `ended`, and a refused one still
    holds its branch's commit-back for a moment (its writer pulls to push again)."""
    from core import receiving
    from gitserver.backend import pushed_refs

    # QUIET_S (5 s) is a wall-clock window: a push starting 2 x QUIET_S after another
    # ended drops that one's marker, and three pushes took longer than that at load 30.
    # The server runs in this process: a window no loaded machine reaches, the same logic.
    monkeypatch.setattr(receiving, "QUIET_S", 3600.0)
    bare = store.create("livre")
    seen = tmp_path / "seen.txt"
    hook = bare / "hooks" / "pre-receive"
    # what a pre-receive sees, mid-push: the marker files, then accept or refuse
    hook.write_text(
        "#!/bin/sh\ncat >/dev/null\n"
        f'cat "$GIT_DIR/{receiving.DIR}"/* >> {seen}\n'
        f"test ! -e {tmp_path / 'refuse'}\n"
    )
    with ServerThread(make_app(store)) as server:
        work = init_work(tmp_path / "work", {CH1: GOOD})
        git("branch", "draft", cwd=work)
        git("push", "-q", server.url("livre", token=TOKEN), "main", "draft", cwd=work)
        head = git("rev-parse", "HEAD", cwd=work).stdout.strip()
        assert sorted(seen.read_text().splitlines()) == [
            f"refs/heads/draft {head}",
            f"refs/heads/main {head}",
        ]
        assert all(p.name.endswith(receiving.ENDED) for p in (bare / receiving.DIR).iterdir())
        # a pack over git's http.postBuffer (1 MiB): git first POSTs a probe, a lone
        # flush-pkt that moves no ref; it leaves no marker (an ended `*` one would hold
        # the push's own answer for QUIET_S, as a push just refused)
        write_files(work, {"big.bin": os.urandom(2 * 1024 * 1024)})
        commit_all(work, "big")
        git("push", "-q", server.url("livre", token=TOKEN), "main", cwd=work)
        first, head = head, git("rev-parse", "HEAD", cwd=work).stdout.strip()
        markers = [p.read_text() for p in (bare / receiving.DIR).iterdir()]
        assert f"refs/heads/main {head}\n" in markers
        assert f"{receiving.ANY}\n" not in markers
        landed = [first].__contains__  # the first push landed too: the new tip's parent
        assert receiving.pushes_under_way(bare, "main", head, landed=landed) == 0
        (tmp_path / "refuse").touch()
        write_files(work, {CH2: GOOD})
        commit_all(work, "refused")
        refused = git("push", server.url("livre", token=TOKEN), "main", cwd=work, check=False)
        assert refused.returncode != 0
        # ended, not landed: its writer may be pulling to push again
        ended = [p for p in (bare / receiving.DIR).iterdir()]
        assert all(p.name.endswith(receiving.ENDED) for p in ended) and len(ended) == 3
        quiet = receiving.QUIET_S  # pushes_under_way's default was bound at import
        assert receiving.pushes_under_way(bare, "main", head, landed=landed, quiet_s=quiet) == 1
        assert receiving.pushes_under_way(bare, "draft", head, landed=landed, quiet_s=quiet) == 0

    # the commands' pkt-lines, plain and gzip; what is not a command names every ref
    def spool(data: bytes) -> tempfile.SpooledTemporaryFile[bytes]:
        f = tempfile.SpooledTemporaryFile()  # noqa: SIM115 - closed below
        f.write(data)
        f.seek(0)
        return f

    old, new = "0" * 40, "1" * 40
    first = f"{old} {new} refs/heads/main\0report-status\n".encode()
    second = f"{new} {old} refs/heads/gone\n".encode()
    body = b"%04x" % (len(first) + 4) + first + b"%04x" % (len(second) + 4) + second
    body += b"0000PACK..."
    for data, encoding in ((body, None), (gzip.compress(body), "gzip")):
        with spool(data) as f:
            assert pushed_refs(f, encoding) == [("refs/heads/main", new), ("refs/heads/gone", old)]
            assert f.tell() == 0
    for data, encoding in ((b"0012push-cert\0x\n0000", None), (b"zz", None), (body, "br")):
        with spool(data) as f:
            assert pushed_refs(f, encoding) is None


def test_the_let_in_look_opens_the_repository_only_for_another_push(
    store: RepoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a push landed, the server looks for other writers' pushes to its branch
    before it answers (GitServer._let_other_writers_in): its own marker names the commit
    it pushed, landed, so a lone writer's look reads the markers and opens no repository;
    another push's commit is looked up in the branch."""
    from core import receiving
    from gitserver import app as app_module

    bare = store.create("livre")
    for hook in ("pre-receive", "post-receive"):
        (bare / "hooks" / hook).unlink()
    work = init_work(tmp_path / "work", {CH1: GOOD})
    first = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    write_files(work, {CH2: GOOD})
    commit_all(work, "second")
    head = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    git("push", "-q", f"file://{bare}", "main", cwd=work)
    opened: list[str] = []

    class Counted(pygit2.Repository):
        def __init__(self, path: str) -> None:
            opened.append(path)
            super().__init__(path)

    monkeypatch.setattr(app_module.pygit2, "Repository", Counted)
    own = receiving.begin(bare)
    own.name_refs([("refs/heads/main", head)])
    assert app_module._others_under_way(bare, "main", head) == 0
    assert opened == []
    earlier = receiving.begin(bare)  # an ended push of the tip's parent: landed
    earlier.name_refs([("refs/heads/main", first)])
    earlier.finish()
    assert app_module._others_under_way(bare, "main", head) == 0
    assert len(opened) == 1
    other = receiving.begin(bare)  # a push of a commit not in the branch, under way
    other.name_refs([("refs/heads/main", "1" * 40)])
    assert app_module._others_under_way(bare, "main", head) == 1
    assert app_module._others_under_way(bare, "draft", head) == 0  # a branch none names
    other.finish()  # ended without landing: its writer may be pulling to push again
    assert app_module._others_under_way(bare, "main", head) == 1


def test_a_push_holds_the_commit_backs_from_its_ref_listing(
    store: RepoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP is stateless: between a push's ref listing (info/refs) and its POST, the
    client builds its pack against the tips it read, and a commit-back moving a branch
    then would refuse it ("cannot lock ref"). The listing holds every branch's
    commit-backs until the same client's POST (which consumes it) or ADVERTISED_S."""
    from core import receiving

    # ADVERTISED_S (10 s) is a wall-clock window: the dry run's listing must still hold
    # after the next push, which took longer than that at load 30 (and a push starting
    # 2 x ADVERTISED_S after it drops it). The server runs in this process: a window no
    # loaded machine reaches, the same logic; running out is asked with `now=`.
    monkeypatch.setattr(receiving, "ADVERTISED_S", 3600.0)
    bare = store.create("livre")

    def advertisements() -> list[Path]:
        return sorted((bare / receiving.DIR).glob(f"*{receiving.ADVERTISED}"))

    with ServerThread(make_app(store)) as server:
        url = server.url("livre", token=TOKEN)
        work = init_work(tmp_path / "work", {CH1: GOOD})
        git("push", "-q", url, "main", cwd=work)
        head = git("rev-parse", "HEAD", cwd=work).stdout.strip()
        assert advertisements() == []  # its listing, consumed by its POST
        assert receiving.pushes_under_way(bare, "main", head) == 0
        git("ls-remote", server.url("livre"), cwd=work)  # a fetch's listing holds nothing
        assert advertisements() == []
        # a client that read the refs to push and sends nothing (a dry run; a real
        # push is here while it builds its pack)
        write_files(work, {CH2: GOOD})
        commit_all(work, "second")
        git("push", "-q", "--dry-run", url, "main", cwd=work)
        assert len(advertisements()) == 1
        assert receiving.pushes_under_way(bare, "main", head) == 1
        assert receiving.pushes_under_way(bare, "draft", head) == 1  # refs unknown: every one
        # not a writer refused by a landing (gitserver.app holds no answer for it), nor a
        # push being received (`glossator repo delete` does not wait for it)
        assert receiving.pushes_under_way(bare, "main", head, advertised=False) == 0
        assert receiving.receiving_now(bare) == 0
        later = time.time() + receiving.ADVERTISED_S + 1  # no POST came: held that long
        assert receiving.pushes_under_way(bare, "main", head, now=later) == 0
        # the same client's push consumes its own listing, the newest; the dry run's
        # runs out on its own
        dry_run = advertisements()
        git("push", "-q", url, "main", cwd=work)
        assert advertisements() == dry_run
        new = git("rev-parse", "HEAD", cwd=work).stdout.strip()
        landed = [head].__contains__  # both pushes landed: what holds is the dry run's
        assert receiving.pushes_under_way(bare, "main", new, landed=landed) == 1
        later = time.time() + receiving.ADVERTISED_S + 1
        assert receiving.pushes_under_way(bare, "main", new, landed=landed, now=later) == 0


def test_malformed_frontmatter_is_refused(store: RepoStore, tmp_path: Path) -> None:
    store.create("livre")
    with ServerThread(make_app(store)) as server:
        url = server.url("livre", token=TOKEN)
        work = init_work(tmp_path / "work", {CH1: GOOD, "README.md": "---\n[x\n"})
        git("push", "-q", url, "main", cwd=work)  # README.md is outside corpus/: not checked
        write_files(work, {CH2: BAD, CH1: GOOD + "\nEncore.\n"})
        commit_all(work, "broken chapter")
        refused = git("push", url, "main", cwd=work, check=False)
        assert refused.returncode != 0
        problems = [line for line in refused.stderr.splitlines() if "remote: glossator:" in line]
        assert any(CH2 in line and "malformed YAML frontmatter" in line for line in problems)
        assert not any(CH1 in line for line in problems)
        assert "pre-receive hook declined" in refused.stderr
        assert store.branches("livre")["main"] != git("rev-parse", "HEAD", cwd=work).stdout.strip()


def test_closed_reads_need_a_token(store: RepoStore, tmp_path: Path) -> None:
    store.create("livre")
    with ServerThread(make_app(store, anonymous_read=False)) as server:
        anonymous = git("ls-remote", server.url("livre"), check=False)
        assert anonymous.returncode != 0
        assert git("ls-remote", server.url("livre", token=READ)).returncode == 0
        assert git("ls-remote", server.url("livre", token=TOKEN)).returncode == 0


def test_wrong_tokens_are_throttled_with_real_git(store: RepoStore, tmp_path: Path) -> None:
    """A guesser's wrong tokens: after the throttle's allowance, 429 with Retry-After, even
    for the right token, from that address (core.throttle); anonymous probes never count."""
    from core.throttle import Throttle

    store.create("livre")
    throttle = Throttle(allowed=3)  # the default's 10, smaller to keep the test short
    with ServerThread(make_app(store, anonymous_read=False, throttle=throttle)) as server:
        for _ in range(5):  # anonymous: refused, never counted
            assert git("ls-remote", server.url("livre"), check=False).returncode != 0
        assert git("ls-remote", server.url("livre", token=READ)).returncode == 0
        for n in range(3):
            bad = git("ls-remote", server.url("livre", token=f"guess{n}"), check=False)
            # git says "returned error: 429"; a bare "429" may be the server's port
            assert bad.returncode != 0 and "error: 429" not in bad.stderr, bad.stderr
        held = git("ls-remote", server.url("livre", token=READ), check=False)
        assert held.returncode != 0 and "error: 429" in held.stderr, held.stderr
        r = httpx.get(
            server.url("livre") + "/info/refs",
            params={"service": "git-upload-pack"},
            auth=("x", READ),
            timeout=60,
        )
        assert r.status_code == 429 and int(r.headers["retry-after"]) > 60
        assert "too many wrong tokens" in r.text and READ not in r.text


def test_large_push_streams_through(store: RepoStore, tmp_path: Path) -> None:
    """A push far over git's 1 MiB post buffer (chunked upload, spooled to disk)."""
    import hashlib
    import os

    store.create("gros")
    blob = os.urandom(12 * 1024 * 1024)
    with ServerThread(make_app(store)) as server:
        work = init_work(tmp_path / "work", {CH1: GOOD, "data/blob.bin": blob})
        git("push", "-q", server.url("gros", token=TOKEN), "main", cwd=work)
        clone = tmp_path / "clone"
        git("clone", "-q", server.url("gros"), str(clone))
    digest = hashlib.sha256((clone / "data/blob.bin").read_bytes()).hexdigest()
    assert digest == hashlib.sha256(blob).hexdigest()


def test_repo_cli(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from glossator.cli import main as cli

    env = {"GLOSSATOR_REPOS_DIR": str(tmp_path / "repos"), "GLOSSATOR_DATA_DIR": str(tmp_path)}
    runner = CliRunner()
    created = runner.invoke(cli, ["repo", "create", "mon-livre"], env=env)
    assert created.exit_code == 0, created.output
    assert (tmp_path / "repos" / "mon-livre.git" / "hooks" / "post-receive").is_file()
    again = runner.invoke(cli, ["repo", "create", "mon-livre"], env=env)
    assert again.exit_code != 0 and "already exists" in again.output
    bad = runner.invoke(cli, ["repo", "create", "../evil"], env=env)
    assert bad.exit_code != 0 and "invalid repository name" in bad.output
    listed = runner.invoke(cli, ["repo", "list"], env=env)
    assert listed.output.strip() == "mon-livre\t(empty)"


async def test_the_server_socket_sends_without_waiting_for_acks() -> None:
    """`glossator serve`'s socket says it is TCP, so asyncio (hence uvicorn) turns
    Nagle's algorithm off on every connection it accepts: a response's second write
    does not wait ~40 ms for the client's delayed ACK."""
    import asyncio
    import socket

    from glossator.commands.serve import listening_socket

    async def nodelay_of_accepted(sock: socket.socket) -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                conn = transport.get_extra_info("socket")
                accepted.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            try:
                return await asyncio.wait_for(accepted, 120)  # polled, generous: a loaded machine
            finally:
                writer.close()

    assert await nodelay_of_accepted(listening_socket("127.0.0.1", 0)) != 0
    # what it guards against: a socket made without naming TCP keeps Nagle on
    plain = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    plain.bind(("127.0.0.1", 0))
    assert await nodelay_of_accepted(plain) == 0


def test_problems_the_tree_decides_are_refused_with_their_reason(
    store: RepoStore, tmp_path: Path
) -> None:
    """Issue 23 item 8: a path too deep, a symbolic link as source.md, a linked folder,
    a submodule, a file directly in corpus/, a part with no chapter were accepted,
    then reported by a job that failed the same way at every retry. Refused now, each
    with its reason on a `remote:` line; the push that fixes them goes through."""
    import os

    store.create("livre")
    with ServerThread(make_app(store)) as server:
        url = server.url("livre", token=TOKEN)
        work = init_work(tmp_path / "work", {CH1: GOOD})
        git("push", "-q", url, "main", cwd=work)
        deep = "corpus/oeuvre/partie-1/chapitre-01/annexe/source.md"
        linked = "corpus/oeuvre/partie-1/chapitre-02/source.md"
        folder_link = "corpus/oeuvre/partie-1/chapitre-03"
        loose = "corpus/source.md"
        empty_part = "corpus/oeuvre/partie-2/summary.md"
        write_files(work, {deep: GOOD, loose: GOOD, empty_part: "---\ntitle: Vide\n---\n"})
        (work / linked).parent.mkdir(parents=True)
        os.symlink("../chapitre-01/source.md", work / linked)
        os.symlink("chapitre-01", work / folder_link)
        commit_all(work, "a user's mistakes")
        head = git("rev-parse", "HEAD", cwd=work).stdout.strip()
        git("update-index", "--add", "--cacheinfo", f"160000,{head},corpus/oeuvre/module", cwd=work)
        git("commit", "-q", "-m", "a submodule", cwd=work)

        refused = git("push", url, "main", cwd=work, check=False)
        assert refused.returncode != 0
        said = [
            line for line in refused.stderr.splitlines() if line.startswith("remote: glossator:")
        ]
        reasons = {
            deep: "too deep: the corpus has work, part and chapter folders only",
            linked: "a symbolic link",
            folder_link: "a symbolic link",
            "corpus/oeuvre/module": "a submodule",
            loose: "belongs to no work",
            empty_part: "a part with no chapters",
        }
        for path, reason in reasons.items():
            lines = [line for line in said if f"remote: glossator: {path}: " in line]
            assert len(lines) == 1 and reason in lines[0], (path, said)
        assert "push refused: 6 problems" in refused.stderr
        assert "pre-receive hook declined" in refused.stderr
        assert store.branches("livre")["main"] != git("rev-parse", "HEAD", cwd=work).stdout.strip()

        # fixed: the file moved up into a chapter of its own, the links replaced by files
        git("rm", "-q", "-r", "--cached", "corpus", cwd=work)
        for path in (deep, loose, linked, folder_link, empty_part):
            target = work / path
            if target.is_symlink() or target.is_file():
                target.unlink()
        write_files(work, {"corpus/oeuvre/partie-1/chapitre-02/source.md": GOOD})
        commit_all(work, "fixed")
        git("push", "-q", url, "main", cwd=work)
        assert store.branches("livre")["main"] == git("rev-parse", "HEAD", cwd=work).stdout.strip()
