from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stream_guard.cli.check  # noqa: F401 - imports every module whose patterns come from the cache
from stream_guard.text import regex_cache
from tests.support.cache_files import own_cache_file


@pytest.fixture()
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache directory of this test's own; the process's cache as it was afterwards."""
    yield from own_cache_file(regex_cache, ".regex-", tmp_path, monkeypatch)


def _module_patterns() -> list[re.Pattern[str]]:
    """Every compiled str pattern held at module level by stream_guard (directly or in a tuple/list)."""
    found: dict[tuple[str, int], re.Pattern[str]] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("stream_guard") or module is None:
            continue
        for value in vars(module).values():
            for item in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(item, re.Pattern) and isinstance(item.pattern, str):
                    found[item.pattern, item.flags] = item
    return list(found.values())


def _reloaded_from_disk() -> None:
    regex_cache.save()
    regex_cache._reset_for_tests()


def test_every_module_pattern_is_the_pattern_re_compiles(fresh_cache: Path) -> None:
    patterns = _module_patterns()
    assert len(patterns) > 100
    # As the modules asked for them: a str pattern's flags hold re.UNICODE, which the parser adds itself.
    asked = [(p.pattern, p.flags & ~re.UNICODE) for p in patterns]
    built = [regex_cache.compile(*key) for key in asked]  # compiled here, then written
    _reloaded_from_disk()
    assert regex_cache.cache_file().is_file()
    read = [regex_cache.compile(*key) for key in asked]  # built from the file alone
    for pattern, first, again in zip(patterns, built, read):
        expected = re.compile(pattern.pattern, pattern.flags & ~re.UNICODE)
        assert expected == pattern
        # A pattern's equality compares its source, flags and compiled code.
        assert first == expected and again == expected, pattern.pattern[:80]
        assert (again.groups, again.groupindex) == (expected.groups, expected.groupindex)
    assert not regex_cache._FILE.added  # every one was read from the file: nothing new to write


def test_spacys_tokenizer_affixes_come_from_the_cache_equal_to_spacys_own(fresh_cache: Path) -> None:
    spacy_util = pytest.importorskip("spacy.util")
    from spacy.lang.en import English

    defaults = English.Defaults
    theirs = [spacy_util.compile_prefix_regex(defaults.prefixes), spacy_util.compile_suffix_regex(defaults.suffixes),
              spacy_util.compile_infix_regex(defaults.infixes)]
    for pattern in theirs:
        regex_cache.compile(pattern.pattern)
    _reloaded_from_disk()
    assert [regex_cache.compile(p.pattern) for p in theirs] == theirs


# Pieces of regular expressions, joined at random: groups (named, numbered, non-capturing), classes, lookarounds,
# backreferences, possessive and lazy quantifiers, anchors and Unicode.
_PIECES = ["a", "[a-z]+", r"\d{2,4}", r"(?P<word>\w+)", r"(x|y)", r"(?:ab)*+", r"(?=c)", r"(?<!d)", r"\b", "^", "$",
           r"\s*?", "é", r"[^\W\d]", r"(?i:case)", r"\1", ".", r"\.", r"[\u00C0-\u017F]", "|", "z?"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8),
       st.sampled_from([0, re.IGNORECASE, re.MULTILINE | re.DOTALL, re.VERBOSE, re.ASCII]))
def test_any_pattern_matches_as_re_compiles_it(pieces: list[str], flags: int) -> None:
    source = "".join(pieces)
    try:
        expected = re.compile(source, flags)
    except re.error:
        with pytest.raises(re.error):
            regex_cache._compiled(source, flags)
        return
    stored = regex_cache._compiled(source, flags)
    assert stored is not None
    import _sre

    assert _sre.compile(source, *stored) == expected


def test_the_file_holds_at_most_max_entries(fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regex_cache._FILE, "limit", 5)
    patterns = [regex_cache.compile(rf"item{n}\d") for n in range(12)]
    assert [p.pattern for p in patterns] == [rf"item{n}\d" for n in range(12)]  # compiled all the same
    _reloaded_from_disk()
    assert len(regex_cache._load()) == 5


def test_a_damaged_or_unwritable_cache_only_costs_the_compilation(
        fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh_cache.mkdir(parents=True)
    regex_cache.cache_file().write_bytes(b"\x00not marshal")
    assert regex_cache.compile(r"(\d+) days") == re.compile(r"(\d+) days")
    regex_cache._load()[(r"(\d+) weeks", 0)] = (32, [1, 2, 3], 0, {}, (None,))  # code _sre rejects
    assert regex_cache.compile(r"(\d+) weeks") == re.compile(r"(\d+) weeks")
    blocked = fresh_cache / "a-file"
    blocked.write_bytes(b"")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # its directory cannot be made: skipped, not an error
    regex_cache.save()
    assert not (blocked / "stream-guard").exists()


def test_a_python_whose_compiler_steps_differ_compiles_by_re(
        fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    monkeypatch.setattr(regex_cache, "_compiler", types.SimpleNamespace())  # no `_code` here; re keeps its own
    assert regex_cache.compile(r"(?P<n>\d+) days?") == re.compile(r"(?P<n>\d+) days?")
    with pytest.raises(re.error):  # a pattern re rejects is still rejected
        regex_cache.compile(r"(unclosed")
    assert not regex_cache._load()  # nothing stored


def test_bytes_and_debug_patterns_are_compiled_by_re(fresh_cache: Path) -> None:
    assert regex_cache._compiled(r"\d", re.DEBUG) is None
    assert regex_cache.compile(r"\d+", re.IGNORECASE) == re.compile(r"\d+", re.IGNORECASE)


def test_the_file_is_named_for_this_interpreter_and_regex_engine() -> None:
    import _sre

    name = regex_cache.cache_file().name
    assert f"{sys.version_info[0]}{sys.version_info[1]}{sys.version_info[2]}" in name
    assert str(_sre.MAGIC) in name


def test_re_compile_routed_through_the_cache_within_the_block_only(fresh_cache: Path) -> None:
    import importlib

    import fractions  # compiles a pattern when imported: imported again within the block

    standard = re.compile
    try:
        with regex_cache.routing_re_compile():
            assert re.compile is not standard
            with regex_cache.routing_re_compile():  # nested: the outer block keeps routing
                pass
            assert re.compile(r"(?P<n>\d+) days?", re.I) == standard(r"(?P<n>\d+) days?", re.I)
            assert re.compile(rb"\d+") == standard(rb"\d+")  # bytes: the standard library's own
            compiled = re.compile(r"x+")
            assert re.compile(compiled) is compiled
            with pytest.raises(re.error):
                re.compile(r"(unclosed")
            del sys.modules["fractions"]
            again = importlib.import_module("fractions")
    finally:
        sys.modules["fractions"] = fractions
    assert re.compile is standard
    format_ = again._RATIONAL_FORMAT  # type: ignore[attr-defined]
    assert format_ == fractions._RATIONAL_FORMAT  # type: ignore[attr-defined]
    assert (format_.pattern, format_.flags & ~re.UNICODE) in regex_cache._load()  # it came through the cache


def test_a_full_file_makes_room_for_what_this_process_uses(fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regex_cache._FILE, "limit", 5)
    for n in range(5):  # an earlier release's patterns fill the file
        regex_cache.compile(rf"old{n}\d")
    _reloaded_from_disk()
    regex_cache.compile(r"old0\d")  # still compiled by this release: kept
    regex_cache.compile(r"new\d")  # one the full file lacks: the file keeps what this process used
    _reloaded_from_disk()
    assert [pattern for pattern, _ in regex_cache._load()] == [r"old0\d", r"new\d"]


_ROUTED_AT_IMPORT = """
import sys
from stream_guard.text import regex_cache
from stream_guard.text.cache_file import CacheFile
with regex_cache.routing_re_compile():
    import stream_guard.cli.check
print(sorted(pattern for pattern, _ in regex_cache._load()))
"""


def test_the_patterns_compiled_at_import_are_the_same_text_whatever_the_string_hashing(tmp_path: Path) -> None:
    """A pattern joined from a set in its iteration order is another text in each process: one more entry in the
    file per start-up, until the file is full (test_a_full_file_makes_room_for_what_this_process_uses)."""
    import os
    import subprocess

    def routed(seed: str) -> str:
        env = {**os.environ, "PYTHONHASHSEED": seed, "XDG_CACHE_HOME": str(tmp_path / seed)}
        return subprocess.run([sys.executable, "-c", _ROUTED_AT_IMPORT], env=env, check=True, capture_output=True,
                              text=True).stdout

    assert routed("1") == routed("2") == routed("3")
