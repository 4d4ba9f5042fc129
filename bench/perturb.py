"""Label-free synthetic suites (issue 15): variants of faithful development answers whose right outcome is known
by construction, judged by `stream-guard check` as shipped.

    .venv/bin/python bench/perturb.py [--label NAME] [--per-class 150]

Two suites, plus hand-written events:

- must be caught: the answer now contradicts its source. One value the answer repeats from its source (the phrase
  occurs in the source sentence that best matches the answer's sentence) is changed into one the source states
  nowhere: a number (days, $, %), its unit kind (days -> weeks), the year of a date, a billing period or cycle, a
  bound word (at least / up to), a dosage or schedule frequency (twice daily / every 6 hours), an opening hour,
  an exception word (except / including), a modal (may / must / shall not). Or, in an event with two chunks or
  more, one sentence that one chunk supports gets the answer's only citation marker, naming a chunk that holds none
  of its content words (citation_wrong_chunk).
- must stay kept: the form changes, the meaning does not. Inline citation markers naming the chunk that best
  matches each sentence, in the forms RAG systems write ([1], [doc-3], [policy-7], 【1】, [^1] footnotes,
  "(Source: ...)"); markdown (bullets, numbered steps, a bold label, a heading, a link, a code span); a source
  sentence quoted verbatim; a value paraphrased into an equivalent form ("30 days" -> "thirty (30) days",
  "March 3, 2026" -> "3 March 2026", "United States" -> "U.S.").
- bench/data/typed_values.jsonl: short contract, billing, support-hours, dosage and date events written for this
  suite (the development data has almost no billing cycles or legal numerals), each with its expected outcome and
  the value pair.

Variants come from the faithful (label 0) development rows of the four labelled files; the locked slice is never
read. Labels play no other part: nothing is fitted. The original answers are judged in the same run; a variant
counts only when its original was delivered unchanged (routed accept), so a miss or a false alarm is the
variant's doing.

Per class: must catch -> caught (not delivered unchanged), flagged with a deciding check, and "both values" (a
hallucinated statement names the new value and the source's); must keep -> delivered unchanged, and false alarms
(flagged or changed). Results are merged into bench/results/perturb.json under --label.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import orjson
import snowballstemmer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import (DATASETS, add_data_option, chunks_of, judge, machine, read_jsonl, read_rows,  # noqa: E402
                   split_rows, store_run)

TYPED_VALUES = Path(__file__).resolve().parent / "data" / "typed_values.jsonl"
CATCH, KEEP = "catch", "keep"


@dataclass(frozen=True)
class Variant:
    """One synthetic answer: its class, the outcome it must get, the event to judge and what was changed."""

    kind: str
    expect: str  # CATCH or KEEP
    event: dict[str, Any]
    before: str = ""
    after: str = ""
    origin: str = ""  # event id of the faithful answer it was made from


# --- reading the source ----------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_STOP = frozenset("""a an the and or but of to in on at for with by from as is are was were be been being it its this that
these those they them their there here he she his her we our you your i not no so if then than also can may must will
would should could has have had do does did which who whom what when where how about into over after before""".split())
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+|\",\s*\"|[{}]")


def chunk_texts(row: dict[str, Any]) -> list[str]:
    return chunks_of(row)[0]


def content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP and len(w) > 2}


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def best_source(sentence: str, chunks: Sequence[str]) -> tuple[int, str, float]:
    """(chunk index, source sentence, share of the sentence's content words it holds) of the best match."""
    words = content_words(sentence)
    best = (0, "", 0.0)
    for index, chunk in enumerate(chunks):
        for candidate in sentences(chunk):
            overlap = len(words & content_words(candidate)) / len(words) if words else 0.0
            if overlap > best[2]:
                best = (index, candidate, overlap)
    return best


def _sentence_at(answer: str, position: int) -> str:
    start = max(answer.rfind(". ", 0, position), answer.rfind("\n", 0, position)) + 1
    ends = [e for e in (answer.find(". ", position), answer.find("\n", position)) if e >= 0]
    return answer[start:min(ends) + 1 if ends else len(answer)]


# --- must be caught: one stated value changed -----------------------------------------------------------------

_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                 "ten": 10, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "sixty": 60, "ninety": 90}
_WORD_OF = {v: k for k, v in _NUMBER_WORDS.items()}
_UNITS = r"days?|weeks?|months?|years?|hours?|minutes?|mg|milligrams?|miles?|km|kilometers?|pounds?|kg|feet|inches"
_QUANTITY = re.compile(rf"(?<![\w.,$])(\d{{1,3}}(?:,\d{{3}})*(?:\.\d+)?)(\s?)({_UNITS})\b")
_MONEY = re.compile(r"\$(\d{1,3}(?:,\d{3})*(?:\.\d+)?)(\s?(?:million|billion|thousand)?)")
_PERCENT = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d+)?)(\s?(?:%|percent\b))")
_YEAR = re.compile(r"(?<![\w$.,-])(1[89]\d\d|20\d\d)(?![\w-])")
_UNIT_SWAP = {"day": "week", "week": "month", "month": "year", "year": "month", "hour": "day", "minute": "hour",
              "mg": "g", "milligram": "gram", "mile": "kilometer", "km": "mile", "kilometer": "mile", "pound": "kilogram",
              "kg": "pound", "feet": "meters", "inches": "centimeters"}
