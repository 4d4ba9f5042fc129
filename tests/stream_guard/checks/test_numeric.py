"""Numeric and swapped-value contradictions."""

from __future__ import annotations

from stream_guard.checks.alignment import ContradictionView
from stream_guard.checks.numeric import analyze_numeric
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import Finding, FindingType
from contradictions import values


def numeric(context: str | list[str], answer: str) -> list[Finding]:
    return list(analyze_numeric(ContradictionView(Inspection.build("", context, answer))).findings)




def test_return_window_30_vs_14_days() -> None:
    context = "Our return policy allows returns within 14 days of purchase."
    answer = "You can definitely return items within 30 days of purchase."
    (finding,) = numeric(context, answer)
    assert finding.type is FindingType.CONTRADICTION
    assert (finding.kind, finding.answer_value, finding.source_value) == ("numeric", "30 days", "14 days")
    assert finding.statement == answer and finding.source == context
    assert "30 days" in finding.evidence and "14 days" in finding.evidence and "return" in finding.evidence


def test_price_10_vs_120() -> None:
    findings = numeric(
        "The Pro plan costs $120 per year, billed annually.",
        "The Pro plan costs $10 per month, billed monthly. You can cancel your monthly subscription at any time.",
    )
    assert values(findings) == [("numeric", "$10", "$120")]


def test_sku_label_is_never_a_value() -> None:
    findings = numeric("The SKU-441 widget is priced at $49.99.", "The SKU-441 widget costs $39.99.")
    assert values(findings) == [("numeric", "$39.99", "$49.99")]
    assert all("441" not in (f.answer_value or "") + (f.source_value or "") for f in findings)
    # A different label is a different product (the entity check's business), never a wrong number.
    assert numeric("The SKU-441 widget is priced at $49.99.", "The SKU-442 widget is priced at $49.99.") == []


def test_same_price_next_to_a_label_is_clean() -> None:
    assert numeric("The SKU-441 widget is priced at $49.99.", "The SKU-441 widget costs $49.99.") == []


def test_clean_restatement_is_clean() -> None:
    context = "Our return policy allows returns within 14 days of purchase. Shipping takes 5-7 business days."
    answer = "Returns are accepted within 14 days of purchase, and shipping takes 5-7 business days."
    assert numeric(context, answer) == []


def test_two_weeks_restates_14_days() -> None:
    assert numeric("Returns are accepted within 14 days.", "Returns are accepted within two weeks.") == []


def test_1200_users_restates_1_200_users() -> None:
    assert numeric("The service has 1200 users.", "The service has 1,200 users.") == []
    assert numeric("The setup fee is $1200.", "The setup fee is $1,200.") == []


def test_swapped_values_between_plans() -> None:
    findings = numeric("Basic costs $10, Pro costs $20.", "Pro costs $10.")
    assert values(findings) == [("swapped_value", "$10", "$20")]
    assert [f for f in numeric("Basic costs $10, Pro costs $20.", "Pro costs $10.") if f.kind == "swapped_value"]


def test_values_given_to_the_right_plans_are_not_swapped() -> None:
    assert numeric("Basic costs $10, Pro costs $20.", "Pro costs $20 and Basic costs $10.") == []


def test_a_figure_moved_to_another_period_is_a_swap() -> None:
    context = "In Q3 2025, revenue was $4.2 million, up from $3.6 million in Q2 2025."
    (finding,) = numeric(context, "In Q3 2025, revenue was $3.6 million.")
    assert values([finding]) == [("swapped_value", "$3.6 million", "$4.2 million")]
    assert "Q2 2025" in finding.evidence and "Q3 2025" in finding.evidence
    assert values(numeric("Sales reached 1,200 units in 2023 and 1,500 units in 2024.",
                          "Sales reached 1,200 units in 2024.")) == [("swapped_value", "1,200", "1,500")]


def test_figures_given_to_their_own_periods_are_not_swapped() -> None:
    context = "In Q3 2025, revenue was $4.2 million, up from $3.6 million in Q2 2025."
    assert numeric(context, "Revenue was $4.2 million in Q3 2025, up from $3.6 million in Q2 2025.") == []
    assert numeric(context, "Revenue was $3.6 million in the second quarter of 2025 and $4.2 million in the third.") == []
    assert numeric(context, "Revenue grew to $4.2 million from $3.6 million.") == []


def test_a_value_matched_only_by_coincidence_is_contradicted() -> None:
    # "6 month" occurs, but for an extension: it does not attest the IRS keeping records for 6 months.
    context = ["If you want an automatic 6 month extension of time to file the return, file Form 4868.",
               "The IRS generally keeps records for 6 years."]
    assert values(numeric(context, "The IRS generally keeps records for 6 months.")) == [
        ("numeric", "6 months", "6 years")]


