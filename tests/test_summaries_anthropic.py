"""The anthropic provider at the HTTP level: httpx2.MockTransport, no network.

anthropic 2.x runs on httpx2, so the mock client is an `httpx2.Client`. Retries are
the SDK's: a scripted failure says `retry-after-ms` (as the API may) so the SDK waits
milliseconds, and what it chose to wait is read from its own log line.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2
import pytest

from glossator.providers import get_summarizer
from glossator.settings import Settings, SettingsError
from indexer.corpus import frontmatter
from indexer.corpus.layout import read_corpus
from indexer.corpus.source import DirectorySource, OverlaySource
from indexer.indexing.summaries import generate
from indexer.providers.summarizers import (
    RefusalError,
    SummarizerError,
    SummaryInput,
    SummaryRequest,
)
from tests.plugins.corpus import make_small_corpus

if TYPE_CHECKING:  # the anthropic SDK costs ~1.8 s of CPU to import: only where a test runs
    from indexer.providers.summarizers.claude import AnthropicSummarizer

MODEL = "claude-sonnet-4-6"
KEY = "sk-ant-test-not-a-real-key"
Handler = Callable[[httpx2.Request], httpx2.Response]


def message(
    text: str = "Bastiat montre que la richesse est l'abondance.",
    *,
    stop_reason: str = "end_turn",
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": text}] if text else [],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 100, "output_tokens": 50},
    }


FAST = {"retry-after-ms": "1"}  # the SDK waits what the API asks: 1 ms, not its backoff


def error(status: int, kind: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    body = {"type": "error", "error": {"type": kind, "message": f"{kind} happened"}}
    return httpx2.Response(status, json=body, headers=FAST if headers is None else headers)


def sdk_waits(caplog: pytest.LogCaptureFixture) -> list[float]:
    """The waits the SDK announced before each retry ("Retrying request to … in 0.003 s")."""
    said = (r.getMessage() for r in caplog.records if r.name.startswith("anthropic"))
    return [float(m.group(1)) for s in said if (m := re.search(r"in ([\d.]+) seconds", s))]


class Recorder:
    """A mock transport that answers from a queue and keeps every request."""

    def __init__(self, *answers: httpx2.Response | Handler) -> None:
        self.answers = list(answers)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        return answer(request) if callable(answer) else answer

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests if r.content]


def summarizer(
    recorder: Recorder, sleeps: list[float] | None = None, **kw: Any
) -> AnthropicSummarizer:
    from indexer.providers.summarizers.claude import AnthropicSummarizer

    waits = sleeps if sleeps is not None else []
    return AnthropicSummarizer(
        MODEL,
        api_key=KEY,
        http_client=httpx2.Client(transport=httpx2.MockTransport(recorder)),
        sleep=waits.append,
        backoff_seconds=0.5,
        **kw,
    )


def request(
    path: str = "corpus/w/p/c/summary.md", text: str = "L'abondance vaut mieux."
) -> SummaryRequest:
    return SummaryRequest(
        path=path,
        level=1,
        title="Sophismes économiques > Première série > Chapitre I (Abondance, disette)",
        prompt="Résumez fidèlement.",
        inputs=(SummaryInput("Chapitre I (Abondance, disette)", text),),
        budget_tokens=300,
    )


def test_request_shape_marks_the_prompt_for_caching() -> None:
    rec = Recorder(httpx2.Response(200, json=message()))
    response = summarizer(rec).run(request())
    [sent] = rec.requests
    assert sent.method == "POST" and sent.url.path == "/v1/messages"
    assert sent.headers["authorization"] == f"Bearer {KEY}"  # the SDK 2.x sends the key so
    assert "anthropic-version" in sent.headers
    body = json.loads(sent.content)
    assert body["model"] == MODEL and body["max_tokens"] == 300 * 2 + 256
    assert body["system"] == [
        {"type": "text", "text": "Résumez fidèlement.", "cache_control": {"type": "ephemeral"}}
    ]
    [user] = body["messages"]
    assert user["role"] == "user" and "L'abondance vaut mieux." in user["content"]
    assert "Chapitre I (Abondance, disette)" in user["content"]
    assert response.text == "Bastiat montre que la richesse est l'abondance."


def test_usage_counts_cache_writes_and_reads_at_their_price() -> None:
    usage = {
        "input_tokens": 100,
        "output_tokens": 50,
        "cache_creation_input_tokens": 1000,
        "cache_read_input_tokens": 2000,
    }
    rec = Recorder(httpx2.Response(200, json=message(usage=usage)))
    response = summarizer(rec).run(request())
    assert (response.input_tokens, response.output_tokens, response.calls) == (3100, 50, 1)
    # sonnet 4.6: $3 in, $3.75 cache write, $0.30 cache read, $15 out per million
    expected = (100 * 3 + 1000 * 3.75 + 2000 * 0.3 + 50 * 15) / 1e6
    assert response.cost_usd == pytest.approx(expected)


def test_the_sdk_retries_429_529_and_500_honouring_retry_after(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="anthropic")
    sleeps: list[float] = []
    rec = Recorder(
        error(429, "rate_limit_error", {"retry-after-ms": "3"}),
        error(529, "overloaded_error", {"retry-after-ms": "2"}),
        error(500, "api_error"),
        httpx2.Response(200, json=message()),
    )
    response = summarizer(rec, sleeps).run(request())
    assert len(rec.requests) == 4 and response.text
    assert sdk_waits(caplog) == [0.003, 0.002, 0.001]  # what the API asked, each time
    assert sleeps == []  # the base class did not retry on top


def test_gives_up_after_max_attempts_naming_the_file() -> None:
    rec = Recorder(*[error(529, "overloaded_error") for _ in range(3)])
    with pytest.raises(SummarizerError) as info:
        summarizer(rec, max_attempts=3).run(request("corpus/w/p/c/summary.md"))
    assert len(rec.requests) == 3
    assert str(info.value).startswith("corpus/w/p/c/summary.md: Anthropic API 529 overloaded_error")
    assert "gave up after 3 attempts" in str(info.value)


def test_bad_key_is_not_retried_and_never_shown() -> None:
    rec = Recorder(error(401, "authentication_error"))
    with pytest.raises(SummarizerError) as info:
        summarizer(rec).run(request())
    assert len(rec.requests) == 1
    assert "check ANTHROPIC_API_KEY" in str(info.value) and KEY not in str(info.value)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (message("Je ne peux pas.", stop_reason="refusal"), "refusal"),
        (message(""), "no text"),
    ],
)
def test_refusal_or_empty_answer_is_an_error(answer: dict[str, Any], expected: str) -> None:
    rec = Recorder(httpx2.Response(200, json=answer))
    with pytest.raises(RefusalError, match=expected):
        summarizer(rec).run(request())


def test_missing_key_says_how_to_fix_it() -> None:
    settings = Settings.from_env({"GLOSSATOR_SUMMARIZER": f"anthropic:{MODEL}"})
    with pytest.raises(SettingsError, match="export ANTHROPIC_API_KEY"):
        get_summarizer(settings)
    with pytest.raises(SettingsError, match="needs a model"):
        get_summarizer(settings.replace(summarizer="anthropic", anthropic_api_key=KEY))
    ok = get_summarizer(settings.replace(anthropic_api_key=KEY, batch_threshold=7))
    from indexer.providers.summarizers.claude import AnthropicSummarizer

    assert isinstance(ok, AnthropicSummarizer) and ok.batch_threshold == 7


def batch_json(status: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": "msgbatch_01",
        "type": "message_batch",
        "processing_status": status,
        "request_counts": {
            "processing": 3,
            "succeeded": 0,
            "errored": 0,
            "canceled": 0,
            "expired": 0,
        },
        "created_at": "2026-11-30T00:00:00Z",
        "expires_at": "2026-12-01T00:00:00Z",
        "results_url": None,
        **extra,
    }


def test_batches_flow_create_poll_results() -> None:
    results_url = "https://api.anthropic.com/v1/messages/batches/msgbatch_01/results"
    ended = batch_json("ended", results_url=results_url, ended_at="2026-11-30T01:00:00Z")
    lines = [
        {
            "custom_id": "summary-00002",
            "result": {"type": "succeeded", "message": message("Trois.")},
        },
        {"custom_id": "summary-00000", "result": {"type": "succeeded", "message": message("Un.")}},
        {
            "custom_id": "summary-00001",
            "result": {
                "type": "errored",
                "error": {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": "bad"},
                },
            },
        },
    ]
    jsonl = "".join(json.dumps(line) + "\n" for line in lines).encode()
    rec = Recorder(
        error(529, "overloaded_error"),  # create, overloaded: retried by the SDK
        httpx2.Response(200, json=batch_json("in_progress")),  # create
        httpx2.Response(200, json=batch_json("in_progress")),  # poll
        httpx2.Response(200, json=ended),  # poll
        httpx2.Response(200, json=ended),  # results() looks the batch up again
        httpx2.Response(200, content=jsonl, headers={"content-type": "application/binary"}),
    )
    sleeps: list[float] = []
    s = summarizer(rec, sleeps, batch_threshold=2, batch_poll_seconds=10.0)
    reqs = [request(f"corpus/w/p/c{i}/summary.md") for i in range(3)]
    done: list[str] = []
    out = s.run_many(reqs, progress=lambda r: done.append(r.path))

    create = rec.requests[1]
    assert (create.method, create.url.path) == ("POST", "/v1/messages/batches")
    sent = json.loads(create.content)["requests"]
    assert [r["custom_id"] for r in sent] == ["summary-00000", "summary-00001", "summary-00002"]
    assert sent[0]["params"]["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert [r.url.path for r in rec.requests[2:5]] == ["/v1/messages/batches/msgbatch_01"] * 3
    assert rec.requests[5].url == results_url
    assert sleeps == [10.0]  # one poll interval (the 529's wait was the SDK's)

    first = out["corpus/w/p/c0/summary.md"]
    assert not isinstance(first, Exception) and first.text == "Un."
    assert first.cost_usd == pytest.approx((100 * 3 + 50 * 15) / 1e6 / 2)  # batches: half price
    assert isinstance(out["corpus/w/p/c1/summary.md"], SummarizerError)
    assert "invalid_request_error" in str(out["corpus/w/p/c1/summary.md"])
    assert out["corpus/w/p/c2/summary.md"].text == "Trois."  # type: ignore[union-attr]
    assert sorted(done) == sorted(r.path for r in reqs)


def test_batch_that_never_ends_is_cancelled_and_reported() -> None:
    rec = Recorder(
        httpx2.Response(200, json=batch_json("in_progress")),
        *[httpx2.Response(200, json=batch_json("in_progress")) for _ in range(3)],
        httpx2.Response(200, json=batch_json("canceling")),  # cancel
    )
    s = summarizer(rec, batch_threshold=1, batch_poll_seconds=0.0, batch_max_wait=0.0)
    out = s.run_many([request("a/summary.md"), request("b/summary.md")])
    assert all(isinstance(v, SummarizerError) for v in out.values())
    assert "cancelled" in str(out["a/summary.md"])
    assert rec.requests[-1].url.path == "/v1/messages/batches/msgbatch_01/cancel"


def test_generate_records_tokens_and_cost_in_frontmatter(tmp_path: Path) -> None:
    root = make_small_corpus(tmp_path / "c", 1)
    rec = Recorder(*[httpx2.Response(200, json=message(f"Résumé {i}.")) for i in range(3)])
    source = DirectorySource(root)
    corpus = read_corpus(source)
    result = generate(corpus, OverlaySource(source, corpus.changes), summarizer(rec))
    assert result.calls == 3 and result.usage.input_tokens == 300
    assert result.usage.cost_usd == pytest.approx(3 * (100 * 3 + 50 * 15) / 1e6)
    assert "3 calls, 300 input tokens, 150 output tokens, $0.0032" in result.line("anthropic")
    path = "corpus/sophismes-economiques/summary.md"
    doc = frontmatter.read(path, result.changes[path] or b"")
    gen = doc.meta["generator"]
    assert (gen["provider"], gen["model"]) == ("anthropic", MODEL)
    assert (gen["input_tokens"], gen["output_tokens"]) == (100, 50)
    assert gen["cost_usd"] == pytest.approx((100 * 3 + 50 * 15) / 1e6)
    assert doc.body == "Résumé 2.\n"


def test_timeout_is_retried_then_reported() -> None:
    def timeout(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("read timed out", request=request)

    # a timeout has no retry-after: the SDK's own first backoff (at most 0.5 s) each time
    rec = Recorder(timeout, httpx2.Response(200, json=message("Après un délai.")))
    assert summarizer(rec).run(request()).text == "Après un délai."
    assert len(rec.requests) == 2

    rec = Recorder(timeout, timeout)
    with pytest.raises(SummarizerError, match=r"timed out \(gave up after 2 attempts\)"):
        summarizer(rec, max_attempts=2).run(request())
