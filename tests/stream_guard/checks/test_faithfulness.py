from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from stream_guard.checks import faithfulness
from stream_guard.checks.faithfulness import FaithfulnessCheck, context_numbers, names_calendar
from stream_guard.config.detector import DetectorConfig, preset
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import FindingType

CONTEXT = [
    "Returns are accepted within 14 days of delivery. Items must be unused and in their original packaging.",
    "The Pro plan costs $120 per year, billed annually. Support is available by email on weekdays.",
]


def run(answer: str, context=CONTEXT, config: DetectorConfig | None = None, question: str = "q"):
    return FaithfulnessCheck(config or DetectorConfig()).run(Inspection.build(question, context, answer))


def test_grounded_answer_scores_at_least_080() -> None:
    result = run(
        "Returns are accepted within 14 days of delivery. Items must be unused. "
        "The Pro plan costs $120 per year, billed annually."
    )
    assert result.name == "faithfulness"
    assert result.score >= 0.80
    assert not result.flagged
    assert len(result.verified) == 3
    assert result.findings == ()


def test_fabricated_answer_scores_at_most_050_with_ungrounded_list() -> None:
    result = run(
        "Our loyalty programme awards platinum members complimentary helicopter transfers. "
        "Quarterly dividends are paid to every registered shareholder in Luxembourg. "
        "Returns are accepted within 14 days of delivery."
    )
    assert result.score <= 0.50
    assert result.flagged
    statements = [f.statement for f in result.findings]
    assert len(statements) == 2
    assert statements[0].startswith("Our loyalty programme")
    assert all(f.type is FindingType.UNSUPPORTED and f.kind == "claim" for f in result.findings)
    assert "content words occur in the retrieved context" in result.findings[0].evidence
    assert "'loyalty'" in result.findings[0].evidence and "(+2 more)" in result.findings[0].evidence


def test_empty_answer_is_perfect() -> None:
    result = run("")
    assert result.score == 1.0
    assert not result.flagged
    assert result.details["claims"] == 0


def test_question_only_answer_has_no_claims() -> None:
    result = run("Would you like to know about refunds? Which plan do you mean?")
    assert result.details["claims"] == 0
    assert result.score == 1.0


def test_strict_overlap_threshold_gives_lower_scores() -> None:
    # About half the content words of the first sentence come from the context: grounded at the
    # default 0.40 overlap, ungrounded at the strict preset's 0.70.
    answer = (
        "Returns within 14 days need unused items, receipts and manager approval. "
        "The Pro plan costs $120 per year."
    )
    default = run(answer)
    strict = run(answer, config=preset("strict"))
    assert strict.score < default.score
    assert default.score == 1.0


def test_number_absent_from_context_ungrounds_a_claim() -> None:
    result = run("Returns are accepted within 30 days of delivery.")
    assert result.score == 0.0
    assert result.details["missing_numbers"] == ["30 days"]
    assert "30" in result.findings[0].evidence


def test_a_figure_whose_number_the_source_has_in_another_unit_is_named_as_not_stated() -> None:
    # The source has the number 14 ("within 14 days"); "14 weeks" is what it does not state, so the evidence must
    # not say the figure occurs nowhere.
    evidence = run("Returns are accepted within 14 weeks of delivery.").findings[0].evidence
    assert "no source states the figure '14 weeks'" in evidence
    assert "nowhere" not in evidence


def test_spelled_out_context_number_grounds_digits() -> None:
    result = run("Refunds take 3 days.", context=["Refunds take three days to process."])
    assert result.score == 1.0
    assert "3" in context_numbers(Inspection.build("", ["three"], ""))


def test_details_carry_scoring_features() -> None:
    result = run("Returns are accepted within 14 days. Dragons guard the warehouse at night.")
    details = result.details
    assert details["claims"] == 2
    assert len(details["claim_overlaps"]) == 2
    assert len(details["overlap_with_best_sentence"]) == 2
    assert details["min_overlap"] == min(details["claim_overlaps"])
    assert 0 < details["novel_stems"] and 0 < details["novel_fraction"] < 1
    assert details["min_best_sentence_overlap"] <= details["min_overlap"]


def test_best_sentence_overlap_sees_words_scattered_across_passages() -> None:
    # Every word occurs somewhere in the context, but no single sentence says this.
    result = run("Support items are billed within delivery packaging.")
    assert result.details["claim_overlaps"][0] == 1.0
    assert result.details["overlap_with_best_sentence"][0] < 0.7


