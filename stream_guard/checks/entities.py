"""Entities: people, organisations and literature citations in the answer that no retrieved chunk names.

An entity is fabricated when it matches in none of the chunks. Matching is tolerant, because answers
rephrase names: case, accents, hyphens, titles ("Dr."), possessives and surrounding punctuation are
ignored; a person matches on the full name, or on the surname with the given name (or its initial) in
the same chunk, or on the surname alone when that is all the answer gives; an organisation matches on
its distinctive words (not "University", "Inc") in one chunk, or through its acronym; a citation
matches on its identifier (arXiv id, DOI, URL) or on author and year.

score = fabricated / entities checked (0 with none); flagged when any entity is fabricated.
"""

from __future__ import annotations

import html
import re
from bisect import bisect_right
import time
import unicodedata
from functools import lru_cache
from typing import Iterable

from stream_guard.text.cached_view import cached_property
from stream_guard.checks.base import elapsed_ms
from stream_guard.config.detector import DetectorConfig
from stream_guard.text import regex_cache
from stream_guard.text.inspection import CHUNK_CACHE_SIZE, Entity, Inspection
from stream_guard.text.ner import (
    CITATION,
    ORG,
    ORG_SUFFIXES,
    PERSON,
    TITLES,
    EntityRecognizer,
    batch_answer_entities,
    make_recognizer,
)
from stream_guard.wire.report import CheckResult, Finding, FindingType
from stream_guard.text.names import variants
from stream_guard.text.words import STOP_WORDS

CORE_LABELS: frozenset[str] = frozenset({PERSON, ORG, CITATION})
# Places, works, events and products are checked too. On RAGTruth dev (spaCy) they add flags at about
# the same precision on QA (14 answers flagged, 13 hallucinated, against 10 / 9 for the core labels) and
# at lower precision on summaries (7 / 4 against 2 / 2); pass `labels=CORE_LABELS` to check only those.
DEFAULT_LABELS: frozenset[str] = CORE_LABELS | {"GPE", "LOC", "FAC", "WORK_OF_ART", "EVENT", "PRODUCT"}
# Distinct entities checked per answer. The labelled data has at most 13 per answer (regex NER); the cap
# bounds entities x chunks matching for an answer made of names.
MAX_ENTITIES = 128
_KINDS = {
    PERSON: "person",
    ORG: "org",
    CITATION: "citation",
    "GPE": "place",
    "LOC": "place",
    "FAC": "place",
    "WORK_OF_ART": "work",
    "EVENT": "event",
    "PRODUCT": "product",
}
_NAME_SUFFIXES = frozenset("jr sr ii iii iv phd md".split())
# Words that say what kind of organisation it is, not which one.
_GENERIC_ORG_WORDS = ORG_SUFFIXES | frozenset("research international national global the of and for".split())

_TOKEN_RE = regex_cache.compile(r"[a-z0-9]+")
_POSSESSIVE_RE = regex_cache.compile(r"'s\b")
_DOTTED_ABBREVIATION_RE = regex_cache.compile(r"\b(?:[a-z]\.){2,}")
# What every dotted abbreviation holds (".c." in "d.c."), searched first: the pattern above opens on a word boundary
# and is tried at every character; this one opens on a stop, which the engine skips to directly.
_DOT_LETTER_DOT_RE = regex_cache.compile(r"\.[a-z]\.")
# "Passage 2", "Passages 1 & 2": references to the retrieved material that NER tags as names.
_SOURCE_REFERENCE_RE = regex_cache.compile(r"^(?:the\s+)?(?:passages?|documents?|sources?|chunks?|contexts?|articles?)\b", re.I)
_ARXIV_ID_RE = regex_cache.compile(r"(\d{4}\.\d{4,5}|(?<![a-z-])[a-z-]++(?:\.[a-z]{2})?/\d{7})", re.IGNORECASE)
_DOI_RE = regex_cache.compile(r"10\.\d{4,9}/\S+", re.IGNORECASE)
_URL_PREFIX_RE = regex_cache.compile(r"^(?:https?://)?(?:www\.)?", re.IGNORECASE)
_YEAR_RE = regex_cache.compile(r"(?:19|20)\d\d")
_AUTHOR_RE = regex_cache.compile(r"[A-Z][A-Za-z'’-]+")
# Each word is read whole (possessive) and a run starts only at a word's first letter, so a long word or a
# long run of capitals is scanned once.
_CAPITALISED_RUN_RE = regex_cache.compile(r"(?<![\w'’-])[A-Z][\w'’-]*+(?:\s++(?:(?:of|and|for|the|&)\s++)?[A-Z][\w'’-]*+)+")
_ACRONYM_RE = regex_cache.compile(r"\b[A-Z][A-Z0-9&]{1,7}\b")
# Combining diacritical marks (and their extensions): stripped after NFKD so "Müller" folds to "muller"
# in one C-level pass instead of a Python loop over every character of the context.
_COMBINING_MARKS_RE = regex_cache.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


