"""Import a book through Docling, the high-fidelity converter the seed used: a
docling-serve deployed apart (its models are large and want a GPU or minutes of CPU)
converts the file (PDF, DOCX, PPTX, HTML, images…) to Markdown, which the Markdown
importer reads as any Markdown book.

The client speaks docling-serve's v1 API (docs: docling-project.github.io, "REST API"):

    POST /v1/convert/file/async       multipart `files` + form fields (`to_formats=md`…)
                                      → {"task_id", "task_status": "pending", …}
    GET  /v1/status/poll/{task_id}?wait=S   → {"task_status": "started" | "success" |
                                      "failure", …}, answered within S seconds
    GET  /v1/result/{task_id}         → {"document": {"md_content", …}, "status",
                                      "errors", "processing_time"}

Always the async route: a book's conversion runs longer than docling-serve's own limit on
a synchronous request (DOCLING_SERVE_MAX_SYNC_WAIT, 120 s by default), and polling with
`wait` costs nothing on a small one. The API key, when the server has one
(DOCLING_SERVE_API_KEY), goes as `X-Api-Key`. Docling's Markdown gives the document's
title as `#` and every section header as `##` (its export has one heading level), so a
book comes out as a work of chapters; its `<!-- image -->` placeholders are dropped.

Errors say what to do: no server set, the server unreachable, a refused key, a failed
conversion, a timeout, a result with no text: one line each (ImportSourceError), nothing
written.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from indexer.importers.common import ImportSourceError
from indexer.importers.markdown import read_markdown_data
from indexer.importers.text import FRONT_MATTER_TITLE, TITLE_PAGE_CHARS
from indexer.importers.tree import Work

# The seconds each poll asks the server to hold the request (docling-serve answers as soon
# as the task ends): long enough that a book costs a handful of requests
POLL_WAIT = 10.0
# A task whose status the server cannot give this many times running has failed
MAX_POLL_ERRORS = 3
_IMAGE = re.compile(r"^\s*<!-- image -->\s*$", re.MULTILINE)


@dataclass(frozen=True)
class DoclingServer:
    """Where docling-serve is, its key, and how long one book may take."""

    url: str
    api_key: str | None = None
    timeout: float = 900.0
    transport: httpx.BaseTransport | None = None  # (tests: a transport of their own)


def read_docling(
    src: Path,
    server: DoclingServer | None,
    *,
    exclude: tuple[str, ...] = (),
    skip_front_matter: bool = False,
    lang: str | None = None,
) -> Work:
    """The work in `src`, converted by docling-serve and read as Markdown."""
    path = str(src)
    if server is None or not server.url:
        raise ImportSourceError(
            path,
            "--format docling needs a docling-serve: set GLOSSATOR_DOCLING_URL (e.g. "
            "http://127.0.0.1:5001; `docker compose --profile docling up -d docling`)",
        )
    if not src.is_file():
        raise ImportSourceError(path, "is not a file Docling can convert")
    markdown = convert(src, server)
    markdown = _IMAGE.sub("", markdown).strip()
    if not markdown:
        raise ImportSourceError(path, "Docling found no text in it (a picture with no text?)")
    markdown, note = _with_a_work_heading(markdown, src.stem)
    works = read_markdown_data(
        f"{path} (Docling's Markdown)",
        markdown.encode("utf-8"),
        exclude=exclude,
        skip_front_matter=skip_front_matter,
        lang=lang,
    )
    if note:
        works[0].notes.insert(0, note)
    return works[0]


def _with_a_work_heading(markdown: str, stem: str) -> tuple[str, str]:
    """Docling's Markdown with one `#` over it (the document's title when Docling found one,
    its first line `# …`, else the file's name; a second `#` becomes `##`), and the note on
    the text before the first section header: up to TITLE_PAGE_CHARS a title page (the
    author's name, an imprint), left out and said; more is kept as a piece."""
    lines = markdown.split("\n")
    first = next((k for k, x in enumerate(lines) if x.strip()), 0)
    if lines[first].startswith("# "):
        head, rest = lines[first], lines[first + 1 :]
    else:
        head, rest = f"# {stem}", lines[first:]
    rest = [("#" + x) if x.startswith("# ") else x for x in rest]
    top = next((k for k, x in enumerate(rest) if x.startswith("## ")), len(rest))
    front = [x for x in rest[:top] if x.strip()]
    note = ""
    if len("\n".join(front)) > TITLE_PAGE_CHARS:
        rest = [f"## {FRONT_MATTER_TITLE}", "", *rest]
    elif front:
        rest = rest[top:]
        note = f"left out the title page before the first heading ({len(front)} paragraphs)"
    return "\n".join([head, "", *rest]) + "\n", note


def convert(src: Path, server: DoclingServer) -> str:
    """Docling's Markdown for the file at `src`: submit, poll, fetch the result."""
    headers = {"X-Api-Key": server.api_key} if server.api_key else {}
    base = server.url.rstrip("/")
    deadline = time.monotonic() + server.timeout
    with httpx.Client(
        base_url=base, headers=headers, timeout=POLL_WAIT + 30.0, transport=server.transport
    ) as client:
        with src.open("rb") as f:
            task = _json(
                _send(
                    client,
                    "POST",
                    "/v1/convert/file/async",
                    src,
                    files={"files": (src.name, f, "application/octet-stream")},
                    data={"to_formats": "md", "image_export_mode": "placeholder"},
                ),
                src,
            )
        task_id = str(task.get("task_id") or "")
        if not task_id:
            raise ImportSourceError(str(src), f"Docling's answer has no task id: {task!r:.200}")
        status = str(task.get("task_status") or "pending")
        errors = 0
        while status not in ("success", "failure"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise ImportSourceError(
                    str(src),
                    f"Docling did not finish within {server.timeout:.0f} s (task {task_id}); "
                    "raise GLOSSATOR_DOCLING_TIMEOUT or give its server more workers",
                )
            wait = max(1.0, min(POLL_WAIT, left))
            try:
                polled = _json(
                    _send(client, "GET", f"/v1/status/poll/{task_id}", src, params={"wait": wait}),
                    src,
                )
            except ImportSourceError:
                errors += 1
                if errors >= MAX_POLL_ERRORS:
                    raise
                continue
            errors = 0
            status = str(polled.get("task_status") or "pending")
        result = _json(_send(client, "GET", f"/v1/result/{task_id}", src), src)
    return _markdown_of(result, src, failed=status == "failure")


def _send(client: httpx.Client, method: str, url: str, src: Path, **kw: Any) -> httpx.Response:
    try:
        response = client.request(method, url, **kw)
    except httpx.HTTPError as e:
        raise ImportSourceError(
            str(src),
            f"cannot reach Docling at {client.base_url} ({type(e).__name__}); is docling-serve "
            "running there (GLOSSATOR_DOCLING_URL)?",
        ) from None
    if response.status_code in (401, 403):
        raise ImportSourceError(
            str(src),
            f"Docling refused the request (HTTP {response.status_code}): set "
            "GLOSSATOR_DOCLING_API_KEY to its DOCLING_SERVE_API_KEY",
        )
    if response.status_code >= 400:
        raise ImportSourceError(
            str(src),
            f"Docling answered HTTP {response.status_code} to {method} {url}: {_detail(response)}",
        )
    return response


def _json(response: httpx.Response, src: Path) -> dict[str, Any]:
    try:
        body = response.json()
    except (json.JSONDecodeError, ValueError):
        raise ImportSourceError(str(src), "Docling's answer is not JSON") from None
    if not isinstance(body, dict):
        raise ImportSourceError(str(src), "Docling's answer is not a JSON object")
    return body


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except (json.JSONDecodeError, ValueError, AttributeError):
        detail = None
    return str(detail or response.text or response.reason_phrase)[:200]


def _markdown_of(result: dict[str, Any], src: Path, *, failed: bool) -> str:
    document = result.get("document") or {}
    markdown = document.get("md_content") if isinstance(document, dict) else None
    errors = result.get("errors") or []
    if failed or result.get("status") in ("failure", "skipped") or not isinstance(markdown, str):
        said = "; ".join(str(e.get("error_message", e)) for e in errors if e)[:200]
        raise ImportSourceError(
            str(src), f"Docling could not convert it ({said or result.get('status') or 'failure'})"
        )
    return markdown