_SWAPS: dict[str, dict[str, str]] = {
    "billing_period": {"monthly": "annually", "annually": "monthly", "yearly": "monthly", "quarterly": "monthly",
                       "weekly": "monthly", "per month": "per year", "per year": "per month", "a month": "a year",
                       "a year": "a month", "per week": "per month", "/month": "/year", "/year": "/month"},
    "bound": {"at least": "up to", "up to": "at least", "no more than": "at least", "at most": "at least",
              "a maximum of": "a minimum of", "a minimum of": "a maximum of", "more than": "less than",
              "less than": "more than", "fewer than": "more than", "no later than": "no earlier than"},
    "frequency": {"once a day": "twice a day", "once daily": "twice daily", "twice a day": "three times a day",
                  "twice daily": "three times daily", "three times a day": "twice a day",
                  "three times daily": "twice daily", "four times a day": "twice a day", "every day": "every other day",
                  "once a week": "once a month", "twice a week": "twice a month", "daily": "weekly"},
    "exception": {"except": "including", "excluding": "including", "other than": "including",
                  "with the exception of": "including"},
    "modal": {"must not": "may", "shall not": "may", "may not": "may", "cannot": "can", "must": "may",
              "shall": "may", "may": "must", "is required to": "may", "are required to": "may", "optional": "required"},
}
_AMPM = re.compile(r"(?<![\d:])(\d{1,2})(?::(\d\d))?\s?(am|pm|AM|PM|a\.m\.|p\.m\.)")


def _stated(answer: str, start: int, phrase: str, chunks: Sequence[str], replacement: str) -> bool:
    """The answer's phrase repeats its source (the best-matching source sentence holds it) and the replacement
    is stated nowhere in the source."""
    _, source, overlap = best_source(_sentence_at(answer, start), chunks)
    joined = " ".join(chunks).lower()
    return overlap >= 0.5 and phrase.lower() in source.lower() and replacement.lower() not in joined


def _other_number(value: str, chunks: Sequence[str], percent: bool = False) -> str | None:
    number = float(value.replace(",", ""))
    joined = " ".join(chunks)
    for candidate in ((number + 10, number + 20, number - 5) if percent else (number * 2, number * 3, number + 7)):
        if candidate <= 0 or (percent and candidate >= 100):
            continue
        text = f"{candidate:,.{len(value.split('.')[1]) if '.' in value else 0}f}"
        if "," not in value:
            text = text.replace(",", "")
        if not re.search(rf"(?<![\d.,]){re.escape(text)}(?![\d])", joined):
            return text
    return None


