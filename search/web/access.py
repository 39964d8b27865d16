"""Who may read through the web reader and the HTTP API: the read policy of clone.

    readers = Readers(open=False, token_ok=…, headers_ok=…, key=secrets.token_bytes(32))

The composition root builds it from the git server's policy (anonymous reads, read
and push tokens): `headers_ok` accepts what clone and `/api/jobs` accept (HTTP Basic
password or Bearer token), `token_ok` checks a token typed into the login form.

A browser that logs in gets a session cookie, never the token: `<expiry>.<nonce>.<mac>`,
an HMAC-SHA256 under `key` (random per server process, so a restart, which is also
how tokens change, ends every session). HttpOnly (no script reads it), SameSite=Strict
(no other site's page sends it), Secure over HTTPS, Path=/. Logging out revokes the
nonce for the rest of the process (a bounded set) and clears the cookie.

Failed logins are throttled per client address (`core.throttle.Throttle`, shared with the
git server by the composition root): after its `allowed` wrong tokens within its window, that address gets 429 with Retry-After
until the oldest failure leaves the window, whether it typed the token into the form or
sent it in an Authorization header. A right token does not lift it early (else a guesser
holding one cheap session could keep trying); a read with a valid session or token is never
refused by it. Behind a reverse proxy every client shares the proxy's address: the limit
then applies to them together (documented in the README).

Forms that change state (log in, log out) carry a CSRF token: the double-submit of a
random value held in a cookie of its own and in a hidden field, compared in constant
time, plus the Origin header, when the browser sends one, naming this server.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response

from core.throttle import Throttle, client_host

SESSION_COOKIE = "glossator_session"
CSRF_COOKIE = "glossator_csrf"
# A working day and a night: a reader logs in once a day, a stolen laptop's cookie dies.
SESSION_SECONDS = 12 * 3600
REVOKED_KEPT = 10_000  # logged-out nonces remembered; beyond, the oldest (mostly expired) go


def client_address(request: Request) -> str:
    return client_host(request.client)


@dataclass
class Readers:
    """The read policy as the web layer asks it, and the sessions it signs."""

    open: bool
    token_ok: Callable[[str], bool]
    headers_ok: Callable[[Headers], bool]
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    throttle: Throttle = field(default_factory=Throttle)
    _revoked: OrderedDict[str, None] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def allowed(self, request: Request) -> bool:
        """Whether `request` may read: open reads, a token in its headers, or a session."""
        return self.verdict(request)[0] == "read"

    def verdict(self, request: Request) -> tuple[Literal["read", "refused", "throttled"], float]:
        """`allowed`, telling a refusal from a throttled address (module doc), with the
        seconds a throttled address waits (0 otherwise): read once, so a 429 never says
        "retry in 0 s" when the window ends between two reads of the throttle.

        A token sent in the headers that is not one counts as a failed login."""
        if self.open or self.session_ok(request.cookies.get(SESSION_COOKIE)):
            return "read", 0.0
        if "authorization" not in request.headers:
            return "refused", 0.0
        if wait := self.throttle.retry_after(client_address(request)):
            return "throttled", wait
        if self.headers_ok(request.headers):
            return "read", 0.0
        self.throttle.failed(client_address(request))
        return "refused", 0.0

    # -- sessions ----------------------------------------------------------------------

    def _mac(self, payload: str) -> str:
        return hmac.new(self.key, payload.encode(), hashlib.sha256).hexdigest()

    def new_session(self, now: float | None = None) -> str:
        expiry = int((now if now is not None else time.time()) + SESSION_SECONDS)
        payload = f"{expiry}.{secrets.token_urlsafe(16)}"
        return f"{payload}.{self._mac(payload)}"

    def session_ok(self, cookie: str | None, now: float | None = None) -> bool:
        if not cookie or len(cookie) > 200:
            return False
        payload, _, mac = cookie.rpartition(".")
        expiry, _, nonce = payload.partition(".")
        if not hmac.compare_digest(mac.encode(), self._mac(payload).encode()):
            return False
        with self._lock:
            if nonce in self._revoked:
                return False
        return expiry.isdigit() and int(expiry) > (now if now is not None else time.time())

    def revoke(self, cookie: str | None) -> None:
        if not cookie or not self.session_ok(cookie):
            return
        nonce = cookie.rpartition(".")[0].partition(".")[2]
        with self._lock:
            self._revoked[nonce] = None
            while len(self._revoked) > REVOKED_KEPT:
                self._revoked.popitem(last=False)


def set_session(response: Response, request: Request, value: str) -> None:
    response.set_cookie(
        SESSION_COOKIE,
        value,
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )


def clear_session(response: Response, request: Request) -> None:
    response.delete_cookie(
        SESSION_COOKIE,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )


# -- CSRF ------------------------------------------------------------------------------


def csrf_token(request: Request) -> str:
    """The request's CSRF value (its cookie's), or a new one for `remember_csrf` to set."""
    given = request.cookies.get(CSRF_COOKIE, "")
    return given if 20 <= len(given) <= 100 else secrets.token_urlsafe(24)


def remember_csrf(response: Response, request: Request, token: str) -> None:
    if request.cookies.get(CSRF_COOKIE) != token:
        response.set_cookie(
            CSRF_COOKIE,
            token,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )


def csrf_ok(request: Request, submitted: str | None) -> bool:
    """The form's token equals its cookie's, and the Origin (when sent) is this server."""
    cookie = request.cookies.get(CSRF_COOKIE)
    if not cookie or not submitted:
        return False
    if not hmac.compare_digest(cookie.encode(), submitted.encode()):
        return False
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None  # a "null" origin is a sandboxed or privacy-stripped page
    return origin.rstrip("/") == str(request.base_url).rstrip("/")
