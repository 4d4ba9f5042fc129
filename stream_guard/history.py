"""Where drift history lives: per question key, the fingerprints of the last N delivered answers.

The store only keeps plain JSON-ready dicts (fingerprints, never answer text), so any key-value backend
can hold it: in memory for tests and one-off runs, SQLite for a single process that restarts, and the
streaming service's RocksDB-backed Faust table (agents/) for partitioned, changelog-restored state.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import defaultdict, deque
from typing import Any, Mapping

Fingerprint = Mapping[str, Any]


class HistoryStore(ABC):
    @abstractmethod
    def get(self, key: str) -> list[Fingerprint]:
        """Fingerprints for `key`, oldest first."""

    @abstractmethod
    def append(self, key: str, fingerprint: Fingerprint, window: int) -> None:
        """Add one fingerprint and keep at most `window` per key."""

    @abstractmethod
    def clear(self, key: str | None = None) -> None:
        """Forget one key, or everything."""

    def close(self) -> None:  # noqa: B027 - optional for stores holding resources
        pass


class MemoryHistory(HistoryStore):
    """Process-local history; lost on restart, so only for tests, one-off runs and the CLI."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, deque[Fingerprint]] = defaultdict(deque)

    def get(self, key: str) -> list[Fingerprint]:
        with self._lock:
            return list(self._data.get(key, ()))

    def append(self, key: str, fingerprint: Fingerprint, window: int) -> None:
        with self._lock:
            items = self._data[key]
            items.append(dict(fingerprint))
            while len(items) > max(1, window):
                items.popleft()

    def clear(self, key: str | None = None) -> None:
        with self._lock:
            if key is None:
                self._data.clear()
            else:
                self._data.pop(key, None)
