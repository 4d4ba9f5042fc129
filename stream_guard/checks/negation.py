"""Negation flips: the answer asserts what the context denies, denies what it asserts, or asserts the opposite.

Matching is on stems, so "cannot be cancelled" and "you can cancel" meet on "cancel" (the seed library
compared surface patterns and missed exactly that pair). Each answer sentence is compared only with the
context sentences that restate it best (shared content stems, through the inverted index), and a flip is
reported when a shared predicate -- the first content word a negator governs ("does not *support*",
"cannot be *cancelled*") -- is negated on one side and plainly asserted on the other. Opposite predicates
from a short fixed list ("rose"/"fell", "increase"/"decrease", "guilty"/"innocent") count the same way when
they share an argument ("sales *rose*" vs "sales *fell*") and the source never uses the answer's word there.

What is deliberately not a flip:
- double negation ("not impossible", two negators in one clause) and partial or idiomatic negation ("no
  later than", "not only ... but also", "not always", "no more than", "whether or not", "with or without");
- noun-phrase negators ("without Wayne", "no cost", "nor the guard"): the other side routinely mentions the
  noun in another role. "no" counts only as "no longer", "there are no X" or "no X are/will/can ...";
- negated instructions with no subject ("Do not plant dahlias in cold soil"): advice, not a denial of a fact,
  and with no subject words they would meet any clause that uses the verb;
- anything after a subordinator in its clause ("until the President accepts", "if you do not report"):
  conditions, not assertions; questions; and sentences that say the negative another way ("fails to",
  "unable", "lacks");
- a negated predicate with a "by" or "before" phrase ("not paid by the due date", "not issued before
  March"): the negation denies the deadline (or the agent), not the predicate, so it flips only the same
  predicate with the same phrase ("paid by the due date"), never "paid late" or "paid";
- pairs whose conditions differ ("cannot cancel after 30 days" vs "can cancel within 30 days"), a possessed
  predicate against an unpossessed one ("did not have the right" vs "the right to vote"), or an answer
  clause about something the source clause does not name ("white-tailed deer do not have" vs "mule deer
  have");
- contexts that give the answer's polarity in another sentence aligned about as well.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from stream_guard.checks.alignment import FILLER_STEMS, AnswerSentence, ContradictionView, contradiction_finding

# Caps that keep a sentence-dense event in bounded time. On the labelled data an answer sentence has at most
# 15 aligned candidates and no clause has 40 content words before a predicate: neither binds there.
MAX_CANDIDATES = 48  # best-aligned context sentences an answer sentence is compared with
MAX_SUBJECT_STEMS = 40  # content stems before a predicate kept as what its clause is about (nearest first)
from stream_guard.wire.report import Finding
from stream_guard.text.words import NEGATORS, STOP_WORDS, mentions, stem

_TOKEN_RE = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?|[.,;:()\[\]{}—–?!\"“”]")
_NEGATOR_RE = re.compile(r"\b(?:not|no|never|none|nothing|nobody|neither|nor|cannot|without)\b|n['’]t\b")
_CLAUSE_BREAKS = frozenset(".,;:()[]{}—–?!\"“”") | frozenset(
    "and but while whereas although though however because".split()
)
_SUBORDINATORS = frozenset("until unless if once when whenever whether before after provided".split())
_CONDITIONS = _SUBORDINATORS | frozenset("within except only during since".split())
_PREDICATE_NEGATORS = frozenset("not never cannot".split())
# A negator followed by one of these is not a plain denial of what comes next ("not only", "no later than").
_PARTIAL_AFTER = frozenset(
    """only just merely simply later earlier more less fewer sooner matter doubt necessarily always all every
    quite exactly entirely completely totally mention surprisingly least until unlike""".split()
)
_IMPERATIVE_OPENERS = frozenset("do don't never please".split())
_POSSESSION = frozenset("have has had having own owns owned".split())
# Skipped between a negator and the word it governs: "cannot *be* cancelled", "does not *yet* support".
_SKIP = STOP_WORDS | _POSSESSION | frozenset(
    "longer ever even yet really actually currently generally usually fully get got".split()
)
_NEGATIVE_WORDS = frozenset(
    """fail fails failed failing refuse refuses refused unable lack lacks lacked lacking prohibit prohibits
    prohibited forbid forbids forbidden deny denies denied impossible prevent prevents prevented ban bans banned
    decline declines declined reject rejects rejected exclude excludes excluded absent except unless neither nor
    barely hardly rarely seldom stop stops stopped cease ceases ceased avoid avoids avoided halt halted""".split()
)
_MODALS = frozenset(
    "can could will would shall should may might must do does did is are was were has have had be been".split()
)
_Token = tuple[str, int, int]  # lower-case text, start, end

# Opposite predicates: stating one where the source states the other is the same flip as a negation.
_ANTONYM_PAIRS = (
    ("increase", "decrease"), ("increase", "decline"), ("increase", "drop"), ("increase", "fall"),
    ("increase", "reduce"), ("rise", "fall"), ("rise", "decline"), ("rise", "drop"), ("rose", "fell"),
    ("grow", "shrink"), ("gain", "loss"), ("higher", "lower"), ("profit", "loss"), ("surplus", "deficit"),
    ("accept", "reject"), ("approve", "reject"), ("allow", "prohibit"), ("allow", "forbid"),
    ("include", "exclude"), ("win", "lose"), ("won", "lost"), ("success", "failure"), ("succeed", "fail"),
    ("improve", "worsen"), ("expand", "contract"), ("strengthen", "weaken"), ("stronger", "weaker"),
    ("positive", "negative"), ("earlier", "later"), ("larger", "smaller"), ("maximum", "minimum"),
    ("best", "worst"), ("legal", "illegal"), ("open", "close"), ("opened", "closed"), ("hire", "fire"),
    ("buy", "sell"), ("bought", "sold"), ("guilty", "innocent"), ("easy", "difficult"), ("cheap", "expensive"),
)  # fmt: skip
_ANTONYMS: dict[str, frozenset[str]] = {}
for _a, _b in _ANTONYM_PAIRS:
    for _x, _y in ((stem(_a), stem(_b)), (stem(_b), stem(_a))):
        _ANTONYMS[_x] = _ANTONYMS.get(_x, frozenset()) | {_y}


@dataclass(frozen=True)
class Mention:
    """A predicate stem in one sentence: the span to patch, the content stems of its clause before it (what
    the clause is about) and whether it is possessed ("have a black tip", "does not have the right")."""

    span: tuple[int, int]
    before: frozenset[str]
    possessed: bool
    after: frozenset[str] = frozenset()  # the next few content stems of the clause (the predicate's object)
    # A "by"/"before" phrase right after the predicate, as (preposition, its content stems): on a negated
    # predicate it is what the negation denies ("not paid *by the due date*").
    scope: tuple[str, frozenset[str]] | None = None


# Where a positive mention is, to build it when asked: (token index, index among its clause's content stems,
# clause start, the clause's content stems).
_Place = tuple[int, int, int, list[str]]


@dataclass(frozen=True)
class Polarity:
    """How one sentence uses negation. Treat as immutable: instances are cached and shared."""

    negated: dict[str, Mention]  # stems a negator governs
    # Stems of clauses with no negator at all, and where each first occurs: most are only ever intersected with
    # another sentence's stems, so the Mention of one is built when `mention` asks for it (about half of a
    # context sentence's polarity was building Mentions no pairing read).
    positive: dict[str, _Place]
    # Stems of "fails", "unable", "lacks": the negative said without a negator. An opposite predicate that is one
    # of them ("exclude" against "include") is the predicate compared, not the negative said another way.
    negative_stems: frozenset[str]
    conditions: frozenset[str]
    question: bool
    tokens: list[_Token]

    @property
    def negative_wording(self) -> bool:
        return bool(self.negative_stems)

    def mention(self, head: str) -> Mention:
        """The positive Mention of `head` (a KeyError when the sentence does not plainly assert it)."""
        return _positive_mention(self.tokens, *self.positive[head])


# What every match of _NEGATOR_RE holds ("not", "none", "nor" and "cannot" hold "no"): a fifth of sentences hold
# one, and a substring test is a few times cheaper than the pattern, which can start at any word.
_NEGATOR_NEEDLES = ("no", "never", "neither", "without", "n't", "n’t")


def has_negator(text: str) -> bool:
    low = text.lower()
    return mentions(low, _NEGATOR_NEEDLES) and _NEGATOR_RE.search(low) is not None


@lru_cache(maxsize=16384)
def polarity(text: str) -> Polarity:
    tokens: list[_Token] = _tokens(text)
    stems: list[str | None] = [stem(t[0]) if _is_content(t[0]) else None for t in tokens]
    negated: dict[str, Mention] = {}
    positive: dict[str, _Place] = {}
    unsure: set[str] = set()
    for lo, hi in _clauses(tokens):
        # What follows "if", "until", "unless", ... is a condition, not an assertion; only what precedes it counts.
        hi = next((k for k in range(lo + 1, hi) if tokens[k][0] in _SUBORDINATORS), hi)
        negators = [k for k in range(lo, hi) if tokens[k][0] in NEGATORS or tokens[k][0] == "cannot"]
        if not negators:
            _collect_positive(tokens, stems, lo, hi, positive)
            continue
        k = negators[0]
        plain = _is_predicate_negator(tokens, k) and not _idiomatic(tokens, k) and not _imperative(tokens, stems, lo, k)
        if len(negators) > 1 or not plain:
            # Two negators ("not impossible"), a noun-phrase negator ("without Wayne") or an idiom:
            # nothing in this clause has a polarity we trust.
            unsure.update(s for s in stems[lo:hi] if s)
            continue
        head = _governed(tokens, stems, k, hi)
        if head is None:
            continue
        j, partial, possessed = head
        head_stem = stems[j] or ""
        if partial or tokens[j][0] in _NEGATIVE_WORDS:
            unsure.add(head_stem)
            continue
        before = frozenset(s for s in stems[lo:k] if s)  # once per clause: at most one negated head each
        negated.setdefault(head_stem, Mention((_phrase_start(tokens, k), tokens[j][2]), before, possessed,
                                              scope=_scope(tokens, j)))
    for s in unsure:
        negated.pop(s, None)
        positive.pop(s, None)
    for s in negated:
        positive.pop(s, None)  # said both ways in one sentence: only the negation counts
    return Polarity(
        negated=negated,
        positive=positive,
        negative_stems=frozenset(stem(t[0]) for t in tokens if t[0] in _NEGATIVE_WORDS),
        conditions=frozenset(t[0] for t in tokens if t[0] in _CONDITIONS),
        question=text.rstrip().endswith("?"),
        tokens=tokens,
    )


def _tokens(text: str) -> list[_Token]:
    if text.isascii():  # lowering ASCII keeps every offset, and there is no "’" to fold: one lower() per text
        return [(m.group(), *m.span()) for m in _TOKEN_RE.finditer(text.lower())]
    return [(m.group().lower().replace("’", "'"), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]


def _is_content(low: str) -> bool:
    return low[0].isalpha() and low not in STOP_WORDS and low not in NEGATORS and len(low) > 1


def _clauses(tokens: list[_Token]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    lo = 0
    for k, t in enumerate(tokens):
        if t[0] in _CLAUSE_BREAKS:
            if k > lo:
                out.append((lo, k))
            lo = k + 1
    if lo < len(tokens):
        out.append((lo, len(tokens)))
    return out


def _is_predicate_negator(tokens: list[_Token], k: int) -> bool:
    low = tokens[k][0]
    if low in _PREDICATE_NEGATORS or low.endswith("n't"):
        return True
    if low != "no":
        return False
    # "no" denies a statement only as "no longer", "there are no fees" or "no refunds are given".
    if k + 1 < len(tokens) and tokens[k + 1][0] == "longer":
        return True
    if k >= 2 and tokens[k - 2][0] == "there" and tokens[k - 1][0] in ("is", "are", "was", "were", "be"):
        return True
    return any(t[0] in _MODALS for t in tokens[k + 2 : k + 4])


def _imperative(tokens: list[_Token], stems: list[str | None], lo: int, k: int) -> bool:
    """"Do not plant dahlias in cold soil": an instruction with no subject, not a denial of a fact; with no
    subject words it would meet any clause that uses the verb."""
    return tokens[lo][0] in _IMPERATIVE_OPENERS and not any(stems[lo:k])


def _idiomatic(tokens: list[_Token], k: int) -> bool:
    """"whether or not", "if not", "or not"."""
    return tokens[k][0] == "not" and k > 0 and tokens[k - 1][0] in ("or", "if", "whether")


def _governed(tokens: list[_Token], stems: list[str | None], k: int, hi: int) -> tuple[int, bool, bool] | None:
    """The first content word after the negator at k: (token index, partial?, possessed?)."""
    partial = possessed = False
    for j in range(k + 1, min(hi, k + 7)):
        low = tokens[j][0]
        if low in _PARTIAL_AFTER:
            partial = True
            continue
        if low in _POSSESSION:
            possessed = True
        if low in _SKIP or stems[j] is None:
            continue
        return j, partial, possessed
    return None


# Prepositions whose phrase after a negated predicate takes the negation's focus: a deadline ("not paid by the
# due date" says it was paid late or not at all, not that it was never paid) or an agent ("not issued by the
# store"). "before" is also a subordinator, so the phrase is read past the clause's condition cut.
_SCOPE_PREPOSITIONS = frozenset(("by", "before"))
_SCOPE_WORDS = 4  # tokens of the phrase read after the preposition ("the due date", "the end of March")


def _scope(tokens: list[_Token], j: int) -> tuple[str, frozenset[str]] | None:
    """The "by"/"before" phrase right after the predicate at token j, as (preposition, content stems)."""
    if j + 1 >= len(tokens) or tokens[j + 1][0] not in _SCOPE_PREPOSITIONS:
        return None
    words = []
    for low, _, _ in tokens[j + 2 : j + 2 + _SCOPE_WORDS]:
        if low in _CLAUSE_BREAKS:
            break
        if _is_content(low):
            words.append(stem(low))
    return tokens[j + 1][0], frozenset(words)


def _same_scope(negated: Mention, positive: Mention, tokens: list[_Token]) -> bool:
    """A negated predicate with a deadline or agent phrase meets only the positive predicate with the same
    preposition and a phrase sharing a content word ("paid by the due date"); without one, any."""
    if negated.scope is None:
        return True
    theirs = _scope(tokens, _head_token(tokens, positive))
    return theirs is not None and theirs[0] == negated.scope[0] and bool(theirs[1] & negated.scope[1])


def _head_token(tokens: list[_Token], mention: Mention) -> int:
    """The index of the token that ends `mention`'s span (its predicate word)."""
    end = mention.span[1]
    return next(k for k, t in enumerate(tokens) if t[2] == end)


