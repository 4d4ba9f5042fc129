"""Sentences: where a text splits into them (abbreviations, decimals, initials, list markers, quotes and ellipses
are not ends), for every check, the claims and the repairs."""

from __future__ import annotations

import re

from stream_guard.text import regex_cache
from stream_guard.text.short_text_cache import cached_when_short

# Candidate ends: a run of terminators (a spaced ellipsis ". . ." included), closing quotes or brackets, then
# whitespace or the end of the text. The look-behinds let a run be read only from its first character and
# the possessive quantifiers never give back, so every character is looked at a bounded number of times.
# The pattern opens on the character set every candidate starts with (a terminator or a line break), so that the
# engine skips to those characters instead of trying the pattern at every one (a pattern whose alternatives open
# on groups is tried everywhere); each alternative then tells its kind by the character just read. A run of
# terminators is therefore the match's start up to the end of `term` (its first character is outside the group).
_BOUNDARY_RE = regex_cache.compile(
    r"[.!?…\n](?:"
    r"(?<=[.!?…])(?<![.!?…][.!?…])(?<![.…] [.…])(?P<term>[.!?…]*+(?: [.…]++)*+)(?P<close>[\"'”’»)\]]*+)(?:\s++|$)"
    r"|(?<=\n)(?P<para>\n++)"
    r"|(?<=\n)(?P<item>)(?=[ \t]*+(?:[-*•]|\d++[.)])\s))"
)


# Inline list markers: "1.", "2)", "3.)", "a.", optionally after a bullet ("• 9.", "⁃10."), each opening an
# item that starts with a capital. Found from their punctuation (a fast character-set scan), then read
# backwards; only markers in sequence (1 then 2, a then b) count: see `_list_markers`.
_MARKER_PUNCT_RE = regex_cache.compile(r"[.)](?:(?<=\.)\))?(?=[ \t]++[A-Z*\"“'(\[])")  # ".)", "." or ")"


_BULLETS = "•⁃*-"


_ENUMERATOR_RE = regex_cache.compile(r"\d{1,2}")


_NEXT_WORD_RE = regex_cache.compile(r"[\"'“‘(\[]*+(\w{0,40})")


_MULTI_PERIOD_RE = regex_cache.compile(r"(?:[A-Za-z]{1,3}\.)+[A-Za-z]{1,3}")  # U.S, e.g, a.m, Ph.D, U.S.A


_OPENING_PUNCT = "\"'“‘([{*_"


# Words written before a name or a number: a period after them never ends a sentence ("Dr. Liu", "Mt. Fuji",
# "Apple vs. Samsung").
_PREPOSITIVE = frozenset(
    """mr mrs ms mx dr prof rev hon gen col capt cmdr lt sgt maj adm sen rep gov pres supt insp fr st mt vs v cf
    viz e.g i.e""".split()
)


# Abbreviations that can also end a sentence ("... and Co. They said"): a period after them ends one only
# before a common sentence opener, and never before a number ("Jan. 5", "approx. 30").
_ABBREVIATIONS = frozenset(
    """inc corp co ltd llc plc bros assn dept univ govt intl natl assoc jan feb mar apr jun jul aug sep sept oct
    nov dec mon tue tues wed thu thur thurs fri sat sun etc approx est ed eds jr sr esq min max avg ave blvd rd
    hwy ft oz lb lbs al ca incl excl misc esp resp appt bldg mfg mgmt pkg qty std tbsp tsp yr yrs mo mos hr hrs
    mins secs wk wks sq pt qt gal doz""".split()
)


# Abbreviations only before a number ("No. 5", "pp. 12", "Fig. 3"); elsewhere the same letters are a word
# that can end a sentence ("The answer is no.").
_BEFORE_NUMBER = frozenset("no nos nr n° pp fig figs vol vols ch sec para art ref refs ext tel".split())


# Capitalised words that open sentences far more often than they continue a name: after an abbreviation
# or an initial, one of these starts a new sentence ("... the U.S. How about you?", "you and I. Did you").
_SENTENCE_STARTERS = frozenset(
    """a an the this that these those there their they them he she it its i we you our my his her your in on
    at for from by with as if when while where why what who whom which how however but and or so yet also then
    thus therefore moreover furthermore additionally finally meanwhile instead although though because since
    after before during once some many most all each every no not one both being did does do is are was were
    has have had can could will would should must may might please here today yesterday tomorrow more other
    others another such according based overall note unlike despite to let""".split()
)


