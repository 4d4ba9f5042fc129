"""Split an answer into claims: the sentences (or clauses) that assert something checkable.

Generated RAG answers carry a lot of scaffolding that asserts nothing about the world: greetings,
"Based on the provided passages, ..." prefaces, "Passage 2 states that ..." attributions, list
introductions ending in a colon, refusals ("The passages do not mention ..."), sign-offs. Scoring those
against the context only adds noise (their words are about the passages, not in them), so they are
dropped or stripped here. A decline is dropped by clause, wherever it stands, so a fact joined to it is
still a claim. Long compound sentences are split where both halves are clauses, so that one
invented half is not averaged away by a grounded half.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stream_guard.text import regex_cache
from stream_guard.text.sentences import split_sentences
from stream_guard.text.short_text_cache import cached_when_short
from stream_guard.text.words import DIGIT_RE, content_words, may_match, words

# Lines up to this length are read once per process while recent (bounded: longer ones every time).
_MAX_CACHED_LINE = 1024

# Every whitespace run below is matched by one possessive quantifier (`\s++`, `\s*+`), never by two
# quantifiers in a row that could share it: "However" followed by 20,000 spaces is read once, not split
# every possible way (it took 15 s at 8,000 spaces).

# Words that refer to the retrieved material itself rather than to the world; "structured data" is what a data-to-text
# answer calls the record it was given ("According to the structured data, it opens at 5 pm").
_SOURCE_NOUN = (r"(?:passages?|context|contexts|documents?|sources?|texts?|articles?|excerpts?|snippets?|search\s++results|"
                r"materials?|information|news\s++articles?|structured\s++data)")
_SOURCE_REF = rf"(?:the\s++|these\s++|this\s++)?(?:(?:first|second|third|fourth|fifth|last|other|given|provided|above|retrieved|available|following|supplied|original|relevant)\s++)*+{_SOURCE_NOUN}(?:(?:\s*+\#)?\s*+\d++)?(?:\s++(?:provided|given|above|supplied|here)\b)?"

# Prefaces that attribute a claim to the passages: removed, the rest of the sentence is the claim.
_PREFACE_RE = regex_cache.compile(
    rf"""^\s*+(?:
        (?:(?:therefore|so|thus|overall|in\s++summary|in\s++conclusion|to\s++summarize|however)\s*+)?,?\s*+
        (?:(?:based\s++(?:on|upon)|according\s++to|as\s++(?:mentioned|stated|described|noted|shown|explained|outlined|indicated|seen)\s++in|as\s++per)\s++
           (?:the\s++)?(?:information\s++(?:provided\s++|given\s++)?in\s++)?
          |(?:in|from|using)\s++(?=the\s|these\s|this\s))
        {_SOURCE_REF}
        (?:\s++(?:and|&)\s++{_SOURCE_REF})*
        \s*+[,:]?
    )""",
    re.IGNORECASE | re.VERBOSE,
)
# "Passage 2 states that ...", "The article reports ...": the attribution goes, the reported content stays.
_ATTRIBUTION_RE = regex_cache.compile(
    rf"""^\s*+{_SOURCE_REF}\s++(?:(?:also|further|clearly)\s++)?
        (?:states?|says|mentions?|indicates?|suggests?|notes?|explains?|describes?|reports?|shows?|recommends?|
           defines?|highlights?|adds?|summarizes?|emphasi[sz]es?|claims?|argues?|details?|discusses?|points\s++out|confirms?)
        (?:\s++that)?\s*+,?""",
    re.IGNORECASE | re.VERBOSE,
)
# Mid-sentence attributions and parenthetical source tags carry no claim content.
_INLINE_META_RE = regex_cache.compile(
    rf"""\(\s*+(?:see\s++)?(?:passage|source|document|doc|chunk)s?\s*+\d++(?:\s*+(?:,|and|&)\s*+\d++)*+\s*+\)
        |(?:,\s*+|(?<!\s)\s++)?(?:as\s++(?:mentioned|stated|described|noted|shown|explained|outlined|indicated)\s++in|according\s++to|based\s++on)\s++{_SOURCE_REF}\s*+,?
        |\b(?:in|from)\s++(?:the\s++)?(?:given|provided|retrieved)\s++{_SOURCE_NOUN}(?:\s*+\d++)?""",
    re.IGNORECASE | re.VERBOSE,
)
# "passages 1 and 3", "step 7": numbers that point inside the answer or at the passages, not figures.
_REFERENCE_NUMBER_RE = regex_cache.compile(
    r"""\b(passages?|sources?|documents?|docs?|chunks?|steps?|paragraphs?)(?:\s*+\#)?\s*+\d++(?:\s*+(?:,|and|&|or|-)\s*+\d++)*+\b""",
    re.IGNORECASE | re.VERBOSE,
)
_OPENER_RE = regex_cache.compile(
    r"^\s*+(?:(?:sure|certainly|of course|absolutely|okay|ok|yes|no|great question|good question|hi|hello|hey|"
    r"note|please note(?:\s++that)?|in summary|in conclusion|to summarize|overall|answer|summary|step\s*+\d++|"
    r"(?:passage|source|document|doc|chunk|context)(?:\s*+\d++)?)"
    r"\s*+[!:,.)\-–—]++|(?:\(?\d{1,3}[.)]|[-*•]++|#++)\s++)\s*+",
    re.IGNORECASE,
)
# Whole sentences that assert nothing checkable against the context.
_NON_CLAIM_RE = regex_cache.compile(
    rf"""^\s*+(?:
        (?:i\s++)?hope\s++(?:this|that|it)\s++helps
        |let\s++me\s++know
        |feel\s++free\s++to
        |(?:please\s++)?(?:do\s++not|don't)\s++hesitate
        |if\s++you\s++have\s++(?:any\s++)?(?:(?:other|more|further|additional)\s*+)?questions
        |(?:i(?:\s*+'m|\s++am)|we(?:\s*+'re|\s++are))\s++(?:happy|glad|here)\s++to\s++help
        |(?:sure|certainly|of\s++course)\s*+,?\s*+(?:i\s++can|i'd|i\s++would|here)
        |here(?:'s|\s++is|\s++are)\s++(?:(?:a|an|the|some|my)\s*+)?(?:(?:brief|short|concise|possible|\d+-word)\s++)*+(?:summary|answer|response|overview|list|steps|recipe|breakdown)
        |(?:i|we)\s++(?:cannot|can't|can\s++not|am\s++unable\s++to|are\s++unable\s++to|could\s++not|couldn't|do\s++not\s++have|don't\s++have)\b
        |(?:there\s++is|there's|there\s++are)\s++no\s++(?:(?:specific|further|additional)\s++)?(?:information|mention|details?|data|answer)
        |none\s++of\s++the\s++(?:(?:given|provided)\s++)?(?:passages|documents|sources|articles)
        |thank(?:s|\s++you)\b
        |great\s++question|good\s++question
        |(?:this|that|the|such|all\s++(?:of\s++)?th(?:is|ese))\s++(?:information|answer|details?|facts?)\s++
          (?:(?:can|could|may)\s++be\s++|is\s++|are\s++(?:all\s++)?)(?:found|seen|located|given)\s++in\s++{_SOURCE_REF}
          (?:\s++(?:and|&)\s++{_SOURCE_REF})*+\s*+[.!]?\s*+$
    )""",
    re.IGNORECASE | re.VERBOSE,
)
# Courtesies that close an answer ("Enjoy!", "Have fun with it!", "Good luck!", "That's it!"): wished to the reader,
# they state nothing a source could bear out or contradict. Only the whole sentence: "Enjoy the beaches of Maui,
# the best in Hawaii" goes on to claim something, and stays a claim.
_COURTESY_RE = regex_cache.compile(
    r"""\s*+(?:(?:and|so|also|lastly|finally|above\s++all)\s*+,?\s*+)?(?:of\s++course\s*+,?\s*+)?(?:
        (?:please\s++)?(?:(?:do\s++not|don't|don’t)\s++forget\s++to\s++
          |(?:it's|it’s|it\s++is)\s++(?:also\s++)?important\s++to\s++)?
        (?:have\s++fun|enjoy|good\s++luck|happy\s++[a-z]++(?<=ing)|bon\s++app[eé]tit|cheers|stay\s++safe|take\s++care)
        (?:\s++(?:with\s++)?(?:it|them|this|yourself|yourselves|the\s++[a-z]++|your\s++(?:[a-z]++\s++)?[a-z]++))?
        (?:\s++and\s++enjoy(?:\s++(?:it|them|the\s++[a-z]++|your\s++[a-z]++))?)?
        |that(?:'s|’s|\s++is)\s++(?:it|all)
    )\s*+[.!]*+\s*+""",
    re.IGNORECASE | re.VERBOSE,
)
_COURTESY_WORDS = ("fun", "enjoy", "luck", "happy", "bon", "cheers", "safe", "care", "that")
# "..., so the question is unable to answer" anywhere in a line: its own pattern, searched only in a line that
# holds "unable" or "answered" (may_match), as `.*` makes it read the whole line.
_UNANSWERABLE_RE = regex_cache.compile(
    r"^\s*+(?:.*\b)?(?:unable\s++to\s++answer|cannot\s++be\s++answered|can't\s++be\s++answered)", re.IGNORECASE)
