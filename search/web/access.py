"""Who may read through the web reader and the HTTP API: the read policy of clone.

    readers = Readers(open=False, identify=…, key=secrets.token_bytes(32))

The composition root builds it from the access policy (core.access): `identify` turns a
token typed into the login form into its digest when it is a token of this server. Who
a request is, the access boundary decides for every face (gitserver.boundary), from the
request's token or from the session cookie signed here (`session_digest`).

A browser that logs in gets a session cookie, never the token:
`<expiry>.<nonce>.<digest>.<mac>`, an HMAC-SHA256 under `key` (random per server process,
so a restart ends every session); `digest` is the token's sha256, so the session reads
what its token reads, and no more once the token is revoked. HttpOnly (no script reads it), SameSite=Strict
(no other site's page sends it), Secure over HTTPS, Path=/. Logging out revokes the
nonce for the rest of the process (a bounded set) and clears the cookie.

Failed logins are throttled per client address (`core.throttle.Throttle`, shared with the
boundary by the composition root): after its `allowed` wrong tokens within its window, that address gets 429 with Retry-After
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
    identify: Callable[[str], str | None]  # a token → its digest; None: no token of ours
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    throttle: Throttle = field(default_factory=Throttle)
    _revoked: OrderedDict[str, None] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def allowed(self, request: Request) -> bool:
        """Whether a browser needs no login: open reads, or a session of ours."""
        return self.open or self.session_digest(request.cookies.get(SESSION_COOKIE)) is not None

    # -- sessions ----------------------------------------------------------------------

    def _mac(self, payload: str) -> str:
        return hmac.new(self.key, payload.encode(), hashlib.sha256).hexdigest()

    def new_session(self, digest: str, now: float | None = None) -> str:
        """A session for the token whose digest this is (core.access.token_digest)."""
        expiry = int((now if now is not None else time.time()) + SESSION_SECONDS)
        payload = f"{expiry}.{secrets.token_urlsafe(16)}.{digest}"
        return f"{payload}.{self._mac(payload)}"

    def session_digest(self, cookie: str | None, now: float | None = None) -> str | None:
        """The token digest of a valid, unexpired, not logged-out session; else None."""
        if not cookie or len(cookie) > 300:
            return None
        payload, _, mac = cookie.rpartition(".")
        expiry, _, rest = payload.partition(".")
        nonce, _, digest = rest.partition(".")
        if not hmac.compare_digest(mac.encode(), self._mac(payload).encode()):
            return None
        with self._lock:
            if nonce in self._revoked:
                return None
        live = expiry.isdigit() and int(expiry) > (now if now is not None else time.time())
        return digest if live and digest else None

    def session_ok(self, cookie: str | None, now: float | None = None) -> bool:
        return self.session_digest(cookie, now) is not None

    def revoke(self, cookie: str | None) -> None:
        if not cookie or not self.session_ok(cookie):
            return
        nonce = cookie.rpartition(".")[0].partition(".")[2].partition(".")[0]
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
