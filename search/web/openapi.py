"""The HTTP API described as OpenAPI 3.1 (served at /openapi.json; /docs points at it).

    spec = describe(version, extra={"/api/jobs": {...}})

Built from the same table that checks each request's query parameters
(search.web.params.PARAMS), so a parameter the API takes is one it documents; the
composition root adds the server's own routes (jobs, repositories, health).
tests/test_http_face.py checks it against the routes the server answers.
"""

from __future__ import annotations

from typing import Any

from search.web.params import PARAMS, Param

ERROR = {
    "description": "one sentence saying what to send instead",
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {"error": {"type": "string"}},
                "required": ["error"],
            }
        }
    },
}
JSON_OK = {"description": "the MCP tool's structured content", "content": {"application/json": {}}}
ERRORS = {
    "400": ERROR | {"description": "a bad or unknown argument"},
    "401": ERROR | {"description": "reads need a token (GLOSSATOR_ANONYMOUS_READ=false)"},
    "404": ERROR | {"description": "an unknown repository, work, file or chunk"},
    "503": ERROR | {"description": "the database does not answer"},
}
# the API's routes, by their documented path: (summary, the MCP tool it mirrors)
API: dict[str, str] = {
    "/api/search": "Hybrid search: the MCP `search` tool",
    "/api/context": "Cited passages for a question within a token budget: the MCP `context` tool",
    "/api/outline": "Works, parts and chapters: the MCP `outline` tool",
    "/api/nodes/{repository}/{path}": "A file, or one chunk and its neighbours: `get_node`",
    "/api/nodes/{repository}/{path}/parent": "The node a file hangs from: `get_parent`",
    "/api/nodes/{repository}/{path}/children": "The nodes below a file: `get_children`",
}
PATH_PARAMS = {
    "repository": "the repository, as `glossator repo create` named it",
    "path": "a repository-relative Markdown file, e.g. corpus/<work>/<chapter>/source.md",
}


def parameter(p: Param, where: str = "query") -> dict[str, Any]:
    out: dict[str, Any] = {"name": p.name, "in": where, "schema": {"type": p.kind}}
    if p.help:
        out["description"] = p.help
    if p.required or where == "path":
        out["required"] = True
    return out


def _path_params(path: str) -> list[dict[str, Any]]:
    return [
        parameter(Param(name, "string", help), "path")
        for name, help in PATH_PARAMS.items()
        if "{" + name + "}" in path
    ]


def get(summary: str, params: list[dict[str, Any]], ok: dict[str, Any]) -> dict[str, Any]:
    """One GET operation: its parameters, its answer and the API's errors."""
    return {"get": {"summary": summary, "parameters": params, "responses": {"200": ok, **ERRORS}}}


def describe(version: str, extra: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The OpenAPI document of the JSON API, with `extra` path items added as they are."""
    paths: dict[str, Any] = {
        path: get(summary, _path_params(path) + [parameter(p) for p in PARAMS[path]], JSON_OK)
        for path, summary in API.items()
    }
    paths.update(extra or {})
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Glossator",
            "version": version,
            "description": "Search and read books indexed by Glossator: the MCP tools' answers "
            "as JSON (docs/web.md). Reads follow clone's policy: a read token as "
            "`Authorization: Bearer <token>` when anonymous reads are off.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": dict(sorted(paths.items())),
    }