_UNANSWERABLE_WORDS = ("unable", "answered")
# A clause that says the sources do not state something (a decline) makes no claim about the world: what it
# restates of the question ("..., the passages do not provide information on what happens") is the thing NOT
# found, so it is neither grounded nor unsupported. Found anywhere in a clause, not only at the start.
_STATING_VERB = (r"(?:provide|mention|contain|include|specify|say|state|give|offer|address|discuss|cover|answer|"
                 r"describe|detail|explain|indicate|list|talk\s++about|refer\s++to|clarify)")
_DECLINE_RE = regex_cache.compile(
    rf"""\b{_SOURCE_REF}\s++(?:(?:also|further)\s++)?
          (?:do(?:es)?\s++not|don't|doesn't|did\s++not|didn't|fails?\s++to|never)\s++
          (?:(?:explicitly|directly|specifically|clearly)\b|{_STATING_VERB})
        |\b(?:is|are|was|were|has\s++been|have\s++been)\s++not\s++(?:(?:explicitly|directly|specifically|clearly)\s++)?
          (?:mentioned|stated|specified|provided|given|discussed|addressed|covered|included|described|detailed|explained)
          \s*+(?:in|by|within)\s++{_SOURCE_REF}
        |\b(?:there\s++is|there's|there\s++are|with)\s++no\s++(?:(?:specific|further|additional|explicit|direct|clear)\s++)?
          (?:information|mention|details?|data|indication|reference)\b
        |\b(?:i|we)(?:\s*+'m|\s++am|\s*+'re|\s++are)?\s++
          (?:cannot|can't|can\s++not|(?:am\s++|are\s++)?unable\s++to|(?:am\s++|are\s++)?not\s++able\s++to|could\s++not|couldn't)\s++
          (?:provide|answer|determine|find|say|give|tell|confirm|identify|offer|specify|explain|know|infer)
        |\b(?:cannot|can't|could\s++not)\s++be\s++(?:determined|answered|inferred|confirmed|found)\s++(?:from|in|based\s++on)\s++{_SOURCE_REF}
        |\bunable\s++to\s++answer\b
        |\b(?:none|neither)\s++(?:of\s++)?{_SOURCE_REF}\s++(?:(?:also|further|explicitly|directly|specifically|clearly)\s++)?
          {_STATING_VERB}(?:e?s)?\b
        |\b(?:do(?:es)?\s++not|doesn't|don't|did\s++not|didn't)\s++(?:provide|give|offer|share|list|include)\s++
          (?:(?:any|specific|further|additional|detailed|much|more|explicit)\s++)*+(?:information|details|data|specifics)\b""",
    re.IGNORECASE | re.VERBOSE,
)
# "The first passage covers baking, but does not mention frying": the second clause's subject is the passage.
_ELIDED_DECLINE_RE = regex_cache.compile(
    rf"^\s*+(?:(?:it|they|this|which)\s++)?(?:do(?:es)?\s++not|doesn't|don't|did\s++not|never)\s++"
    rf"(?:(?:explicitly|directly|specifically|clearly)\s++)?{_STATING_VERB}",
    re.IGNORECASE,
)
# Every decline says "not", "no", "none", "neither", "never", "unable" or "fail": a line without one is read no further (most lines).
_NEGATION_RE = regex_cache.compile(r"\b(?:not|no|none|neither|never|unable|fails?|cannot)\b|n't\b", re.IGNORECASE)
_SOURCE_SUBJECT_RE = regex_cache.compile(rf"^\s*+{_SOURCE_REF}\s", re.IGNORECASE)
# Where a sentence's clauses meet: a decline is dropped with its own clause, never with a fact joined to it.
_CLAUSE_BREAK_RE = regex_cache.compile(
    r";\s*+|,\s*+(?=(?:and|but|while|whereas|although|though|however|yet|so)\b)|\s++(?=but\s)", re.IGNORECASE)