def _collect_positive(
    tokens: list[_Token], stems: list[str | None], lo: int, hi: int, positive: dict[str, _Place]
) -> None:
    clause = [(k, s) for k in range(lo, hi) if (s := stems[k]) is not None]
    words = [s for _, s in clause]
    for n, (k, s) in enumerate(clause):
        if s not in positive:
            positive[s] = (k, n, lo, words)


def _positive_mention(tokens: list[_Token], k: int, n: int, lo: int, words: list[str]) -> Mention:
    """The Mention of the content stem at token k, the n-th of its clause's content stems `words`."""
    owner = next((j for j in range(k - 1, max(lo, k - 4) - 1, -1) if tokens[j][0] in _POSSESSION), None)
    # "has a dark mode": the patchable phrase starts at the possession verb, so it swaps cleanly
    # with "does not have a dark".
    start = _phrase_start(tokens, owner if owner is not None else k)
    before = frozenset(words[max(0, n - MAX_SUBJECT_STEMS) : n])  # a frozenset of a list slice is built in C
    after = frozenset(words[n + 1 : n + 4])
    return Mention((start, tokens[k][2]), before, owner is not None, after)


def _phrase_start(tokens: list[_Token], k: int) -> int:
    """Start of the phrase ending at token k, reaching back over one auxiliary ("does not", "can cancel")."""
    if k > 0 and tokens[k - 1][0] in _MODALS:
        return tokens[k - 1][1]
    return tokens[k][1]


