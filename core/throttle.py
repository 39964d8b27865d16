"""Wrong tokens a client address, within a sliding window: the throttle of logins.

One instance per server process, built by the composition root and shared by the git
server (HTTP Basic, Bearer) and the web reader (its login form, its API's headers), so a
guesser gets the same budget whichever door it knocks on. A request that presents no
credentials is not a failure (git asks anonymously first); a valid session is never held.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

# Failed logins: 10 in 15 minutes a client address. Not measured on anything: a person
# mistyping or pasting the wrong token stays well under it, a guesser gets ~1,000 tries a day
# (tokens are random secrets: this is defence in depth and keeps the log readable).
FAILURES_ALLOWED = 10
FAILURE_WINDOW = 15 * 60.0
ADDRESSES_KEPT = 10_000  # addresses with recent failures remembered; beyond, the stalest go


@dataclass
class Throttle:
    """Failed logins a client address, within a sliding window (module doc)."""

    allowed: int = FAILURES_ALLOWED
    window: float = FAILURE_WINDOW
    kept: int = ADDRESSES_KEPT
    _failures: OrderedDict[str, list[float]] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _recent(self, address: str, now: float) -> list[float]:
        times = [t for t in self._failures.get(address, ()) if t > now - self.window]
        if times:
            self._failures[address] = times
        else:
            self._failures.pop(address, None)
        return times

    def retry_after(self, address: str, now: float | None = None) -> float:
        """Seconds before `address` may try again (0: it may now)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._recent(address, now)
            if len(times) < self.allowed:
                return 0.0
            return max(times[-self.allowed] + self.window - now, 1.0)

    def failed(self, address: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._recent(address, now)
            self._failures[address] = [*times, now][-self.allowed :]
            self._failures.move_to_end(address)
            while len(self._failures) > self.kept:
                self._failures.popitem(last=False)


def client_host(client: Sequence[object] | None) -> str:
    """The address a throttle counts: an ASGI scope's `client` (host, port), or a
    Starlette `request.client`; "unknown" when the server gives none."""
    return str(client[0]) if client else "unknown"


def wait_words(seconds: float) -> str:
    """'about 3 minutes': how long a throttled address waits, for its refusal."""
    minutes = max(1, round(seconds / 60))
    return f"about {minutes} minute" + ("s" if minutes > 1 else "")
