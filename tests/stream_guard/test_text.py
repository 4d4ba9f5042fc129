from stream_guard.text import (
    content_stems,
    looks_like_question_hash,
    normalize_question,
    question_hash,
    split_sentences,
    stem,
)


def test_sentences_keep_titles_initials_and_decimals_together():
    text = "Dr. James Harrison wrote it in 2020. It costs $49.99 per month! Does it? J. R. R. Tolkien agreed."
    assert split_sentences(text) == [
        "Dr. James Harrison wrote it in 2020.",
        "It costs $49.99 per month!",
        "Does it?",
        "J. R. R. Tolkien agreed.",
    ]


def test_bullet_lists_split_into_items():
    assert len(split_sentences("Options:\n- refund within 14 days\n- exchange within 30 days")) == 3


def test_list_numbers_open_the_item_they_number():
    assert split_sentences("Steps: 1. Preheat the oven. 2. Mix the flour. Done.") == [
        "Steps:", "1. Preheat the oven.", "2. Mix the flour.", "Done."]
    assert split_sentences("Steps:\n1. Preheat the oven.\n2. Mix the flour.") == [
        "Steps:", "1. Preheat the oven.", "2. Mix the flour."]
    assert split_sentences("The total is 30. Then pay.") == ["The total is 30.", "Then pay."]


def test_stems_fold_inflections_so_cancel_matches_cancelled():
    assert stem("cancelled") == stem("cancel") == stem("cancellation")
    assert "cancel" in content_stems("Subscriptions cannot be cancelled")


def test_content_stems_drop_stop_words_and_negators():
    assert content_stems("It is not the policy") == ["polici"]


def test_question_hash_ignores_case_whitespace_and_punctuation_but_not_tenant():
    assert normalize_question("  How much does the Pro plan cost?? ") == "how much does the pro plan cost"
    assert question_hash("acme", "How much?") == question_hash("acme", "how   MUCH")
    assert question_hash("acme", "How much?") != question_hash("globex", "How much?")


def test_looks_like_question_hash_accepts_the_shape_question_hash_makes_and_nothing_else() -> None:
    key = question_hash("acme", "How long is the refund window?")
    assert looks_like_question_hash(key) and looks_like_question_hash(key.encode())
    assert not looks_like_question_hash(key[:-1])
    assert not looks_like_question_hash(key.upper())
    assert not looks_like_question_hash(b"user-42")
    assert not looks_like_question_hash(b"\xff" * len(key))