def test_finding_points_at_best_matching_source_sentence() -> None:
    result = run("Returns are accepted from unicorn breeders within 14 days of zeppelin delivery.",
                 config=DetectorConfig(faithfulness_overlap_threshold=0.9))
    [finding] = result.findings
    assert finding.source == "Returns are accepted within 14 days of delivery."
    assert finding.chunk_id == "1"


def test_meta_sentences_do_not_count_as_claims() -> None:
    result = run("Based on the provided passages, returns are accepted within 14 days. I hope this helps!")
    assert result.details["claims"] == 1
    assert result.score == 1.0


def test_no_context_ungrounds_every_claim() -> None:
    result = run("Returns are accepted within 14 days.", context=[])
    assert result.score == 0.0
    assert result.flagged


@given(st.text(max_size=300), st.lists(st.text(max_size=200), max_size=3))
def test_arbitrary_text_never_crashes_and_stays_bounded(answer: str, context: list[str]) -> None:
    result = run(answer, context=context)
    assert 0.0 <= result.score <= 1.0
    assert 0.0 <= result.details["novel_fraction"] <= 1.0


def test_a_verbatim_quotation_is_grounded_by_the_chunk() -> None:
    context = ["Refunds are issued within 14 days of the returned item being received."]
    result = run('As the policy puts it: "Refunds are issued within 14 days of the returned item being received."', context)
    assert result.score == 1.0


def test_a_bare_yes_is_grounded_through_the_question() -> None:
    context = ["Joseph Roth was an Austrian novelist and author.", "Cid Corman was an American poet and author."]
    assert run("yes", context, question="Were both Joseph Roth and Cid Corman authors?").score == 1.0
    assert run("yes", context, question="Did the Rhine flood Basel in 1999?").score == 0.0


def test_markers_and_markdown_are_not_claims_or_figures() -> None:
    context = ["Refunds are issued within 14 days of the returned item being received."]
    result = run("- **Refunds** are issued within 14 days of receiving the returned item [1].[^2]\n\n[^2]: Passage 1", context)
    assert result.score == 1.0 and result.details["missing_numbers"] == []


def test_clock_times_and_frequencies_in_another_form_are_grounded() -> None:
    assert run("The pharmacy closes at 4 pm.", ["The pharmacy closes at 16:00."]).score == 1.0
    # "in the morning" / "at night" are the time's am and pm, not words of their own
    hours = run("The pharmacy opens at 8:30 in the morning and closes at 21:00 at night.",
                ["The pharmacy opens at 8:30 am and closes at 9 pm."])
    assert hours.details["claim_overlaps"] == [1.0] and hours.details["missing_numbers"] == []
    assert run("The pharmacy closes at 10 at night.", ["The pharmacy closes at 9 pm."]).details["missing_numbers"]
    assert run("Take one tablet every 12 hours.", ["Take one tablet twice daily."]).score == 1.0


def test_the_amount_of_a_rate_and_a_negated_bound_are_read_as_the_source_means_them() -> None:
    assert run("Extra storage is $5 a month for each 100 GB.", ["Extra storage is $5 per 100 GB per month."]).score == 1.0
    dosage = ["Children: 5 ml every 6 hours as needed. Do not give more than 4 doses in 24 hours."]
    assert run("Children can have 5 ml every six hours, with no more than 4 doses in 24 hours.", dosage).score == 1.0


def test_words_about_the_source_and_its_speakers_are_not_claims_about_the_world() -> None:
    # A summary says what the document or the speakers say: "the speakers discuss" frames the claim; the
    # source never calls itself a document or its participants speakers.
    context = ["Anna: I moved the meeting to Friday.", "Ben: Fine, Friday at 10 works for the budget review."]
    framed = run("The speakers discussed moving the budget review to Friday at 10.", context, question="")
    plain = run("Moving the budget review to Friday at 10.", context, question="")
    assert framed.details["novel_stems"] == plain.details["novel_stems"]
    assert framed.details["claim_overlaps"] == plain.details["claim_overlaps"]
    invented = run("The speakers discussed moving the budget review to Monday at 9.", context, question="")
    assert invented.details["novel_stems"] > framed.details["novel_stems"]