# --------------------------------------------------------------------------------------------------
# Pairing answer sentences with context sentences
# --------------------------------------------------------------------------------------------------


def analyze_negation(view: ContradictionView) -> list[Finding]:
    findings: list[Finding] = []
    for answer in view.answer:
        found = view.per_sentence("negation", (answer.text,), lambda answer=answer: _flip_in(view, answer))
        if found is not None:
            findings.append(found)
    return findings


def _flip_in(view: ContradictionView, answer: AnswerSentence) -> Finding | None:
    """The negation flip of one answer sentence against the context sentences that restate it best, if any."""
    overlaps = view.answer_overlaps[answer.index]
    if not overlaps or not answer.stems:
        return None
    fields = view.inspection.field_sentence_ids
    if fields:  # a record's yes-no fields are compared with claims by record_claims.field_conflicts
        overlaps = {c: shared for c, shared in overlaps.items() if c not in fields}
        if not overlaps:
            return None
    best = max(overlaps.values())
    candidates = sorted(
        (c for c, shared in overlaps.items() if shared >= best - 1 and _aligned(shared, len(answer.stems))),
        key=lambda c: (-overlaps[c], c),
    )[:MAX_CANDIDATES]
    answer_negates = has_negator(answer.text)
    denying = [c for c in candidates if _negates(view, c)]
    if not denying and not answer_negates and _ANTONYMS.keys().isdisjoint(answer.stems):
        return None  # no negation and no opposable word on either side of any aligned pair: nothing can flip
    mine = polarity(answer.text)
    if mine.question:
        return None
    pair = _Pairing(view, answer.stems, mine, overlaps)
    found = (
        pair.context_denies(denying)
        or (pair.context_asserts(candidates) if answer_negates else None)
        or pair.context_opposes(candidates)
    )
    return None if found is None else _finding(view, answer.text, found)