def test_a_value_whose_other_mention_shares_its_subject_is_attested() -> None:
    context = ["You may request a 6 month extension to keep the records.",
               "The IRS generally keeps records for 6 years."]
    assert numeric(context, "You can ask for a 6 month extension to keep records.") == []


def test_the_same_figure_under_the_opposite_limit_outweighs_another_figure_meeting_the_limit() -> None:
    # "within 48 hours" meets "more than an hour", but the source limits the swap's hour the other way.
    context = ["Sim swaps usually take less than an hour.",
               "The number transfer usually takes place within 48 hours of your request."]
    (finding,) = numeric(context, "The swap usually takes more than an hour.")
    assert (finding.kind, finding.answer_value) == ("bound", "more than an hour")
    assert "less than an hour" in finding.evidence
    assert numeric(context, "The swap usually takes less than an hour.") == []


def test_the_same_count_limited_the_other_way_is_a_bound_contradiction() -> None:
    context = "Children aged 6 to 12 years: 5 ml every 6 hours as needed. Do not give more than 4 doses in 24 hours."
    (finding,) = numeric(context, "Children aged 6 to 12 should have at least 4 doses in 24 hours.")
    assert (finding.kind, finding.answer_value) == ("bound", "at least 4")
    assert numeric(context, "Children aged 6 to 12 should have no more than 4 doses in 24 hours.") == []


def test_both_values_swapped_in_one_sentence() -> None:
    findings = numeric("Basic costs $10, Pro costs $20.", "Basic costs $20 and Pro costs $10.")
    assert sorted(values(findings)) == [("swapped_value", "$10", "$20"), ("swapped_value", "$20", "$10")]


def test_absent_number_without_a_competing_value_is_only_unsupported() -> None:
    inspection = Inspection.build("", "Shipping takes 5-7 business days.", "The warranty lasts 2 years.")
    analysis = analyze_numeric(ContradictionView(inspection))
    assert analysis.findings == ()
    assert analysis.unsupported == ("2 years",)


def test_values_of_different_subjects_do_not_compete() -> None:
    context = "Shipping takes 5 days. The warranty lasts 2 years."
    assert numeric(context, "Support tickets are answered within 3 days.") == []


def test_values_of_different_dimensions_do_not_compete() -> None:
    assert numeric("The Pro plan costs $30.", "The Pro plan lasts 30 days.") == []
    assert numeric("Returns within 14 days.", "Returns cost 14%.") == []


def test_ranges_that_do_not_fit_contradict() -> None:
    context = "Shipping takes 5-7 business days."
    assert values(numeric(context, "Shipping takes 3-5 business days.")) == [
        ("numeric", "3-5 business days", "5-7 business days")
    ]
    assert numeric(context, "Shipping takes 6 business days.") == []


def test_context_giving_two_values_equally_for_the_subject_is_not_a_contradiction() -> None:
    # Nothing says which of $20 / $25 the answer should have used, so there is nothing to patch it with.
    assert numeric("Pro costs $20 in Europe and Pro costs $25 in Asia.", "Pro costs $30.") == []
    assert values(numeric("Pro costs $20 in Europe.", "Pro costs $30.")) == [("numeric", "$30", "$20")]


def test_a_context_value_the_answer_states_for_something_else_is_not_a_rival() -> None:
    context = "A 32-year-old man is facing charges, four days after remains were found."
    answer = "A 32-year-old man faces charges after the remains of a 26-year-old man were found."
    assert numeric(context, answer) == []


def test_counts_of_different_things_do_not_compete() -> None:
    assert numeric("The clinic treated 131 patients.", "The clinic hired 12 nurses.") == []


def test_counts_of_the_same_thing_compete() -> None:
    findings = numeric(
        "The offer is valid for the first 20 customers who sign up.",
        "The offer is valid for the first 10 customers who sign up.",
    )
    assert values(findings) == [("numeric", "10", "20")]


def test_a_different_limit_on_the_same_counted_thing_contradicts() -> None:
    leaflet = "Take one tablet twice daily with food. Do not exceed 2 tablets in 24 hours."
    assert values(numeric(leaflet, "Take one tablet with food, and no more than 3 tablets in 24 hours.")) == [
        ("numeric", "3", "2")]
    assert numeric(leaflet, "Take one tablet with food, and no more than 2 tablets in 24 hours.") == []
    # A limit of another kind, or on another counted thing, is not the same limit.
    assert numeric("Do not exceed 2 tablets in 24 hours.", "Take at least 3 capsules in 24 hours.") == []


