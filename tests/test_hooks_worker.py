"""The indexing job on a bare repository and a real PostgreSQL (no HTTP, no queue).

The indexer is the real `indexer.indexing.run.index` with recording fakes for the
embedder and summarizer; what is tested here is the job's own logic: diff,
commit-back, compare-and-swap, load, record, repair after a crash.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pygit2
import pytest

from gitserver.repos import RepoStore
from hooks.commitback import GitCommitBack, commit_changes, move_ref
from hooks.gitsource import GitTreeSource
from hooks.job import BranchIndexer
from hooks.loading import RowLoader, changed_files
from hooks.reuse import IndexFn, ReusingIndexer, pipeline_index
from indexer.corpus.source import Changes, MemorySource
from tests.gitserver_support import commit_all, git, write_files
from tests.plugins.corpus import make_small_corpus


def branch_indexer(
    store: Any, pool: Any, embedder: Any, summarizer: Any, index_fn: IndexFn | None = None
) -> BranchIndexer:
    """The job as glossator.worker composes it; `index_fn`: the server's indexer by default."""
    return BranchIndexer(
        store,
        ReusingIndexer(embedder, summarizer, index_fn or pipeline_index()),
        RowLoader(pool),
        GitCommitBack(store),
    )


@pytest.fixture
def setup(tmp_path: Path, database: Any, fake_embedder: Any, fake_summarizer: Any):
    store = RepoStore(tmp_path / "repos", data_dir=tmp_path / "data")
    bare = store.create("livre")
    work = make_small_corpus(tmp_path / "work", 3)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "corpus")
    git("push", "-q", str(bare), "main", cwd=work, env={"GLOSSATOR_DATA_DIR": str(tmp_path)})
    indexer = branch_indexer(store, database.pool, fake_embedder, fake_summarizer)
    return store, bare, work, indexer, database


def rows_by_file(database: Any) -> dict[str, int]:
    with database.pool.connection() as conn:
        return dict(
            conn.execute(
                "SELECT source_file, count(*) FROM hierarchical_content_nodes"
                " WHERE repository = 'livre' AND branch = 'main' GROUP BY source_file"
            ).fetchall()
        )


def test_commit_changes_and_cas(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "r.git"), bare=True)
    sig = pygit2.Signature("t", "t@example.org")
    tree = repo.TreeBuilder().write()
    base = str(repo.create_commit("refs/heads/main", sig, sig, "base", tree, []))
    changes = Changes()
    changes.write("a/b/c.md", b"hello\n")
    new = commit_changes(repo, base, changes, message="m")
    assert new is not None
    assert GitTreeSource.at(repo, new).read("a/b/c.md") == b"hello\n"
    assert commit_changes(repo, new, changes, message="m") is None  # nothing to change
    other = commit_changes(repo, base, MemoryChanges({"x.md": b"x"}), message="o")
    assert other is not None
    assert move_ref(tmp_path / "r.git", "main", new, base, reason="t")
    assert not move_ref(tmp_path / "r.git", "main", other, base, reason="t")  # lost the race
    assert str(repo.references["refs/heads/main"].target) == new
    diff = changed_files(repo, base, new)
    assert diff.written == {"a/b/c.md"} and not diff.removed


def MemoryChanges(files: dict[str, bytes]) -> Changes:
    c = Changes()
    for k, v in files.items():
        c.write(k, v)
    return c


def test_gitsource_matches_memory_source(tmp_path: Path) -> None:
    work = make_small_corpus(tmp_path / "w", 2)
    git("init", "-q", "-b", "main", str(work))
    head = commit_all(work, "c")
    repo = pygit2.Repository(str(work))
    src = GitTreeSource.at(repo, head)
    files = {p: (work / p).read_bytes() for p in git("ls-files", cwd=work).stdout.split()}
    mem = MemorySource(files)
    assert list(src.paths()) == mem.paths()
    for p in mem.paths():
        assert src.read(p) == mem.read(p) and src.exists(p)
    assert not src.exists("corpus/nope.md")
    with pytest.raises(FileNotFoundError):
        src.read("corpus/nope.md")
    with pytest.raises(ValueError):
        src.read("../etc/passwd")


