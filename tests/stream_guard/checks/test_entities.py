from __future__ import annotations

from typing import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_guard.checks import entities as entities_module
from stream_guard.checks.entities import CORE_LABELS, EntityCheck
from stream_guard.config.detector import DetectorConfig
from stream_guard.text.inspection import Entity, Inspection
from stream_guard.text.ner import RegexRecognizer, make_recognizer
from stream_guard.wire.report import FindingType

SEED = (
    "The seminal work was published by Dr. James Harrison and Dr. Wei Liu in arXiv:2204.09876, "
    "at DeepMind Research Institute."
)
SEED_CONTEXT = "Recent studies show transformer models achieve 94% accuracy on NER tasks."
NEVER = {"Scaling Named", "Entity Recognition", "NER Tasks", "Named Entity Recognition"}


def regex_check(**kwargs) -> EntityCheck:
    return EntityCheck(DetectorConfig(ner="regex"), RegexRecognizer(), **kwargs)


def spacy_check() -> EntityCheck:
    try:
        return EntityCheck(DetectorConfig(ner="spacy"), make_recognizer("spacy"))
    except RuntimeError as exc:
        pytest.skip(f"spaCy model unavailable: {exc}")


def run(check: EntityCheck, answer: str, context=(SEED_CONTEXT,), question: str = ""):
    return check.run(Inspection.build(question, list(context), answer))


def test_seed_example_regex_flags_people_and_citation() -> None:
    result = run(regex_check(), SEED)
    fabricated = set(result.details["fabricated"])
    assert {"Dr. James Harrison", "Dr. Wei Liu", "arXiv:2204.09876"} <= fabricated
    assert not fabricated & NEVER
    assert result.flagged
    assert result.details["backend"] == "regex"


def test_seed_example_spacy_also_flags_the_institute() -> None:
    result = run(spacy_check(), SEED)
    assert set(result.details["fabricated"]) == {
        "Dr. James Harrison",
        "Dr. Wei Liu",
        "arXiv:2204.09876",
        "DeepMind Research Institute",
    }
    assert result.score == 1.0
    assert result.details["backend"].startswith("spacy:")


def test_fabricated_person_finding_fields() -> None:
    answer = "Refunds take 14 days. The policy was designed by Dr. James Harrison."
    result = run(regex_check(), answer, context=["Refunds take 14 days.", "Returns need a receipt."])
    [finding] = result.findings
    assert finding.type is FindingType.FABRICATED_ENTITY
    assert finding.kind == "person"
    assert finding.statement == "The policy was designed by Dr. James Harrison."
    assert finding.answer_value == "Dr. James Harrison"
    assert finding.evidence == "'Dr. James Harrison' (person) appears in none of the 2 retrieved chunks"


def test_fabricated_citation_flagged() -> None:
    result = run(regex_check(), "This was shown in doi:10.1000/xyz123 and by Smith et al. (2020).")
    kinds = {f.answer_value: f.kind for f in result.findings}
    assert kinds == {"doi:10.1000/xyz123": "citation", "Smith et al. (2020)": "citation"}


def test_entity_present_in_context_not_flagged() -> None:
    context = [
        "Professor James Harrison of the DeepMind Research Institute wrote arXiv:2204.09876 with W. Liu.",
        "Smith and colleagues reported the result in 2020.",
    ]
    answer = SEED + " Harrison's team agreed, as Smith et al. (2020) showed."
    result = run(regex_check(), answer, context=context)
    assert result.details["fabricated"] == []
    assert result.score == 0.0
    assert not result.flagged
    assert result.details["entities"] >= 4


def test_person_matching_needs_given_name_or_initial_with_surname() -> None:
    context = ["Barack Obama spoke in Berlin."]
    assert not run(regex_check(), "President Barack Obama spoke.", context=context).flagged
    assert run(regex_check(), "Michelle Obama spoke.", context=context).details["fabricated"] == ["Michelle Obama"]
    assert not run(regex_check(), "B. Obama spoke. Mr. Obama left.", context=context).flagged