# "Although the passages do not say so, the bridge opened in 1932": the decline is the leading clause only.
_JOINER_RE = regex_cache.compile(r"^\s*+(?:and|but|while|whereas|although|though|however|yet|so)\b\s*+,?\s*+", re.IGNORECASE)
# A lead that declines a list ("Although the record gives no details on amenities such as parking, WiFi, or
# music, ...") runs to the comma after the list's last short item.
_LEADING_SUBORDINATE_RE = regex_cache.compile(
    r"^\s*+(?:although|though|even\s++though|while|whereas|since|as|because|if)\b"
    r"(?:[^,]*?\bsuch\s++as\b[^,]*+(?:,\s*+(?:(?:and|or)\s++)?[^,\s]++(?:\s++[^,\s]++){0,2}(?=,))*+|[^,]*+),\s*+",
    re.IGNORECASE)


_LIST_TAIL_RE = regex_cache.compile(r"\s*+(?:and|or)\s++[^\s,;]++(?:\s++[^\s,;]++)?\s*+[.!]?\s*+", re.IGNORECASE)


def _clauses(sentence: str) -> list[str]:
    """The sentence cut where clauses meet; a list's last item (", and music", ", or outdoor seating": two words at
    most, too few for a subject and what it says) stays with the piece before it."""
    out: list[str] = []
    for piece in _CLAUSE_BREAK_RE.split(sentence):
        if out and _LIST_TAIL_RE.fullmatch(piece):
            out[-1] = f"{out[-1]}, {piece}"
        else:
            out.append(piece)
    return out