def _replace(answer: str, start: int, end: int, new: str) -> str:
    return answer[:start] + new + answer[end:]


def catch_variants(row: dict[str, Any]) -> Iterator[tuple[str, str, str, str]]:
    """(class, changed answer, value before, value after) for each stated value that can be changed."""
    answer, chunks = row["answer"], chunk_texts(row)
    for m in _QUANTITY.finditer(answer):
        new = _other_number(m.group(1), chunks)
        if new and _stated(answer, m.start(), m.group(0), chunks, f"{new}{m.group(2)}{m.group(3)}"):
            yield "number", _replace(answer, m.start(1), m.end(1), new), m.group(0), f"{new}{m.group(2)}{m.group(3)}"
            break
    for m in _QUANTITY.finditer(answer):
        unit = m.group(3).lower()
        base = unit[:-1] if unit.endswith("s") and unit not in ("inches",) else unit
        swap = _UNIT_SWAP.get(base)
        if swap:
            new_unit = swap + ("s" if unit != base and not swap.endswith("s") else "")
            after = f"{m.group(1)}{m.group(2)}{new_unit}"
            if _stated(answer, m.start(), m.group(0), chunks, after):
                yield "unit_kind", _replace(answer, m.start(3), m.end(3), new_unit), m.group(0), after
                break
    for kind, pattern, percent in (("money", _MONEY, False), ("percentage", _PERCENT, True)):
        for m in pattern.finditer(answer):
            new = _other_number(m.group(1), chunks, percent)
            after = m.group(0).replace(m.group(1), new, 1) if new else ""
            if new and _stated(answer, m.start(), m.group(0), chunks, after):
                yield kind, _replace(answer, m.start(), m.end(), after), m.group(0), after
                break
    for m in _YEAR.finditer(answer):
        year = int(m.group(1))
        new = next((str(y) for y in (year + 1, year - 1, year + 2) if str(y) not in " ".join(chunks)), None)
        if new and _stated(answer, m.start(), m.group(1), chunks, new):
            yield "year", _replace(answer, m.start(1), m.end(1), new), m.group(1), new
            break
    joined = " ".join(chunks)
    for m in _AMPM.finditer(answer):
        # A record states hours on a 24-hour clock ("16:0-21:0"): the answer's "4 pm" repeats "16:"; two hours
        # later ("6 pm", "18:") must be stated nowhere. Only shifts that stay on the same side of noon.
        twelve, pm = int(m.group(1)), m.group(3).lower().startswith("p")
        hour = twelve % 12 + (12 if pm else 0)
        if twelve % 12 + 2 >= 12 or not re.search(rf"(?<![\d.]){hour}:", joined) \
                or re.search(rf"(?<![\d.]){hour + 2}:", joined):
            continue
        after = m.group(0).replace(m.group(1), str(twelve % 12 + 2), 1)
        yield "opening_hours", _replace(answer, m.start(), m.end(), after), m.group(0), after
        break
    cited = wrong_citation(row)
    if cited:
        yield "citation_wrong_chunk", *cited
    for kind, swaps in _SWAPS.items():
        for phrase in sorted(swaps, key=len, reverse=True):
            m = re.search(rf"(?<![\w-]){re.escape(phrase)}(?![\w-])", answer, re.I)
            if m and _stated(answer, m.start(), phrase, chunks, swaps[phrase]):
                new = swaps[phrase]
                if m.group(0)[0].isupper():
                    new = new[0].upper() + new[1:]
                yield kind, _replace(answer, m.start(), m.end(), new), m.group(0), new
                break


_STEMMER = snowballstemmer.stemmer("english")