def fold(text: str) -> str:
    """Lower-case, HTML entities decoded, accents stripped, apostrophes unified, hyphens and underscores
    as spaces, dotted abbreviations closed up ("D.C." -> "dc")."""
    text = html.unescape(text) if "&" in text else text
    if not text.isascii():  # most context is ASCII; decomposing it char by char would dominate the check
        text = _COMBINING_MARKS_RE.sub("", unicodedata.normalize("NFKD", text))
    lowered = text.lower().replace("’", "'").replace("-", " ").replace("_", " ")
    if _DOT_LETTER_DOT_RE.search(lowered) is not None:
        lowered = _DOTTED_ABBREVIATION_RE.sub(lambda m: m.group().replace(".", ""), lowered)
    return " ".join(lowered.split())


def _tokens(text: str, folded: str | None = None) -> list[str]:
    """Folded word tokens with possessives dropped ("harrison's" -> "harrison")."""
    return _TOKEN_RE.findall(_POSSESSIVE_RE.sub("", fold(text) if folded is None else folded))


def _has(words: str, phrase: str) -> bool:
    """Whole-word phrase test on a space-delimited token string (see `_Chunk.words`). A plural last
    word also matches its singular ("Republicans" / "Republican")."""
    if not phrase:
        return False
    if f" {phrase} " in words:
        return True
    for suffix in ("es", "s"):
        if phrase.endswith(suffix) and len(phrase) > len(suffix) + 2 and f" {phrase[: -len(suffix)]} " in words:
            return True
    return False


@lru_cache(maxsize=CHUNK_CACHE_SIZE)
def _folded_forms(text: str) -> tuple[str, str]:
    # Cached per chunk text: folding a long chunk costs more than matching every entity against it.
    folded = fold(text)
    return folded, " " + " ".join(_tokens(text, folded)) + " "


class _Chunk:
    """A chunk prepared for matching. Built per run and never shared, so lazy fields need no lock."""

    def __init__(self, chunk_id: str, text: str) -> None:
        self.id = chunk_id
        self.text = text
        # folded: for identifiers (URLs, DOIs), where dots and slashes matter; words: " tok tok ", for names
        self.folded, self.words = _folded_forms(text)

    @cached_property
    def acronyms_used(self) -> frozenset[str]:
        """All-caps tokens written in the chunk ("NASA")."""
        return frozenset(m.group().lower() for m in _ACRONYM_RE.finditer(self.text))

    @cached_property
    def acronyms_implied(self) -> frozenset[str]:
        """Initials of the chunk's capitalised multi-word names ("National Aeronautics ..." -> "nasa")."""
        return frozenset(_initials(m.group()) for m in _CAPITALISED_RUN_RE.finditer(self.text))


def _prepare(inspection: Inspection) -> list[_Chunk]:
    """The chunks, plus the question: a name the user wrote is not one the model invented; plus a record's
    keys as written, null fields included ("WiFi": null names WiFi, though it says nothing about it), and the
    name of its format ("the provided JSON data" speaks of the source, and spaCy tags "JSON" as a place)."""
    out = [_Chunk(chunk.id, chunk.text) for chunk in inspection.chunks]
    if inspection.question.strip():
        out.append(_Chunk("question", inspection.question))
    records = [r for r in inspection.records if r is not None]
    names = [k for r in records for f in r.fields for k in f.path] + [r.form for r in records if r.form]
    keys = " ".join(dict.fromkeys(names))
    if keys:
        out.append(_Chunk("record keys", keys))
    return out


