"""Adversarial inputs for the time bounds: the named cases of issue 7 and a seeded fuzz corpus.

Shared by bench/worst_case.py (which measures them) and tests/stream_guard/engine/test_time_bounds.py (which
asserts a generous bound on each), so both always run the same inputs. Every input stays within the event
limits (stream_guard.wire.events.Limits): answers up to 20,000 characters, up to 50 chunks of 20,000.
"""

from __future__ import annotations

import random
from typing import Callable, Iterator, NamedTuple

from stream_guard.wire.events import AnswerEvent, Chunk, Limits

LIMITS = Limits()
ANSWER_CHARS = LIMITS.max_answer_chars
CHUNK_CHARS = LIMITS.max_chunk_chars

PLAIN = "Sales rose last year and the company opened new stores in several regions."
QUESTION = "What were the sales last year?"


class Case(NamedTuple):
    name: str
    answer: str
    chunks: tuple[str, ...]
    question: str = QUESTION

    def event(self) -> AnswerEvent:
        return AnswerEvent(
            event_id=self.name,
            answer=self.answer,
            question=self.question,
            context=tuple(Chunk(id=str(i + 1), text=text) for i, text in enumerate(self.chunks)),
        )


def _fit(text: str, size: int) -> str:
    return text[:size]


def _repeat(unit: str, size: int, prefix: str = "", suffix: str = "") -> str:
    body = unit * ((size - len(prefix) - len(suffix)) // len(unit))
    return prefix + body + suffix


_VOCAB = (
    "sales revenue company store customer region growth quarter product market price service team report "
    "year increase support policy return refund order delivery account plan data system user"
).split()
_FILL = "the a of and to in for with on at by was were is are has have not no".split()


def prose(rng: random.Random, size: int) -> str:
    """Ordinary sentences over a small vocabulary: heavy word overlap between any two such texts."""
    out: list[str] = []
    total = 0
    while total < size:
        words = [rng.choice(_VOCAB) if rng.random() < 0.6 else rng.choice(_FILL) for _ in range(rng.randint(8, 16))]
        sentence = " ".join(words).capitalize() + ". "
        out.append(sentence)
        total += len(sentence)
    return _fit("".join(out), size)


def _numbered(template: str, size: int) -> str:
    """`template` filled with 0, 1, 2, ... until `size` characters: every figure distinct."""
    out: list[str] = []
    total = i = 0
    while total < size:
        piece = template.format(i=i)
        out.append(piece)
        total += len(piece)
        i += 1
    return _fit("".join(out), size)


def named_cases() -> list[Case]:
    """The inputs issue 7 names, and the others found auditing every pattern and pairwise loop."""
    digits = _repeat("123,", ANSWER_CHARS, "Sales were ", "12 units.")
    rng = random.Random(7)
    overlap_answer = prose(rng, ANSWER_CHARS)
    chunks_10 = tuple(prose(rng, CHUNK_CHARS) for _ in range(10))
    chunks_50 = chunks_10 + tuple(prose(rng, CHUNK_CHARS) for _ in range(40))
    return [
        Case("digit_groups_answer", digits, (PLAIN,)),
        Case("digit_groups_chunk", PLAIN, (digits,)),
        Case("passage_then_spaces", _fit("The passage" + " " * ANSWER_CHARS, ANSWER_CHARS - 10) + "states it.",
             (PLAIN,)),
        Case("preface_then_spaces", _fit("However" + " " * ANSWER_CHARS, ANSWER_CHARS - 10) + "sales rose", (PLAIN,)),
        Case("spaces_in_answer", _fit("Sales rose" + " " * ANSWER_CHARS, ANSWER_CHARS - 10) + "last year.", (PLAIN,)),
        Case("capital_then_lower", "A" + "b" * (ANSWER_CHARS - 1), (PLAIN,)),
        Case("capital_then_lower_chunk", PLAIN, ("A" + "b" * (CHUNK_CHARS - 1),)),
        Case("capitals_run", "A" * ANSWER_CHARS, ("A" * CHUNK_CHARS,)),
        Case("prose_overlap_10_chunks", overlap_answer, chunks_10),
        Case("prose_overlap_50_chunks", overlap_answer, chunks_50),
        Case("dots_run", _repeat(".", ANSWER_CHARS, "Wait", "x"), (_repeat(". ", CHUNK_CHARS, "Wait"),)),
        Case("abbreviations_run", _repeat("Dr. ", ANSWER_CHARS), (_repeat("Inc. ", CHUNK_CHARS),)),
        Case("citation_markers", _repeat("Sales rose [1] ", ANSWER_CHARS), (PLAIN,)),
        Case("bracket_markers_one_sentence", _repeat("[1]", ANSWER_CHARS, "Sales rose "), (PLAIN,)),
        Case("names_run", _repeat("Alice Brown met Carol Smith. ", ANSWER_CHARS), (PLAIN,)),
        Case("distinct_names", " ".join(f"Xq{i:05d}a Yq{i:05d}b." for i in range(1400))[:ANSWER_CHARS], (PLAIN,)),
        Case("url_run", "See https://" + "a" * (ANSWER_CHARS - 20) + " now.", (PLAIN,)),
        Case("arxiv_run", "arXiv " + "a-" * (ANSWER_CHARS // 2 - 4), (PLAIN,)),
        Case("quantities_vs_quantities", _repeat("Returns take 5 days. ", ANSWER_CHARS),
             tuple(_repeat("Returns take 7 days. ", CHUNK_CHARS) for _ in range(50))),
        Case("dates_vs_dates", _repeat("It opened on March 3, 2020. ", ANSWER_CHARS),
             tuple(_repeat("It opened on March 4, 2021. ", CHUNK_CHARS) for _ in range(50))),
        Case("distinct_quantities", _numbered("Returns take {i} days. ", ANSWER_CHARS),
             tuple(_numbered(f"Shipping takes {k}{{i}} days. ", CHUNK_CHARS) for k in range(50))),
        Case("billing_vs_billing", _repeat("The plan costs $10 per month. ", ANSWER_CHARS),
             tuple(_repeat("The plan is billed annually at $100. ", CHUNK_CHARS) for _ in range(50))),
        Case("negation_vs_negation", _repeat("Refunds are not available for orders. ", ANSWER_CHARS),
             tuple(_repeat("Refunds are available for all orders. ", CHUNK_CHARS) for _ in range(50))),
        Case("one_long_clause", " ".join(f"w{i}x" for i in range(3400))[:ANSWER_CHARS],
             (" ".join(f"w{i}x" for i in range(3400))[:CHUNK_CHARS],)),
        Case("newlines_run", "Steps:" + "\n" * (ANSWER_CHARS - 7) + "1", ("\n" * CHUNK_CHARS,)),
        # A wrong figure gets the answer repaired, so the healer reads the blank lines too (they cost it cubic time once).
        Case("blank_lines_in_flagged_answer", _fit("Refunds take 30 days.\n" + "\n" * ANSWER_CHARS, ANSWER_CHARS - 22)
             + "Refunds take 30 days.", ("Refunds take 14 days.",)),
        Case("list_markers", _repeat("1. The first item 2. The second item ", ANSWER_CHARS), (PLAIN,)),
        Case("spelled_numbers", _repeat("twenty ", ANSWER_CHARS), (_repeat("nineteen ninety-nine ", CHUNK_CHARS),)),
    ]


# --- the fuzz corpus --------------------------------------------------------------------------------

ATOMS = (
    "0", "7", "123", "1,234", "12.5", ",", ".", ". ", " ", "  ", "\n", "\n\n", "[", "]", "[2]", "(", ")",
    "A", "Q", "Ab", "AB", "Zürich", "-", "--", "http://", "https://ex.com/a-b", "www.", "the ", "passage ",
    "not ", "no ", "$", "%", "€", "1.2M", "km/h", "mg/kg", "Jan. ", "Inc. ", "Dr. ", "e.g. ", "...", "!", "?",
    "'", '"', ":", ";", "/", "Sales ", "were ", "per month ", "2021/03/03", "March 3, 2020", "et al. ",
)  # fmt: skip


def _runs(rng: random.Random, size: int) -> str:
    """Long runs of a few atoms: the shape that makes a backtracking pattern rescan."""
    parts: list[str] = []
    total = 0
    while total < size:
        atom = "".join(rng.choice(ATOMS) for _ in range(rng.randint(1, 3)))
        count = rng.choice((1, 10, 100, 1000, 5000))
        piece = atom * max(1, min(count, (size - total) // len(atom) + 1))
        parts.append(piece)
        total += len(piece)
    return _fit("".join(parts), size)


def _mix(rng: random.Random, size: int) -> str:
    """Atoms in random order, with repeated words."""
    out: list[str] = []
    total = 0
    while total < size:
        atom = rng.choice(ATOMS) if rng.random() < 0.7 else rng.choice(_VOCAB) + " "
        out.append(atom)
        total += len(atom)
    return _fit("".join(out), size)


_SHAPES: tuple[Callable[[random.Random, int], str], ...] = (_runs, _mix, prose)


def fuzz_cases(seed: int = 20240607, count: int = 60, max_chunks: int = 10) -> Iterator[Case]:
    """`count` seeded events, each with a full-size answer and 1..max_chunks chunks of up to full size."""
    rng = random.Random(seed)
    for k in range(count):
        answer = rng.choice(_SHAPES)(rng, rng.choice((2_000, 8_000, ANSWER_CHARS)))
        chunks = tuple(
            rng.choice(_SHAPES)(rng, rng.choice((2_000, 8_000, CHUNK_CHARS))) for _ in range(rng.randint(1, max_chunks))
        )
        yield Case(f"fuzz_{seed}_{k}", answer, chunks)
