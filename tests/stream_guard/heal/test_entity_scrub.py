from __future__ import annotations

from healing_builders import contradiction, entity

from stream_guard.heal.entity_scrub import scrub

ANSWER = (
    "Transformer models reach 94% accuracy on NER tasks. "
    "Dr. James Harrison published this in arXiv:2204.09876. "
    "Fine-tuning adds 12-18%."
)


def test_drops_sentences_with_fabricated_entities_and_logs_them():
    findings = [
        entity("Dr. James Harrison published this in arXiv:2204.09876.", "Dr. James Harrison"),
        entity("Dr. James Harrison published this in arXiv:2204.09876.", "arXiv:2204.09876", kind="citation"),
    ]
    result = scrub(ANSWER, findings)
    assert result.text == (
        "Transformer models reach 94% accuracy on NER tasks. Fine-tuning adds 12-18%."
    )
    kinds = [c.kind for c in result.changes]
    assert kinds == ["drop_sentence"]
    assert result.changes[0].before == "Dr. James Harrison published this in arXiv:2204.09876."


def test_later_mentions_of_the_same_invented_person_go_too():
    answer = "Dr. Wei Liu led the study. The dataset is public. Liu's team reported 94%."
    result = scrub(answer, [entity("Dr. Wei Liu led the study.", "Dr. Wei Liu")])
    # "Liu" is shorter than four letters, so only the full name is matched: the third sentence stays.
    assert "Liu's team" in result.text
    answer = "Dr. James Harrison led it. The dataset is public. Harrison's team reported 94%."
    result = scrub(answer, [entity("Dr. James Harrison led it.", "Dr. James Harrison")])
    assert result.text == "The dataset is public."


def test_match_is_case_insensitive_for_the_entity_text():
    result = scrub("Per DEEPMIND RESEARCH INSTITUTE it works. It is fast.", [entity("x", "DeepMind Research Institute", kind="org")])
    assert result.text == "It is fast."


def test_everything_fabricated_leaves_nothing_to_offer():
    result = scrub("Dr. James Harrison wrote it.", [entity("Dr. James Harrison wrote it.", "Dr. James Harrison")])
    assert result.text is None
    assert [c.kind for c in result.changes] == ["drop_sentence"]


def test_non_entity_findings_are_ignored():
    result = scrub("It costs $10.", [contradiction("It costs $10.", "$10", "$12")])
    assert result.text is None and result.changes == ()


def test_scrubbing_a_numbered_item_leaves_no_orphan_list_number():
    from stream_guard.heal.entity_scrub import scrub

    answer = "Steps: 1. Register on the portal. 2. Ask Dr. James Harrison to sign the form. 3. Pay the fee."
    result = scrub(answer, [entity("2. Ask Dr. James Harrison to sign the form.", "Dr. James Harrison")])
    assert "Harrison" not in result.text
    assert result.text == "Steps: 1. Register on the portal. 2. Pay the fee."