def test_org_matches_on_distinctive_words_and_acronyms() -> None:
    context = ["Researchers at Stanford presented work with the National Aeronautics and Space Administration."]
    answer_entities = (Entity("Stanford University", "ORG"), Entity("NASA", "ORG"), Entity("Acme Labs", "ORG"))
    inspection = Inspection.build("", context, "Stanford University and NASA and Acme Labs.", answer_entities=answer_entities)
    result = regex_check().run(inspection)
    assert result.details["fabricated"] == ["Acme Labs"]


def test_matching_ignores_case_accents_possessives_and_html_entities() -> None:
    context = ["Dr. José Álvarez and the FOO BAR GROUP met in Washington, D.C."]
    entities = (
        Entity("Jose Alvarez's", "PERSON"),
        Entity("Foo Bar Group", "ORG"),
        Entity("Washington DC", "GPE"),
        Entity("Jos&eacute; Alvarez", "PERSON"),
    )
    inspection = Inspection.build("", context, "x", answer_entities=entities)
    assert regex_check().run(inspection).details["fabricated"] == []


def test_entity_named_in_the_question_is_not_fabricated() -> None:
    result = run(regex_check(), "Uninstall it from Microsoft Windows first.", context=["Open the control panel."],
                 question="How do I remove uTorrent from Microsoft Windows?")
    assert result.details["found"] == ["Microsoft Windows"]
    assert not result.flagged


def test_empty_answer_returns_empty_list() -> None:
    result = run(regex_check(), "")
    assert result.details["entities"] == 0
    assert result.details["fabricated"] == []
    assert result.score == 0.0
    assert not result.flagged


def test_discourse_phrases_not_flagged() -> None:
    answer = (
        "However, In Summary, Scaling Named Entity Recognition to NER Tasks works. "
        "Based On the results, Key Findings follow."
    )
    assert run(regex_check(), answer).details["fabricated"] == []
    # spaCy tags "NER Tasks" as an organisation, but the context mentions NER tasks.
    assert not set(run(spacy_check(), answer).details["fabricated"]) & NEVER


def test_precomputed_entities_are_used_instead_of_the_recognizer() -> None:
    class Exploding:
        name = "exploding"

        def extract(self, texts: Sequence[str]):
            raise AssertionError("recognizer must not run when answer_entities is given")

    check = EntityCheck(DetectorConfig(), Exploding())
    inspection = Inspection.build("", [SEED_CONTEXT], SEED, answer_entities=(Entity("Wei Liu", "PERSON", 57, 64),))
    result = check.run(inspection)
    assert result.details["fabricated"] == ["Wei Liu"]
    assert result.details["backend"] == "exploding"


def test_only_configured_labels_are_checked() -> None:
    entities = (Entity("Atlantis", "GPE"), Entity("Zorblax Corp", "ORG"))
    inspection = Inspection.build("", ["nothing here"], "x", answer_entities=entities)
    assert regex_check(labels=CORE_LABELS).run(inspection).details["fabricated"] == ["Zorblax Corp"]
    default = regex_check().run(inspection)
    assert {f.kind for f in default.findings} == {"place", "org"}


def test_source_references_and_lowercase_spans_are_not_entities() -> None:
    entities = (Entity("Passage 2", "ORG"), Entity("sauté garlic", "PERSON"), Entity("F", "PRODUCT"))
    inspection = Inspection.build("", ["nothing"], "x", answer_entities=entities)
    assert regex_check().run(inspection).details["entities"] == 0


def test_no_context_means_every_entity_is_fabricated() -> None:
    result = run(regex_check(), "Dr. James Harrison said so.", context=[])
    assert result.score == 1.0
    assert "no retrieved context" in result.findings[0].evidence