def _word_forms(text: str) -> set[str]:
    """Content words without their inflection ("reheated" is "reheat", "ATVs" is "atv"): a chunk holding
    "reheat" shares a word with "Reheat foods" whatever its form. Snowball's stemmer, not the project's own
    `words.stem` wrapper: the generator stays independent of the checks it tests."""
    return {_STEMMER.stemWord(w) for w in content_words(text)}


def wrong_citation(row: dict[str, Any]) -> tuple[str, str, str] | None:
    """(answer, right marker, wrong marker): one sentence of the answer, which one chunk supports (the best-matching
    source sentence holds at least half its content words), cited with a marker naming another chunk that holds
    none of its content words. The only marker in the answer, so a catch is that marker's doing."""
    chunks = chunk_texts(row)
    if len(chunks) < 2:
        return None
    answer, chunk_words = row["answer"], [_word_forms(c) for c in chunks]
    for sentence in _answer_sentences(answer):
        words = _word_forms(sentence)
        if len(words) < 3 or sentence[-1] not in ".!?":
            continue
        right, _, overlap = best_source(sentence, chunks)
        wrong = next((i for i, w in enumerate(chunk_words) if not words & w), None)
        if overlap >= 0.5 and wrong is not None:
            end = answer.index(sentence) + len(sentence) - 1  # the sentence's full stop: the marker goes before it
            return _replace(answer, end, end, f" [{wrong + 1}]"), f"[{right + 1}]", f"[{wrong + 1}]"
    return None


# --- must stay kept: the form changes, the meaning does not ---------------------------------------------------

_ID_FORMS: dict[str, Callable[[int], str]] = {
    "citation_doc_id": lambda i: f"doc-{i + 1}",
    "citation_policy_id": lambda i: f"policy-{i + 6}",
}


