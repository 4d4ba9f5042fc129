from stream_guard.text.short_text_cache import cached_when_short


def test_a_short_text_is_computed_once_and_a_long_one_every_time() -> None:
    calls: list[str] = []

    @cached_when_short(5, 2)
    def upper(text: str) -> str:
        calls.append(text)
        return text.upper()

    assert [upper("abc"), upper("abc"), upper("abcdef"), upper("abcdef")] == ["ABC", "ABC", "ABCDEF", "ABCDEF"]
    assert calls == ["abc", "abcdef", "abcdef"]


def test_only_the_most_recent_short_texts_are_kept() -> None:
    calls: list[str] = []

    @cached_when_short(5, 2)
    def length(text: str) -> int:
        calls.append(text)
        return len(text)

    for text in ("a", "b", "c", "a"):  # "a" is the least recent when "c" comes: it is computed again
        length(text)
    assert calls == ["a", "b", "c", "a"]