def test_first_job_commits_back_loads_and_is_idempotent(setup: Any) -> None:
    store, _bare, _work, indexer, database = setup
    tip = store.branches("livre")["main"]
    outcome = indexer.run("livre", "main", job_id=7)
    assert outcome.committed and outcome.indexed == outcome.committed
    repo = store.open("livre")
    commit = repo[outcome.committed]
    assert commit.parents[0].id == pygit2.Oid(hex=tip)
    assert commit.author.name == "Glossator" and "Glossator-Job: 7" in commit.message
    files = set(GitTreeSource.at(repo, outcome.committed).paths())
    mds = {p for p in files if p.startswith("corpus/") and p.endswith(".md")}
    assert mds and all(p + ".jsonl" in files for p in mds)
    assert set(rows_by_file(database)) == mds
    # running again on the commit-back finds nothing to do: no loop
    again = indexer.run("livre", "main", job_id=8)
    assert again.committed is None and again.note == "already indexed"
    assert store.branches("livre")["main"] == outcome.committed


def test_an_attempt_without_its_lease_writes_nothing(setup: Any) -> None:
    """A lease the queue does not hold (the job put back and run by another attempt, or
    gone): the job stops at its first write, TakenOver, no row and no move (hooks.lease)."""
    from hooks.lease import Lease, TakenOver
    from hooks.queue import ensure_schema

    store, _bare, _work, indexer, database = setup
    ensure_schema(database.conninfo)
    tip = store.branches("livre")["main"]
    with pytest.raises(TakenOver, match="stops without writing"):
        indexer.run("livre", "main", job_id=7, lease=Lease(7, 0, database.conninfo))
    assert rows_by_file(database) == {}
    assert store.branches("livre")["main"] == tip
    assert indexer.loader.indexed_state("livre", "main") == (None, [])


def test_edit_delete_and_branch_deletion(setup: Any, fake_embedder: Any) -> None:
    store, bare, work, indexer, database = setup
    first = indexer.run("livre", "main", job_id=1)
    git("pull", "-q", str(bare), "main", cwd=work)
    assert git("rev-parse", "HEAD", cwd=work).stdout.strip() == first.committed
    chapters = sorted(p.parent for p in work.glob("corpus/*/*/*/source.md"))
    edited = chapters[1] / "source.md"
    text = edited.read_text()
    write_files(work, {str(edited.relative_to(work)): text + "\nUn paragraphe ajouté.\n"})
    commit_all(work, "edit")
    git("push", "-q", str(bare), "main", cwd=work)
    fake_embedder.history.clear()
    second = indexer.run("livre", "main", job_id=2)
    rel = edited.relative_to(work).as_posix()
    assert rel in second.loaded
    assert second.embedded >= 1
    embedded_texts = [t for texts, _ in fake_embedder.history for t in texts]
    assert any("Un paragraphe ajouté." in t for t in embedded_texts)
    diff = changed_files(store.open("livre"), first.committed, second.committed)
    touched = {p for p in diff.written if p.endswith(".jsonl")}
    assert rel + ".jsonl" in touched
    assert all(p.endswith(("summary.md.jsonl", "source.md.jsonl")) for p in touched)

    # delete a chapter: its rows go
    git("pull", "-q", str(bare), "main", cwd=work)
    gone = chapters[2]
    git("rm", "-q", "-r", str(gone.relative_to(work)), cwd=work)
    commit_all(work, "delete")
    git("push", "-q", str(bare), "main", cwd=work)
    indexer.run("livre", "main", job_id=3)
    assert not any(f.startswith(gone.relative_to(work).as_posix()) for f in rows_by_file(database))

    # delete the branch: every row of it goes, and its record
    repo = store.open("livre")
    repo.references.delete("refs/heads/main")
    outcome = indexer.run("livre", "main", job_id=4)
    assert outcome.note.startswith("branch deleted") and rows_by_file(database) == {}


def test_a_push_during_indexing_wins_and_is_indexed(setup: Any, database: Any) -> None:
    """The commit-back's compare-and-swap loses to a push made while the job indexed:
    the user's commit stays the tip, the job still loads the rows of what it indexed
    (its commit-back, on no branch) and says the branch moved; the next job indexes
    the pushed tip."""
    store, bare, work, indexer, _database = setup
    real_index = indexer.indexer.index_fn
    pushed: list[str] = []

    def index_and_push_meanwhile(source: Any, **kwargs: Any) -> Any:
        result = real_index(source, **kwargs)
        if not pushed:  # a user pushes while the first pass is computing
            extra = work / "corpus" / "notes.txt"
            extra.write_text("une note\n")
            pushed.append(commit_all(work, "user commit during indexing"))
            git("push", "-q", str(bare), "main", cwd=work)
        return result

    indexer.indexer.index_fn = index_and_push_meanwhile
    first = indexer.run("livre", "main", job_id=11)
    assert first.races == 1 and first.moved
    assert store.branches("livre")["main"] == pushed[0]  # never overwritten
    assert first.indexed == first.committed and first.indexed != pushed[0]
    assert rows_by_file(database)  # the job finished the tip it had
    second = indexer.run("livre", "main", job_id=12)
    repo = store.open("livre")
    tip = store.branches("livre")["main"]
    assert not second.moved and tip == second.indexed == second.committed
    assert repo.descendant_of(tip, pushed[0])  # the user's commit was not overwritten
    assert repo[tip].parents[0].id == pygit2.Oid(hex=pushed[0])


