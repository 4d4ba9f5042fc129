"""Answer markup: how RAG answers are written (markdown and inline citation markers), read once into the plain
claim text every check reads, an offset map back into the answer as written, and the citation markers of each
sentence.

A marker is never a claim, a figure, an unsupported word or an entity; a link's URL is not a citation the model
made up. So the checks read `Markup.plain`; the citation check reads `Markup.markers`; a repair edits the plain
text by span and gets the answer back with its structure (`Markup.rewrite`): list items, bold labels and the
markers of the sentences it keeps.

What is read:

- blocks, line by line: ATX headings ("## Answer"), block quotes ("> "), bullets ("-", "*", "+", "•") and
  numbered items ("1.", "2)"), tables (a header row, its delimiter row, body rows; cells joined by ", "),
  fenced code (left out: code asserts nothing a passage could confirm), footnote definitions ("[^1]: Passage 1",
  left out and kept as the target of their markers), thematic breaks and setext underlines (left out);
- inline: emphasis and strong emphasis ("*", "_", "**", "__", "~~"; CommonMark's flanking rules, "_" never
  inside a word), code spans (their text kept), links (the text kept, the URL dropped; a link that only says
  where to go, "Read more", is left out), images and autolinks (left out), backslash escapes, a few inline HTML tags;
- citation markers: "[1]", "[1, 3]", "[1-3]", "[doc-3]", "[policy-7]", "[Source: kb-2]", "[Passage 2]",
  "【1】" and "【3†source】", footnote markers "[^1]", and parenthetical source tags "(Source: passage 2)",
  "(Sources: 1, 3)", "(Passage 2)". A bracket counts as a marker only in a citation shape (numbers, an id such as
  "kb-12", a "source:" prefix) or when it names a chunk id it is given, so "[sic]" and "[2019]" stay prose.

Hand-written rather than a markdown library: markdown-it-py (the CommonMark reference port) maps tokens to
lines, not characters, and costs about 1.6 us a character (0.32 ms for a 200-character answer; a whole check is
a few ms); this reader is one pass over the answer and an answer with none of the characters markup uses costs
one regex search. Its plain text is tested against markdown-it-py's (tests/stream_guard/text/test_markup.py).
Linear in the answer: every pattern is anchored at a found character or bounded, emphasis closers look back a
bounded number of openers.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

from stream_guard.text import regex_cache
from stream_guard.text.sentences import split_sentences

# Block kinds. Only PROSE, ITEM, QUOTE and ROW sentences can assert something checkable.
PROSE, ITEM, QUOTE, HEADING, ROW, HEADER_ROW = "prose", "item", "quote", "heading", "row", "header_row"
CLAIM_KINDS = frozenset({PROSE, ITEM, QUOTE, ROW})

# Anything markup or a marker could start with; an answer without one of these is its own plain text. Three
# searches (`may_hold_markup`), each opening on what the engine can skip to, a character set, "(" or a line
# break, where one alternation of them (one alternative opening on a line start) was tried at every character:
# a line start is the text's start or the character after a line break (what `^` matches under re.M).
_MARK_CHAR_RE = regex_cache.compile(r"[\[\]*_`#|>【~\\<]")
_SOURCE_MARK_RE = regex_cache.compile(r"\((?i:sources?|refs?|references?|citations?|passages?|see)\b")
_LINE_MARK = r"(?:[ \t]*+(?:[-+•‣⁃]|\d{1,3}[.)])[ \t]|[ ]{0,3}(?:-{3}|={3}))"
_LINE_MARK_RE = regex_cache.compile(_LINE_MARK)
_LATER_LINE_MARK_RE = regex_cache.compile("\n" + _LINE_MARK)


def may_hold_markup(text: str) -> bool:
    """Whether `text` holds a markup character, a "(sources" kind of marker, or a line opening on a list marker or
    a rule."""
    return (_MARK_CHAR_RE.search(text) is not None or _SOURCE_MARK_RE.search(text) is not None
            or _LINE_MARK_RE.match(text) is not None or _LATER_LINE_MARK_RE.search(text) is not None)

_FENCE_RE = regex_cache.compile(r"[ ]{0,3}(`{3,}|~{3,})")
_HEADING_RE = regex_cache.compile(r"[ ]{0,3}(#{1,6})(?:[ \t]++|$)")
_CLOSING_HASHES_RE = regex_cache.compile(r"[ \t]++#++[ \t]*+$")
_QUOTE_RE = regex_cache.compile(r"(?:[ ]{0,3}>[ ]?)++")
_ITEM_RE = regex_cache.compile(r"[ \t]*+(?:([-*+•‣⁃])|(\d{1,3})[.)])[ \t]++(?=\S)")
_BREAK_RE = regex_cache.compile(r"[ ]{0,3}(?:(?:\*[ \t]*+){3,}|(?:-[ \t]*+){3,}|(?:_[ \t]*+){3,}|=++[ \t]*+)$")
_DELIMITER_ROW_RE = regex_cache.compile(r"[ \t]*+\|?[ \t]*+:?-++:?[ \t]*+(?:\|[ \t]*+:?-++:?[ \t]*+)*+\|?[ \t]*+$")
_FOOTNOTE_DEF_RE = regex_cache.compile(r"[ ]{0,3}\[\^([^\]\s]{1,40})\]:[ \t]*+")

# Inline tokens, each found by its first character (the alternation is tried only where one of them stands).
_INLINE_RE = regex_cache.compile(
    r"(?=[\\!\[【(<`*_~])"  # every token starts with one of these: other positions are skipped at once
    r"(?:(?P<esc>\\[!-/:-@\[-`{-~])"
    r"|(?P<image>!\[(?P<alt>[^\[\]\n]{0,300})\]\((?P<isrc>[^()\s]{0,2000})(?:[ \t]++\"[^\"\n]{0,300}\")?\))"
    r"|(?P<link>\[(?P<text>[^\[\]\n]{1,300})\]\((?P<href><[^<>\n]{0,2000}>|[^()\s]{0,2000})(?:[ \t]++\"[^\"\n]{0,300}\")?\))"
    r"|(?P<foot>\[\^(?P<label>[^\]\s]{1,40})\])"
    r"|(?P<bracket>\[(?P<body>[^\[\]\n]{1,120})\])"
    r"|(?P<wide>【(?P<wbody>[^【】\n]{1,120})】)"
    r"|(?P<paren>\((?P<pbody>(?i:sources?|refs?|references?|citations?)[ \t]*+:[^()\n]{1,120}"
    r"|(?i:see[ \t]++)?(?i:passages?|sources?|documents?|docs?|chunks?)[ \t]*+\#?[ \t]*+\d{1,3}(?:[ \t]*+(?:,|and|&|-)[ \t]*+\d{1,3})*+)\))"
    r"|(?P<auto><(?:https?|ftp|mailto):[^<>\s]{1,2000}>)"
    r"|(?P<html></?(?i:b|i|em|strong|u|sup|sub|span|p|br|small|mark)(?:[ \t][^<>\n]{0,200})?/?>)"
    r"|(?P<code>`++)"
    r"|(?P<delim>\*++|_++|~~))"
)

# Citation shapes of a marker's body (the citation check resolves them against the event's chunks).
_PREFIX_RE = regex_cache.compile(r"^(?:source|src|ref|reference|doc|document|chunk|passage|citation|cite)s?[ \t]*[:#][ \t]*", re.I)
_POSITIONAL_RE = regex_cache.compile(r"^(?:(?:source|passage|doc|document|chunk|ref)s?[ \t]*+#?[ \t]*+)?(\d{1,3})$", re.I)
_RANGE_RE = regex_cache.compile(r"^(\d{1,3})[ \t]*[-–][ \t]*(\d{1,3})$")
_YEAR_RE = regex_cache.compile(r"^(?:1[5-9]|20)\d\d$")
# An id-shaped token: letters, a separator, more ("kb-12", "doc_7", "policy-7", "faq:returns"); no spaces.
ID_SHAPE_RE = regex_cache.compile(r"^([A-Za-z][A-Za-z0-9]*)[-_:./#]([\w.:/#-]+)$")
_PARTS_RE = regex_cache.compile(r"[ \t]*+[,;][ \t]*+|[ \t]++and[ \t]++|[ \t]*+&[ \t]*+")
_MAX_RANGE = 20
# Markers read per answer: an answer made of brackets ("[1][1][1]...") stays bounded.
MAX_MARKERS = 256
# Openers an emphasis closer looks back through: keeps a line of unmatched "*" linear.
_MAX_OPENER_LOOKBACK = 16
_WIDE_SPLIT = "†"
_DELIM_RE = regex_cache.compile(r"\*++|_++|~~")
_SEE_RE = regex_cache.compile(r"^see[ \t]++", re.I)

# A link whose text only says where to go ("Read more", "Learn more here", "Source", "Full article") is navigation:
# left out like its URL, so "Dennis Joseph [Read more](...)" claims "Dennis Joseph", not "Dennis Joseph Read more".
_NAVIGATION_WORDS = frozenset(
    """read learn more here click tap details detail info information source sources link links website site see
    view visit full article page documentation docs doc the this our at go to open official reference references
    further reading continue""".split()
)
_NAV_WORD_RE = regex_cache.compile(r"[^\W\d_]+")


def _navigation(text: str) -> bool:
    words = _NAV_WORD_RE.findall(text.lower())
    return bool(words) and all(w in _NAVIGATION_WORDS for w in words)


_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


@dataclass(frozen=True)
class Marker:
    """One citation marker as written: `raw` at original[start:end]; `at` is where it stood in the plain text.
    `refs` are what it cites (chunk positions or ids, resolved by the citation check); a footnote marker cites
    what its definition line names, and `note` keeps that line."""

    raw: str
    start: int
    end: int
    at: int
    refs: tuple[str, ...]
    kind: str  # "bracket", "footnote", "wide" or "source"
    note: str = ""


@dataclass(frozen=True)
class Sentence:
    """A sentence of the plain text: plain[start:end] == text. `kind` is its block's kind; `markers` are the
    citation markers attached to it (a marker ends the sentence before it, or sits inside it)."""

    text: str
    start: int
    end: int
    kind: str
    block: int
    markers: tuple[Marker, ...] = ()
    link_only: bool = False  # nothing but link text ("Read more"): navigation, not a claim

    @property
    def is_claim(self) -> bool:
        return self.kind in CLAIM_KINDS and not self.link_only


@dataclass(frozen=True)
class Edit:
    """Replace plain[start:end] with `text`; an empty `text` over whole sentences drops them with what belongs
    to them (their markers, and their list item, heading or table row when nothing else is left in it)."""

    start: int
    end: int
    text: str = ""


@dataclass(frozen=True)
class _Block:
    kind: str
    start: int  # plain span of the block's text
    end: int
    line_start: int  # original span of the whole line(s), line break included
    line_end: int
    ordinal: int | None = None  # a numbered item's number
    number_span: tuple[int, int] | None = None  # where that number is written in the original
    indent: int = 0


class _Builder:
    """Plain text under construction, with the piecewise map back to the original."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        # (plain start, original start, copied): a copied piece maps character for character; an inserted one
        # maps every character to its original start.
        self.plain_starts: list[int] = []
        self.orig_starts: list[int] = []
        self.copied: list[bool] = []

    def copy(self, text: str, start: int, end: int) -> None:
        if end > start:
            self._add(text[start:end], start, True)

    def insert(self, piece: str, at: int) -> None:
        if piece:
            self._add(piece, at, False)

    def _add(self, piece: str, orig: int, copied: bool) -> None:
        self.plain_starts.append(self.length)
        self.orig_starts.append(orig)
        self.copied.append(copied)
        self.parts.append(piece)
        self.length += len(piece)

    def trim_trailing_space(self) -> None:
        """Drop horizontal whitespace at the end of the plain text (before a marker that was left out)."""
        while self.parts:
            piece = self.parts[-1]
            kept = piece.rstrip(" \t")
            if kept == piece:
                return
            self.length -= len(piece) - len(kept)
            if kept:
                self.parts[-1] = kept
                return
            self.parts.pop()
            self.plain_starts.pop()
            self.orig_starts.pop()
            self.copied.pop()


