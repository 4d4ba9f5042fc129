from stream_guard.heal.claim_prune import prune
from stream_guard.wire.report import Finding, FindingType


def unsupported(statement: str) -> Finding:
    return Finding(FindingType.UNSUPPORTED, statement, "not in the context", kind="claim")


ANSWER = ("Returns are accepted within 14 days. Refunds go to the original card. "
          "Our Tokyo store also gives free gift wrapping.")


def test_drops_the_unsupported_sentence_and_logs_it():
    # The note naming it is the healer's (one per repair, heal/note.py): the strategy only edits.
    result = prune(ANSWER, [unsupported("Our Tokyo store also gives free gift wrapping.")])
    assert result.text == "Returns are accepted within 14 days. Refunds go to the original card."
    assert [(c.kind, c.before) for c in result.changes] == [("drop_sentence", "Our Tokyo store also gives free gift wrapping.")]


def test_matches_claims_whose_prefaces_were_stripped():
    answer = "Based on passage 2, returns take 14 days. According to the passages, the moon is made of cheese."
    result = prune(answer, [unsupported("the moon is made of cheese")])
    assert result.text is not None and "cheese" not in result.text and "14 days" in result.text


def test_offers_nothing_when_too_little_would_be_left():
    findings = [unsupported("Returns are accepted within 14 days."), unsupported("Refunds go to the original card.")]
    assert prune(ANSWER, findings).text is None


def test_offers_nothing_without_findings():
    assert prune(ANSWER, []).text is None


def test_keeps_line_breaks_of_lists():
    answer = "Steps:\n1. Open the app.\n2. Tap Settings.\n3. Call Dr. Fake at the moon base."
    result = prune(answer, [unsupported("Call Dr. Fake at the moon base.")])
    assert result.text == "Steps:\n1. Open the app.\n2. Tap Settings."


def test_a_list_an_item_was_dropped_from_counts_on():
    answer = ("Here is how to cook a rare steak in the oven: 1. Preheat the oven to 450 degrees. 2. Place the steak "
              "on a rack. 3. Ask Chef Ramsay for his secret rub. 4. Roast the steak for 10 minutes.")
    result = prune(answer, [unsupported("Ask Chef Ramsay for his secret rub.")])
    assert result.text == ("Here is how to cook a rare steak in the oven: 1. Preheat the oven to 450 degrees. "
                           "2. Place the steak on a rack. 3. Roast the steak for 10 minutes.")
    lines = "Steps:\n1. Open the app.\n2. Call Dr. Fake.\n3. Tap Settings.\n4. Save."
    assert prune(lines, [unsupported("Call Dr. Fake.")]).text == "Steps:\n1. Open the app.\n2. Tap Settings.\n3. Save."


def test_a_markdown_answer_keeps_its_structure_and_the_markers_of_what_it_keeps():
    answer = ("**Returns**\n\n- Returns are accepted within 14 days [1].\n- Our Tokyo store gives free gift wrapping "
              "[2].\n- Refunds go to the original card [1].")
    result = prune(answer, [unsupported("Our Tokyo store gives free gift wrapping.")])
    assert result.text == ("**Returns**\n\n- Returns are accepted within 14 days [1].\n"
                           "- Refunds go to the original card [1].")


def test_a_footnote_whose_every_marker_went_goes_too():
    answer = ("1. Returns are accepted within 14 days.[^1]\n2. Our Tokyo store gives free gift wrapping.[^2]\n"
              "3. Refunds go to the original card.[^1]\n\n[^1]: Returns policy\n[^2]: Tokyo flyer")
    result = prune(answer, [unsupported("Our Tokyo store gives free gift wrapping.")])
    assert result.text is not None and "Tokyo" not in result.text and "[^2]" not in result.text
    assert "2. Refunds go to the original card.[^1]" in result.text and "[^1]: Returns policy" in result.text
