"""Failed sign-ins per client: guessing tokens at the dashboard's speed is refused.

A token made by `python -m stream_guard.ops.monitoring.tokens new` has 256 random bits and cannot be guessed;
a token a person chose (at least 20 characters) might be. After `max_failures` failed attempts (a wrong token on the login form or as a
Bearer header) within `window_s`, that client is refused until its oldest counted failure is `window_s`
old, whatever token it sends, so a guesser learns nothing more and a right token tried during a lock-out
tells it nothing either. A success forgets the client's failures.

Clients are told apart by the peer address the web server sees. Behind a proxy every request has the proxy's
address, so one guesser locks everybody out for the window: set a lower `login_lockout_minutes` there, or
rate-limit at the proxy. The table is bounded (`max_clients`, oldest forgotten first) so a flood of
addresses costs bounded memory.
"""

from __future__ import annotations

from collections import OrderedDict, deque


class LoginThrottle:
    def __init__(self, max_failures: int, window_s: float, max_clients: int = 4096) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self.max_clients = max_clients
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    @property
    def enabled(self) -> bool:
        return self.max_failures > 0 and self.window_s > 0

    def retry_after(self, client: str, now_s: float) -> float | None:
        """Seconds until `client` may try again, or None when it may try now."""
        if not self.enabled:
            return None
        recent = self._recent(client, now_s)
        if len(recent) < self.max_failures:
            return None
        return max(0.0, recent[0] + self.window_s - now_s)

    def failed(self, client: str, now_s: float) -> None:
        if not self.enabled:
            return
        recent = self._recent(client, now_s)
        recent.append(now_s)
        while len(recent) > self.max_failures:  # only the newest max_failures decide when it may try again
            recent.popleft()
        self._failures[client] = recent
        self._failures.move_to_end(client)
        while len(self._failures) > self.max_clients:
            self._failures.popitem(last=False)

    def __len__(self) -> int:
        """Clients with failures on record."""
        return len(self._failures)

    def succeeded(self, client: str) -> None:
        self._failures.pop(client, None)

    def _recent(self, client: str, now_s: float) -> deque[float]:
        recent = self._failures.get(client, deque())
        while recent and recent[0] <= now_s - self.window_s:
            recent.popleft()
        if not recent:
            self._failures.pop(client, None)
        return recent
