"""The credentials of a request, as git and the APIs send them.

Git speaks HTTP Basic: the user name is ignored, the password is the token; the APIs
and MCP send `Authorization: Bearer <token>`. A push (`info/refs?service=git-receive-pack`
and the POST to `git-receive-pack`) needs a push token for its repository, clone and
fetch a read (core.access, asked for every request by gitserver.boundary). Tokens are
never logged: only the outcome is.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from dataclasses import dataclass
from enum import Enum

from starlette.datastructures import Headers

REALM = "Glossator"


class Access(Enum):
    READ = "read"
    PUSH = "push"


@dataclass(frozen=True)
class Credentials:
    user: str
    token: str


def basic_credentials(headers: Headers) -> Credentials | None:
    """The HTTP Basic user and password of a request, or None when absent or garbled."""
    value = headers.get("authorization", "")
    scheme, _, param = value.partition(" ")
    if scheme.lower() != "basic" or not param:
        return None
    try:
        decoded = base64.b64decode(param.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, token = decoded.partition(":")
    if not sep:
        return None
    return Credentials(user, token)


def bearer_token(headers: Headers) -> str | None:
    scheme, _, param = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not param.strip():
        return None
    return param.strip()


def read_credentials(headers: Headers) -> Credentials | None:
    """What a read presents: an HTTP Basic password (git), else a Bearer token (APIs)."""
    credentials = basic_credentials(headers)
    bearer = bearer_token(headers)
    if credentials is None and bearer is not None:
        credentials = Credentials("", bearer)
    return credentials


def token_matches(given: str | None, allowed: tuple[str, ...] | list[str]) -> bool:
    """True when `given` equals one of `allowed`; every candidate is compared."""
    if not given:
        return False
    given_b = given.encode("utf-8")
    found = False
    for candidate in allowed:
        if candidate and hmac.compare_digest(given_b, candidate.encode("utf-8")):
            found = True
    return found


def required_access(path_rest: str, query_service: str | None) -> Access:
    """What a smart-HTTP request needs, from its path inside the repo and `?service=`."""
    if path_rest == "git-receive-pack" or query_service == "git-receive-pack":
        return Access.PUSH
    return Access.READ