def test_the_commit_back_yields_to_a_push_under_way(
    setup: Any, database: Any, monkeypatch: Any
) -> None:
    """A push being received on the branch (the server's marker, core.receiving) holds
    the commit-back: when that push lands, the job moves nothing (the push is never
    refused by it), loads the rows of what it indexed and leaves the commit-back to the
    push's job; a marker for another branch holds nothing. No timing: the seam lands the
    push on the job's first look at the markers, and the wait bound is far away."""
    import hooks.commitback
    from core import receiving

    store, bare, work, indexer, _database = setup
    indexer.commit_back.wait_s = 3600.0
    tip = store.branches("livre")["main"]
    other = receiving.begin(bare)
    other.name_refs([("refs/heads/draft", "1" * 40)])
    assert receiving.pushes_under_way(bare, "main", tip) == 0
    marker = receiving.begin(bare)  # `*`: its refs are not known yet
    assert receiving.pushes_under_way(bare, "main", tip) == 1
    marker.name_refs([("refs/heads/main", "2" * 40)])
    pushed: list[str] = []
    looks: list[int] = []

    def push_lands(path: Path, branch: str, tip: str) -> int:
        under_way = receiving.pushes_under_way(path, branch, tip)
        looks.append(under_way)
        if not pushed:
            (work / "corpus" / "notes.txt").write_text("une note\n")
            pushed.append(commit_all(work, "a push under way"))
            git("push", "-q", str(bare), "main", cwd=work)
        return under_way

    monkeypatch.setattr(hooks.commitback, "pushes_under_way", push_lands)
    first = indexer.run("livre", "main", job_id=21)
    assert looks[0] == 1 and first.deferred == 1 and first.races == 0 and first.moved
    assert store.branches("livre")["main"] == pushed[0]  # the commit-back moved nothing
    assert first.indexed == first.committed != pushed[0] and rows_by_file(database)

    # that push's job: its receive has ended, and landed (its commit is the tip): no
    # writer is coming back, the commit-back goes ahead
    marker.name_refs([("refs/heads/main", pushed[0])])
    marker.finish()
    assert receiving.pushes_under_way(bare, "main", pushed[0]) == 0
    monkeypatch.undo()
    second = indexer.run("livre", "main", job_id=22)
    tip = store.branches("livre")["main"]
    assert second.deferred == 0 and not second.moved and tip == second.indexed
    assert store.open("livre")[tip].parents[0].id == pygit2.Oid(hex=pushed[0])
    other.remove()
    assert [p.name.endswith(receiving.ENDED) for p in (bare / receiving.DIR).iterdir()] == [True]


def test_the_commit_back_waits_for_a_refused_writer_then_goes_ahead(
    setup: Any, monkeypatch: Any
) -> None:
    """A push under way ends refused: its writer is pulling to push again, so the
    commit-back still waits (QUIET_S); once that is over, and no push came, it moves
    the branch. Markers older than their bounds (a dead server's) hold nothing."""
    import hooks.commitback
    from core import receiving

    store, bare, _work, indexer, _database = setup
    indexer.commit_back.wait_s = 3600.0
    before = store.branches("livre")["main"]
    stale = receiving.begin(bare)
    old = stale.path.stat().st_mtime - receiving.STALE_S - 1
    os.utime(stale.path, (old, old))
    assert receiving.pushes_under_way(bare, "main", before) == 0
    marker = receiving.begin(bare)
    marker.name_refs([("refs/heads/main", "3" * 40)])
    looks: list[int] = []

    def refused_then_quiet(path: Path, branch: str, tip: str) -> int:
        if len(looks) == 1:  # git refused that push: it has ended, not landed
            marker.finish()
        now = None
        if len(looks) == 2:  # QUIET_S later (no sleeping: the clock is an argument)
            now = time.time() + receiving.QUIET_S + 1
        under_way = receiving.pushes_under_way(path, branch, tip, now=now)
        looks.append(under_way)
        return under_way

    monkeypatch.setattr(hooks.commitback, "pushes_under_way", refused_then_quiet)
    outcome = indexer.run("livre", "main", job_id=31)
    assert looks == [1, 1, 0]  # under way, ended refused, then quiet
    assert outcome.deferred == 0 and outcome.races == 0 and not outcome.moved
    assert store.branches("livre")["main"] == outcome.committed != before
    assert receiving.clear(bare) == 2  # the stale one and the ended one, as serve does


