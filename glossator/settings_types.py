"""How a settings variable's text becomes a typed value, and how secrets are shown.

Each parser also takes the value itself (`Settings.replace` passes Python values);
a ValueError's message is what `glossator config` users read after the variable's
name, so it says what is expected.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args, overload

from pydantic import AfterValidator, BeforeValidator, SecretStr


def _strip(value: object) -> object:
    return value.strip() if isinstance(value, str) else value


def _bool(value: object) -> object:
    if not isinstance(value, str):
        return value
    text = value.strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off", ""}:  # set but empty: the safe side, off
        return False
    raise ValueError("expected true or false")


def _path(value: object) -> object:
    return Path(value.strip()).expanduser() if isinstance(value, str) else value


def _tokens(value: object) -> object:
    if isinstance(value, str):
        return tuple(t.strip() for t in value.split(",") if t.strip())
    return value


N = TypeVar("N", int, float)


def _positive(value: N) -> N:
    if value <= 0:
        raise ValueError("expected a positive number")
    return value


def _not_negative(value: int) -> int:
    if value < 0:
        raise ValueError("expected 0 or a positive whole number")
    return value


def _nice(value: int) -> int:
    if not 0 <= value <= 19:  # setpriority's range for an added niceness
        raise ValueError("must be a whole number from 0 to 19")
    return value


def one_of(choices: Any, fold: Callable[[str], str] = str.strip) -> BeforeValidator:
    names = get_args(choices)

    def check(value: object) -> object:
        if not isinstance(value, str):
            return value
        text = fold(value)
        if text not in names:
            raise ValueError(f"expected one of {', '.join(names)}")
        return text

    return BeforeValidator(check)


Text = Annotated[str, BeforeValidator(_strip)]
Int = Annotated[int, BeforeValidator(_strip)]
Float = Annotated[float, BeforeValidator(_strip)]
PositiveInt = Annotated[int, BeforeValidator(_strip), AfterValidator(_positive)]
PositiveFloat = Annotated[float, BeforeValidator(_strip), AfterValidator(_positive)]
Count = Annotated[int, BeforeValidator(_strip), AfterValidator(_not_negative)]
Flag = Annotated[bool, BeforeValidator(_bool)]
Dir = Annotated[Path, BeforeValidator(_path)]
Secret = Annotated[SecretStr, BeforeValidator(_strip)]
Tokens = Annotated[tuple[SecretStr, ...], BeforeValidator(_tokens)]
KeywordBackend = Literal["pg_search", "fts"]
# GLOSSATOR_KEYWORD_BACKEND values of engines since retired, read as pg_search with a
# notice (Settings.from_env): the SQL BM25 over term tables, named `sql` (and
# `postgres` in the benches), dropped by migration 034
RETIRED_KEYWORD_BACKENDS = ("sql", "postgres")
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
Niceness = Annotated[int, BeforeValidator(_strip), AfterValidator(_nice)]


@overload
def reveal(value: SecretStr) -> str: ...
@overload
def reveal(value: SecretStr | None) -> str | None: ...
@overload
def reveal(value: tuple[SecretStr, ...]) -> tuple[str, ...]: ...
def reveal(value: SecretStr | tuple[SecretStr, ...] | None) -> str | tuple[str, ...] | None:
    """A secret's text, where it is handed to what uses it (a client, a policy)."""
    if isinstance(value, tuple):
        return tuple(v.get_secret_value() for v in value)
    return None if value is None else value.get_secret_value()
