"""A request body over the server's limit (GLOSSATOR_MAX_PUSH_BYTES, issue 38 item 4) is
refused with 413 and a one-line body, before it is written to disk: a real `git push`,
a raw request declaring a huge Content-Length, and a chunked body that never ends."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pygit2
import pytest

from core.access import AccessPolicy
from gitserver.app import create_app
from gitserver.repos import RepoStore
from tests.gitserver_support import ServerThread, git, init_work

TOKEN = "push-s3cret"
LIMIT = 64 * 1024
GOOD = "---\ntitle: Un chapitre\n---\n\nPremier paragraphe.\n"


@pytest.fixture
def server(tmp_path: Path):
    store = RepoStore(tmp_path / "repos", data_dir=tmp_path / "data")
    store.create("livre")
    app = create_app(
        store, AccessPolicy.from_tokens(anonymous_read=True, push=(TOKEN,)), max_body=LIMIT
    )
    with ServerThread(app) as running:
        yield running, store


def _auth() -> str:
    import base64

    return "Basic " + base64.b64encode(f"git:{TOKEN}".encode()).decode()


def _answer(sock: socket.socket) -> bytes:
    data = b""
    sock.settimeout(30)
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_a_git_push_over_the_limit_is_refused_and_nothing_lands(server, tmp_path: Path) -> None:
    running, store = server
    noise = os.urandom(4 * LIMIT).hex()  # incompressible: the pack is over the limit
    work = init_work(tmp_path / "w", {"corpus/o/c/source.md": GOOD + noise})
    pushed = git("push", running.url("livre", token=TOKEN), "main", cwd=work, check=False)
    assert pushed.returncode != 0
    # git shows a refused RPC as its status, not its body: "RPC failed; HTTP 413"
    assert "HTTP 413" in pushed.stderr, pushed.stderr
    assert list(pygit2.Repository(str(store.path("livre"))).references) == []
    # a push under the limit still lands
    small = init_work(tmp_path / "s", {"corpus/o/c/source.md": GOOD})
    git("push", running.url("livre", token=TOKEN), "main", cwd=small)


def test_a_declared_length_over_the_limit_is_refused_before_reading(server) -> None:
    running, _ = server
    with socket.create_connection(("127.0.0.1", running.port), timeout=30) as sock:
        sock.sendall(
            b"POST /livre.git/git-receive-pack HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: {_auth()}\r\n".encode()
            + b"Content-Type: application/x-git-receive-pack-request\r\n"
            + b"Content-Length: 2000000000\r\n\r\n"  # 2 GB announced, nothing sent
        )
        answer = _answer(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), answer[:300]
    assert body.decode().startswith("glossator: the request body is over this server's limit")
    assert body.count(b"\n") == 1


def test_a_chunked_body_is_cut_at_the_limit(server) -> None:
    running, _ = server
    chunk = b"0" * 16384
    sent = 0
    with socket.create_connection(("127.0.0.1", running.port), timeout=30) as sock:
        sock.sendall(
            b"POST /livre.git/git-receive-pack HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: {_auth()}\r\n".encode()
            + b"Content-Type: application/x-git-receive-pack-request\r\n"
            + b"Transfer-Encoding: chunked\r\n\r\n"
        )
        try:
            while sent < 4000 * len(chunk):  # 64 MB offered, 1000 times the limit
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
        except OSError:  # the server answered and closed: the rest is not read
            pass
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert b"GLOSSATOR_MAX_PUSH_BYTES" in answer
    assert sent < 4000 * len(chunk)  # cut short: not the whole body


def test_no_more_than_the_limit_is_written() -> None:
    """What `spool_body` takes from the request stream: never a chunk past the limit, and
    nothing at all when Content-Length says too much."""
    import asyncio

    from starlette.requests import Request

    from gitserver.backend import spool_body
    from gitserver.errors import BodyTooLarge

    def request(headers: list[tuple[bytes, bytes]], taken: list[int]) -> Request:
        async def receive() -> dict:
            taken.append(4096)
            return {"type": "http.request", "body": b"x" * 4096, "more_body": True}

        return Request({"type": "http", "method": "POST", "headers": headers}, receive)

    taken: list[int] = []
    with pytest.raises(BodyTooLarge):
        asyncio.run(spool_body(request([], taken), LIMIT))
    assert sum(taken) == LIMIT + 4096  # the chunk that crosses the limit is read, not written
    declared: list[int] = []
    with pytest.raises(BodyTooLarge):
        asyncio.run(spool_body(request([(b"content-length", b"2000000000")], declared), LIMIT))
    assert declared == []
