"""The shared, lazily computed view of one (question, context, answer) that every check reads.

What depends on the context alone (its sentences, stems, index, values) is its `context` analysis
(text/analysis.py), done once per distinct context and shared by every check, every event retrieving the same
chunks and the healer's re-inspections; what depends on the answer is read once per inspection.
Instances are immutable after construction apart from `cached_property` memoisation, so a check may
be called from many threads on different inspections without locks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence, TypeVar

from stream_guard.text.cached_view import cached_property
from stream_guard.text.analysis import (  # noqa: F401 - CHUNK_CACHE_SIZE and MAX_POSTINGS: the checks' bounds
    CHUNK_CACHE_SIZE,
    MAX_POSTINGS,
    ContextAnalysis,
    ContextSentence,
    context_analysis,
)
from stream_guard.wire.events import Chunk
from stream_guard.text.markup import Markup, read_markup
from stream_guard.text.records import Record, read_record
from stream_guard.text.quantities import Quantity
from stream_guard.text.words import stem_set, words


def read_chunks(chunks: tuple[Chunk, ...]) -> tuple[tuple[Chunk, ...], tuple[Record | None, ...]]:
    """The text view of each chunk (a structured chunk becomes its field sentences) and its record.

    Records come back as () when no chunk is structured, the common case for prose RAG."""
    records = tuple(read_record(chunk.text) for chunk in chunks)
    if not any(records):
        return chunks, ()
    views = tuple(
        chunk if record is None else Chunk(chunk.id, record.text, chunk.source)
        for chunk, record in zip(chunks, records)
    )
    return views, records


_T = TypeVar("_T")
_MISSING = object()

@dataclass(frozen=True)
class Entity:
    """A named entity or citation found in the answer. `label` is PERSON / ORG / CITATION / ..."""

    text: str
    label: str
    start: int = -1
    end: int = -1


def as_chunks(context: Iterable[str | Chunk] | str | None) -> tuple[Chunk, ...]:
    """Accept what library callers pass (a string, strings, or Chunks) and give Chunks with 1-based ids."""
    if context is None:
        return ()
    if isinstance(context, str):
        context = [context]
    out = []
    for i, item in enumerate(context):
        out.append(item if isinstance(item, Chunk) else Chunk(id=str(i + 1), text=str(item)))
    return tuple(out)


# The cached views that read only the question and the context, never the answer.
CONTEXT_VIEWS = ("structured", "context_text", "context_lower", "context_sentences", "field_sentence_ids",
                 "context_sentence_stems", "sentence_index", "context_stems", "chunk_stems", "question_stems",
                 "question_words")


@dataclass(frozen=True)
class Inspection:
    question: str
    answer: str
    chunks: tuple[Chunk, ...] = ()
    citations: tuple[str, ...] = ()
    tenant: str = "default"
    # Filled by the detector from a batched NER pass; None means "not computed, run NER yourself".
    answer_entities: tuple[Entity, ...] | None = None
    # Aligned with `chunks` when any chunk is structured (JSON or a key-value table), else empty. `chunks`
    # then holds each structured chunk's prose view (structured.Record.text), which every check reads.
    records: tuple[Record | None, ...] = ()
    # The chunks' texts as received, when any was replaced by its prose view (else empty: `chunks` are).
    sources: tuple[str, ...] = ()
    # Results that depend on the context and a piece of the answer, shared by `with_answer` copies (the
    # re-inspections of one event's repairs). Lives as long as they do; a race only recomputes an entry.
    memo: dict[tuple[object, ...], object] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(
        cls,
        question: str,
        context: Iterable[str | Chunk] | str | None,
        answer: str,
        citations: Sequence[str] = (),
        tenant: str = "default",
        answer_entities: tuple[Entity, ...] | None = None,
    ) -> "Inspection":
        received = as_chunks(context)
        chunks, records = read_chunks(received)
        return cls(
            question=question or "",
            answer=answer or "",
            chunks=chunks,
            citations=tuple(citations),
            tenant=tenant,
            answer_entities=answer_entities,
            records=records,
            sources=tuple(c.text for c in received) if records else (),
        )

    def once(self, key: tuple[object, ...], compute: Callable[[], _T]) -> _T:
        """`compute()` for this event once: kept in `memo` under `key`, so the re-inspections of its repairs (which
        share the memo) read it instead of computing it again."""
        kept = self.memo.get(key, _MISSING)
        if kept is _MISSING:
            kept = self.memo[key] = compute()
        return kept  # type: ignore[return-value]

    def with_answer(self, answer: str) -> "Inspection":
        """The same question and context (records already read) with another answer: a healed one, or the next
        sentence of a streamed answer. The context's views computed so far come along (they read no answer), and
        so does the memo.

        Built as `dataclasses.replace(self, answer=answer, answer_entities=None)` builds it, without its walk over
        the fields and the frozen `__init__` (a third of the cost; tests/stream_guard/text/test_inspection.py
        compares the two): every field is a plain attribute in `__dict__`, where cached_property stores too."""
        state = self.__dict__
        copy = object.__new__(type(self))
        kept = copy.__dict__
        for name in _FIELDS:
            kept[name] = state[name]
        kept["answer"], kept["answer_entities"] = answer, None
        for name in _SHARED_VIEWS:
            if name in state:
                kept[name] = state[name]
        return copy

    def with_entities(self, entities: tuple[Entity, ...]) -> "Inspection":
        """This inspection with the answer's entities filled in (the batched NER pass, a repair's kept names).
        Everything computed so far comes along: no view reads the entities."""
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__)
        copy.__dict__["answer_entities"] = entities
        return copy

    def analysed(self) -> "Inspection":
        """This inspection with its context's views computed now: for one that many answers are checked
        against (`with_answer`)."""
        for name in CONTEXT_VIEWS:
            getattr(self, name)
        return self

    @cached_property
    def context(self) -> ContextAnalysis:
        """The context's analysis, shared with every event retrieving the same chunks and with this one's
        re-inspections (text/analysis.py)."""
        return context_analysis(self.chunks, self.records, self.sources)

    @property
    def raw_texts(self) -> tuple[str, ...]:
        """The chunks' texts as received (a structured chunk's JSON, not its prose view)."""
        return self.sources or tuple(c.text for c in self.chunks)

    @property
    def structured(self) -> bool:
        return any(self.records)

    @property
    def context_text(self) -> str:
        return self.context.text

    @property
    def context_lower(self) -> str:
        return self.context.lower

    @cached_property
    def answer_markup(self) -> Markup:
        """The answer read once: markdown and citation markers apart from the claim text (text/markup.py)."""
        return read_markup(self.answer, frozenset(c.id for c in self.chunks))

    @property
    def answer_text(self) -> str:
        """The answer's plain claim text: what every check reads (no markup, no citation markers, no URLs)."""
        return self.answer_markup.plain

    @cached_property
    def answer_sentences(self) -> list[str]:
        """Sentences of `answer_text` that can assert something (not headings, table headers or bare links)."""
        return [s.text for s in self.answer_markup.sentences if s.is_claim]

    @cached_property
    def answer_sentence_spans(self) -> list[tuple[int, int]]:
        """(start, end) of each `answer_sentences` entry in `answer_text`, in order."""
        return [(s.start, s.end) for s in self.answer_markup.sentences if s.is_claim]

    @property
    def context_quantities(self) -> Sequence[Sequence[Quantity]]:
        """Quantities of each `context_sentences` entry, the first MAX_CONTEXT_VALUES of the context in all."""
        return self.context.quantities

    @property
    def context_sentences(self) -> Sequence[ContextSentence]:
        return self.context.sentences

    @property
    def field_sentence_ids(self) -> frozenset[int]:
        """Indices into `context_sentences` of the sentences that render a structured record's fields (not its
        review texts). Their yes-no values are compared with claims by record_claims.field_conflicts; a check
        reading the polarity of prose must not read "Restaurants take out: no." as prose."""
        return self.context.field_sentence_ids

    @property
    def context_sentence_stems(self) -> Sequence[frozenset[str]]:
        """Content stems of each `context_sentences` entry, same order (best-sentence grounding)."""
        return self.context.sentence_stems

    @property
    def sentence_index(self) -> dict[str, tuple[int, ...]]:
        """Inverted index: content stem -> indices of the first MAX_POSTINGS context sentences containing it."""
        return self.context.sentence_index

    @property
    def context_stems(self) -> frozenset[str]:
        return self.context.stems

    @property
    def chunk_stems(self) -> Sequence[frozenset[str]]:
        return self.context.chunk_stems

    @cached_property
    def question_stems(self) -> frozenset[str]:
        return stem_set(self.question)

    @cached_property
    def question_words(self) -> frozenset[str]:
        return frozenset(words(self.question))

    def chunk_by_ref(self, ref: str) -> int | None:
        """0-based index of the chunk a citation names: a chunk id first, else a 1-based position."""
        for i, chunk in enumerate(self.chunks):
            if chunk.id == ref:
                return i
        if ref.isdecimal() and 1 <= int(ref) <= len(self.chunks):  # isdigit() lets "²" through to int()
            return int(ref) - 1
        return None


_FIELDS = tuple(f.name for f in dataclasses.fields(Inspection))
# What `with_answer` carries over: the context's views (cached_property keeps them in `__dict__`), its analysis too.
_SHARED_VIEWS = (*CONTEXT_VIEWS, "context")