@lru_cache(maxsize=16384)
def _has_negator_cached(text: str) -> bool:
    return has_negator(text)


def _negates(view: ContradictionView, context_id: int) -> bool:
    # Cached by sentence text: every answer sentence aligned with a context sentence asks the same question.
    return _has_negator_cached(view.sentence(context_id).text)


def _aligned(shared: int, answer_stems: int) -> bool:
    """Enough of the answer sentence is in the context sentence that they talk about the same thing."""
    if answer_stems <= 1:
        return shared >= 1
    return shared >= 2 and shared >= 0.5 * answer_stems


def _same_predicate(answer_side: Mention, context_side: Mention, negated: Mention, positive: Mention) -> bool:
    """Both sentences say the predicate of the same thing in the same way (possession included)."""
    return negated.possessed == positive.possessed and _about_same(answer_side, context_side)


def _about_same(answer_side: Mention, context_side: Mention) -> bool:
    """The answer clause's subject words (before the predicate) are mostly in the context clause's."""
    about = answer_side.before - FILLER_STEMS
    return not about or len(about & context_side.before) >= 0.5 * len(about)


def _conditions_clash(a: Polarity, b: Polarity) -> bool:
    return bool(a.conditions and b.conditions and a.conditions != b.conditions)


@dataclass(frozen=True)
class _Flip:
    head: str
    answer: Mention
    context_id: int
    source: Mention
    relation: str  # "source_denies" | "source_affirms" | "source_opposes"


