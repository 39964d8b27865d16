"""The Docling importer at the HTTP level (issue 40): a stand-in for docling-serve, a real
HTTP server on 127.0.0.1 port 0 (uvicorn, as the git server's tests run theirs), answers its
v1 API as docling-serve does (the async convert, the status poll with `wait`, the result,
the X-Api-Key check). Docling's models cannot be downloaded here, so the stand-in converts
the uploaded .docx itself into the Markdown Docling's export gives (`#` title, every section
header `##`, `<!-- image -->` placeholders): what the importer reads is what was sent."""

from __future__ import annotations

import re
import uuid
import zipfile
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from glossator.cli import main
from indexer.importers.common import ImportSourceError
from indexer.importers.docling import DoclingServer, read_docling
from tests.gitserver_support import ServerThread

NIEBLA = Path(__file__).parent / "fixtures" / "docx" / "unamuno-niebla.docx"
W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def docling_markdown(docx: bytes) -> str:
    """A .docx as Docling's Markdown export writes it."""
    from lxml import etree

    root = etree.fromstring(zipfile.ZipFile(BytesIO(docx)).read("word/document.xml"))
    out = ["<!-- image -->"]
    for p in root.iter(f"{W}p"):
        style = p.find(f"{W}pPr/{W}pStyle")
        text = "".join(t.text or "" for t in p.iter(f"{W}t")).strip()
        if not text:
            continue
        sid = style.get(f"{W}val") if style is not None else ""
        out.append(
            f"# {text}" if sid == "Title" else f"## {text}" if sid.startswith("Heading") else text
        )
    return "\n\n".join(out) + "\n"


class StandIn:
    """docling-serve's v1 API, recording each request; a task ends after `polls` polls."""

    def __init__(self, api_key: str | None = None, polls: int = 2) -> None:
        self.api_key = api_key
        self.polls = polls
        self.requests: list[dict[str, Any]] = []
        self.tasks: dict[str, dict[str, Any]] = {}
        self.app = Starlette(
            routes=[
                Route("/v1/convert/file/async", self.submit, methods=["POST"]),
                Route("/v1/status/poll/{task_id}", self.poll),
                Route("/v1/result/{task_id}", self.result),
            ]
        )

    def _refused(self, request: Request) -> JSONResponse | None:
        self.requests.append(
            {
                "path": request.url.path,
                "key": request.headers.get("x-api-key"),
                **request.query_params,
            }
        )
        if self.api_key and request.headers.get("x-api-key") != self.api_key:
            return JSONResponse({"detail": "Api key is required as header X-Api-Key."}, 401)
        return None

    async def submit(self, request: Request) -> JSONResponse:
        refused = self._refused(request)
        if refused:
            return refused
        async with request.form() as form:
            upload = form["files"]
            data = await upload.read()  # type: ignore[union-attr]
            to_formats = form.getlist("to_formats")
        self.requests[-1].update(filename=upload.filename, to_formats=to_formats)  # type: ignore[union-attr]
        task_id = str(uuid.uuid4())
        try:
            md, status = docling_markdown(data), "success"
        except (zipfile.BadZipFile, KeyError):
            md, status = None, "failure"
        self.tasks[task_id] = {"polls": 0, "md": md, "status": status, "name": upload.filename}  # type: ignore[union-attr]
        return JSONResponse(
            {
                "task_id": task_id,
                "task_type": "convert",
                "task_status": "pending",
                "task_position": 1,
                "task_meta": None,
            }
        )

    async def poll(self, request: Request) -> JSONResponse:
        refused = self._refused(request)
        if refused:
            return refused
        task_id = request.path_params["task_id"]
        task = self.tasks.get(task_id)
        if task is None:
            return JSONResponse({"detail": "Task not found."}, 404)
        task["polls"] += 1
        done = task["polls"] >= self.polls
        status = task["status"] if done else "started"
        return JSONResponse(
            {
                "task_id": task_id,
                "task_type": "convert",
                "task_status": status,
                "task_position": None,
                "task_meta": None,
            }
        )

    async def result(self, request: Request) -> JSONResponse:
        refused = self._refused(request)
        if refused:
            return refused
        task = self.tasks[request.path_params["task_id"]]
        if task["status"] == "failure":
            return JSONResponse(
                {
                    "document": {"filename": task["name"], "md_content": None},
                    "status": "failure",
                    "errors": [
                        {
                            "component_type": "document_backend",
                            "module_name": "DoclingParseDocumentBackend",
                            "error_message": "Input document is not valid.",
                        }
                    ],
                    "processing_time": 0.1,
                    "timings": {},
                }
            )
        return JSONResponse(
            {
                "document": {
                    "filename": task["name"],
                    "md_content": task["md"],
                    "json_content": None,
                    "html_content": None,
                    "text_content": None,
                    "doctags_content": None,
                },
                "status": "success",
                "errors": [],
                "processing_time": 1.5,
                "timings": {},
            }
        )