def test_crash_in_the_load_is_repaired(setup: Any, monkeypatch: Any) -> None:
    store, bare, work, indexer, database = setup
    first = indexer.run("livre", "main", job_id=1)
    git("pull", "-q", str(bare), "main", cwd=work)
    chapter = sorted(work.glob("corpus/*/*/*/source.md"))[0]
    chapter.write_text(chapter.read_text() + "\nParagraphe du crash.\n")
    commit_all(work, "edit")
    git("push", "-q", str(bare), "main", cwd=work)
    rows_before = rows_by_file(database)

    import hooks.loading

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("killed during the load")

    monkeypatch.setattr(hooks.loading, "sync_files", crash)
    with pytest.raises(RuntimeError):
        indexer.run("livre", "main", job_id=2)
    pushed = store.branches("livre")["main"]
    assert pushed != first.indexed  # the user's push, and no commit-back: rows come first
    assert store.open("livre")[pushed].author.name != "Glossator"
    # the final load's transaction never committed; the edited file's rows came before its
    # vectors (hooks.landing), whole: its new paragraph is searchable already
    rel = chapter.relative_to(work).as_posix()
    assert rows_by_file(database) == {**rows_before, rel: rows_before[rel] + 1}
    assert indexer.loader.indexed_state("livre", "main")[0] == first.indexed

    monkeypatch.undo()
    repaired = indexer.run("livre", "main", job_id=3)
    assert repaired.committed is not None and not repaired.moved
    assert repaired.indexed == repaired.committed == store.branches("livre")["main"]
    assert store.open("livre")[repaired.committed].parents[0].id == pygit2.Oid(hex=pushed)
    assert rel in repaired.loaded
    with database.pool.connection() as conn:
        (n,) = conn.execute(
            "SELECT count(*) FROM hierarchical_content_nodes WHERE source_file = %s"
            " AND content LIKE '%%Paragraphe du crash.%%'",
            (rel,),
        ).fetchone()
    assert n == 1


def test_crash_between_the_load_and_the_commit_back_is_repaired(
    setup: Any, monkeypatch: Any
) -> None:
    """Rows loaded at the commit-back, the ref never moved: the next job makes its
    commit-back again on the same tip, loads the difference and moves the branch."""
    import hooks.commitback

    store, _bare, _work, indexer, database = setup

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("killed before the ref moved")

    monkeypatch.setattr(hooks.commitback, "move_ref", crash)
    with pytest.raises(RuntimeError):
        indexer.run("livre", "main", job_id=1)
    pushed = store.branches("livre")["main"]
    loaded = indexer.loader.indexed_state("livre", "main")[0]
    assert loaded is not None and loaded != pushed and rows_by_file(database)
    monkeypatch.undo()
    repaired = indexer.run("livre", "main", job_id=2)
    repo = store.open("livre")
    assert repaired.indexed == repaired.committed == store.branches("livre")["main"]
    assert repo[repaired.committed].parents[0].id == pygit2.Oid(hex=pushed)
    assert not repaired.moved and rows_by_file(database)


def test_renamed_chapter_moves_its_rows(setup: Any) -> None:
    _store, bare, work, indexer, database = setup
    indexer.run("livre", "main", job_id=1)
    git("pull", "-q", str(bare), "main", cwd=work)
    old = sorted(p.parent for p in work.glob("corpus/*/*/*/source.md"))[1]
    new = old.with_name(old.name + "-renomme")
    git("mv", str(old.relative_to(work)), str(new.relative_to(work)), cwd=work)
    commit_all(work, "rename a chapter folder")
    git("push", "-q", str(bare), "main", cwd=work)
    outcome = indexer.run("livre", "main", job_id=2)
    old_rel, new_rel = old.relative_to(work).as_posix(), new.relative_to(work).as_posix()
    assert f"{old_rel}/source.md" in outcome.deleted
    assert f"{new_rel}/source.md" in outcome.loaded
    files = rows_by_file(database)
    assert f"{new_rel}/source.md" in files and f"{new_rel}/summary.md" in files
    assert not any(f.startswith(old_rel + "/") for f in files)