@dataclass(frozen=True)
class Markup:
    """An answer read once: `plain` (what the checks read), the map back to `original`, blocks, sentences and
    citation markers."""

    original: str
    plain: str
    sentences: tuple[Sentence, ...]
    markers: tuple[Marker, ...]
    footnotes: tuple[tuple[str, str, int, int], ...]  # (label, definition text, its line's original span)
    blocks: tuple[_Block, ...]
    _plain_starts: tuple[int, ...]
    _orig_starts: tuple[int, ...]
    _copied: tuple[bool, ...]

    @property
    def identity(self) -> bool:
        """Whether the answer has no markup at all (plain == original)."""
        return self.plain is self.original

    @property
    def claim_text(self) -> str:
        """The sentences that can assert something, joined: `plain` without headings, table header rows and bare
        links. What the answer says, for judging its shape ("## Answer\n\nno" says "no")."""
        if self.identity:
            return self.plain
        return " ".join(s.text for s in self.sentences if s.is_claim)

    def to_original(self, position: int) -> int:
        """Where plain text position `position` stands in the original."""
        if self.identity or not self._plain_starts:
            return position
        i = max(0, bisect_right(self._plain_starts, position) - 1)
        if not self._copied[i]:
            return self._orig_starts[i]
        offset = position - self._plain_starts[i]
        next_plain = self._plain_starts[i + 1] if i + 1 < len(self._plain_starts) else len(self.plain)
        if offset >= next_plain - self._plain_starts[i] and i + 1 < len(self._plain_starts):
            return self._orig_starts[i + 1]
        return self._orig_starts[i] + offset

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original span holding plain[start:end] (markup inside it included)."""
        if self.identity:
            return start, end
        if end <= start:
            at = self.to_original(start)
            return at, at
        return self.to_original(start), self.to_original(end - 1) + 1

    def sentence_at(self, position: int) -> Sentence | None:
        """The sentence holding plain position `position`, or the last one ending before it."""
        if not self.sentences:
            return None
        starts = [s.start for s in self.sentences]
        i = bisect_right(starts, position) - 1
        return self.sentences[max(i, 0)]

    def find(self, text: str) -> tuple[int, int] | None:
        """Plain span of `text` (a sentence or claim of the plain text), or None."""
        start = self.plain.find(text)
        return (start, start + len(text)) if start >= 0 and text else None

    def rewrite(self, edits: Iterable[Edit]) -> str:
        """The original answer with `edits` (plain spans) applied, its structure kept: emphasis, links and
        markers outside an edited span are untouched, the markers inside a replaced span follow the replacement,
        a dropped sentence takes its markers with it, a block left empty goes with its line, and numbered items
        are renumbered after a drop."""
        ordered = sorted(edits, key=lambda e: (e.start, e.end))
        if not ordered:
            return self.original
        if self.identity:
            return _splice(self.original, [(e.start, e.end, e.text) for e in ordered])
        cuts: list[tuple[int, int, str]] = []
        dropped_blocks: set[int] = set()
        for edit in ordered:
            if edit.text:
                cuts.append(self._replacement(edit))
            else:
                cuts.extend(self._drop(edit, dropped_blocks))
        cuts = _merge(cuts)
        cuts = _merge(cuts + self._orphaned_footnotes(cuts))
        text = _splice(self.original, cuts)
        return self._renumber(text, dropped_blocks) if dropped_blocks else text

    # -- rewriting helpers ----------------------------------------------------------------------------------

    def _markers_in(self, start: int, end: int) -> list[Marker]:
        return [m for m in self.markers if start <= m.start and m.end <= end]

    def _replacement(self, edit: Edit) -> tuple[int, int, str]:
        start, end = self.original_span(edit.start, edit.end)
        kept = self._markers_in(start, end)
        text = edit.text
        if kept:
            raw = "".join(m.raw for m in kept)
            body, stop = (text[:-1], text[-1]) if text[-1:] in ".!?" else (text, "")
            text = f"{body} {raw}{stop}" if kept[0].kind != "footnote" else f"{body}{raw}{stop}"
        return start, end, text

    def _drop(self, edit: Edit, dropped_blocks: set[int]) -> list[tuple[int, int, str]]:
        covered = [s for s in self.sentences if edit.start <= s.start and s.end <= edit.end]
        blocks = {s.block for s in covered}
        out: list[tuple[int, int, str]] = []
        for b in sorted(blocks):
            block = self.blocks[b]
            rest = [s for s in self.sentences if s.block == b and s not in covered]
            if not rest and block.kind != PROSE:
                out.append((block.line_start, block.line_end, ""))
                dropped_blocks.add(b)
        whole = {b for b in blocks if any(c[0] == self.blocks[b].line_start for c in out)}
        spans = [s for s in covered if s.block not in whole]
        if not covered:
            start, end = self.original_span(edit.start, edit.end)
            return [(start, end, "")]
        for s in spans:
            start, end = self.original_span(s.start, s.end)
            # The markers attached to the sentence and the space before the next one go with it.
            for m in s.markers:
                start, end = min(start, m.start), max(end, m.end)
            end = _skip_space(self.original, end)
            if end == len(self.original) or self.original[end] == "\n":
                start = _back_over_space(self.original, start)
            out.append((start, end, ""))
        return out

    def _orphaned_footnotes(self, cuts: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
        """Definition lines of footnotes whose every marker went with a dropped sentence."""
        if not self.footnotes:
            return []
        gone = [(a, b) for a, b, piece in cuts if not piece]

        def dropped(m: Marker) -> bool:
            return any(a <= m.start and m.end <= b for a, b in gone)

        out = []
        for label, _, line_start, line_end in self.footnotes:
            used = [m for m in self.markers if m.kind == "footnote" and m.raw == f"[^{label}]"]
            if used and all(dropped(m) for m in used):
                out.append((line_start, line_end, ""))
        return out

    def _renumber(self, text: str, dropped: set[int]) -> str:
        """Numbered items after a dropped one count on from the item before it ("1, 2, 4" -> "1, 2, 3")."""
        shift = 0
        edits: list[tuple[int, int, str]] = []
        previous: _Block | None = None
        for b, block in enumerate(self.blocks):
            if block.ordinal is None or block.number_span is None:
                if block.kind != ITEM:
                    shift = 0
                previous = block
                continue
            if previous is None or previous.ordinal is None or previous.indent != block.indent:
                shift = 0
            if b in dropped:
                shift += 1
            elif shift:
                s, e = block.number_span
                edits.append((s, e, str(block.ordinal - shift)))
            previous = block
        if not edits:
            return text
        # Offsets in `text` moved by the earlier cuts: redo the cuts with the renumbering folded in.
        return _renumber_text(self, text, edits)


def _renumber_text(markup: Markup, text: str, edits: list[tuple[int, int, str]]) -> str:
    """Apply number edits given in original offsets to `text` (the rewritten original). Each number is found
    again by its line's content, which the rewrite did not touch."""
    out = text
    for s, e, number in sorted(edits, reverse=True):
        line_end = markup.original.find("\n", e)
        line = markup.original[s : line_end if line_end >= 0 else len(markup.original)]
        at = out.find(line)
        if at >= 0:
            out = out[:at] + number + out[at + (e - s) :]
    return out