@pytest.fixture
def docling() -> Any:
    stand_in = StandIn(api_key="docling-key")
    with ServerThread(stand_in.app, lifespan="off") as server:
        stand_in.url = server.base  # type: ignore[attr-defined]
        yield stand_in


def test_the_book_goes_to_docling_and_its_markdown_is_imported(docling: Any) -> None:
    server = DoclingServer(docling.url, "docling-key", timeout=60)
    work = read_docling(NIEBLA, server)
    assert (work.title, work.lang) == ("Niebla (nivola)", "es")
    assert [s.title for s in work.sections()] == [
        "PRÓLOGO", "POST-PRÓLOGO", "I", "II", "III", "ORACIÓN FÚNEBRE POR MODO DE EPÍLOGO",
    ]  # fmt: skip
    assert work.sections()[2].body.startswith("Al aparecer Augusto")
    assert "<!-- image -->" not in "".join(s.body for s in work.sections())
    assert work.notes == ["left out the title page before the first heading (1 paragraphs)"]
    # the async route: submit, poll with `wait` until done, fetch; the key on every request
    paths = [re.sub(r"/[0-9a-f-]{36}$", "/ID", r["path"]) for r in docling.requests]
    assert paths == [
        "/v1/convert/file/async",
        "/v1/status/poll/ID",
        "/v1/status/poll/ID",
        "/v1/result/ID",
    ]
    assert {r["key"] for r in docling.requests} == {"docling-key"}
    assert docling.requests[0]["filename"] == "unamuno-niebla.docx"
    assert docling.requests[0]["to_formats"] == ["md"]
    assert all(float(r["wait"]) > 0 for r in docling.requests[1:3])


def test_cli_reads_the_server_from_the_settings(
    docling: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GLOSSATOR_DOCLING_URL", docling.url)
    monkeypatch.setenv("GLOSSATOR_DOCLING_API_KEY", "docling-key")
    dest = tmp_path / "niebla"
    result = CliRunner().invoke(
        main, ["corpus", "import", str(NIEBLA), str(dest), "--format", "docling"]
    )
    assert result.exit_code == 0, result.output
    assert "imported 1 work(s), 0 parts, 5 chapters, 1 pieces" in result.stdout


@pytest.mark.parametrize(
    ("server_of", "make", "message"),
    [
        (
            lambda url: None,
            None,
            "--format docling needs a docling-serve: set GLOSSATOR_DOCLING_URL",
        ),
        (
            lambda url: DoclingServer(url, "wrong"),
            None,
            "Docling refused the request (HTTP 401): set GLOSSATOR_DOCLING_API_KEY",
        ),
        (
            lambda url: DoclingServer("http://127.0.0.1:9"),
            None,
            "cannot reach Docling at http://127.0.0.1:9",
        ),
        (
            lambda url: DoclingServer(url, "docling-key"),
            b"not a document",
            "Docling could not convert it (Input document is not valid.)",
        ),
    ],
)
def test_errors_are_one_line_and_nothing_is_written(
    docling: Any, tmp_path: Path, server_of: Any, make: bytes | None, message: str
) -> None:
    src = NIEBLA
    if make is not None:
        src = tmp_path / "broken.pdf"
        src.write_bytes(make)
    with pytest.raises(ImportSourceError, match=re.escape(message)):
        read_docling(src, server_of(docling.url))


def test_a_slow_conversion_times_out_in_one_line(docling: Any) -> None:
    docling.polls = 10_000  # never done
    with pytest.raises(
        ImportSourceError, match=r"Docling did not finish within 2 s .*GLOSSATOR_DOCLING_TIMEOUT"
    ):
        read_docling(NIEBLA, DoclingServer(docling.url, "docling-key", timeout=2))


def test_without_a_server_the_cli_says_how_to_set_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GLOSSATOR_DOCLING_URL", raising=False)
    dest = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["corpus", "import", str(NIEBLA), str(dest), "--format", "docling"]
    )
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1
    assert "set GLOSSATOR_DOCLING_URL (e.g. http://127.0.0.1:5001" in result.output
    assert not dest.exists()
