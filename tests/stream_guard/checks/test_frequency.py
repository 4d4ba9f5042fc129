from __future__ import annotations

from contradictions import found_by

from stream_guard.checks.frequency import analyze_frequency

DOSAGE = "Adults: take one 500 mg tablet twice daily with food for ten days."


found = found_by(analyze_frequency)


def test_another_frequency_is_a_contradiction_naming_both() -> None:
    assert found(DOSAGE, "Adults take one tablet three times daily with food.") == [
        ("frequency", "three times daily", "twice daily")]
    assert found("Massage the scalp at least once a week.", "Massage the scalp up to once a week.") == [
        ("frequency", "up to once a week", "at least once a week")]


def test_an_equivalent_frequency_agrees() -> None:
    assert found(DOSAGE, "Adults take one tablet every 12 hours with food.") == []
    assert found(DOSAGE, "Adults take one tablet two times a day with food.") == []


def test_a_source_s_bare_adverb_of_period_is_once_per_period() -> None:
    # "billed annually" states once a year: "twice a year" contradicts it, with both values named; "once a year"
    # agrees.
    billing = "The Business plan is billed annually in advance."
    assert found(billing, "The Business plan is billed twice a year in advance.") == [
        ("frequency", "twice a year", "annually")]
    assert found(billing, "The Business plan is billed once a year in advance.") == []


def test_a_period_adjective_contradicts_another_on_the_same_noun() -> None:
    # "a weekly serving" for "a daily serving": the period the serving recurs in changed.
    diet = "Do this with a daily serving of essential fatty acids from avocados and nuts."
    assert found(diet, "The diet includes a weekly serving of essential fatty acids from avocados.") == [
        ("frequency", "a weekly serving", "a daily serving")]
    assert found(diet, "The diet includes a daily serving of essential fatty acids from avocados.") == []


def test_a_period_adjective_is_no_count_of_times() -> None:
    # "a daily dose" is the dose of one day, which may be taken twice daily; another noun's period says nothing
    # of this one's.
    assert found(DOSAGE, "Adults take a daily dose of one tablet with food.") == []
    assert found("Members of the plan get a weekly newsletter.", "Members of the plan get a monthly report.") == []


def test_a_sentence_of_only_a_frequency_is_compared_as_the_action_before_it() -> None:
    # "Do this up to once a week." says how often of the previous sentence's massage: it restates the source
    # sentence that one restates.
    source = "Massage your scalp with warm oil to improve blood circulation, at least once a week."
    assert found(source, "Massage your scalp with warm oil. Do this up to once a week.") == [
        ("frequency", "up to once a week", "at least once a week")]
    assert found(source, "Massage your scalp with warm oil. Do this at least once a week.") == []
    # Nor is a sentence of its own words read as the previous one's.
    assert found(source, "Massage your scalp with warm oil. Rinse the hair up to once a week.") == []