def test_a_price_verb_is_grounded_with_the_price_it_introduces() -> None:
    context = ["SKU-441 (wireless headset) is priced at $49.99.", "Free shipping applies to orders over $35."]
    for answer in ("SKU-441 costs $49.99.", "SKU-441 sells for $49.99.", "SKU-441 is priced at $49.99."):
        details = run(answer, context, question="What is the price of SKU-441?").details
        assert details["novel_stems"] == 0 and details["claim_overlaps"] == [1.0], answer
    wrong = run("SKU-441 costs $59.99.", context, question="What is the price of SKU-441?")
    assert wrong.details["missing_numbers"] == ["$59.99"] and wrong.details["novel_stems"] > 0


def test_words_the_answer_repeats_from_the_question_are_not_novel() -> None:
    context = ["The summer sale runs from June 1, 2024 to June 30, 2024."]
    asked = run("The summer sale ends on June 30, 2024.", context, question="When does the summer sale end?")
    unasked = run("The summer sale ends on June 30, 2024.", context, question="How long is the summer sale?")
    assert asked.details["novel_stems"] == 0 and unasked.details["novel_stems"] == 1


def test_a_faithful_decline_is_not_flagged_for_the_words_it_repeats_from_the_question() -> None:
    result = run("If the blender arrives broken, the passages do not provide information on who pays the courier. "
                 "Unable to answer based on given passages.", question="Who pays the courier for a broken blender?")
    assert not result.flagged
    assert result.findings == ()


def test_a_fact_added_to_a_decline_is_still_checked() -> None:
    result = run("The passages do not mention the warranty, but platinum members receive complimentary helicopter "
                 "transfers.")
    assert result.flagged
    # the finding names the added fact, not the decline beside it
    assert [f.statement for f in result.findings] == ["Platinum members receive complimentary helicopter transfers."]


def test_an_invented_answer_that_also_says_not_mentioned_is_still_flagged() -> None:
    result = run("Quarterly dividends are paid to every registered shareholder in Luxembourg, although the payout "
                 "date is not mentioned in the passages.")
    assert result.flagged
    assert len(result.findings) == 1


def test_a_figure_the_question_states_is_not_a_new_figure() -> None:
    context = ["To uninstall uTorrent, open the Add/Remove Programs option in the Control Panel and select uTorrent."]
    answer = "To uninstall uTorrent on Windows 10, open Add/Remove Programs in the Control Panel."
    asked = run(answer, context, question="how to uninstall utorrent windows 10")
    assert asked.details["missing_numbers"] == [] and not asked.flagged
    unasked = run(answer, context, question="how to uninstall utorrent")
    assert unasked.details["missing_numbers"] == ["10"] and unasked.flagged
    # a value with a unit is still compared, whatever the question says
    priced = run("The Pro plan costs $150 per year.", question="Is the Pro plan $150 per year?")
    assert priced.details["missing_numbers"] == ["$150"]


def test_a_size_written_9x13_is_two_figures_not_a_multiplier() -> None:
    # "9x13" is a size (9 by 13), as in the source; its second figure is the source's own.
    context = ["Pour the oil into a 9x13 inch baking dish. Add the chicken to the dish."]
    assert run("Pour oil into a 9x13 inch baking dish and add the chicken.", context).details["missing_numbers"] == []
    assert run("Pour oil into a 9x13 baking dish and add the chicken.", ["Use a 9x13 baking dish."]).details[
        "missing_numbers"] == []
    wrong = run("Pour oil into a 9x15 inch baking dish and add the chicken.", context)
    assert wrong.details["missing_numbers"] and wrong.flagged


def test_a_frequency_no_source_states_in_any_form_is_a_missing_figure() -> None:
    context = ["The island is only accessible by sea 60 days a year, through a small port in its only town."]
    wrong = run("The island is only accessible by sea twice a year through a small port.", context)
    assert wrong.details["missing_numbers"] == ["twice a year"] and wrong.flagged
    same = run("Take one tablet every 12 hours.", ["Take one tablet twice a day, with food."])
    assert same.details["missing_numbers"] == [] and not same.flagged
    # "open every day" is the days of a schedule, not a frequency
    assert run("The shop is open every day.", ["The shop is open 7 days a week."]).details["missing_numbers"] == []
    # a price's billing period is the price's, compared as a price: one figure, not two
    assert run("The Pro plan costs $10 per month.").details["missing_numbers"] == ["$10"]