def _answer_sentences(answer: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", answer.strip()) if s]


_ENUMERATOR = re.compile(r"\(?\d{1,3}[.)]")
_ITEM_START = re.compile(r"\n[ \t]*(\(?\d{1,3}[.)])$")


def _claim_sentences(answer: str) -> list[str]:
    """`_answer_sentences` with a list item's number kept on its item: "2." asserts nothing and is no place for a
    marker ("2 [1]. Boxers are medium-sized [2]." would cite chunk 1 for the item)."""
    out: list[str] = []
    for part in _answer_sentences(answer):
        if out and _ENUMERATOR.fullmatch(out[-1]):
            out[-1] = f"{out[-1]} {part}"
            continue
        item = _ITEM_START.search(part)  # "Here are the steps:\n\n1." - the intro, then the first item's number
        out.extend([part[:item.start()], item.group(1)] if item and item.start() else [part])
    return out


def _cite_each(row: dict[str, Any], marker: Callable[[int], str]) -> str:
    """Each sentence with a marker naming the chunk (0-based index to marker) that best matches it."""
    chunks = chunk_texts(row)
    out = []
    for sentence in _claim_sentences(row["answer"]):
        if sentence.rstrip().endswith(":"):  # a list's introduction asserts nothing to cite
            out.append(sentence.rstrip())
            continue
        index, _, _ = best_source(sentence, chunks)
        body, end = (sentence[:-1], sentence[-1]) if sentence[-1] in ".!?" else (sentence, "")
        out.append(f"{body} {marker(index)}{end}" if not marker(index).startswith("[^") else
                   f"{body}{end}{marker(index)}")
    return " ".join(out)


def _with_ids(row: dict[str, Any], name: Callable[[int], str]) -> dict[str, Any]:
    return {**row, "context": [{"id": name(i), "text": t, "source": f"kb://{name(i)}"}
                               for i, t in enumerate(chunk_texts(row))]}


def keep_variants(row: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], str, str]]:
    """(class, event, before, after) for each format or paraphrase variant of a faithful answer."""
    answer, chunks = row["answer"], chunk_texts(row)
    parts = _answer_sentences(answer)
    cited = [s for s in _claim_sentences(answer) if not s.rstrip().endswith(":")]
    yield "citation_bracket", {**row, "answer": _cite_each(row, lambda i: f"[{i + 1}]")}, "", "[n]"
    yield "citation_fullwidth", {**row, "answer": _cite_each(row, lambda i: f"【{i + 1}】")}, "", "【n】"
    for kind, name in _ID_FORMS.items():
        event = _with_ids(row, name)
        yield kind, {**event, "answer": _cite_each(row, lambda i: f"[{name(i)}]"),
                     "citations": sorted({name(best_source(s, chunks)[0]) for s in cited})}, "", f"[{name(0)}]"
    used = sorted({best_source(s, chunks)[0] for s in cited})
    footnotes = "\n\n" + "\n".join(f"[^{n}]: Passage {i + 1}" for n, i in enumerate(used, 1))
    number = {i: n for n, i in enumerate(used, 1)}
    yield "citation_footnote", {**row, "answer": _cite_each(row, lambda i: f"[^{number[i]}]") + footnotes}, "", "[^n]"
    yield "citation_source_paren", {**row, "answer": _cite_each(row, lambda i: f"(Source: passage {i + 1})")}, "", \
        "(Source: ...)"
    if len(parts) >= 2:
        yield "markdown_bullets", {**row, "answer": "\n".join(f"- {s}" for s in parts)}, "", "- "
        yield "markdown_numbered", {**row, "answer": "\n".join(f"{n}. {s}" for n, s in enumerate(parts, 1))}, "", "1. "
    yield "markdown_bold_label", {**row, "answer": f"**Answer:** {answer}"}, "", "**Answer:**"
    yield "markdown_heading", {**row, "answer": f"## Answer\n\n{answer}"}, "", "## Answer"
    yield "markdown_link", {**row, "answer": f"{answer} [Read more](https://kb.example.com/articles/1)"}, "", "link"
    code = re.search(r"(?<![\w.,$])\d+(?:\.\d+)?(?![\w.,])", answer)  # a whole number, not "20" of "20,000"
    if code:
        yield "markdown_code_span", {**row, "answer": _replace(answer, code.start(), code.end(), f"`{code.group(0)}`")}, \
            code.group(0), f"`{code.group(0)}`"
    _, quoted, overlap = best_source(parts[0] if parts else answer, chunks)
    if overlap >= 0.5 and 20 <= len(quoted) <= 300:
        ended = answer.rstrip() + ("" if answer.rstrip()[-1:] in ".!?" else ".")
        yield "quote_source", {**row, "answer": f'{ended} As the source puts it: "{quoted}"'}, "", quoted
    yield from _paraphrases(row)


_MONTHS = "January February March April May June July August September October November December".split()
_DATE = re.compile(rf"\b({'|'.join(_MONTHS)}) (\d{{1,2}}), (\d{{4}})\b")
_NAMES = {"United States": "U.S.", "United Kingdom": "U.K.", "percent": "%", "European Union": "EU"}


def _paraphrases(row: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], str, str]]:
    answer, chunks = row["answer"], chunk_texts(row)
    for m in _QUANTITY.finditer(answer):
        value = m.group(1)
        if value.isdigit() and int(value) in _WORD_OF and _stated(answer, m.start(), m.group(0), chunks, "\0"):
            after = f"{_WORD_OF[int(value)]} ({value}) {m.group(3)}"
            yield "paraphrase_legal_numeral", {**row, "answer": _replace(answer, m.start(), m.end(), after)}, \
                m.group(0), after
            break
    m = _DATE.search(answer)
    if m and _stated(answer, m.start(), m.group(0), chunks, "\0"):
        after = f"{int(m.group(2))} {m.group(1)} {m.group(3)}"
        yield "paraphrase_date_format", {**row, "answer": _replace(answer, m.start(), m.end(), after)}, m.group(0), after
    for name, short in _NAMES.items():
        n = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", answer)
        if n and _stated(answer, n.start(), name, chunks, "\0"):
            after = short if name != "percent" else "%"
            start = n.start() - 1 if name == "percent" and answer[n.start() - 1] == " " else n.start()
            yield "paraphrase_name", {**row, "answer": _replace(answer, start, n.end(), after)}, name, after
            break


