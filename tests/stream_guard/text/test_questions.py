"""Question keys: normalised, hashed with the tenant."""

from stream_guard.text.questions import looks_like_question_hash, normalize_question, question_hash


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


def test_a_recurring_question_is_hashed_once_and_each_pair_keeps_its_own_hash() -> None:
    from stream_guard.text import questions

    first = question_hash("acme", "What is the refund window for s25?")
    before = questions._kept_hash.cache_info().hits
    assert question_hash("acme", "What is the refund window for s25?") == first
    assert questions._kept_hash.cache_info().hits == before + 1
    # The pair is the key, not the two joined: these join to the same text and are different questions.
    pairs = [("a\x1fb", "c"), ("a", "b\x1fc"), ("acme", "x" * 2000)]
    assert [question_hash(t, q) for t, q in pairs] == [questions._hash(t, q) for t, q in pairs]
    assert len({question_hash(t, q) for t, q in pairs}) == 3
