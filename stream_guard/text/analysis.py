"""The analysis of a context, done once per distinct context in each process and shared by every check,
every event that retrieves the same chunks and the healer's re-inspections of an event's repairs.

A RAG system retrieves its popular chunks again and again (RAGTruth: 571 dev events over 96 distinct
contexts; a help desk: a few dozen), and several models answer one question, so splitting, stemming,
indexing and reading the values of a context is the largest shared cost of an inspection. Two bounded LRU
caches hold it, keyed by content (the text itself, compared in full on a hit, never an id, so one tenant
can never be handed another's analysis, nor one text another's):

- `chunk_analysis(text)`: a chunk's sentences and their content stems;
- `context_analysis(chunks, records, sources)`: what the checks read of the whole context (its sentences,
  their stems, the inverted index, its words, its quantities) plus `derive`, a memo for a check's own
  per-context values (dates, clock times, figures ...) that lives and dies with the entry.

Both are bounded by entries and by the characters they hold, so memory stays flat however many distinct
chunks pass. In the worker and `check -j` each judge process has its own caches.
"""

from __future__ import annotations

import re
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Callable, Generic, Hashable, Iterable, Mapping, Sequence, TypeVar

from stream_guard.text.cached_view import cached_property
from stream_guard.text.quantities import Quantity, extract_quantities
from stream_guard.text.sentences import split_sentences
from stream_guard.text.words import compound_stems, stem_set
from stream_guard.wire.events import Chunk

if TYPE_CHECKING:
    from stream_guard.text.records import Record

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")
_T = TypeVar("_T")

# Distinct chunks whose sentences and stems are kept (about 10 KiB each: 20 MiB at most), and the characters
# of text they may hold in all, so that a stream of very long distinct chunks cannot grow the cache either.
CHUNK_CACHE_SIZE = 2048
CHUNK_CACHE_CHARS = 8_000_000
# Distinct contexts whose analysis is kept. An entry holds its chunks' sentences, index and values: a few
# times the text's size. RAGTruth's 571 dev events have 96 distinct contexts.
CONTEXT_CACHE_SIZE = 512
CONTEXT_CACHE_CHARS = 4_000_000
# Context sentences indexed per stem (the earliest ones, chunks being in retrieval order). Looking up a claim
# costs its stems times this at most, so a context where every sentence shares the same words stays cheap.
# On the labelled data a stem occurs in at most 48 context sentences: the cap does not bind there.
MAX_POSTINGS = 128
# Quantities (and, separately, dates or clock times) of the context that answer values are checked against:
# sentences past the cap are never parsed, so a context of a million characters of figures costs no more
# than one of a few hundred. The largest labelled context has 31 quantities and 15 dates: it does not bind.
MAX_CONTEXT_VALUES = 128