# --- the suites ------------------------------------------------------------------------------------------------


def variants(row: dict[str, Any]) -> list[Variant]:
    """Every must-catch and must-keep variant of one faithful answer (a labelled-file row or an event with
    `id`, `question`, `context`, `answer`)."""
    base = {k: row[k] for k in ("id", "question", "context", "answer") if k in row}
    base["metadata"] = {"task_type": row.get("task_type"), "synthetic_from": row.get("id")}
    origin = str(row.get("id"))
    out = [Variant(kind, CATCH, {**base, "id": f"{origin}~{kind}", "answer": answer}, before, after, origin)
           for kind, answer, before, after in catch_variants(row)]
    out += [Variant(kind, KEEP, {**base, "id": f"{origin}~{kind}",
                                 **{k: v for k, v in event.items() if k in ("answer", "context", "citations")}},
                    before, after, origin)
            for kind, event, before, after in keep_variants(row)]
    return out


def _order(variant: Variant) -> bytes:
    return hashlib.blake2b(f"{variant.kind}:{variant.origin}".encode(), digest_size=8).digest()


def synthetic(per_class: int) -> tuple[list[dict[str, Any]], list[Variant]]:
    """The faithful development rows and at most `per_class` variants of each class, in a fixed order."""
    faithful = [r for name in DATASETS for r in split_rows(read_rows(name))[0] if r["label"] == 0]
    by_kind: dict[str, list[Variant]] = defaultdict(list)
    for row in faithful:
        for variant in variants(row):
            by_kind[variant.kind].append(variant)
    return faithful, [v for kind in sorted(by_kind) for v in sorted(by_kind[kind], key=_order)[:per_class]]


def typed_values() -> list[Variant]:
    out = []
    for row in read_jsonl(TYPED_VALUES):
        event = {k: row[k] for k in ("id", "question", "context", "answer", "citations") if k in row}
        event["metadata"] = {"domain": row["domain"], "class": row["class"]}
        out.append(Variant(f"{row['class']}:{row['expect']}", row["expect"], event, row.get("source_value", ""),
                           row.get("answer_value", ""), row["id"]))
    return out


def _names_both(verdict: dict[str, Any], variant: Variant) -> bool:
    """A hallucinated statement names the answer's value and the source's (as values or in its evidence)."""
    def norm(text: str) -> str:
        return re.sub(r"\W+", " ", text).lower().strip()

    after, before = norm(variant.after), norm(variant.before)
    for s in verdict.get("hallucinated_statements") or []:
        text = norm(" ".join(str(s.get(k) or "") for k in ("answer_value", "source_value", "evidence")))
        if after and before and after in text and before in text:
            return True
    return False


def score(variants_: Sequence[Variant], verdicts: Sequence[dict[str, Any]],
          original_kept: dict[str, bool]) -> dict[str, dict[str, Any]]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    expects = {v.kind: v.expect for v in variants_} | {f"ALL {e}": e for e in (CATCH, KEEP)}
    for v, verdict in zip(variants_, verdicts):
        for key in (v.kind, f"ALL {v.expect}"):
            _count(counts[key], v, verdict, original_kept)
    out = {}
    for kind, c in sorted(counts.items(), key=lambda kv: (expects[kv[0]], kv[0].startswith("ALL"), kv[0])):
        expect = expects[kind]
        n = c["counted"]

        def share(key: str) -> float | None:
            return round(c[key] / n, 4) if n else None

        entry: dict[str, Any] = {"expect": expect, "variants": c["n"], "counted": n,
                                 "original_not_kept": c["original_not_kept"]}
        if expect == CATCH:
            entry.update(caught=share("caught"), flagged_deciding=share("flagged_deciding"),
                         both_values=share("both_values"))
        else:
            entry.update(delivered_unchanged=share("kept"), false_alarm=share("false_alarm"),
                         why={k[4:]: v for k, v in sorted(c.items()) if k.startswith("why:")})
        out[kind] = entry
    return out