def _is_decline(clause: str, source_subject: bool) -> bool:
    return _DECLINE_RE.search(clause) is not None or (
        source_subject and _ELIDED_DECLINE_RE.match(_JOINER_RE.sub("", clause)) is not None)


# A line's declines are read by the claim reader and again by each is_claim_sentence of what it keeps (most
# often the line itself): once per process while recent.
@cached_when_short(_MAX_CACHED_LINE, 8192)
def drop_declines(sentence: str) -> str:
    """The sentence without its clauses that say the sources do not state something (with what they restate of
    the question); the clauses joined to them that assert something else stay, to be checked. A sentence with
    no decline comes back as it was."""
    if not may_match(sentence, _NEGATION_WORDS) or _NEGATION_RE.search(sentence) is None:
        return sentence
    source_subject = _SOURCE_SUBJECT_RE.match(sentence) is not None
    if not source_subject and _DECLINE_RE.search(sentence) is None:
        return sentence
    clauses = _clauses(sentence)
    if not any(_is_decline(clause, source_subject) for clause in clauses):
        return sentence
    kept: list[str] = []
    for clause in clauses:
        if not _is_decline(clause, source_subject):
            kept.append(clause)
            continue
        lead = _LEADING_SUBORDINATE_RE.match(clause)
        if lead is not None and _is_decline(lead.group(0), source_subject):
            rest = clause[lead.end():]
            if not _is_decline(rest, False):
                kept.append(rest)
    text = _JOINER_RE.sub("", " ".join(" ".join(kept).split()).strip(" ,;:-–—"))
    return text[:1].upper() + text[1:] if text else ""