def _initials(name: str) -> str:
    return "".join(w[0] for w in name.split() if w[:1].isupper()).lower()


def _person_words(text: str) -> list[str]:
    words = [w for w in _tokens(text) if w not in TITLES]
    while words and words[-1] in _NAME_SUFFIXES:
        words = words[:-1]
    return words


def _person_in(entity: str, chunk: _Chunk) -> bool:
    words = _person_words(entity)
    if not words:
        return True
    if _has(chunk.words, " ".join(words)):
        return True
    names = [w for w in words if len(w) > 1]  # initials ("J.") are matched through the given-name rule
    if not names:
        return False
    surname = names[-1]
    if not _has(chunk.words, surname):
        return False
    if len(names) == 1:
        return True
    given = names[0]
    return _has(chunk.words, given) or _has(chunk.words, f"{given[0]} {surname}")


def _acronym_in(entity: str, chunk: _Chunk) -> bool:
    """NASA in the answer for "National Aeronautics and Space Administration" in the chunk, or back."""
    stripped = entity.strip(" .,'\"()")
    if stripped.isupper() and 2 <= len(stripped) <= 8 and stripped.lower() in chunk.acronyms_implied:
        return True
    initials = _initials(entity)
    return len(initials) >= 2 and initials in chunk.acronyms_used


def _org_in(entity: str, chunk: _Chunk) -> bool:
    words = [w for w in _tokens(entity) if w not in TITLES]
    if not words or _acronym_in(entity, chunk):
        return True
    distinctive = [w for w in words if w not in _GENERIC_ORG_WORDS and w not in STOP_WORDS]
    if not distinctive:
        return _has(chunk.words, " ".join(words))
    return all(_has(chunk.words, w) for w in distinctive)


def _citation_in(entity: str, chunk: _Chunk) -> bool:
    lowered = entity.lower()
    if "arxiv" in lowered:
        match = _ARXIV_ID_RE.search(entity)
        return match is not None and fold(match.group(1)) in chunk.folded
    doi = _DOI_RE.search(entity)
    if doi is not None:
        return fold(doi.group()) in chunk.folded
    if lowered.startswith(("http", "www.")):
        core = fold(_URL_PREFIX_RE.sub("", entity).rstrip("/"))
        return bool(core) and core in chunk.folded
    # Author-year: every author surname and the year in one chunk.
    years = _YEAR_RE.findall(entity)
    authors = [a for a in _AUTHOR_RE.findall(entity) if a.lower() not in ("et", "al", "and")]
    if not authors:
        return True
    return all(_has(chunk.words, " ".join(_tokens(a))) for a in authors) and all(y in chunk.folded for y in years)


def _other_in(entity: str, chunk: _Chunk) -> bool:
    words = [w for w in _tokens(entity) if w not in STOP_WORDS]
    if not words or _acronym_in(entity, chunk):
        return True
    return _has(chunk.words, " ".join(words)) or all(_has(chunk.words, w) for w in words)


_MATCHERS = {PERSON: _person_in, ORG: _org_in, CITATION: _citation_in}


def entity_in_chunk(entity: Entity, chunk: _Chunk) -> bool:
    """Whether the chunk names the entity, as written or in a well-known equivalent form ("U.S." for "United
    States", "MA" for "Massachusetts", "Rd" for "Road": text/names.py)."""
    match = _MATCHERS.get(entity.label, _other_in)
    if match(entity.text, chunk):
        return True
    if entity.label == CITATION:
        return False
    return any(match(variant, chunk) for variant in variants(" ".join(_tokens(entity.text))))


# Tokens of a schedule or a date written with capitals ("Mon-Fri 9am-5pm", "Pacific Time", "Q4"): values, which
# the contradiction checks compare, not names.
_VALUE_TOKEN_RE = regex_cache.compile(
    r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|sday|rsday|urday)?s?|"
    r"jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|am|pm|noon|midnight|time|standard|daylight|"
    r"et|est|edt|ct|cst|cdt|mt|mst|mdt|pt|pst|pdt|utc|gmt|eastern|central|mountain|pacific|q[1-4]|[1-4]q|"
    r"\d+(?:am|pm|st|nd|rd|th|h)?"
)