# The same text is split again and again: a plain answer by its markup reading and by the NER pass, a repair's
# kept blocks by each re-inspection. Texts up to this length are split once per process while they are among the
# SPLIT_CACHE_SIZE most recent (8 M characters at most, with their sentences), longer ones every time.
MAX_CACHED_SPLIT = 2048
SPLIT_CACHE_SIZE = 4096


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences, each a stripped substring of `text` (see `_split`)."""
    return list(_split_once(text))


@cached_when_short(MAX_CACHED_SPLIT, SPLIT_CACHE_SIZE)
def _split_once(text: str) -> tuple[str, ...]:
    return tuple(_split(text))


def _split(text: str) -> list[str]:
    """Split prose into sentences, each a stripped substring of `text`.

    Keeps together what only looks like an end: abbreviations and titles ("Dr. Liu", "Acme Corp. announced",
    "Jan. 5", "v. 2.1", "the U.S. Government"), initials ("J. R. R. Tolkien"), decimals ("$49.99"),
    ellipses inside a sentence, names with a "!" ("Yahoo! in") and quotes or brackets that a lower-case
    word continues ("(an engineer.) at"). A lower-case word after an ordinary word's period starts a
    sentence, as informal text (reviews, chats) writes them. Closing quotes and brackets stay with the
    sentence they close. Blank lines, bulleted or numbered lines and inline numbered lists ("1) ... 2) ...")
    start new sentences. Linear in the text. Tested against the Pragmatic Segmenter golden rules as pySBD
    ships them (47 of 48).
    """
    stripped = text.strip()
    if not stripped:
        return []
    text = stripped
    markers = _list_markers(text)
    cuts: list[tuple[int, int]] = [(m, m) for m in markers.values()]  # (end of one sentence, start of the next)
    start = 0
    for match in _BOUNDARY_RE.finditer(text):
        if match.group("term") is None:  # a blank line, or a line break before a list item
            cuts.append((match.start(), match.end()))
            start = match.end()
            continue
        if match.start() in markers:
            continue  # the period of an inline list marker ("2. The second item")
        cut = _sentence_end(text, match, start)
        if cut is not None:
            cuts.append((cut, cut))
            start = cut
    cuts.sort()
    pieces: list[str] = []
    begin = 0
    for end, resume in cuts:
        if end >= begin:
            pieces.append(text[begin:end])
            begin = resume
    pieces.append(text[begin:])
    return [p for p in (piece.strip() for piece in pieces) if p]


def _sentence_end(text: str, match: re.Match[str], sentence_start: int) -> int | None:
    """Where the sentence ends at this candidate, or None when it goes on."""
    after = match.end()
    if after >= len(text):
        return None  # the end of the text ends the sentence anyway
    term_start, close_end = match.start(), match.end("close")
    term, close = text[term_start : match.end("term")], match.group("close")
    following = _NEXT_WORD_RE.match(text, after)
    next_word = following.group(1) if following else ""
    lower_next = next_word[:1].islower()
    if term != "." and "!" not in term and "?" not in term:
        return None if lower_next else _ellipsis_end(text, term, close, term_start, close_end, after)
    if lower_next and close:
        return None  # "(an engineer.) at the", "'This is great.' she said"
    word = _word_before(text, term_start, sentence_start)
    lower = word.lower()
    if "!" in term or "?" in term:
        # "Yahoo! in the" is a name; "Best churros in town! perfect for events" (reviews, chats) is not.
        return None if lower_next and word[:1].isupper() else close_end
    if not word:
        return close_end
    if lower in _PREPOSITIVE:
        return None
    if lower_next:
        # A known abbreviation or an initial before a lower-case word goes on ("co. at noon", "the U.S.A.
        # last year"); after an ordinary word, informal text starts a sentence in lower case ("a family
        # business. these churros never fail").
        known = lower in _ABBREVIATIONS or lower in _BEFORE_NUMBER or len(word) == 1
        return None if known or _MULTI_PERIOD_RE.fullmatch(word) else close_end
    if _ENUMERATOR_RE.fullmatch(word):
        word_start = term_start - len(word)
        if text[sentence_start:word_start].strip() == "":
            return None  # "1." opening an item belongs to the item
        if _word_before(text, word_start - 1, sentence_start).endswith(":") and text[word_start - 1].isspace():
            return word_start  # "Steps: 1. Preheat": the number opens the item after "Steps:"
        return close_end
    if lower in _BEFORE_NUMBER:
        return None if next_word[:1].isdigit() else close_end
    starter = next_word.lower() in _SENTENCE_STARTERS and next_word[:1].isupper()
    if (len(word) == 1 and word.isalpha()) or _MULTI_PERIOD_RE.fullmatch(word):
        return close_end if starter else None  # "Jonas E. Smith", "the U.S. Government" vs "the U.S. How"
    if lower in _ABBREVIATIONS:
        return close_end if starter and not next_word[:1].isdigit() else None
    return close_end


def _ellipsis_end(text: str, term: str, close: str, term_start: int, close_end: int, after: int) -> int | None:
    """An ellipsis ends a sentence only before a capital: "that.... She left" does; "really ... well" and
    "the thing is . . . I didn't" (three spaced dots) do not. "compounds. . . . The" ends at the first period,
    the rest opens the next sentence."""
    if close or not text[after : after + 1].isupper():
        return None
    if " " not in term:
        return close_end
    dots = term.count(".") + 3 * term.count("…")
    if dots < 4:
        return None
    glued = term_start > 0 and not text[term_start - 1].isspace()
    return term_start + 1 if glued else close_end


def _word_before(text: str, end: int, floor: int) -> str:
    """The whitespace-delimited token ending at `end`, without opening punctuation; looks back at most 40
    characters (no abbreviation is longer) and never before `floor`."""
    low = max(floor, end - 40)
    cut = max(text.rfind(" ", low, end), text.rfind("\n", low, end), text.rfind("\t", low, end))
    if cut < 0 and low > floor:
        return text[low:end]  # a token longer than any abbreviation
    return text[cut + 1 : end].lstrip(_OPENING_PUNCT)


def _list_markers(text: str) -> dict[int, int]:
    """Inline list markers in sequence: position of each marker's period or bracket -> where its item starts
    (at its bullet, if any). A marker counts only next to its neighbour in the sequence ("1." and "2.", "a."
    and "b."), so "Plan B. The" or "scored 2. Then" are left to the ordinary rules."""
    found: list[tuple[int, int, int, str]] = []  # (ordinal, punctuation position, item start, style)
    for m in _MARKER_PUNCT_RE.finditer(text):
        marker = _marker_before(text, m.start())
        if marker is not None:
            ordinal, start, kind = marker
            found.append((ordinal, m.start(), start, kind + m.group()))
    if len(found) < 2:
        return {}
    present = {(ordinal, style) for ordinal, _, _, style in found}
    return {
        punct: start
        for ordinal, punct, start, style in found
        if (ordinal + 1, style) in present or (ordinal - 1, style) in present
    }


def _marker_before(text: str, punct: int) -> tuple[int, int, str] | None:
    """(ordinal, item start, "d" or "a") of a list number or letter ending at `punct`, standing alone after
    whitespace or a bullet; None when the text before `punct` is no such marker."""
    first = punct
    while first > 0 and punct - first < 3 and "0" <= text[first - 1] <= "9":
        first -= 1
    if first == punct and punct > 0 and "a" <= text[punct - 1] <= "z":
        first, ordinal, kind = punct - 1, ord(text[punct - 1]) - ord("a") + 1, "a"
    elif 0 < punct - first <= 2:
        ordinal, kind = int(text[first:punct]), "d"
    else:
        return None
    bullet = _bullet_at(text, first)
    if bullet is not None:
        return ordinal, bullet, kind
    return (ordinal, first, kind) if first == 0 or text[first - 1].isspace() else None


def _bullet_at(text: str, first: int) -> int | None:
    """Position of a bullet right before `first` ("•9.", "• 9."), standing after whitespace; else None."""
    k = first
    while k > 0 and first - k < 4 and text[k - 1] in " \t":
        k -= 1
    if k > 0 and text[k - 1] in _BULLETS and (k == 1 or text[k - 2].isspace()):
        return k - 1
    return None
