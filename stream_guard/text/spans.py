"""Where each sentence of a text sits, so a repair can edit or drop one sentence and keep the rest as written."""

from __future__ import annotations

from stream_guard.text.sentences import split_sentences


def sentence_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, sentence) for each sentence of `text`, in order; `text[start:end] == sentence`."""
    out: list[tuple[int, int, str]] = []
    cursor = 0
    for sentence in split_sentences(text):
        start = text.find(sentence, cursor)
        if start < 0:
            continue  # the splitter normalised it; such a sentence cannot be edited in place
        cursor = start + len(sentence)
        out.append((start, cursor, sentence))
    return out
