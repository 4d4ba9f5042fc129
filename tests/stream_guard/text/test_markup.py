"""The answer's markup read once: plain claim text, the map back to the answer as written, citation markers per
sentence, and rewriting by plain span with the structure kept. The plain text is checked against markdown-it-py
(the CommonMark reference port) as the oracle."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_guard.text.markup import HEADING, ITEM, Edit, marker_refs, may_hold_markup, read_markup

markdown_it = pytest.importorskip("markdown_it")


def oracle_plain(text: str) -> list[str]:
    """The text of each block as markdown-it-py reads it (inline text and code, links' text, no URLs)."""
    md = markdown_it.MarkdownIt("commonmark").enable("table")
    blocks: list[str] = []
    for token in md.parse(text):
        if token.type != "inline":
            continue
        parts = []
        for child in token.children or ():
            if child.type in ("text", "code_inline"):
                parts.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                parts.append(" ")
        blocks.append(" ".join("".join(parts).split()))
    return [b for b in blocks if b]


def ours(text: str) -> list[str]:
    markup = read_markup(text)
    return [" ".join(markup.plain[b.start : b.end].split()) for b in markup.blocks]


ORACLE_CASES = [
    "**Answer:** The plan costs $20 per month.",
    "The *best* option is __annual__ billing, with `code` spans.",
    "## Opening hours\n\nMon-Fri 9am-5pm ET.",
    "- First item with **bold**\n- Second item\n- Third *item*",
    "1. Preheat the oven.\n2. Bake for 20 minutes.\n3) Rest.",
    "> Quoted from the policy.\n> Second line.",
    "See [the refund policy](https://kb.example.com/refunds) for details.",
    "An image ![chart of sales](https://x.example/c.png) and text.",
    "snake_case_name and 5 * 3 * 2 stay as written.",
    "Escaped \\*stars\\* are literal.",
    "***Strong and emphasis*** then text.",
    "```\ncode block\n```\nAfter the code.",
    "Intro paragraph.\n\n---\n\nAfter a break.",
]


@pytest.mark.parametrize("text", ORACLE_CASES)
def test_plain_text_matches_markdown_it(text: str) -> None:
    assert ours(text) == oracle_plain(text)


def test_table_rows_are_read_cell_by_cell() -> None:
    markup = read_markup("| Plan | Price |\n|---|---|\n| Basic | $10 |\n| Pro | $20 |")
    assert [(s.text, s.is_claim) for s in markup.sentences] == [
        ("Plan, Price", False), ("Basic, $10", True), ("Pro, $20", True)]


@pytest.mark.parametrize(
    ("answer", "raw", "refs"),
    [
        ("Refunds take 14 days [1].", "[1]", ("1",)),
        ("Refunds take 14 days [1, 3].", "[1, 3]", ("1", "3")),
        ("Refunds take 14 days [1-3].", "[1-3]", ("1", "2", "3")),
        ("Refunds take 14 days [doc-3].", "[doc-3]", ("doc-3",)),
        ("Refunds take 14 days [policy-7].", "[policy-7]", ("policy-7",)),
        ("Refunds take 14 days [Source: kb-2].", "[Source: kb-2]", ("kb-2",)),
        ("Refunds take 14 days [Passage 2].", "[Passage 2]", ("2",)),
        ("Refunds take 14 days【1】.", "【1】", ("1",)),
        ("Refunds take 14 days【3†source】.", "【3†source】", ("3",)),
        ("Refunds take 14 days.[^1]\n\n[^1]: Passage 2", "[^1]", ("2",)),
        ("Refunds take 14 days (Source: passage 2).", "(Source: passage 2)", ("2",)),
        ("Refunds take 14 days (Passage 2).", "(Passage 2)", ("2",)),
    ],
)
def test_each_marker_form_is_read_and_left_out_of_the_claim(answer: str, raw: str, refs: tuple[str, ...]) -> None:
    markup = read_markup(answer)
    [sentence] = markup.sentences
    assert sentence.text == "Refunds take 14 days."
    [marker] = sentence.markers
    assert (marker.raw, marker.refs) == (raw, refs)
    assert markup.original[marker.start : marker.end] == raw


def test_prose_in_brackets_stays_prose() -> None:
    markup = read_markup("He wrote [sic] that it opened in [2019].")
    assert markup.plain == markup.original and not markup.markers


def test_a_bracket_naming_a_chunk_id_is_a_marker() -> None:
    markup = read_markup("Returns are free [faq].", frozenset({"faq"}))
    assert markup.plain == "Returns are free." and markup.markers[0].refs == ("faq",)


def test_a_link_keeps_its_text_and_drops_its_url() -> None:
    markup = read_markup("Read the [refund policy](https://kb.example.com/r?id=1) first. [Sales team](https://x.example)")
    assert markup.plain == "Read the refund policy first. Sales team"
    assert [s.is_claim for s in markup.sentences] == [True, False]  # a bare link is navigation, not a claim


def test_a_link_that_only_says_where_to_go_is_left_out() -> None:
    assert read_markup("Dennis Joseph [Read more](https://kb.example.com/articles/1)").plain == "Dennis Joseph"


def test_marker_refs_shapes() -> None:
    assert marker_refs("sic") is None and marker_refs("2019") is None and marker_refs("Note") is None
    assert marker_refs("source: 2019") == ("2019",)
    assert marker_refs("2, 4 and 5") == ("2", "4", "5")


def test_offsets_map_plain_text_back_to_the_answer() -> None:
    answer = "**Fee:** the plan costs **$20** per month [2]."
    markup = read_markup(answer)
    start, end = markup.find("$20")
    a, b = markup.original_span(start, end)
    assert answer[a:b] == "$20"


def test_rewrite_replaces_a_value_inside_its_emphasis() -> None:
    answer = "- Returns are free within **30 days** [2].\n- Support is by email."
    markup = read_markup(answer)
    assert markup.rewrite([Edit(*markup.find("30 days"), "14 days")]) == answer.replace("30 days", "14 days")


def test_rewrite_keeps_markers_of_a_replaced_sentence() -> None:
    answer = "The plan is billed annually [policy-7]. Support is by email."
    markup = read_markup(answer)
    edited = markup.rewrite([Edit(*markup.find("The plan is billed annually."), "The plan is billed monthly.")])
    assert edited == "The plan is billed monthly [policy-7]. Support is by email."


def test_dropping_an_item_drops_its_line_and_footnote_and_renumbers() -> None:
    answer = "## Steps\n\n1. Preheat the oven.[^1]\n2. Bake for 20 minutes.[^2]\n3. Rest it.\n\n[^1]: Passage 1\n[^2]: Passage 2"
    markup = read_markup(answer)
    assert [s.kind for s in markup.sentences] == [HEADING, ITEM, ITEM, ITEM]
    edited = markup.rewrite([Edit(*markup.find("Bake for 20 minutes."), "")])
    assert edited == "## Steps\n\n1. Preheat the oven.[^1]\n2. Rest it.\n\n[^1]: Passage 1\n"


def test_dropping_a_sentence_takes_its_marker() -> None:
    answer = "Refunds take 14 days [1]. Shipping is free [2]. Support is by email."
    markup = read_markup(answer)
    assert markup.rewrite([Edit(*markup.find("Shipping is free."), "")]) == "Refunds take 14 days [1]. Support is by email."


def test_an_answer_without_markup_is_its_own_plain_text() -> None:
    answer = "Refunds take 14 days. Shipping is free."
    markup = read_markup(answer)
    assert markup.identity and markup.plain is answer
    assert markup.rewrite([Edit(0, 21, "")]) == " Shipping is free."


_ATOMS = ("*", "**", "_", "`", "[", "]", "(", ")", "[^1]", "【1】", "|", "#", "> ", "- ", "1. ", "\n", " ", "word",
          "https://x.y/z", "[a](b)", "\\", "~~", "<br>", "(Source: 2)", "---\n")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_ATOMS), max_size=60).map("".join))