def test_a_count_quantifier_no_source_uses_is_named_and_counted() -> None:
    # "Many" and "most" are stop words: without this no measure of the claim sees them.
    result = run("Most items must be unused. Many returns are accepted within 14 days of delivery.")
    assert result.details["unstated_quantifiers"] == 2
    assert run("Items must be unused. Returns are accepted within 14 days.").details["unstated_quantifiers"] == 0
    # An ungrounded claim's evidence says which count no source states.
    [finding] = run("Many dragons guard the warehouse.").findings
    assert "no source says 'many'" in finding.evidence
    # A share over half in the source states "the majority".
    outbreak = ["81 of the 131 patients gave their vaccination status; 70% of those 81 were unvaccinated."]
    assert run("The majority of those patients were unvaccinated.", outbreak).details["unstated_quantifiers"] == 0
    assert run("The majority of those patients were unvaccinated.", [outbreak[0].replace("70%", "a third")]
               ).details["unstated_quantifiers"] == 1


def test_a_frequency_written_another_way_is_the_source_s_figure() -> None:
    # "two times a day" is the source's "twice daily".
    dosage = ["Adults: take 500 mg twice daily with food. Do not exceed 1,000 mg in 24 hours."]
    assert run("Adults take 500 mg two times a day with food.", dosage).details["missing_numbers"] == []
    assert run("Adults take 500 mg three times a day with food.", dosage).details["missing_numbers"] != []
    # "daily" in a count of times is no schedule's days: "three times daily" is a figure no source states.
    assert run("Adults take 500 mg three times daily with food.", dosage).details["missing_numbers"] == [
        "three times daily"]
    # a bare adverb of period in the source states once per period
    billing = ["The Business plan is billed annually in advance."]
    assert run("The Business plan is billed once a year, in advance.", billing).details["missing_numbers"] == []
    assert run("The Business plan is billed twice a year, in advance.", billing).details["missing_numbers"] == [
        "twice a year"]


def test_a_period_the_source_states_is_a_stated_value_a_single_date_is_not() -> None:
    # A first and a last date ("runs from ... to ...", "May 12-14") are how long the claim's subject lasts: one
    # value the answer states as its source does (score_model.short_finding reads the count).
    term = ["Term. This Agreement commences on March 1, 2026 and, unless terminated earlier, ends on February 28, 2027."]
    assert run("The agreement runs from 1 March 2026 to 28 February 2027.", term).details["stated_values"] == 1
    days = ["The 2026 edition of the conference takes place on 12-14 May 2026 at the Lisbon Congress Centre."]
    assert run("The conference is held May 12-14, 2026 at the Lisbon Congress Centre.", days).details[
        "stated_values"] == 1
    # One date names an event's day, and a period the question gives is its frame, not the answer's value.
    assert run("The agreement ends on 28 February 2027.", term).details["stated_values"] == 0
    assert run("The agreement runs from 1 March 2026 to 28 February 2027.", term,
               question="Who signed the agreement that runs from March 1, 2026 to February 28, 2027?"
               ).details["stated_values"] == 0


def test_a_date_the_source_writes_in_another_format_is_grounded_whole() -> None:
    context = ["Applications for the spring intake close on 2026-01-31 at 23:59 UTC."]
    same = run("Applications for the spring intake close on January 31, 2026 at 23:59 UTC.", context)
    assert same.details["novel_stems"] == 0 and not same.flagged
    # a month the source does not give is not grounded by its year
    added = run("Applications for the spring intake close in March 2026.",
                ["Applications for the spring intake close in 2026."])
    assert added.details["novel_stems"] == 1
    other_month = run("Applications for the spring intake close on February 28, 2026 at 23:59 UTC.", context)
    assert other_month.details["novel_stems"] == 1 or other_month.details["missing_numbers"]


def test_days_inside_a_span_the_source_names_are_grounded() -> None:
    context = ["Phone support is available Monday to Friday, 9:00 a.m. to 5:00 p.m. Eastern Time."]
    assert run("Phone support is available on weekdays.", context).details["novel_stems"] == 0
    assert run("Phone support is available on weekends.", context).details["novel_stems"] == 1