@dataclass(frozen=True)
class _Pairing:
    view: ContradictionView
    stems: frozenset[str]
    mine: Polarity
    overlaps: dict[int, int]

    def context_denies(self, denying: list[int]) -> _Flip | None:
        """The answer asserts a predicate that a best-aligned context sentence negates."""
        if self.mine.negative_wording or not self.mine.positive:
            return None
        for c in denying:
            theirs = polarity(self.view.sentence(c).text)
            if theirs.question or _conditions_clash(self.mine, theirs):
                continue
            for head in sorted(self.mine.positive.keys() & theirs.negated.keys() & self.stems):
                mine, source = self.mine.mention(head), theirs.negated[head]
                if (_same_predicate(mine, source, source, mine) and _same_scope(source, mine, self.mine.tokens)
                        and not self._stated_elsewhere(head, c, mine, False)):
                    return _Flip(head, mine, c, source, "source_denies")
        return None

    def context_asserts(self, candidates: list[int]) -> _Flip | None:
        """The answer negates a predicate that a best-aligned context sentence asserts."""
        heads = self.mine.negated.keys() & self.stems
        if not heads:
            return None
        for c in candidates:
            theirs = polarity(self.view.sentence(c).text)
            if theirs.question or theirs.negative_wording or _conditions_clash(self.mine, theirs):
                continue
            for head in sorted(heads & theirs.positive.keys()):
                mine, source = self.mine.negated[head], theirs.mention(head)
                if (_same_predicate(mine, source, mine, source) and _same_scope(mine, source, theirs.tokens)
                        and not self._stated_elsewhere(head, c, mine, True)):
                    return _Flip(head, mine, c, source, "source_affirms")
        return None

    def context_opposes(self, candidates: list[int]) -> _Flip | None:
        """The answer asserts a predicate whose opposite a best-aligned context sentence asserts, and the
        context never asserts the answer's own word there ("sales rose" vs "sales fell")."""
        heads = {h for h in self.mine.positive.keys() & _ANTONYMS.keys() if not self.mine.negative_stems - {h}}
        if not heads:
            return None
        for c in candidates:
            theirs = polarity(self.view.sentence(c).text)
            if theirs.question or _conditions_clash(self.mine, theirs):
                continue
            context_stems = self.view.context.stems[c]
            for head in sorted(heads):
                if head in context_stems:
                    continue
                for opposite in sorted(_ANTONYMS[head] & theirs.positive.keys()):
                    if theirs.negative_stems - {opposite}:
                        continue  # the negative said another way ("fails to rise"): its polarity is not read
                    mine, source = self.mine.mention(head), theirs.mention(opposite)
                    # Opposite verbs flip a claim only about the same thing: "sales rose" vs "sales fell",
                    # never "reducing net debt" vs "the increase in our dividend".
                    same_argument = (mine.after & source.after) or ((mine.before - FILLER_STEMS) & source.before)
                    if same_argument and _same_predicate(mine, source, mine, source):
                        if not self._stated_elsewhere(head, c, mine, negated=False):
                            return _Flip(head, mine, c, source, "source_opposes")
        return None

    def _stated_elsewhere(self, head: str, chosen: int, mine: Mention, negated: bool) -> bool:
        """Whether another context sentence, aligned about as well, says what the answer says: `head` with
        the answer's polarity, about the same thing."""
        floor = self.overlaps.get(chosen, 0) - 1
        for j in self.view.context.containing(head):
            if j == chosen or self.overlaps.get(j, 0) < floor:
                continue
            theirs = polarity(self.view.sentence(j).text)
            if head not in (theirs.negated if negated else theirs.positive):
                continue
            other = theirs.negated[head] if negated else theirs.mention(head)
            if _about_same(mine, other):
                return True
        return False


def _finding(view: ContradictionView, statement: str, flip: _Flip) -> Finding:
    answer_value = statement[flip.answer.span[0] : flip.answer.span[1]]
    source_value = view.sentence(flip.context_id).text[flip.source.span[0] : flip.source.span[1]]
    if flip.relation == "source_affirms":
        evidence = f"the answer denies it ('{answer_value}') but the source affirms it ('{source_value}')"
    elif flip.relation == "source_denies":
        evidence = f"the answer affirms it ('{answer_value}') but the source denies it ('{source_value}')"
    else:
        evidence = f"the answer says '{answer_value}' where the source says the opposite ('{source_value}')"
    word = answer_value.split()[-1] if answer_value.split() else flip.head
    return contradiction_finding(
        view,
        flip.context_id,
        kind="negation",
        statement=statement,
        evidence=f"negation flip on '{word}': {evidence}",
        answer_value=answer_value,
        source_value=source_value,
    )
