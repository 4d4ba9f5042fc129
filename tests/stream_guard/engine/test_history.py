from __future__ import annotations

import threading

import pytest

from stream_guard.engine.history import MemoryHistory, SQLiteHistory


@pytest.fixture(params=["memory", "sqlite-memory", "sqlite-file"])
def store(request, tmp_path):
    if request.param == "memory":
        s = MemoryHistory()
    elif request.param == "sqlite-memory":
        s = SQLiteHistory(":memory:")
    else:
        s = SQLiteHistory(tmp_path / "history.db")
    yield s
    s.close()


def fp(i: int) -> dict:
    return {"numbers": [str(i)], "key_words": ["price"], "polarity": "neutral", "length_bucket": 0}


def test_get_returns_appended_fingerprints_oldest_first(store):
    for i in range(3):
        store.append("k", fp(i), window=10)
    assert store.get("k") == [fp(0), fp(1), fp(2)]


def test_window_keeps_only_the_newest(store):
    for i in range(8):
        store.append("k", fp(i), window=3)
    assert store.get("k") == [fp(5), fp(6), fp(7)]


def test_keys_are_independent(store):
    store.append("a", fp(1), window=5)
    store.append("b", fp(2), window=5)
    assert store.get("a") == [fp(1)]
    assert store.get("b") == [fp(2)]
    assert store.get("missing") == []


def test_clear_one_key_or_all(store):
    store.append("a", fp(1), window=5)
    store.append("b", fp(2), window=5)
    store.clear("a")
    assert store.get("a") == [] and store.get("b") == [fp(2)]
    store.clear()
    assert store.get("b") == []


def test_put_replaces_a_key_and_respects_the_window(store):
    store.append("k", fp(0), window=5)
    store.put("k", [fp(i) for i in range(1, 6)], window=3)
    assert store.get("k") == [fp(3), fp(4), fp(5)]


def test_sqlite_persists_across_instances(tmp_path):
    path = tmp_path / "drift.db"
    with SQLiteHistory(path) as first:
        for i in range(4):
            first.append("k", fp(i), window=50)
    with SQLiteHistory(str(path)) as second:
        assert second.get("k") == [fp(i) for i in range(4)]
        assert second.count("k") == 4


def test_sqlite_uses_wal_for_files(tmp_path):
    with SQLiteHistory(tmp_path / "wal.db") as store:
        (mode,) = store._conn.execute("PRAGMA journal_mode").fetchone()
    assert mode.lower() == "wal"


def test_sqlite_concurrent_appends_lose_nothing_and_respect_window(tmp_path):
    store = SQLiteHistory(tmp_path / "threads.db")
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(25):
                store.append(f"k{n % 2}", fp(n * 100 + i), window=1000)
                store.get(f"k{n % 2}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert store.count("k0") + store.count("k1") == 200
    store.close()


def test_sqlite_closed_store_refuses_use():
    store = SQLiteHistory()
    store.close()
    with pytest.raises(RuntimeError):
        store.get("k")


def test_memory_put_keeps_the_fingerprints_it_holds_and_copies_new_ones():
    store = MemoryHistory()
    store.put("k", [fp(1), fp(2)], window=3)
    held = store.get("k")
    new = fp(3)
    store.put("k", [*held, new], window=3)
    now = store.get("k")
    assert now == [fp(1), fp(2), fp(3)]
    assert now[0] is held[0] and now[1] is held[1]  # what drift read of them stays valid (recorded_features)
    assert now[2] is not new  # the caller's object is not aliased
    store.put("other", held, window=3)  # held by another key: copied there
    assert all(a is not b for a, b in zip(store.get("other"), held))
