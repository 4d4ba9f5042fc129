"""A dict kept between runs in a marshal file (stream_guard/text/cache_file.py); its two users' tests
(test_regex_cache.py, test_generated_code.py) check what each keeps in it."""

from __future__ import annotations

from pathlib import Path

from stream_guard.text.cache_file import CacheFile


def test_a_file_is_written_by_a_process_that_added_and_read_back_by_the_next(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "things.marshal"
    first: CacheFile[str, int] = CacheFile(lambda: path, limit=10, prefix=".things-")
    assert first.entries() == {}  # no file yet
    first.save()
    assert not path.exists()  # nothing added: nothing written
    first.add("a", 1)
    first.save()
    second: CacheFile[str, int] = CacheFile(lambda: path, limit=10, prefix=".things-")
    assert second.entries() == {"a": 1} and not second.added
    assert not list(path.parent.glob(".things-*"))  # no temporary file left behind


def test_a_file_over_its_limit_keeps_what_the_writing_process_used(tmp_path: Path) -> None:
    path = tmp_path / "things.marshal"
    old: CacheFile[str, int] = CacheFile(lambda: path, limit=3, prefix=".things-")
    for n in range(3):
        old.add(f"old{n}", n)
    old.save()
    new: CacheFile[str, int] = CacheFile(lambda: path, limit=3, prefix=".things-")
    new.used.add("old1")  # read and used by this process
    new.add("new", 9)
    new.save()
    assert CacheFile(lambda: path, limit=3, prefix=".things-").entries() == {"old1": 1, "new": 9}


def test_a_damaged_or_unwritable_file_means_an_empty_cache(tmp_path: Path) -> None:
    path = tmp_path / "things.marshal"
    path.write_bytes(b"\x00not marshal")
    cache: CacheFile[str, int] = CacheFile(lambda: path, limit=3, prefix=".things-")
    assert cache.entries() == {}
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    unwritable: CacheFile[str, int] = CacheFile(lambda: blocked / "things.marshal", limit=3, prefix=".things-")
    unwritable.add("a", 1)
    unwritable.save()  # its directory cannot be made: skipped, not an error
    assert blocked.read_text() == ""
