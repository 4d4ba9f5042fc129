"""Words: tokens, stems, content words."""

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from stream_guard.text import words as words_module
from stream_guard.text.words import content_stems, stem, words


def test_stems_fold_inflections_so_cancel_matches_cancelled():
    assert stem("cancelled") == stem("cancel") == stem("cancellation")
    assert "cancel" in content_stems("Subscriptions cannot be cancelled")


def test_content_stems_drop_stop_words_and_negators():
    assert content_stems("It is not the policy") == ["polici"]


def test_words_are_unicode_letters_with_apostrophes_and_whole_numbers() -> None:
    assert words("Zürich's café isn’t open") == ["zürich's", "café", "isn't", "open"]
    assert words("Prices rose 3.5% to 1,200 units in São Paulo.") == ["prices", "rose", "3.5", "to", "1200", "units", "in", "são", "paulo"]
    assert words("Zu\u0308rich") == ["zürich"]  # a combining mark is part of the letter
    assert "zürich" in content_stems("Offices in Zürich and Bern")


def test_a_plural_formed_by_a_vowel_change_stems_as_its_singular():
    """"The two men knew each other" restates "a 32-year-old man" and "a 26-year-old man"."""
    assert stem("men") == stem("man") and stem("women") == stem("woman") and stem("children") == stem("child")
    assert stem("policemen") == stem("policeman")


# Letters of both cases, digits, the separators a word or number can hold, and a few letters that are not ASCII
# (a text holding one takes the Unicode pattern; the rest the ASCII one).
_CHARACTERS = "aAzZ09 5,.'’_-\n" + "éÜİß\u0308"


def _words_as_first_written(text: str) -> list[str]:
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    out = words_module._WORD_RE.findall(text.lower())
    for i, word in enumerate(out):
        if "’" in word:
            out[i] = word = word.replace("’", "'")
        if "," in word and words_module._THOUSANDS_RE.fullmatch(word):
            out[i] = word.replace(",", "")
    return out


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=_CHARACTERS, max_size=60))
def test_the_ascii_word_pattern_reads_the_words_the_unicode_one_reads(text: str) -> None:
    assert words(text) == _words_as_first_written(text)
