"""Where drift history lives: per question key, the fingerprints of the last N delivered answers.

The store only keeps plain JSON-ready dicts (fingerprints, never answer text), so any key-value backend
can hold it: in memory for tests and one-off runs, SQLite for a single process that restarts, and the
streaming service's RocksDB-backed Faust table (agents/) for partitioned, changelog-restored state.
"""

from __future__ import annotations

import os
import threading
import time
from abc import ABC, abstractmethod
from collections import defaultdict, deque
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, Sequence

import orjson

from stream_guard.text.fingerprint import Fingerprint

if TYPE_CHECKING:  # imported when a SQLite store opens (8 ms of start-up): `check` keeps its history in memory
    import sqlite3


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

    def put(self, key: str, fingerprints: Sequence[Fingerprint], window: int) -> None:
        """Replace the history of `key` (what a batch computed); stores may do this atomically."""
        self.clear(key)
        for item in list(fingerprints)[-max(1, window):]:
            self.append(key, item, window)

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

    def put(self, key: str, fingerprints: Sequence[Fingerprint], window: int) -> None:
        """A fingerprint this store holds for `key` (handed out by `get`) is kept as it is, not copied again: a
        batch's new history is mostly the old one, and keeping those objects lets drift reuse what it read of
        them (fingerprint.recorded_features). New ones are copied, as `append` copies. The held objects are alive
        while this runs, so no other object can have one of their ids."""
        with self._lock:
            held = {id(f) for f in self._data.get(key, ())}
            self._data[key] = deque(f if id(f) in held else dict(f) for f in list(fingerprints)[-max(1, window):])

    def clear(self, key: str | None = None) -> None:
        with self._lock:
            if key is None:
                self._data.clear()
            else:
                self._data.pop(key, None)


class SQLiteHistory(HistoryStore):
    """History in one SQLite file: survives restarts, so drift is seen across rolling deploys.

    One connection guarded by a lock: SQLite serialises writers anyway, and a single connection is the
    only way ":memory:" can be shared between threads. WAL lets other processes read while this one
    writes; `busy_timeout` makes a second writer process wait instead of failing.
    Fingerprints are stored as orjson bytes, so what `get` returns is exactly what was appended.
    The table is named sg_drift_history so that pointing at a seed-library drift file cannot collide
    with its differently shaped table.
    """

    _SCHEMA = (
        "CREATE TABLE IF NOT EXISTS sg_drift_history ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " key TEXT NOT NULL,"
        " created_at REAL NOT NULL,"
        " fingerprint BLOB NOT NULL)",
        "CREATE INDEX IF NOT EXISTS sg_drift_history_key ON sg_drift_history (key, id)",
    )

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, timeout_s: float = 5.0) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        import sqlite3

        self._conn = sqlite3.connect(self.path, timeout=timeout_s, check_same_thread=False, isolation_level=None)
        with self._lock:
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
            for statement in self._SCHEMA:
                self._conn.execute(statement)

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        # Autocommit reads: no write lock, so readers in other processes never wait on us.
        with self._lock:
            if self._conn is None:
                raise RuntimeError("SQLiteHistory is closed")
            yield self._conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._conn is None:
                raise RuntimeError("SQLiteHistory is closed")
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def get(self, key: str) -> list[Fingerprint]:
        with self._reading() as conn:
            rows = conn.execute("SELECT fingerprint FROM sg_drift_history WHERE key = ? ORDER BY id", (key,)).fetchall()
        return [orjson.loads(row[0]) for row in rows]

    def append(self, key: str, fingerprint: Fingerprint, window: int) -> None:
        with self._transaction() as conn:
            self._insert(conn, key, fingerprint)
            self._trim(conn, key, window)

    def put(self, key: str, fingerprints: Sequence[Fingerprint], window: int) -> None:
        with self._transaction() as conn:
            conn.execute("DELETE FROM sg_drift_history WHERE key = ?", (key,))
            for item in list(fingerprints)[-max(1, window) :]:
                self._insert(conn, key, item)

    def clear(self, key: str | None = None) -> None:
        with self._transaction() as conn:
            if key is None:
                conn.execute("DELETE FROM sg_drift_history")
            else:
                conn.execute("DELETE FROM sg_drift_history WHERE key = ?", (key,))

    def count(self, key: str) -> int:
        with self._reading() as conn:
            (n,) = conn.execute("SELECT COUNT(*) FROM sg_drift_history WHERE key = ?", (key,)).fetchone()
        return int(n)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None  # type: ignore[assignment]

    def __enter__(self) -> "SQLiteHistory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _insert(conn: sqlite3.Connection, key: str, fingerprint: Fingerprint) -> None:
        conn.execute(
            "INSERT INTO sg_drift_history (key, created_at, fingerprint) VALUES (?, ?, ?)",
            (key, time.time(), orjson.dumps(dict(fingerprint))),
        )

    @staticmethod
    def _trim(conn: sqlite3.Connection, key: str, window: int) -> None:
        # Keep the newest `window` rows of this key: delete everything at or below the oldest row to drop.
        conn.execute(
            "DELETE FROM sg_drift_history WHERE key = ? AND id <= ("
            " SELECT id FROM sg_drift_history WHERE key = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
            (key, key, max(1, window)),
        )


class HistoryTable(HistoryStore):
    """Histories as the worker's table keeps them: one record per question, its bounded fingerprint list as the
    bytes the judge processes take and give back (engine/judging.py), so that the owner passes them through
    without reading them (`get_raw`, `put_raw`). SQLite, one row per question (the HTTP service's store, shared
    by its judge processes through its parent): survives restarts; WAL lets another process read while it writes.
    The list methods read and write the same rows, for whoever wants the fingerprints themselves."""

    _SCHEMA = "CREATE TABLE IF NOT EXISTS sg_drift_histories (key TEXT PRIMARY KEY, history BLOB NOT NULL)"

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, timeout_s: float = 5.0) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        import sqlite3

        self._conn: sqlite3.Connection | None = sqlite3.connect(self.path, timeout=timeout_s, check_same_thread=False,
                                                                isolation_level=None)
        if self.path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
        self._conn.execute(self._SCHEMA)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("HistoryTable is closed")
        return self._conn

    def get_raw(self, key: str) -> bytes | None:
        with self._lock:
            row = self._connection().execute("SELECT history FROM sg_drift_histories WHERE key = ?", (key,)).fetchone()
        return bytes(row[0]) if row is not None else None

    def put_raw(self, key: str, raw: bytes) -> None:
        with self._lock:
            self._connection().execute("INSERT OR REPLACE INTO sg_drift_histories (key, history) VALUES (?, ?)",
                                       (key, raw))

    def get(self, key: str) -> list[Fingerprint]:
        raw = self.get_raw(key)
        value = orjson.loads(raw) if raw else []
        return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []

    def append(self, key: str, fingerprint: Fingerprint, window: int) -> None:
        self.put(key, [*self.get(key), fingerprint], window)

    def put(self, key: str, fingerprints: Sequence[Fingerprint], window: int) -> None:
        self.put_raw(key, orjson.dumps([dict(item) for item in list(fingerprints)[-max(1, window):]]))

    def clear(self, key: str | None = None) -> None:
        with self._lock:
            if key is None:
                self._connection().execute("DELETE FROM sg_drift_histories")
            else:
                self._connection().execute("DELETE FROM sg_drift_histories WHERE key = ?", (key,))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