def _value_only(text: str) -> bool:
    tokens = _tokens(text)
    return bool(tokens) and all(_VALUE_TOKEN_RE.fullmatch(t) for t in tokens)


def _key(entity: Entity) -> tuple[str, str]:
    return entity.label, " ".join(_tokens(entity.text))


def _sentence_of(entity: Entity, inspection: Inspection) -> str:
    spans = inspection.answer_sentence_spans
    if entity.start >= 0:
        i = bisect_right([start for start, _ in spans], entity.start) - 1
        if i >= 0 and entity.start < spans[i][1]:
            return inspection.answer_text[spans[i][0] : spans[i][1]]
        return entity.text
    return next((s for s in inspection.answer_sentences if entity.text in s), entity.text)


class EntityCheck:
    """Fabricated people, organisations and citations: named in the answer, absent from every chunk."""

    name = "entities"

    def __init__(
        self,
        config: DetectorConfig,
        recognizer: EntityRecognizer | None = None,
        labels: frozenset[str] = DEFAULT_LABELS,
    ) -> None:
        self._recognizer = recognizer if recognizer is not None else make_recognizer(config.ner, config.spacy_model)
        self._labels = labels

    @property
    def backend(self) -> str:
        return self._recognizer.name

    def entities(self, inspection: Inspection) -> tuple[Entity, ...]:
        if inspection.answer_entities is not None:
            return inspection.answer_entities
        if not inspection.answer_text.strip():
            return ()
        return batch_answer_entities(self._recognizer, [inspection])[0]

    def run(self, inspection: Inspection) -> CheckResult:
        started = time.perf_counter()
        unique: dict[tuple[str, str], Entity] = {}
        for entity in self.entities(inspection):
            if len(unique) >= MAX_ENTITIES:
                break
            if self._checkable(entity):
                unique.setdefault(_key(entity), entity)
        chunks: list[_Chunk] | None = None

        def named(entity: Entity) -> bool:
            nonlocal chunks
            if chunks is None:
                chunks = _prepare(inspection)
            return any(entity_in_chunk(entity, c) for c in chunks)

        # Whether the sources name an entity depends on its label and text alone: looked up once per event, so a
        # repair's re-inspection (which shares the event's memo) matches only names the repair brought in.
        fabricated = [e for e in unique.values()
                      if not inspection.once(("entity named", e.label, e.text), lambda e=e: named(e))]
        found = [e.text for e in unique.values() if not any(e is f for f in fabricated)]
        return CheckResult(
            name=self.name,
            score=len(fabricated) / len(unique) if unique else 0.0,
            flagged=bool(fabricated),
            findings=tuple(self._finding(e, inspection) for e in fabricated),
            details={
                "entities": len(unique),
                "fabricated": [e.text for e in fabricated],
                "found": found,
                "by_label": _count_labels(unique.values()),
                "backend": self.backend,
            },
            latency_ms=elapsed_ms(started),
        )

    def _checkable(self, entity: Entity) -> bool:
        if entity.label not in self._labels or len("".join(_tokens(entity.text))) < 2:
            return False  # a lone letter ("F" of "75°F") is tagging noise
        if entity.label == CITATION:
            return True
        if _value_only(entity.text):
            return False  # "Mon-Fri 9am-5pm" (org), "Pacific Time" (person): spaCy tags values as names
        # A name is written with a capital; all-lower-case spans ("sauté garlic") are tagging noise.
        has_capital = any(c.isupper() for c in entity.text)
        return has_capital and not _SOURCE_REFERENCE_RE.match(entity.text)

    @staticmethod
    def _finding(entity: Entity, inspection: Inspection) -> Finding:
        kind = _KINDS.get(entity.label, entity.label.lower())
        n = len(inspection.chunks)
        where = f"none of the {n} retrieved chunks" if n else "no retrieved context (none was supplied)"
        if inspection.question.strip():
            where += " nor in the question"
        return Finding(
            type=FindingType.FABRICATED_ENTITY,
            kind=kind,
            statement=_sentence_of(entity, inspection),
            evidence=f"'{entity.text}' ({kind}) appears in {where}",
            answer_value=entity.text,
        )


def _count_labels(entities: Iterable[Entity]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entity in entities:
        counts[entity.label] = counts.get(entity.label, 0) + 1
    return counts