_ENUMERATOR_ONLY_RE = regex_cache.compile(r"^\s*+(?:\(?\d{1,3}[.)]|[-*•#]++|step\s*+\d++[.:)]?|[a-z][.)])\s*+$", re.IGNORECASE)
# Compound splits: "; " always a candidate, ", and" / ", but" / ", while" / ", whereas" when both sides are clauses.
_COMPOUND_RE = regex_cache.compile(r";\s++|,\s++(?=(?:and|but|while|whereas|although|though)\s)", re.IGNORECASE)
_LEADING_CONJ_RE = regex_cache.compile(r"^(?:and|but|while|whereas|although|though)\s++", re.IGNORECASE)

# "every" is the universal quantifier "all" and "each" are (stop words): "every visitor" restates "all visitors".
# Discourse markers, words about the answer itself, and words about the source and the act of reporting it (a
# summary's "the speakers discussed", "this document illustrates": the source never calls itself a document or its
# participants speakers): content words to the stop list, but they carry nothing a passage could confirm, so they
# neither ground nor un-ground a claim.
GENERIC_WORDS: frozenset[str] = frozenset(
    """
    therefore thus hence however additionally furthermore moreover overall finally lastly firstly secondly
    thirdly also main mainly important importantly note noted notably various several certain specific
    specifically generally typically usually often including include includes example examples instance
    etc answer answers question questions passage passages mention mentioned mentions provided provide
    provides based according summary summarize summarized say says said stated states step steps
    information explain explains explained clarify clarifies
    document documents text article articles transcript conversation dialogue dialog meeting discussion discuss
    discusses discussed discussing speaker speakers participant participants describe describes described
    describing illustrate illustrates illustrated highlight highlights highlighted highlighting emphasize
    emphasizes emphasized emphasise emphasises emphasised outline outlines outlined ultimately eventually others
    every
    """.split()
)

# Quantifiers that assert more than a plural does ("many reviewers", "several times", "most customers"): each
# claims a large number or a share of a set, so a source listing two reviews does not state it. "Most" is a stop
# word and "several" a generic one, so no content-word measure sees them, and "many" is one novel word among the
# answer's, weighed like a reworded one. "Multiple", "various", "some" and "a few" say no more than a plural and
# are left out. One group per claim: a word of the group in the source states it ("numerous" for "many"), and so
# do the words listed beside it ("hundreds of fans" states "many"; a share over half states "most").
_QUANTIFIER_GROUPS = {"many numerous countless plenty lots": "hundreds thousands millions dozens",
                      "several": "", "most majority": ""}
COUNT_QUANTIFIERS: dict[str, frozenset[str]] = {
    w: frozenset((group + " " + also).split()) for group, also in _QUANTIFIER_GROUPS.items() for w in group.split()
}
MAJORITY = frozenset({"most", "majority"})
# A share over half, as a source writes it: "70%", "62 percent", "two-thirds", "three quarters".
_MAJORITY_RE = regex_cache.compile(r"\b(?:5[1-9]|[6-9]\d|100)(?:\.\d+)?\s?(?:%|per ?cent)|\b(?:two[- ]thirds|three[- ]quarters)\b",
                          re.IGNORECASE)
# Nouns a quantifier frames the answer's own list with ("differ in several ways: ..."): it counts the items the answer
# goes on to give, not anything in the world.
_LIST_NOUNS = frozenset("""ways functions benefits reasons factors steps things options types kinds methods tips
    differences advantages disadvantages features uses aspects points categories""".split())
_PLURAL_WITHOUT_S = frozenset("people children men women".split())
_NOT_PLURAL_ENDINGS = ("ss", "ous", "less", "ness", "is")


def states_majority(text: str) -> bool:
    """Whether a text gives a share over half ("70%", "two-thirds"), which states "most" and "the majority"."""
    return _MAJORITY_RE.search(text) is not None


def _counts(word: str, before: str, after: str, then: str) -> bool:
    """Whether a quantifier in this place counts members of a set: not the frame of the answer's own list ("several
    ways", "numerous health benefits"), and "most" only as a determiner ("most customers", "most of"), not as a
    superlative ("the most popular", "most effective", "at most")."""
    if after in _LIST_NOUNS or then in _LIST_NOUNS:
        return False
    if word != "most":
        return True
    if before in ("the", "a", "at"):
        return False
    return after == "of" or after in _PLURAL_WITHOUT_S or (after.endswith("s") and not after.endswith(_NOT_PLURAL_ENDINGS))