def test_a_well_known_name_written_another_way_is_grounded() -> None:
    context = ["Acme Logistics operates warehouses in the United States and the United Kingdom."]
    assert run("Acme Logistics operates warehouses in the USA and the UK.", context).details["novel_stems"] == 0
    assert run("Acme Logistics operates warehouses in the EU.", context).details["novel_stems"] == 1
    # an abbreviation in the source counts only in capitals: "us" the pronoun is no country
    pronoun = run("Acme Logistics operates warehouses in America.", ["Write to us: Acme Logistics operates warehouses."])
    assert pronoun.details["novel_stems"] == 1
    assert run("Acme Logistics operates warehouses in the United Kingdom.", ["Acme Logistics operates UK warehouses."]
               ).details["novel_stems"] == 0
    dotted = ["Acme Logistics operates U.S. warehouses."]
    assert run("Acme Logistics operates warehouses in the United States.", dotted).details["novel_stems"] == 0


# The figure pattern reads its look-behinds after the first digit: the same matches as written with them first.
_FIGURE_AS_FIRST_WRITTEN = re.compile(r"(?:(?<![\w.])|(?<=\d[xX]))\d+(?:[.,]\d+)*")
_FIGURE_BITS = st.sampled_from(["1", "23", "9x13", "9X1", "x", "a1", "1.5", ".5", "1,200", "3,", "_7", "٣", "²",
                                " ", "-", "$", "v2", "10.0.1", "(", "\n"])


@given(st.lists(_FIGURE_BITS, max_size=14).map("".join) | st.lists(_FIGURE_BITS, max_size=14).map(" ".join)
       | st.text(max_size=60))
def test_the_figure_pattern_finds_what_it_found_with_its_look_behinds_first(text: str) -> None:
    assert [m.span() for m in faithfulness._NUMBER_RE.finditer(text)] == [
        m.span() for m in _FIGURE_AS_FIRST_WRITTEN.finditer(text)]


def test_every_is_the_quantifier_all_and_each_are() -> None:
    # "every visitor" says what "all visitors" says ("all" and "each" are stop words): not a new fact.
    context = ["Site safety: all visitors must wear a hard hat and high-visibility vest at all times on site."]
    kept = run("Every visitor must wear a hard hat and a high-visibility vest at all times on site.", context)
    assert kept.details["novel_stems"] == 0 and not kept.findings
    other = run("Every visitor must bring a hard hat and a high-visibility vest at all times on site.", context)
    assert other.details["novel_stems"] == 1


def test_a_claim_of_times_alone_is_explained_by_its_times_not_by_a_count_of_no_words() -> None:
    # "from 10am to 12am on Friday and Saturday" has no content words once its times and days are read: the
    # evidence names the record's time, and "only 0 of 0 content words" would tell a reviewer nothing.
    record = ('{"name": "Casa Blanca", "hours": {"Friday": "16:0-0:0", "Saturday": "10:0-0:0", '
              '"Sunday": "10:0-22:0"}}')
    result = run("The restaurant is open from 10am to 10pm on Sunday, and from 10am to 12am on Friday and Saturday.",
                 context=[record])
    times = [f for f in result.findings if "opening or closing time" in f.evidence]
    assert times, [f.evidence for f in result.findings]
    assert all("of 0 content words" not in f.evidence for f in result.findings)


# The calendar gate as first written: one alternation opening on a word boundary, tried at every character.
_PLAIN_CALENDAR_RE = re.compile(
    r"\b(?:(?i:(?:mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)(?:day)?s?|week(?:day|end)s?)|January|February|March|April"
    r"|May|June|July|August|September|October|November|December)\b"
)
_CALENDAR_PIECES = ["Mon", "MONDAYS", "tues", "Thurs", "thu", "week", "Weekend", "weekdays", "sat", "ſat", "SUN",
                    "January", "May", "may", "Mayday", "xMay", "_May", "March", "1", " ", "-", "é", "day", "s"]


@settings(max_examples=600)
@given(st.lists(st.one_of(st.sampled_from(_CALENDAR_PIECES), st.text(max_size=3)), max_size=10).map("".join))
def test_the_calendar_gate_answers_as_the_plain_pattern(text: str) -> None:
    assert names_calendar(text) == (_PLAIN_CALENDAR_RE.search(text) is not None)


def test_the_calendar_gate_finds_days_and_months_as_words() -> None:
    assert names_calendar("Open on Mondays.") and names_calendar("due in March") and names_calendar("two WEEKENDS")
    assert not names_calendar("Maybe the Marches of the common month") and not names_calendar("")
