"""Who may do what: the one access policy every face asks (git, `/api`, the web reader,
MCP over HTTP, the jobs pages).

    policy = AccessPolicy(anonymous_read=False, env_grants=…, stored=tokens.lookup)
    grant = policy.grant(token_digest(token))        # None: not a token of this server
    caller = policy.caller(grant, mcp=False)
    caller.may_read("mybook"), caller.may_push("mybook"), caller.readable

A token carries a role and a scope. The roles nest (`read` < `push` < `admin`, which
also creates repositories); the scope is every repository or a list of names, and a
token never reads, pushes or ranks rows outside it. A push token reads what it may
push (git fetches first). With anonymous reads on, a token's scope bounds only pushes.
Tokens come from the `GLOSSATOR_*_TOKENS` variables and from those the CLI stores in
PostgreSQL (`glossator token create`), known by their sha256 digest: they are
high-entropy secrets, so a plain hash is enough, and the variables' digests are
compared in constant time. `GLOSSATOR_MCP_TOKEN` is a read token for MCP only; when
set, MCP wants a token even while reads are open to anyone. The ASGI boundary that
asks this policy is gitserver.boundary; its decision travels in the request's scope
under CALLER_KEY (`caller_of`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

CALLER_KEY = "glossator.caller"  # where the boundary leaves the caller in an ASGI scope
TOKEN_PREFIX = "glsr_"  # a stored token's first letters: a leaked one is easy to grep for


class Role(Enum):
    READ = "read"
    PUSH = "push"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return ("read", "push", "admin").index(self.value)


@dataclass(frozen=True)
class Grant:
    """What one token may do. `repositories` None: every repository."""

    role: Role
    repositories: frozenset[str] | None = None
    label: str = "token"  # names it in logs and `doctor`: never the token itself
    mcp_only: bool = False  # GLOSSATOR_MCP_TOKEN: a read token for /mcp alone

    def covers(self, repository: str) -> bool:
        return self.repositories is None or repository in self.repositories


@dataclass(frozen=True)
class Caller:
    """Who a request is: its grant (None: anonymous) and whether reads are open to it."""

    grant: Grant | None
    open_reads: bool

    @property
    def readable(self) -> frozenset[str] | None:
        """The repositories this caller may read; None: every one."""
        if self.open_reads or (self.grant is not None and self.grant.repositories is None):
            return None
        return self.grant.repositories if self.grant is not None else frozenset()

    @property
    def reads_anything(self) -> bool:
        return self.readable is None or bool(self.readable)

    def may_read(self, repository: str) -> bool:
        readable = self.readable
        return readable is None or repository in readable

    def may_push(self, repository: str) -> bool:
        g = self.grant
        return g is not None and g.role.rank >= Role.PUSH.rank and g.covers(repository)

    @property
    def admin(self) -> bool:
        return self.grant is not None and self.grant.role is Role.ADMIN

    @property
    def anonymous(self) -> bool:
        return self.grant is None


# A process that reads the books on its own (the CLI, MCP over stdio): it could open the
# database anyway, so it reads everything.
LOCAL = Caller(Grant(Role.ADMIN, None, "local"), open_reads=True)
# A request that did not pass the boundary (a bug): reads nothing.
NOBODY = Caller(None, open_reads=False)


def caller_of(scope: Mapping[str, Any] | None) -> Caller:
    """The caller the boundary decided for an ASGI scope; LOCAL without a scope (stdio),
    NOBODY for a scope that never passed the boundary (fail closed)."""
    if scope is None:
        return LOCAL
    caller = scope.get(CALLER_KEY)
    return caller if isinstance(caller, Caller) else NOBODY


def token_digest(token: str) -> str:
    """The hex sha256 a token is known by (stored, compared, put in sessions)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh token: 32 random bytes (256 bits), URL-safe, with TOKEN_PREFIX."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class AccessUnavailable(Exception):
    """The stored tokens cannot be read now (the database is down): a 503, not a 401."""


StoredLookup = Callable[[str], Grant | None]  # digest → the stored token's grant


@dataclass(frozen=True)
class AccessPolicy:
    anonymous_read: bool
    env_grants: tuple[tuple[str, Grant], ...] = ()  # (digest, grant) of the variables
    mcp_token_set: bool = False
    stored: StoredLookup | None = None  # the token store (store.tokens), when there is one

    @classmethod
    def from_tokens(
        cls,
        *,
        anonymous_read: bool,
        read: tuple[str, ...] = (),
        push: tuple[str, ...] = (),
        admin: tuple[str, ...] = (),
        mcp: str | None = None,
        stored: StoredLookup | None = None,
    ) -> AccessPolicy:
        """The policy of the `GLOSSATOR_*_TOKENS` variables (each an all-repository token of
        its role) and of a token store."""
        env: list[tuple[str, Grant]] = []
        for tokens, role, label in (
            (admin, Role.ADMIN, "GLOSSATOR_ADMIN_TOKEN"),
            (push, Role.PUSH, "GLOSSATOR_PUSH_TOKENS"),
            (read, Role.READ, "GLOSSATOR_READ_TOKENS"),
        ):
            env += [(token_digest(t), Grant(role, None, label)) for t in tokens if t]
        if mcp:
            env.append((token_digest(mcp), Grant(Role.READ, None, "GLOSSATOR_MCP_TOKEN", True)))
        return cls(anonymous_read, tuple(env), bool(mcp), stored)

    @property
    def mcp_open(self) -> bool:
        """MCP without a token: only while reads are open and no MCP token is set."""
        return self.anonymous_read and not self.mcp_token_set

    def grant(self, digest: str, *, mcp: bool = False) -> Grant | None:
        """The grant of the token whose digest this is, for MCP or another face; None when
        it is no token of this server. AccessUnavailable when the store cannot answer."""
        found = self.variable_grant(digest)
        if found is None and self.stored is not None:
            try:
                found = self.stored(digest)
            except Exception as e:  # the database: the caller is not refused for it
                raise AccessUnavailable(str(e)) from None
        if found is not None and found.mcp_only and not mcp:
            return None
        return found

    def variable_grant(self, digest: str) -> Grant | None:
        """The grant of a `GLOSSATOR_*_TOKENS` variable's token, or None: what `grant`
        finds without asking the store (no database: the boundary asks it on the event
        loop, and only the stored tokens in a thread)."""
        found: Grant | None = None
        given = digest.encode()
        for candidate, grant in self.env_grants:  # every one compared: no early exit
            if hmac.compare_digest(given, candidate.encode()) and found is None:
                found = grant
        return found

    def caller(self, grant: Grant | None, *, mcp: bool = False) -> Caller:
        return Caller(grant, self.mcp_open if mcp else self.anonymous_read)

    def describe(self) -> list[str]:
        """Who can read what, in plain words (`glossator serve`'s start-up log, `doctor`)."""
        if self.anonymous_read:
            reads = "reads: open to anyone (GLOSSATOR_ANONYMOUS_READ=true)"
        else:
            reads = "reads: tokens only (GLOSSATOR_ANONYMOUS_READ=false), each within its scope"
        if self.mcp_open:
            mcp = "MCP: open to anyone (set GLOSSATOR_MCP_TOKEN or close reads to require a token)"
        else:
            mcp = "MCP: tokens only"
        pushes = "pushes: push and admin tokens, each within its scope"
        return [reads, mcp, pushes]
