from stream_guard.heal.claim_prune import PRUNE_NOTE, prune
from stream_guard.wire.report import Finding, FindingType


def unsupported(statement: str) -> Finding:
    return Finding(FindingType.UNSUPPORTED, statement, "not in the context", kind="claim")


ANSWER = ("Returns are accepted within 14 days. Refunds go to the original card. "
          "Our Tokyo store also gives free gift wrapping.")


def test_drops_the_unsupported_sentence_and_says_so():
    result = prune(ANSWER, [unsupported("Our Tokyo store also gives free gift wrapping.")])
    assert result.text == "Returns are accepted within 14 days. Refunds go to the original card. " + PRUNE_NOTE
    assert [c.kind for c in result.changes] == ["drop_sentence", "note"]


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
    assert result.text is not None and result.text.startswith("Steps:\n1. Open the app.\n2. Tap Settings.")