class BoundedLRU(Generic[_K, _V]):
    """A least-recently-used map bounded by entries and by the summed `weight` of its values. Thread-safe;
    two threads missing the same key both compute it, and the second result replaces the first."""

    def __init__(self, max_entries: int, max_weight: int) -> None:
        self.max_entries = max_entries
        self.max_weight = max_weight
        self.weight = 0
        self._items: OrderedDict[_K, tuple[_V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get_or_make(self, key: _K, make: Callable[[], _V], weight: int) -> _V:
        found = self.get(key)
        if found is not None:
            return found
        value = make()
        self.put(key, value, weight)
        return value

    def get(self, key: _K) -> _V | None:
        """The value kept for `key` (now the most recently used), or None."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: _K, value: _V, weight: int) -> None:
        if weight > self.max_weight:
            return  # larger than the whole cache: used once, never kept
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.weight -= old[1]
            self._items[key] = (value, weight)
            self.weight += weight
            while len(self._items) > self.max_entries or self.weight > self.max_weight:
                _, (_, dropped) = self._items.popitem(last=False)
                self.weight -= dropped

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.weight = 0


ChunkAnalysis = tuple[tuple[str, ...], tuple[frozenset[str], ...]]  # (sentences, content stems of each)

_CHUNKS: BoundedLRU[tuple[str, str | tuple[str, ...]], ChunkAnalysis] = BoundedLRU(CHUNK_CACHE_SIZE, CHUNK_CACHE_CHARS)


def chunk_analysis(text: str) -> ChunkAnalysis:
    """A prose chunk's sentences and their content stems."""
    return _CHUNKS.get_or_make(("prose", text), lambda: _stemmed(tuple(split_sentences(text))), len(text))


def record_analysis(sentences: tuple[str, ...]) -> ChunkAnalysis:
    """A structured chunk's prose view: its field sentences are already split (a field sentence such as
    "Address: 6920 Market Pl Dr." must not be glued to the next one by the abbreviation rule)."""
    return _CHUNKS.get_or_make(("record", sentences), lambda: _stemmed(sentences), sum(map(len, sentences)))


def _stemmed(sentences: tuple[str, ...]) -> ChunkAnalysis:
    return sentences, tuple(stem_set(sentence) | compound_stems(sentence) for sentence in sentences)


@dataclass(frozen=True)
class ContextSentence:
    chunk_index: int  # 0-based position of the chunk in the event's context
    chunk_id: str
    text: str


# The words a name is looked up by in a context (text/ner.py): lower-cased runs of ASCII letters and digits.
ASCII_WORD_RE = re.compile(r"[a-z0-9]+")


class ContextAnalysis:
    """Everything the checks read of one context that does not depend on the answer. Immutable apart from
    lazily computed fields; shared across threads, so `derive` tolerates a race by recomputing."""

    def __init__(self, ids: tuple[str, ...], texts: tuple[str, ...], records: "tuple[Record | None, ...]") -> None:
        self.ids = ids
        self.texts = texts  # each chunk's text as the checks read it (a structured chunk's prose view)
        self.records = records
        self._derived: dict[Hashable, object] = {}

    def derive(self, key: Hashable, compute: Callable[["ContextAnalysis"], _T]) -> _T:
        """`compute(self)` once per context: a check's own per-context value, kept as long as this analysis.
        `key` names the value (a module-level constant of the check that computes it)."""
        try:
            return self._derived[key]  # type: ignore[return-value]
        except KeyError:
            value = self._derived[key] = compute(self)
            return value

    def _chunk(self, i: int) -> ChunkAnalysis:
        record = self.records[i] if self.records else None
        return chunk_analysis(self.texts[i]) if record is None else record_analysis(record.sentences)

    @cached_property
    def text(self) -> str:
        return "\n".join(self.texts)

    @cached_property
    def lower(self) -> str:
        return self.text.lower()

    @cached_property
    def words(self) -> frozenset[str]:
        """Lower-cased runs of ASCII letters and digits the context uses (a name's words are looked up here)."""
        return frozenset(ASCII_WORD_RE.findall(self.lower))

    @cached_property
    def sentences(self) -> tuple[ContextSentence, ...]:
        return tuple(
            ContextSentence(i, chunk_id, sentence)
            for i, chunk_id in enumerate(self.ids)
            for sentence in self._chunk(i)[0]
        )

    @cached_property
    def sentence_stems(self) -> tuple[frozenset[str], ...]:
        """Content stems of each of `sentences`, same order."""
        return tuple(stems for i in range(len(self.texts)) for stems in self._chunk(i)[1])

    @cached_property
    def field_sentence_ids(self) -> frozenset[int]:
        """Indices into `sentences` of those that render a structured record's fields (not its review texts)."""
        if not self.records:
            return frozenset()
        out: list[int] = []
        offset = 0
        for i, record in enumerate(self.records):
            count = len(self._chunk(i)[0])
            if record is not None:
                out += [offset + k for k in record.field_lines if k < count]
            offset += count
        return frozenset(out)

    @cached_property
    def sentence_index(self) -> dict[str, tuple[int, ...]]:
        """Inverted index: content stem -> indices of the first MAX_POSTINGS sentences containing it."""
        postings: dict[str, list[int]] = {}
        for i, stems in enumerate(self.sentence_stems):
            for s in stems:
                ids = postings.setdefault(s, [])
                if len(ids) < MAX_POSTINGS:
                    ids.append(i)
        return {s: tuple(ids) for s, ids in postings.items()}

    @cached_property
    def stems(self) -> frozenset[str]:
        # Words never span sentences, so the union of sentence stems is the context's stems, stemmed once.
        return frozenset().union(*self.sentence_stems)

    @cached_property
    def chunk_stems(self) -> tuple[frozenset[str], ...]:
        per_chunk: list[set[str]] = [set() for _ in self.texts]
        for sentence, stems in zip(self.sentences, self.sentence_stems):
            per_chunk[sentence.chunk_index] |= stems
        return tuple(frozenset(s) for s in per_chunk)

    @cached_property
    def quantities(self) -> tuple[tuple[Quantity, ...], ...]:
        """Quantities of each of `sentences`, the first MAX_CONTEXT_VALUES of the context in all."""
        return tuple(tuple(found) for found in capped_per_sentence(
            (s.text for s in self.sentences), extract_quantities, MAX_CONTEXT_VALUES))


def shared_counts(index: Mapping[str, Sequence[int]], stems: Iterable[str]) -> Counter[int]:
    """Sentence id -> how many of `stems` it holds, from an inverted index (stem -> sentence ids, such as
    ContextAnalysis.sentence_index); only sentences holding at least one. One Counter over all the postings,
    counted in C: an update per stem paid Counter.update's Python prologue and its Mapping test each time."""
    return Counter(chain.from_iterable(index[s] for s in stems if s in index))


def capped_per_sentence(texts: Iterable[str], extract: Callable[[str], list[_T]], cap: int) -> list[list[_T]]:
    """`extract` of each text, in order, keeping `cap` values in all; texts past the cap are not read."""
    out: list[list[_T]] = []
    budget = cap
    for text in texts:
        found = extract(text)[:budget] if budget > 0 else []
        budget -= len(found)
        out.append(found)
    return out


_CONTEXTS: BoundedLRU[tuple[object, ...], ContextAnalysis] = BoundedLRU(CONTEXT_CACHE_SIZE, CONTEXT_CACHE_CHARS)


def context_analysis(chunks: tuple[Chunk, ...], records: "tuple[Record | None, ...]", sources: tuple[str, ...]) -> ContextAnalysis:
    """The shared analysis of a context: chunks (ids and texts as the checks read them) and, when any chunk is
    structured, the texts as received, which decide the records."""
    ids, texts = tuple(c.id for c in chunks), tuple(c.text for c in chunks)
    weight = sum(map(len, texts)) + sum(map(len, sources))
    return _CONTEXTS.get_or_make((ids, texts, sources), lambda: ContextAnalysis(ids, texts, records), weight)


def clear_caches() -> None:
    """Forget every analysis (tests; a process never needs to)."""
    _CHUNKS.clear()
    _CONTEXTS.clear()