def test_any_text_is_read_without_error_and_maps_inside_the_answer(text: str) -> None:
    markup = read_markup(text)
    for s in markup.sentences:
        assert markup.plain[s.start : s.end] == s.text
        a, b = markup.original_span(s.start, s.end)
        assert 0 <= a <= b <= len(text)
    for m in markup.markers:
        assert text[m.start : m.end] == m.raw
    markup.rewrite([Edit(s.start, s.end, "") for s in markup.sentences[:2]])


@pytest.mark.parametrize("atom", ["*", "_", "`", "[", "[1]", "| ", "> ", "**a", "[a](", "\\*", "<b>"])
def test_reading_stays_linear(atom: str) -> None:
    def cost(n: int) -> float:
        text = "Intro " + atom * n
        started = time.process_time()
        read_markup(text + " end.")
        return time.process_time() - started

    cost(200)
    small, large = cost(2000), cost(16000)
    assert large < 8 * 3 * max(small, 1e-4) + 0.25  # 8x the text: linear with a generous margin (a shared machine)


def test_the_claim_text_is_what_the_answer_says_without_its_layout() -> None:
    assert read_markup("## Answer\n\nno").claim_text == "no"
    assert read_markup("yes [1]").claim_text == "yes"
    assert read_markup("yes [Read more](https://kb.example.com/articles/1)").claim_text == "yes"
    plain = "Returns take 14 days.\nRefunds take five."
    assert read_markup(plain).claim_text is plain  # an answer without markup is its own claim text


# The gate as first written: one alternation, one of its alternatives opening on a line start (re.M).
_PLAIN_GATE_RE = re.compile(r"[\[\]*_`#|>【~\\<]|\((?i:sources?|refs?|references?|citations?|passages?|see)\b|"
                            r"^[ \t]*+(?:[-+•‣⁃]|\d{1,3}[.)])[ \t]|^[ ]{0,3}(?:-{3}|={3})", re.M)
_GATE_PIECES = ["\n", "\r\n", " ", "\t", "- ", "+", "•", "1.", "12)", "1234.", "---", "===", "    ---", "(", "(Sources",
                "(see", "(seen", "ſee", "x", "#", "<", "a", ".", "\u2028"]


@settings(max_examples=800)
@given(st.lists(st.one_of(st.sampled_from(_GATE_PIECES), st.text(max_size=3)), max_size=10).map("".join))
def test_the_markup_gate_answers_as_the_plain_pattern(text: str) -> None:
    assert may_hold_markup(text) == (_PLAIN_GATE_RE.search(text) is not None)