def test_rounded_figures_are_not_contradictions() -> None:
    assert numeric("Revenue reached $1,234,567 last year.", "Revenue reached about $1.2 million last year.") == []
    assert numeric("Revenue grew 23.4% last year.", "Revenue grew 23% last year.") == []


def test_chunk_id_names_the_source_chunk() -> None:
    from stream_guard.wire.events import Chunk

    chunks = [
        Chunk(id="faq", text="Shipping is free."),
        Chunk(id="policy", text="Returns are accepted within 14 days."),
    ]
    (finding,) = numeric(chunks, "Returns are accepted within 30 days.")
    assert finding.chunk_id == "policy"


def test_patching_with_the_literal_values_restores_the_source_figure() -> None:
    answer = "You can return items within 30 days of purchase."
    (finding,) = numeric("Returns are allowed within 14 days of purchase.", answer)
    assert answer.replace(finding.answer_value or "", finding.source_value or "") == (
        "You can return items within 14 days of purchase."
    )


def test_empty_inputs() -> None:
    assert numeric("", "You can return items within 30 days.") == []
    assert numeric("Returns within 14 days.", "") == []


def test_a_rate_is_attested_by_its_amount_but_contradicted_only_by_a_rate() -> None:
    answer = "Adults should take 5 mg per day of the drug."
    attested = analyze_numeric(ContradictionView(Inspection.build("", "Adults should take 5 mg of the drug.", answer)))
    assert attested.findings == () and attested.unsupported == ()
    assert values(numeric("Adults should take 10 mg per day of the drug.", answer)) == [
        ("numeric", "5 mg per day", "10 mg per day")
    ]


# --- values compared claim by claim (issue 15) ------------------------------------------------------------------


def _kinds(context: str | list[str], answer: str) -> list[tuple[str | None, str | None, str | None]]:
    from stream_guard.checks.alignment import ContradictionView
    from stream_guard.checks.numeric import analyze_numeric
    from stream_guard.text.inspection import Inspection

    view = ContradictionView(Inspection.build("", context, answer))
    return [(f.kind, f.answer_value, f.source_value) for f in analyze_numeric(view).findings]


def test_a_distant_bound_no_longer_supports_a_different_value() -> None:
    context = ["The company paid a quarterly dividend of $0.13 per share.",
               "Management aims at reducing net debt below $25 billion."]
    assert _kinds(context, "The company paid a quarterly dividend of $0.26 per share.") == [("numeric", "$0.26", "$0.13")]


def test_an_answer_range_must_lie_inside_the_source_range() -> None:
    ride = "The cable car ride takes 6 to 9 minutes each way."
    assert _kinds(ride, "The cable car ride takes 6 to 18 minutes each way.") == [
        ("numeric", "6 to 18 minutes", "6 to 9 minutes")]
    assert _kinds(ride, "The cable car ride takes 7 minutes each way.") == []


def test_the_same_figure_under_the_opposite_limit_is_a_bound_contradiction() -> None:
    assert _kinds("The total liability shall not exceed $50,000 in any contract year.",
                  "The total liability is at least $50,000 in any contract year.") == [
        ("bound", "at least $50,000", "no more than $50,000")]


def test_legal_numerals_are_one_value() -> None:
    notice = "Either party may terminate by giving thirty (30) days' written notice."
    assert _kinds(notice, "Either party may terminate by giving 30 days' written notice.") == []
    assert _kinds(notice, "Either party may terminate by giving ninety (90) days' written notice.") == [
        ("numeric", "ninety (90) days", "thirty (30) days")]


def test_the_same_amount_in_another_currency() -> None:
    assert _kinds("The Starter plan costs €20 per month.", "The Starter plan costs $20 per month.") == [
        ("currency", "$20", "€20")]


def test_how_often_is_the_frequency_check_s_not_a_number_no_source_states() -> None:
    # "two times a day" is the source's "twice daily" (and "every 12 hours" is too): no unsupported figure here,
    # and no numeric finding beside the frequency check's when the count differs ("three times a day").
    dosage = "Adults: take 500 mg twice daily with food."
    for answer in ("Adults take 500 mg two times a day with food.", "Adults take 500 mg every 12 hours with food."):
        analysis = analyze_numeric(ContradictionView(Inspection.build("", dosage, answer)))
        assert analysis.unsupported == () and analysis.findings == ()
    assert numeric("Adults: take 500 mg two times a day with food.", "Adults take 500 mg three times a day with food.") == []
    # The dose beside it is still compared.
    assert values(numeric(dosage, "Adults take 750 mg two times a day.")) == [("numeric", "750 mg", "500 mg")]