_QUANTIFIER_RE = regex_cache.compile(r"\b(?:" + "|".join(sorted(COUNT_QUANTIFIERS)) + r")\b", re.IGNORECASE)


_QUANTIFIER_WORDS = tuple(sorted(COUNT_QUANTIFIERS))


def may_hold_quantifier(text: str) -> bool:
    """Whether a text holds a count quantifier at all: substring tests first (words.may_match), so the claims that
    hold none (nearly all) never run the pattern."""
    return may_match(text, _QUANTIFIER_WORDS) and _QUANTIFIER_RE.search(text) is not None


def unstated_quantifiers(text: str, *stated: frozenset[str]) -> tuple[str, ...]:
    """The count quantifiers of a claim no word of whose group occurs in any of the `stated` word sets (the
    context's, cached per context, and the question's: a user asking about "many" words it themselves). Callers
    on a hot path test may_hold_quantifier first, before they gather the `stated` sets."""
    tokens = words(text)
    found = []
    for i, w in enumerate(tokens):
        if w in COUNT_QUANTIFIERS and all(COUNT_QUANTIFIERS[w].isdisjoint(s) for s in stated):
            before, after, then = (tokens[i - 1] if i else ""), *(tokens[i + 1:i + 3] + ["", ""])[:2]
            if _counts(w, before, after, then):
                found.append(w)
    return tuple(dict.fromkeys(found))


# A bare reply to a yes-no question ("Yes", "no.", "Correct"): it asserts the question's proposition (or its
# denial), so what it claims is the question's content, grounded or not as the question's words are. A label
# naming the reply ("Answer: yes", the plain text of "**Answer:** yes") is the answer's layout, not a claim.
_BARE_REPLY_RE = regex_cache.compile(
    r"\s*+(?:(?:(?:short[ \t]++|final[ \t]++)?answer|reply|response|a)[ \t]*+:\s*+)?"
    r"(?:yes|no|yep|nope|correct|incorrect|true|false)\s*+[.!]?\s*+", re.IGNORECASE)
_QUESTION_END_RE = regex_cache.compile(r"[?\s]++$")


def is_bare_reply(answer: str) -> bool:
    """"Yes", "no.", "Correct": a reply that asserts the question's proposition or its denial."""
    return _BARE_REPLY_RE.fullmatch(answer) is not None

_MIN_CLAUSE_WORDS = 6
_MIN_CLAUSE_CONTENT = 3


@dataclass(frozen=True)
class Claim:
    """One checkable assertion. `text` is what is scored (prefaces stripped); `sentence` is the answer
    sentence it came from, for findings and for the healer to locate."""

    text: str
    sentence: str


# Words one of which every match of a pattern below contains (as a substring, lower-cased): the patterns are
# searched only in a text that holds one (words.may_match; a text that is not ASCII always is), and most
# sentences hold none. Each list is checked against its patterns by tests/stream_guard/text/test_claims.py.
# _PREFACE_RE, _ATTRIBUTION_RE, _INLINE_META_RE: each needs a _SOURCE_NOUN (or, in a parenthetical tag,
# "passage", "source", "document", "doc", "chunk").
_SOURCE_WORDS = ("passage", "context", "doc", "source", "text", "article", "excerpt", "snippet", "search",
                 "material", "information", "chunk", "structured")
# _REFERENCE_NUMBER_RE: one of its nouns (and a digit).
_REFERENCE_WORDS = ("passage", "source", "doc", "chunk", "step", "paragraph")
# _NEGATION_RE (and so every decline): "not", "no", "none", "neither", "never", "unable", "fail(s)", "cannot", "n't".
_NEGATION_WORDS = ("no", "neither", "never", "unable", "fail", "n't")  # "cannot" holds "no"


