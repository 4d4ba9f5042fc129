"""Whether the worker can still reach its broker, as the health endpoints and the log report it.

Every request our Kafka clients (Faust's consumer and producer) send goes through `BrokerLink.observe`
(agents/faust_adapter.py wraps the clients' `send`): an answer marks the link alive, a connection failure
(refused, closed, timed out, node not ready) marks it failing. The link is *lost* once no broker has answered
for `lost_after_s` while requests failed meanwhile: an idle worker's fetches are answered every
`fetch_max_wait_ms`, so a healthy link answers many times a second, and a rebalance that waits on a group join
fails nothing, so it never counts as lost. Lost for `grace_s`: the worker is unhealthy (an orchestrator restarts
it). The request that answers again ends the loss.

The log says so once per change of state, with counts: aiokafka logs every retry (thousands of "Unable to
update metadata" and "Unable connect" lines a minute without a broker), so `RetryLogFilter` lets the first line
of each kind through per episode of failures and counts the rest, which the "lost" and "restored" lines report.

Thread-safe: Faust's consumer runs its aiokafka client on a thread of its own.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

log = logging.getLogger(__name__)

CONNECTED, FAILING, LOST = "connected", "failing", "lost"
# aiokafka's loggers whose warnings and errors repeat on every retry while the broker is away.
RETRY_LOGGERS = ("aiokafka", "aiokafka.client", "aiokafka.conn", "aiokafka.cluster", "aiokafka.consumer.fetcher",
                 "aiokafka.consumer.group_coordinator", "aiokafka.consumer.consumer", "aiokafka.producer.sender",
                 "aiokafka.producer.producer")


@dataclass
class BrokerLink:
    lost_after_s: float
    grace_s: float
    clock: Callable[[], float] = time.monotonic
    last_answer: float = field(init=False)
    # Since the last answer: when requests started failing, and how, by kind.
    failing_since: float | None = None
    errors: Counter[str] = field(default_factory=Counter)
    lost_since: float | None = None
    # Lifetime counts, for /metrics.
    failures_total: int = 0
    losses_total: int = 0
    suppressed_lines: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _filter: "RetryLogFilter | None" = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.last_answer = self.clock()

    def answered(self) -> None:
        with self._lock:
            now = self.clock()
            self.last_answer = now
            if self.failing_since is None:
                return
            if self.lost_since is not None:
                log.warning("broker connection restored after %.1f s without one: %s while it was lost, %d repeated "
                            "log line(s) left out", now - self.lost_since, _kinds(self.errors), self.suppressed_lines,
                            extra={"broker_link": CONNECTED})
            self.failing_since, self.lost_since = None, None
            self.errors = Counter()
            self.suppressed_lines = 0
            if self._filter is not None:
                self._filter.reset()

    def failed(self, error: BaseException) -> None:
        with self._lock:
            if self.failing_since is None:
                self.failing_since = self.clock()
            self.errors[type(error).__name__] += 1
            self.failures_total += 1

    def state(self) -> str:
        """connected, failing (requests fail, but a broker answered within lost_after_s) or lost. Logs the change
        to lost once; called by the health pages and a timer."""
        with self._lock:
            if self.failing_since is None:
                return CONNECTED
            now = self.clock()
            if now - self.last_answer < self.lost_after_s:
                return FAILING
            if self.lost_since is None:
                self.lost_since = now
                self.losses_total += 1
                log.error("broker connection lost: no broker has answered for %.1f s (%s); /readyz answers 503, "
                          "and /healthz too after %g s without one. Repeated connection errors are left out of the "
                          "log until it is back", now - self.last_answer, _kinds(self.errors), self.grace_s,
                          extra={"broker_link": LOST})
            return LOST

    def lost_for(self) -> float | None:
        """Seconds since the link was found lost, or None while it is not."""
        if self.state() != LOST:
            return None
        return self.clock() - (self.lost_since or self.clock())

    def silent_for(self) -> float:
        return self.clock() - self.last_answer

    def unhealthy(self) -> bool:
        lost = self.lost_for()
        return lost is not None and self.silent_for() >= self.grace_s

    def describe(self) -> dict[str, object]:
        """For /readyz and /healthz."""
        state = self.state()
        return {"state": state, "silent_s": round(self.silent_for(), 1),
                "errors": sum(self.errors.values()) if state != CONNECTED else 0}

    def quiet_retries(self) -> "RetryLogFilter":
        """A filter on aiokafka's loggers that keeps one line of each kind per episode of failures."""
        if self._filter is None:
            self._filter = RetryLogFilter(self)
            for name in RETRY_LOGGERS:
                logging.getLogger(name).addFilter(self._filter)
        return self._filter

    def close(self) -> None:
        if self._filter is not None:
            for name in RETRY_LOGGERS:
                logging.getLogger(name).removeFilter(self._filter)
            self._filter = None


class RetryLogFilter(logging.Filter):
    """While requests fail, the first warning or error of each kind (its message template) goes through; the
    repeats are counted on the link instead. A healthy link logs as usual."""

    def __init__(self, link: BrokerLink) -> None:
        super().__init__()
        self.link = link
        self._seen: set[str] = set()

    def reset(self) -> None:
        self._seen = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or self.link.failing_since is None:
            return True
        kind = f"{record.name}:{record.msg}"
        if kind not in self._seen:
            self._seen.add(kind)
            return True
        self.link.suppressed_lines += 1
        return False


def _kinds(errors: Counter[str]) -> str:
    if not errors:
        return "no failed request"
    total = sum(errors.values())
    return f"{total} failed request(s): " + ", ".join(f"{kind} x{n}" for kind, n in errors.most_common())
