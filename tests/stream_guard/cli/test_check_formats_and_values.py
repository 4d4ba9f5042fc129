"""Answers as RAG systems write them, and the values users' domains live on, as a user meets them: one run of
`stream-guard check` over events whose right outcome follows from the text (issue 15, items 1 and 2). A
faithful answer in any common format is delivered verbatim; a changed value is caught with both values named;
an equivalent form of the source's value is kept."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import orjson
import pytest

POLICY = [
    {"id": "policy-7", "text": "Refunds are issued within 14 days of the returned item being received."},
    {"id": "policy-8", "text": "Standard shipping is free on orders over $50 within the continental United States."},
]
CONTRACT = ["12.1 Termination for convenience. Either party may terminate this Agreement at any time by giving "
            "thirty (30) days' written notice to the other party."]
PRICING = ["Pricing. The Team plan costs $12 per seat per month, billed monthly. Yearly billing is offered at $120 "
           "per seat per year."]
SUPPORT = ["Our support team is available Monday to Friday, 9 am to 5 pm Eastern Time, except public holidays."]
DOSAGE = ["Adults: take one 500 mg tablet twice daily with food for ten days."]
NDA = ["The Receiving Party shall not disclose Confidential Information to any third party."]
LIABILITY = ["The total liability of the Provider shall not exceed $50,000 in any contract year."]
RIDE = ["The cable car ride takes 6 to 9 minutes each way."]
DIVIDEND = ["The company paid a quarterly dividend of $0.13 per share.",
            "Management aims at reducing net debt below $25 billion by the end of the year."]
OFFER = ["The introductory price is valid until February 28, 2026."]
START = ["The lease starts on 3 March 2026 and runs for twelve months."]
TARIFFS = ["The United States imposed new tariffs on steel imports in 2018."]
PHARMACY = ["Pharmacy hours: weekdays 8:00 am to 9:00 pm; Saturday 9:00 am to 6:00 pm; closed on Sundays."]

EVENTS: dict[str, dict[str, Any]] = {
    # answer formats, all faithful
    "markers": {"context": POLICY, "citations": ["policy-7"], "answer":
                "Refunds are issued within 14 days of receiving the returned item [policy-7]. Standard shipping is "
                "free on orders over $50 [policy-8]."},
    "numbered_markers": {"context": [c["text"] for c in POLICY], "answer":
                         "Refunds are issued within 14 days of receiving the returned item [1]. Standard shipping is "
                         "free on orders over $50【2】."},
    "markdown_list": {"context": [c["text"] for c in POLICY], "answer":
                      "**Returns and shipping:**\n\n- Refunds are issued within **14 days** of receiving the returned "
                      "item.[^1]\n- Standard shipping is free on orders over $50.[^2]\n\n[^1]: Passage 1\n[^2]: "
                      "Passage 2"},
    "link": {"context": [c["text"] for c in POLICY], "answer":
             "Refunds are issued within 14 days of receiving the [returned item](https://kb.example.com/items?id=7). "
             "[Read more](https://kb.example.com/articles/1)"},
    "quote": {"context": [c["text"] for c in POLICY], "answer":
              'Refunds take two weeks. As the policy puts it: "Refunds are issued within 14 days of the returned item '
              'being received."'},
    "fabricated_marker": {"context": [c["text"] for c in POLICY], "answer":
                          "Refunds are issued within 14 days of receiving the returned item [4]."},
    # contracts
    "legal_numeral_catch": {"context": CONTRACT, "answer":
                            "Either party can terminate the agreement by giving ninety (90) days' written notice."},
    "legal_numeral_digits": {"context": CONTRACT, "answer":
                             "Either party can terminate the agreement by giving 30 days' written notice."},
    "legal_numeral_same": {"context": CONTRACT, "answer":
                           "Either party may terminate the agreement by giving thirty (30) days' written notice."},
    # billing
    "billing_catch": {"context": PRICING, "answer": "The Team plan costs $12 per seat per year, billed quarterly."},
    "billing_keep": {"context": PRICING, "answer":
                     "The Team plan is $12 per seat per month, billed monthly, or $120 per seat per year."},
    # dates
    "date_year": {"context": OFFER, "answer": "The introductory price is valid until February 28, 2027."},
    "date_format": {"context": START, "answer": "The lease starts on March 3, 2026 and runs for twelve months."},
    # support hours
    "hours_catch": {"context": SUPPORT, "answer": "Support is available Mon-Fri 9am-6pm ET, except public holidays."},
    "hours_keep": {"context": SUPPORT, "answer": "Support is available Mon-Fri 9am-5pm ET, except public holidays."},
    "weekday_catch": {"context": PHARMACY, "answer": "The pharmacy is open on Sundays from 9:00 am to 6:00 pm."},
    "zone_catch": {"context": SUPPORT, "answer":
                   "Support is available Monday to Friday, 9 am to 5 pm Pacific Time, except public holidays."},
    "clock_keep": {"context": ["The pharmacy closes at 16:00 on Saturdays."], "answer":
                   "The pharmacy closes at 4 pm on Saturdays."},
    # dosage
    "frequency_catch": {"context": DOSAGE, "answer":
                        "Adults take one 500 mg tablet three times daily with food for ten days."},
    "frequency_keep": {"context": DOSAGE, "answer": "Adults take one 500 mg tablet every 12 hours with food for ten days."},
    # bounds, exceptions, obligations
    "bound_catch": {"context": LIABILITY, "answer": "The provider's total liability is at least $50,000 in any contract year."},
    "bound_keep": {"context": LIABILITY, "answer": "The provider's total liability is capped at $50,000 in any contract year."},
    "exception_catch": {"context": SUPPORT, "answer":
                        "Support is available Monday to Friday, 9 am to 5 pm Eastern Time, including public holidays."},
    "obligation_catch": {"context": NDA, "answer": "The receiving party may disclose confidential information to third parties."},
    "obligation_keep": {"context": NDA, "answer": "The receiving party must not disclose confidential information to any third party."},
    # what a bound or a range supports
    "distant_bound": {"context": DIVIDEND, "answer": "The company paid a quarterly dividend of $0.26 per share."},
    "range_wrong_way": {"context": RIDE, "answer": "The cable car ride takes 6 to 18 minutes each way."},
    "range_inside": {"context": RIDE, "answer": "The cable car ride takes about 7 minutes each way."},
    # names
    "us": {"context": TARIFFS, "answer": "The U.S. imposed new tariffs on steel imports in 2018."},
    # a bare yes answers the question
    "yes": {"question": "Were both Joseph Roth and Cid Corman authors?", "context": [
        "Joseph Roth was an Austrian journalist and novelist, the author of many books.",
        "Cid Corman was an American poet, translator and editor, and an author."], "answer": "yes"},
}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    path = tmp_path_factory.mktemp("formats") / "events.jsonl"
    lines = [orjson.dumps({"id": name, "question": "", **event}) for name, event in EVENTS.items()]
    path.write_bytes(b"\n".join(lines) + b"\n")
    proc = subprocess.run([sys.executable, "-m", "stream_guard.cli", "check", str(path), "--ner", "spacy"],
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return {v["event_id"]: v for v in map(orjson.loads, proc.stdout.splitlines())}


def kept(verdict: dict[str, Any]) -> bool:
    return verdict["routing"] == "accept" and verdict["delivered_answer"] == verdict["original_answer"]


def norm(text: str) -> str:
    return re.sub(r"\W+", " ", text).lower().strip()


def names_both(verdict: dict[str, Any], ours: str, theirs: str) -> bool:
    """A contradiction in the verdict names the answer's value and the source's (values or evidence)."""
    for s in verdict["hallucinated_statements"]:
        text = norm(" ".join(str(s.get(k) or "") for k in ("answer_value", "source_value", "evidence")))
        if s["type"] == "contradiction" and norm(ours) in text and norm(theirs) in text:
            return True
    return False


KEEP = ["markers", "numbered_markers", "markdown_list", "link", "quote", "legal_numeral_digits", "legal_numeral_same",
        "billing_keep", "date_format", "hours_keep", "clock_keep", "frequency_keep", "bound_keep", "obligation_keep",
        "range_inside", "us", "yes"]


@pytest.mark.parametrize("name", KEEP)
def test_a_faithful_answer_in_any_form_is_delivered_verbatim(verdicts: dict[str, dict[str, Any]], name: str) -> None:
    verdict = verdicts[name]
    assert kept(verdict), (verdict["routing"], verdict["hallucinated_statements"])
    assert not verdict["flagged"]


CATCH = [
    ("legal_numeral_catch", "ninety (90) days", "thirty (30) days"),
    ("billing_catch", "per seat per year, billed quarterly", "per seat per month, billed monthly"),
    ("date_year", "February 28, 2027", "February 28, 2026"),
    ("hours_catch", "6pm", "5 pm"),
    ("weekday_catch", "Sundays", "closed"),
    ("zone_catch", "Pacific Time", "Eastern Time"),
    ("frequency_catch", "three times daily", "twice daily"),
    ("bound_catch", "at least $50,000", "shall not exceed $50,000"),
    ("exception_catch", "including public holidays", "except public holidays"),
    ("obligation_catch", "may disclose", "shall not disclose"),
    ("distant_bound", "$0.26", "$0.13"),
    ("range_wrong_way", "6 to 18 minutes", "6 to 9 minutes"),
]


@pytest.mark.parametrize(("name", "ours", "theirs"), CATCH)
def test_a_changed_value_is_caught_naming_both_values(
    verdicts: dict[str, dict[str, Any]], name: str, ours: str, theirs: str
) -> None:
    verdict = verdicts[name]
    assert not kept(verdict)
    assert verdict["flagged"] and "contradiction" in verdict["triggered"]
    assert names_both(verdict, ours, theirs), verdict["hallucinated_statements"]


def test_markdown_structure_and_markers_are_kept_verbatim(verdicts: dict[str, dict[str, Any]]) -> None:
    assert verdicts["markdown_list"]["delivered_answer"] == EVENTS["markdown_list"]["answer"]
    assert verdicts["markers"]["checks"]["citations"]["details"]["markers"] == 2


def test_a_link_url_is_not_a_fabricated_citation(verdicts: dict[str, dict[str, Any]]) -> None:
    assert verdicts["link"]["checks"]["entities"]["details"]["fabricated"] == []


def test_a_marker_naming_no_chunk_is_a_fabricated_citation(verdicts: dict[str, dict[str, Any]]) -> None:
    [finding] = [s for s in verdicts["fabricated_marker"]["hallucinated_statements"] if s["type"] == "citation_mismatch"]
    assert finding["kind"] == "fabricated_citation" and finding["answer_value"] == "4"