@given(st.text(max_size=300), st.lists(st.text(max_size=200), max_size=3), st.text(max_size=80))
def test_arbitrary_text_never_crashes_and_stays_bounded(answer: str, context: list[str], question: str) -> None:
    result = run(regex_check(), answer, context=context, question=question)
    assert 0.0 <= result.score <= 1.0
    assert len(result.details["fabricated"]) <= result.details["entities"]


@pytest.mark.parametrize(("answer", "context"), [
    ("The U.S. imposed new tariffs on steel in 2018.", "The United States imposed new tariffs on steel in 2018."),
    ("A man was arrested in Cambridge, MA, on Friday.", "A Massachusetts man was arrested in Cambridge on Friday."),
    ("The restaurant is at 1150 Coast Village Road.", "Address: 1150 Coast Village Rd, Montecito."),
])
def test_a_name_written_in_a_well_known_other_form_is_found(answer: str, context: str) -> None:
    result = run(regex_check(), answer, context=(context,))
    assert not result.flagged, result.details


def test_a_non_ascii_name_is_read_whole() -> None:
    result = run(regex_check(), "Zdeno Chára captained the Bruins.", context=("Zdeno Chára captained the Boston Bruins.",))
    assert "Zdeno Chára" in result.details["found"] and not result.flagged


def test_a_schedule_is_not_a_name() -> None:
    check = EntityCheck(DetectorConfig(), recognizer=RegexRecognizer())
    assert not check._checkable(Entity("Mon-Fri 9am-5pm", "ORG"))
    assert not check._checkable(Entity("Pacific Time", "PERSON"))


def test_the_name_of_a_records_format_speaks_of_the_source() -> None:
    # "JSON" in "the provided data in JSON format" is the source's own format (spaCy tags it GPE); prose
    # context gives no such licence, and a table record is not JSON.
    answer = "Here is an overview based on the provided data in JSON format."
    entities = (Entity("JSON", "GPE", answer.index("JSON"), answer.index("JSON") + 4),)
    record = '{"name": "Harbor Grill", "city": "Goleta"}'
    table = "Name: Harbor Grill\nCity: Goleta\nStars: 4"
    for context, fabricated in ((record, []), (table, ["JSON"]), ("Harbor Grill is in Goleta.", ["JSON"])):
        inspection = Inspection.build("", [context], answer, answer_entities=entities)
        assert regex_check().run(inspection).details["fabricated"] == fabricated, context


# Lower-case letters, stops, the separators a dotted abbreviation sits between, digits and a letter that is not ASCII.
_DOTTED_PIECES = ["d", "c", "u", "s", "ab", ".", ". ", " ", "-", "_", "\n", "9", "'", "é", "D.C.", "U.S"]


def _fold_ungated(text: str) -> str:
    import html
    import unicodedata

    text = html.unescape(text) if "&" in text else text
    if not text.isascii():
        text = entities_module._COMBINING_MARKS_RE.sub("", unicodedata.normalize("NFKD", text))
    lowered = text.lower().replace("’", "'").replace("-", " ").replace("_", " ")
    lowered = entities_module._DOTTED_ABBREVIATION_RE.sub(lambda m: m.group().replace(".", ""), lowered)
    return " ".join(lowered.split())


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_DOTTED_PIECES), max_size=12).map("".join))
def test_every_dotted_abbreviation_holds_what_the_gate_searches(text: str) -> None:
    if entities_module._DOTTED_ABBREVIATION_RE.search(text.lower()) is not None:
        assert entities_module._DOT_LETTER_DOT_RE.search(text.lower()) is not None
    assert entities_module.fold(text) == _fold_ungated(text)


def test_fold_closes_dotted_abbreviations_only_where_the_gate_finds_one() -> None:
    assert entities_module._DOT_LETTER_DOT_RE.search("washington, dc. the end.") is None
    assert entities_module.fold("Washington, D.C. and the U.S.A.") == "washington, dc and the usa"
    for text in ("e.g. tea", "No. 5 a.m.", "Mr. Smith", "3.5.1", "x.y", "I.B.M's", "Dr.E.Lee"):
        assert entities_module.fold(text) == _fold_ungated(text)
