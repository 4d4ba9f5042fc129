"""The context analysis cache (text/analysis.py): bounded, keyed by content, and invisible in verdicts."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path
from typing import Any, Iterator

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.history import MemoryHistory
from stream_guard.engine.judging import judge_events
from stream_guard.engine.pipeline import Guard
from stream_guard.engine.pool import REPLAY_QUALITY_LATENCY_MS
from stream_guard.text import analysis
from stream_guard.text.analysis import BoundedLRU, chunk_analysis, context_analysis
from stream_guard.text.inspection import Inspection
from stream_guard.wire.events import Chunk
from verdicts import without_timings

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "stream_guard" / "samples" / "demo.jsonl"
RAGTRUTH = REPO.parent / "shared" / "data" / "ragtruth_dev.jsonl"


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 50)), max_size=300))
def test_the_lru_never_holds_more_than_its_bounds(operations: list[tuple[int, int]]) -> None:
    cache: BoundedLRU[int, int] = BoundedLRU(max_entries=8, max_weight=100)
    for key, weight in operations:
        assert cache.get_or_make(key, lambda: key * 2, weight) == key * 2
        assert len(cache) <= 8 and cache.weight <= 100
    if operations:  # the last key used is kept (its weight fits), and a hit does not call make
        key, _ = operations[-1]
        assert cache.get_or_make(key, lambda: -1, 1) == key * 2


def test_the_least_recently_used_entry_goes_first() -> None:
    cache: BoundedLRU[str, str] = BoundedLRU(max_entries=2, max_weight=1000)
    cache.get_or_make("a", lambda: "A", 1)
    cache.get_or_make("b", lambda: "B", 1)
    cache.get_or_make("a", lambda: "A2", 1)  # a hit: "a" is now the most recent
    cache.get_or_make("c", lambda: "C", 1)  # "b" goes
    assert cache.get_or_make("a", lambda: "new", 1) == "A"
    assert cache.get_or_make("b", lambda: "new", 1) == "new"


def test_a_value_heavier_than_the_cache_is_returned_and_not_kept() -> None:
    cache: BoundedLRU[str, str] = BoundedLRU(max_entries=4, max_weight=10)
    assert cache.get_or_make("big", lambda: "x", 11) == "x"
    assert len(cache) == 0 and cache.weight == 0


def _inspect_distinct(start: int, count: int) -> None:
    for i in range(start, start + count):
        text = f"Order {i} ships from warehouse {i * 7}. It arrives within {i % 9 + 2} days of purchase."
        inspection = Inspection.build("When does it arrive?", [text, f"Chunk number {i} of {count}."], "Soon.")
        assert inspection.context_sentence_stems and inspection.context_quantities


def _held_by_the_caches() -> int:
    """Bytes of live objects allocated in text/analysis.py: the analyses, their sentences, indexes and keys."""
    gc.collect()  # an evicted analysis may sit in a reference cycle (a check's derived value points back at it)
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, analysis.__file__)])
    return sum(stat.size for stat in snapshot.statistics("filename"))


def test_memory_stays_flat_over_many_distinct_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    # Small bounds, so that filling the caches is quick; the shipped ones are the same class with larger numbers.
    monkeypatch.setattr(analysis, "_CHUNKS", BoundedLRU(64, analysis.CHUNK_CACHE_CHARS))
    monkeypatch.setattr(analysis, "_CONTEXTS", BoundedLRU(32, analysis.CONTEXT_CACHE_CHARS))
    tracemalloc.start()
    try:
        _inspect_distinct(0, 100)  # both caches full (two chunks a context)
        first = _held_by_the_caches()
        _inspect_distinct(10_000, 400)
        second = _held_by_the_caches()
    finally:
        tracemalloc.stop()
    assert len(analysis._CONTEXTS) == 32 and len(analysis._CHUNKS) == 64
    # Four times as many further distinct contexts hold no more memory (kept, each would add about 2 KB).
    assert first > 0 and second < first * 1.1 + 16 * 1024, (first, second)


def test_the_analysis_is_keyed_by_content_not_by_id_or_tenant() -> None:
    a = Inspection.build("q", [Chunk("1", "Refunds take 14 days.")], "a", tenant="acme")
    b = Inspection.build("q", [Chunk("1", "Refunds take 30 days.")], "a", tenant="acme")
    c = Inspection.build("other", [Chunk("1", "Refunds take 14 days.")], "b", tenant="globex")
    assert a.context is not b.context  # same id, other text: never the other text's analysis
    assert [q.magnitude for q in a.context_quantities[0]] == [14]
    assert [q.magnitude for q in b.context_quantities[0]] == [30]
    assert c.context is a.context  # the same text is the same analysis, whoever sends it
    d = Inspection.build("q", [Chunk("doc-7", "Refunds take 14 days.")], "a")
    assert d.context is not a.context and d.context_sentences[0].chunk_id == "doc-7"


def test_a_repair_is_reinspected_against_the_same_analysis() -> None:
    original = Inspection.build("q", ["Refunds take 14 days. Shipping is free."], "Refunds take 20 days.")
    assert original.with_answer("Refunds take 14 days.").context is original.context


def test_a_structured_chunk_is_keyed_by_what_was_received() -> None:
    record = Inspection.build("q", ['{"name": "Cafe Uno", "OutdoorSeating": false}'], "a")
    prose = Inspection.build("q", [record.chunks[0].text], "a")  # its prose view, sent as prose
    assert record.structured and not prose.structured
    assert record.context is not prose.context and record.field_sentence_ids


def test_chunk_analysis_splits_and_stems_each_sentence() -> None:
    sentences, stems = chunk_analysis("Dogs are running. Cats sleep.")
    assert sentences == ("Dogs are running.", "Cats sleep.")
    assert stems == (frozenset({"dog", "run"}), frozenset({"cat", "sleep"}))


def _events() -> list[bytes]:
    lines = [line for line in DEMO.read_bytes().splitlines() if line.strip()]
    if RAGTRUTH.exists():  # optional: the labelled data sits beside the repository
        lines += RAGTRUTH.read_bytes().splitlines()[:80]
    return lines


def _verdicts(lines: list[bytes]) -> list[Any]:
    # As `check` judges: the quality score's latency term fixed, so a verdict does not depend on how fast it came.
    guard = Guard(DetectorConfig(ner="regex", db_path=":memory:", log_flagged=False),
                  quality_latency_ms=REPLAY_QUALITY_LATENCY_MS)
    store = MemoryHistory()
    out: list[Any] = []
    for start in range(0, len(lines), 16):
        judged, updated = judge_events(guard, lines[start:start + 16], store.get)
        for key, history in updated.items():
            store.put(key, history, 20)
        out += [without_timings(orjson.loads(item.verdict)) if item.verdict else item.error_object() for item in judged]
    return out




@pytest.fixture
def no_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Caches that keep nothing: every inspection analyses its context anew."""
    monkeypatch.setattr(analysis, "_CHUNKS", BoundedLRU(0, 0))
    monkeypatch.setattr(analysis, "_CONTEXTS", BoundedLRU(0, 0))
    yield


def test_verdicts_are_the_same_with_and_without_the_cache(no_cache: None) -> None:
    lines = _events()
    uncached = _verdicts(lines)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(analysis, "_CHUNKS", BoundedLRU(analysis.CHUNK_CACHE_SIZE, analysis.CHUNK_CACHE_CHARS))
        patch.setattr(analysis, "_CONTEXTS", BoundedLRU(analysis.CONTEXT_CACHE_SIZE, analysis.CONTEXT_CACHE_CHARS))
        first = _verdicts(lines)  # contexts repeated within the events come from the cache
        warm = _verdicts(lines)  # a fresh guard and history: every context comes from the cache
        assert len(analysis._CONTEXTS) > 0
    assert first == uncached
    assert warm == uncached