def _count(c: Counter[str], v: Variant, verdict: dict[str, Any], original_kept: dict[str, bool]) -> None:
    c["n"] += 1
    if v.origin in original_kept and not original_kept[v.origin]:
        c["original_not_kept"] += 1
        return
    c["counted"] += 1
    unchanged = verdict["delivered_answer"] == v.event["answer"] and verdict["routing"] == "accept"
    deciding = bool(set(verdict.get("triggered") or ()) - {"drift"})
    if v.expect == CATCH:
        c.update(caught=not unchanged, flagged_deciding=bool(verdict["flagged"]) and deciding,
                 both_values=_names_both(verdict, v))
    else:
        c.update(kept=unchanged, false_alarm=bool(verdict["flagged"]) or not unchanged)
        if not unchanged:
            c.update(f"why:{t}" for t in verdict.get("triggered") or ["none"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="current")
    parser.add_argument("--per-class", type=int, default=150, help="variants per class at most (default 150)")
    parser.add_argument("--verdicts", type=Path, help="also write every variant with its verdict here (JSONL)")
    add_data_option(parser)
    args = parser.parse_args()
    started = time.perf_counter()
    faithful, made = synthetic(args.per_class)
    origins = {v.origin for v in made}
    originals = [r for r in faithful if str(r.get("id")) in origins]
    typed = typed_values()
    with tempfile.TemporaryDirectory(prefix="perturb-") as tmp:
        workdir = Path(tmp)
        original_verdicts, _ = judge(originals, workdir, "originals")
        verdicts, _ = judge([v.event for v in made], workdir, "variants")
        typed_verdicts, _ = judge([v.event for v in typed], workdir, "typed_values")
    kept = {str(r["id"]): v["routing"] == "accept" and v["delivered_answer"] == r["answer"]
            for r, v in zip(originals, original_verdicts)}
    if args.verdicts:
        with open(args.verdicts, "wb") as fh:
            for v, verdict in zip([*made, *typed], [*verdicts, *typed_verdicts]):
                fh.write(orjson.dumps({"kind": v.kind, "expect": v.expect, "before": v.before, "after": v.after,
                                       "origin": v.origin, "original_kept": kept.get(v.origin), "event": v.event,
                                       "verdict": verdict}) + b"\n")
    run = {"machine": machine(), "per_class": args.per_class, "originals": len(originals),
           "originals_kept": sum(kept.values()), "synthetic": score(made, verdicts, kept),
           "typed_values": score(typed, typed_verdicts, {}), "seconds": round(time.perf_counter() - started, 1)}
    path = store_run("perturb", args.label, run)
    report(run)
    print(f"wrote {path} [{args.label}] in {run['seconds']} s")


def report(run: dict[str, Any]) -> None:
    print(f"originals: {run['originals']} faithful development answers, {run['originals_kept']} delivered unchanged")
    for suite in ("synthetic", "typed_values"):
        print(f"== {suite}")
        print(f"   {'class':<34}{'n':>5}{'counted':>9}{'caught':>8}{'decided':>8}{'both':>7}{'kept':>8}{'false':>8}")
        for kind, e in run[suite].items():
            def f(key: str) -> str:
                value = e.get(key)
                return "     -" if value is None else f"{value:6.3f}"
            print(f"   {kind:<34}{e['variants']:>5}{e['counted']:>9}{f('caught'):>8}{f('flagged_deciding'):>8}"
                  f"{f('both_values'):>7}{f('delivered_unchanged'):>8}{f('false_alarm'):>8}")


if __name__ == "__main__":
    main()