def strip_meta(sentence: str) -> str:
    """Remove greetings, source attributions and list markers around the asserted content."""
    text = sentence.strip()
    # A suffix of `text` (what the prefix patterns leave) holds no source word when `text` holds none.
    sourced = may_match(text, _SOURCE_WORDS)
    for _ in range(3):  # openers and prefaces stack: "Sure! Based on passage 2, ..."
        before = text
        text = _OPENER_RE.sub("", text, count=1)
        if sourced:
            text = _PREFACE_RE.sub("", text, count=1)
            text = _ATTRIBUTION_RE.sub("", text, count=1)
        if text == before:
            break
    if sourced:
        text = _INLINE_META_RE.sub(" ", text)
    if DIGIT_RE.search(text) is not None and may_match(text, _REFERENCE_WORDS):
        text = _REFERENCE_NUMBER_RE.sub(r"\1", text)
    return " ".join(text.split()).strip(" ,;:-–—")


def _unanswerable(text: str) -> bool:
    return may_match(text, _UNANSWERABLE_WORDS) and _UNANSWERABLE_RE.match(text) is not None


def is_claim_sentence(sentence: str) -> bool:
    """False for questions, greetings, sign-offs, refusals, list introductions and bare list markers."""
    text = sentence.strip()
    if not text or _ENUMERATOR_ONLY_RE.match(text):
        return False
    if text.endswith("?") or text.endswith(":"):
        return False
    if _NON_CLAIM_RE.match(text) or _unanswerable(text) or not drop_declines(text):
        return False
    if may_match(text, _COURTESY_WORDS) and _COURTESY_RE.fullmatch(text) is not None:
        return False
    return True


def claim_words(text: str) -> list[str]:
    """The content words of a claim that a passage could confirm or not."""
    return [w for w in content_words(text) if w not in GENERIC_WORDS]


def _is_clause(text: str) -> bool:
    return len(text.split()) >= _MIN_CLAUSE_WORDS and len(content_words(text)) >= _MIN_CLAUSE_CONTENT


def split_compound(text: str) -> list[str]:
    """Split on ';' and on ', and' / ', but' (etc.) only where both halves stand as clauses, so lists
    like "garlic, ginger, and soy sauce" stay whole."""
    parts: list[str] = []
    current = ""
    pieces = _COMPOUND_RE.split(text)
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        candidate = _LEADING_CONJ_RE.sub("", piece)
        if current and _is_clause(current) and _is_clause(candidate):
            parts.append(current)
            current = candidate
        else:
            current = f"{current}, {piece}" if current else piece
    if current:
        parts.append(current)
    return [p.strip(" ,;") for p in parts if p.strip(" ,;")]


def extract_claims(answer: str, sentences: list[str] | None = None, question: str = "") -> list[Claim]:
    """Claims of an answer. Pass `sentences` when the answer is already split (Inspection caches it). A bare
    "yes"/"no" answering `question` claims what the question asks ("Were both X and Y authors?" -> "both X and
    Y authors"), so it is grounded through the question, not read as the word "yes"."""
    out: list[Claim] = []
    split = split_sentences(answer) if sentences is None else sentences
    if question.strip() and len(split) == 1 and is_bare_reply(split[0]):
        asked = _QUESTION_END_RE.sub("", question.strip())
        return [Claim(text=asked, sentence=split[0].strip())] if content_words(asked) else []
    for sentence in split:
        for line in sentence.splitlines():
            out.extend(_line_claims(line))
    return out


# A line's claims depend on the line alone. A repair keeps most of an answer's lines and every check that reads
# claims asks again, so each distinct line is read once per process (_MAX_CACHED_LINE).
@cached_when_short(_MAX_CACHED_LINE, 8192)
def _line_claims(line: str) -> tuple[Claim, ...]:
    asserted = drop_declines(line)  # first: a decline joined to a fact must not take the fact with it
    if not is_claim_sentence(asserted):
        return ()
    core = strip_meta(asserted)
    if not core or not is_claim_sentence(core) or not content_words(core):
        return ()
    return tuple(Claim(text=part, sentence=line.strip()) for part in split_compound(core))


def split_claims(answer: str) -> list[str]:
    """Just the claim texts."""
    return [claim.text for claim in extract_claims(answer)]