def _splice(text: str, cuts: Sequence[tuple[int, int, str]]) -> str:
    out: list[str] = []
    cursor = 0
    for start, end, piece in cuts:
        if start < cursor:
            continue  # overlapping edits: the first one wins
        out.append(text[cursor:start])
        out.append(piece)
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


def _merge(cuts: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Sorted cuts; a deletion inside one already made is dropped."""
    out: list[tuple[int, int, str]] = []
    for cut in sorted(cuts, key=lambda c: (c[0], -c[1])):
        if out and cut[0] < out[-1][1]:
            if cut[1] <= out[-1][1] and not cut[2]:
                continue
            if not out[-1][2] and cut[1] > out[-1][1]:
                out[-1] = (out[-1][0], cut[1], cut[2])
                continue
            continue
        out.append(cut)
    return out


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t":
        at += 1
    return at


def _back_over_space(text: str, at: int) -> int:
    while at > 0 and text[at - 1] in " \t":
        at -= 1
    return at


# --- reading ---------------------------------------------------------------------------------------------------


def marker_refs(body: str, ids: frozenset[str] = frozenset()) -> tuple[str, ...] | None:
    """What one bracket's text cites, or None when it is not citation-shaped ("[sic]", "[Note]", "[2019]")."""
    text = body.strip()
    if text in ids:
        return (text,)
    prefixed = bool(_PREFIX_RE.match(text))
    text = _PREFIX_RE.sub("", text)
    refs: list[str] = []
    for part in filter(None, _PARTS_RE.split(text)):
        if part in ids:
            refs.append(part)
            continue
        positional = _POSITIONAL_RE.match(part)
        if positional:
            if not prefixed and _YEAR_RE.match(part):
                return None  # "[2019]" is a year
            refs.append(str(int(positional.group(1))))
            continue
        ranged = _RANGE_RE.match(part)
        if ranged and int(ranged.group(1)) <= int(ranged.group(2)) < int(ranged.group(1)) + _MAX_RANGE:
            refs.extend(str(i) for i in range(int(ranged.group(1)), int(ranged.group(2)) + 1))
            continue
        if ID_SHAPE_RE.match(part) or (prefixed and " " not in part):
            refs.append(part)
            continue
        return None
    return tuple(refs) or None


def read_markup(text: str, ids: frozenset[str] = frozenset()) -> Markup:
    """The answer `text` read once. `ids` are the event's chunk ids: a bracket naming one is a marker."""
    if not text or not may_hold_markup(text):
        return _plain_only(text)
    return _read(text, ids)


# A repair is read again by each step of the healer (re-inspection, pruning what is left, the refusal check):
# an answer without markup is read once per process while it is recent, as one with markup is (_read).
@lru_cache(maxsize=4096)
def _plain_only(text: str) -> Markup:
    sentences = tuple(Sentence(s, a, b, PROSE, 0) for a, b, s in _spans(text, 0, len(text)))
    block = _Block(PROSE, 0, len(text), 0, len(text))
    return Markup(text, text, sentences, (), (), (block,), (), (), ())


def _spans(text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    """(start, end, sentence) of each sentence of text[start:end], in text offsets."""
    out: list[tuple[int, int, str]] = []
    segment = text[start:end]
    cursor = 0
    for sentence in split_sentences(segment):
        at = segment.find(sentence, cursor)
        if at < 0:
            continue
        cursor = at + len(sentence)
        out.append((start + at, start + cursor, sentence))
    return out


@lru_cache(maxsize=4096)
def _read(text: str, ids: frozenset[str]) -> Markup:
    reader = _Reader(text, ids)
    reader.read_blocks()
    return reader.finish()


class _Reader:
    def __init__(self, text: str, ids: frozenset[str]) -> None:
        self.text = text
        self.ids = ids
        self.out = _Builder()
        self.blocks: list[_Block] = []
        self.markers: list[Marker] = []
        self.footnotes: dict[str, tuple[str, int, int]] = {}  # label -> (definition, line start, line end)
        self.link_spans: list[tuple[int, int]] = []  # plain spans of link texts

    # -- blocks ---------------------------------------------------------------------------------------------

    def _lines(self) -> list[tuple[int, int, int]]:
        """(start, end without the line break, end with it) of every line."""
        out = []
        text, at = self.text, 0
        while at <= len(text):
            nl = text.find("\n", at)
            if nl < 0:
                out.append((at, len(text), len(text)))
                break
            out.append((at, nl, nl + 1))
            at = nl + 1
        return out

    def read_blocks(self) -> None:
        text = self.text
        lines = self._lines()
        fence: str | None = None
        current: list[tuple[int, int, int]] = []  # paragraph lines being gathered
        current_kind = PROSE
        current_meta: tuple[int | None, tuple[int, int] | None, int] = (None, None, 0)
        table_header = False
        i = 0
        while i < len(lines):
            start, end, full_end = lines[i]
            line = text[start:end]
            if fence is not None:
                if line.strip().startswith(fence):
                    fence = None
                i += 1
                continue
            fenced = _FENCE_RE.match(line)
            if fenced:
                self._flush(current, current_kind, current_meta)
                current = []
                fence = fenced.group(1)[:3]
                i += 1
                continue
            if not line.strip():
                self._flush(current, current_kind, current_meta)
                current, table_header = [], False
                i += 1
                continue
            footnote = _FOOTNOTE_DEF_RE.match(line)
            if footnote:
                self._flush(current, current_kind, current_meta)
                current = []
                self.footnotes[footnote.group(1)] = (line[footnote.end() :].strip(), start, full_end)
                i += 1
                continue
            if "|" in line and _DELIMITER_ROW_RE.match(line) and current and "|" in text[current[-1][0] : current[-1][1]]:
                # A delimiter row: the row before it is the table's header.
                header = current.pop()
                self._flush(current, current_kind, current_meta)
                self._row(header, HEADER_ROW)
                current, table_header = [], True
                i += 1
                continue
            if table_header and "|" in line:
                self._row(lines[i], ROW)
                i += 1
                continue
            if _BREAK_RE.match(line):
                self._flush(current, current_kind, current_meta)
                current = []
                i += 1
                continue
            heading = _HEADING_RE.match(line)
            if heading:
                self._flush(current, current_kind, current_meta)
                current = []
                closing = _CLOSING_HASHES_RE.search(line, heading.end())
                content_end = start + (closing.start() if closing else len(line))
                self._block(HEADING, [(start + heading.end(), content_end, full_end)], start, full_end)
                i += 1
                continue
            quote = _QUOTE_RE.match(line)
            item = _ITEM_RE.match(line, quote.end() if quote else 0)
            if item:
                self._flush(current, current_kind, current_meta)
                ordinal = int(item.group(2)) if item.group(2) else None
                number_span = (start + item.start(2), start + item.end(2)) if item.group(2) else None
                indent = len(line) - len(line.lstrip(" \t"))
                current = [(start + item.end(), end, full_end)]
                current_kind = ITEM
                current_meta = (ordinal, number_span, indent)
                i += 1
                continue
            if quote:
                if current_kind != QUOTE:
                    self._flush(current, current_kind, current_meta)
                    current = []
                current_kind = QUOTE
                current.append((start + quote.end(), end, full_end))
                current_meta = (None, None, 0)
                i += 1
                continue
            if not current:
                current_kind, current_meta = PROSE, (None, None, 0)
            current.append((start, end, full_end))
            i += 1
        self._flush(current, current_kind, current_meta)

    def _flush(self, lines: list[tuple[int, int, int]], kind: str, meta: tuple[int | None, tuple[int, int] | None, int]) -> None:
        if not lines:
            return
        line_start = self.text.rfind("\n", 0, lines[0][0]) + 1
        ordinal, number_span, indent = meta
        self._block(kind, lines, line_start, lines[-1][2], ordinal, number_span, indent)

    def _row(self, line: tuple[int, int, int], kind: str) -> None:
        start, end, full_end = line
        cells: list[tuple[int, int]] = []
        at = start
        row = self.text[start:end]
        stripped_start = start + (len(row) - len(row.lstrip()))
        if self.text[stripped_start : stripped_start + 1] == "|":
            at = stripped_start + 1
        cell_start = at
        k = at
        while k < end:
            ch = self.text[k]
            if ch == "\\":
                k += 2
                continue
            if ch == "|":
                cells.append((cell_start, k))
                cell_start = k + 1
            k += 1
        if self.text[cell_start:end].strip():
            cells.append((cell_start, end))
        cells = [(a + _lead(self.text, a, b), b - _trail(self.text, a, b)) for a, b in cells]
        cells = [(a, b) for a, b in cells if b > a]
        if not cells:
            return
        self._separate()
        plain_start = self.out.length
        for n, (a, b) in enumerate(cells):
            if n:
                self.out.insert(", ", a)
            self._inline(a, b)
        self.blocks.append(_Block(kind, plain_start, self.out.length, start, full_end))

    def _separate(self) -> None:
        if self.out.length:
            self.out.trim_trailing_space()
            self.out.insert("\n", self.blocks[-1].line_end if self.blocks else 0)

    def _block(
        self,
        kind: str,
        lines: list[tuple[int, int, int]],
        line_start: int,
        line_end: int,
        ordinal: int | None = None,
        number_span: tuple[int, int] | None = None,
        indent: int = 0,
    ) -> None:
        self._separate()
        plain_start = self.out.length
        for n, (start, end, _) in enumerate(lines):
            if n:
                self.out.insert("\n", start)
            self._inline(start, end)
        self.out.trim_trailing_space()
        if self.out.length == plain_start:
            return
        self.blocks.append(_Block(kind, plain_start, self.out.length, line_start, line_end, ordinal, number_span, indent))

    # -- inline ---------------------------------------------------------------------------------------------

    def _inline(self, start: int, end: int) -> None:
        """Copy text[start:end] to the plain text without its inline markup."""
        text = self.text
        pieces: list[tuple[str, int, int, Marker | None]] = []  # ("copy" | "link" | "space" | "marker", a, b, marker)
        delims: list[tuple[int, int, str, bool, bool]] = []  # (start, end, char, can open, can close)
        code_runs = _code_runs(text, start, end)
        at = start
        for m in _INLINE_RE.finditer(text, start, end):
            if m.start() < at:
                continue
            kind = m.lastgroup
            if kind == "delim":
                delims.append((m.start(), m.end(), m.group()[0], *_flanking(text, m.start(), m.end(), start, end)))
                continue
            if kind == "code":
                close = _next_run(code_runs, len(m.group()), m.end())
                if close is None:
                    continue  # a lone backtick is just a backtick
                inner_start, inner_end = m.end(), close
                if inner_end - inner_start >= 2 and text[inner_start] == " " and text[inner_end - 1] == " ":
                    inner_start, inner_end = inner_start + 1, inner_end - 1
                pieces.append(("copy", at, m.start(), None))
                pieces.append(("code", inner_start, inner_end, None))
                at = close + len(m.group())
                continue
            marker = self._marker(m) if kind in ("foot", "bracket", "wide", "paren") else None
            if kind == "bracket" and marker is None:
                continue  # prose in brackets ("[sic]") stays as written
            pieces.append(("copy", at, m.start(), None))
            at = m.end()
            if kind == "esc":
                pieces.append(("code", m.start() + 1, m.end(), None))
            # An image (alt text and all) and an autolink assert nothing a passage could confirm: left out.
            elif kind == "link" and not _navigation(m.group("text")):
                pieces.append(("link", m.start("text"), m.end("text"), None))
            elif kind == "html" and m.group()[1:3].lower() == "br":
                pieces.append(("space", m.start(), m.start(), None))
            elif marker is not None:
                pieces.append(("marker", m.start(), m.end(), marker))
        pieces.append(("copy", at, end, None))
        removed = _matched_delimiters(delims)
        for tag, a, b, marker in pieces:
            if tag == "marker":
                self._emit_marker(marker)  # type: ignore[arg-type]
            elif tag == "space":
                self.out.insert(" ", a)
            elif tag == "code":
                self.out.copy(text, a, b)  # code and escaped characters are literal: no emphasis inside
            elif tag == "link":
                link_start = self.out.length
                self._copy_without(a, b, _matched_delimiters(self._delimiters(a, b)))
                self.link_spans.append((link_start, self.out.length))
            else:
                self._copy_without(a, b, removed)

    def _delimiters(self, start: int, end: int) -> list[tuple[int, int, str, bool, bool]]:
        """Emphasis delimiter runs of text[start:end] (a link's text), with their flanking."""
        return [
            (m.start(), m.end(), m.group()[0], *_flanking(self.text, m.start(), m.end(), start, end))
            for m in _DELIM_RE.finditer(self.text, start, end)
        ]

    def _copy_without(self, start: int, end: int, removed: list[tuple[int, int]]) -> None:
        """Copy text[start:end] leaving out the emphasis delimiters in `removed` (sorted original spans)."""
        at = start
        for a, b in removed:
            if b <= at or a >= end:
                continue
            self.out.copy(self.text, at, max(at, a))
            at = max(at, b)
        self.out.copy(self.text, at, end)

    def _marker(self, m: re.Match[str]) -> Marker | None:
        """The citation marker `m` stands for, or None when it is prose in brackets (or past MAX_MARKERS)."""
        if len(self.markers) >= MAX_MARKERS:
            return None
        kind = m.lastgroup
        if kind == "foot":
            # What a footnote cites is on its definition line, read at the end (it may come after the marker).
            return Marker(m.group(), m.start(), m.end(), -1, (), "footnote", m.group("label"))
        if kind == "wide":
            refs = marker_refs(m.group("wbody").split(_WIDE_SPLIT)[0], self.ids)
            return Marker(m.group(), m.start(), m.end(), -1, refs or (), "wide")
        if kind == "paren":
            body = _SEE_RE.sub("", m.group("pbody"))
            return Marker(m.group(), m.start(), m.end(), -1, marker_refs(body, self.ids) or (), "source")
        refs = marker_refs(m.group("body"), self.ids)
        return None if refs is None else Marker(m.group(), m.start(), m.end(), -1, refs, "bracket")

    def _emit_marker(self, marker: Marker) -> None:
        self.out.trim_trailing_space()
        self.markers.append(Marker(marker.raw, marker.start, marker.end, self.out.length, marker.refs, marker.kind, marker.note))

    # -- result ---------------------------------------------------------------------------------------------

    def finish(self) -> Markup:
        plain = "".join(self.out.parts)
        markers = [self._resolve_footnote(m) for m in self.markers]
        sentences: list[Sentence] = []
        for b, block in enumerate(self.blocks):
            for a, e, s in _spans(plain, block.start, block.end):
                sentences.append(Sentence(s, a, e, block.kind, b, (), self._link_only(a, e, plain)))
        attached = _attach(sentences, markers)
        return Markup(
            self.text, plain, tuple(attached), tuple(markers),
            tuple((label, *note) for label, note in self.footnotes.items()), tuple(self.blocks),
            tuple(self.out.plain_starts), tuple(self.out.orig_starts), tuple(self.out.copied),
        )

    def _resolve_footnote(self, marker: Marker) -> Marker:
        if marker.kind != "footnote":
            return marker
        definition = self.footnotes.get(marker.note, ("", 0, 0))[0]
        refs = marker_refs(definition.strip("[]【】"), self.ids) or () if definition else ()
        return Marker(marker.raw, marker.start, marker.end, marker.at, refs, marker.kind, definition)

    def _link_only(self, start: int, end: int, plain: str) -> bool:
        covered = 0
        for a, b in self.link_spans:
            lo, hi = max(a, start), min(b, end)
            if hi > lo:
                covered += hi - lo
        if not covered:
            return False
        rest = sum(1 for c in plain[start:end] if c.isalnum()) - sum(
            1 for a, b in self.link_spans for c in plain[max(a, start) : min(b, end)] if c.isalnum()
        )
        return rest <= 0


def _attach(sentences: list[Sentence], markers: list[Marker]) -> list[Sentence]:
    """Each marker goes to the sentence it stands in or ends ("... 14 days [2]." and "... 14 days. [2]")."""
    if not markers or not sentences:
        return sentences
    starts = [s.start for s in sentences]
    per: dict[int, list[Marker]] = {}
    for m in markers:
        i = bisect_right(starts, m.at - 1) - 1 if m.at > 0 else 0
        per.setdefault(max(i, 0), []).append(m)
    return [
        Sentence(s.text, s.start, s.end, s.kind, s.block, tuple(per.get(k, ())), s.link_only)
        for k, s in enumerate(sentences)
    ]


def _lead(text: str, a: int, b: int) -> int:
    k = a
    while k < b and text[k] in " \t":
        k += 1
    return k - a


def _trail(text: str, a: int, b: int) -> int:
    k = b
    while k > a and text[k - 1] in " \t":
        k -= 1
    return b - k


def _code_runs(text: str, start: int, end: int) -> dict[int, list[int]]:
    """Start of every backtick run in text[start:end], by run length: a code span closes at the next run of the
    same length (found by bisection, so a line of unmatched backticks is read once)."""
    runs: dict[int, list[int]] = {}
    at = text.find("`", start, end)
    while at >= 0:
        stop = at
        while stop < end and text[stop] == "`":
            stop += 1
        runs.setdefault(stop - at, []).append(at)
        at = text.find("`", stop, end)
    return runs


def _next_run(runs: dict[int, list[int]], length: int, after: int) -> int | None:
    positions = runs.get(length, [])
    i = bisect_right(positions, after - 1)
    return positions[i] if i < len(positions) else None


def _is_space(ch: str) -> bool:
    return not ch or ch.isspace()


def _is_punct(ch: str) -> bool:
    return bool(ch) and (ch in _ASCII_PUNCT or (not ch.isalnum() and not ch.isspace()))


def _flanking(text: str, start: int, end: int, lo: int, hi: int) -> tuple[bool, bool]:
    """(can open, can close) for the delimiter run text[start:end] (CommonMark's flanking rules; "_" may not
    open or close inside a word)."""
    before = text[start - 1] if start > lo else ""
    after = text[end] if end < hi else ""
    left = not _is_space(after) and (not _is_punct(after) or _is_space(before) or _is_punct(before))
    right = not _is_space(before) and (not _is_punct(before) or _is_space(after) or _is_punct(after))
    if text[start] == "_":
        return left and (not right or _is_punct(before)), right and (not left or _is_punct(after))
    return left, right


def _matched_delimiters(delims: list[tuple[int, int, str, bool, bool]]) -> list[tuple[int, int]]:
    """Original spans of the emphasis delimiters that pair up (left out of the plain text), sorted."""
    removed: list[tuple[int, int]] = []
    openers: list[list[int]] = []  # [start, end, char] of open runs, still open characters in [start, end)
    for start, end, char, can_open, can_close in delims:
        remaining_start = start
        if can_close:
            k = len(openers) - 1
            looked = 0
            while k >= 0 and looked < _MAX_OPENER_LOOKBACK and remaining_start < end:
                o_start, o_end, o_char = openers[k]
                looked += 1
                if o_char != ord(char):
                    k -= 1
                    continue
                use = min(2 if (o_end - o_start >= 2 and end - remaining_start >= 2) else 1, o_end - o_start, end - remaining_start)
                removed.append((o_end - use, o_end))
                removed.append((remaining_start, remaining_start + use))
                openers[k][1] = o_end - use
                remaining_start += use
                del openers[k + 1 :]  # openers between the pair can no longer close anything
                if openers[k][1] == openers[k][0]:
                    del openers[k]
                k = len(openers) - 1
        if can_open and remaining_start < end:
            openers.append([remaining_start, end, ord(char)])
    removed.sort()
    return removed
