"""A dict of compiled things kept between runs in a file under the user's cache directory: the regex cache's
patterns (text/regex_cache.py) and the generated code's code objects (text/generated_code.py).

Read whole on first use (marshal: a few ms for a file of a thousand entries), written at exit, atomically, by a
process that added to it, and bounded: a file over its limit keeps only what the writing process used. A file that
only grew would fill up with entries no release asks for any more (an earlier release's, or one per start-up of a
text that changed with the hash seed), be read whole on every start-up, and hold none of the new ones, which would
then be compiled on every start-up. A file that cannot be read or written means compiling as before."""

from __future__ import annotations

import atexit
import marshal
import os
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


class CacheFile(Generic[_Key, _Value]):
    """The file at `path()` (a function: the cache directory follows $XDG_CACHE_HOME when it is read), holding at
    most `limit` entries once written; `prefix` names its temporary file while it is written."""

    def __init__(self, path: Callable[[], Path], limit: int, prefix: str) -> None:
        self._path = path
        self.limit = limit
        self._prefix = prefix
        self._entries: dict[_Key, _Value] | None = None
        self.used: set[_Key] = set()  # what this process read or added: kept when the file must shrink
        self.added = False

    def entries(self) -> dict[_Key, _Value]:
        if self._entries is None:
            self._entries = read_dict(self._path())
        return self._entries

    def add(self, key: _Key, value: _Value) -> None:
        """Keep `value` for `key`, to be written at exit; what is read and added in one process is bounded too."""
        entries = self.entries()
        if len(entries) < 2 * self.limit:
            entries[key] = value
            self.used.add(key)
            if not self.added:
                self.added = True
                atexit.register(self.save)

    def save(self) -> None:
        """Write what this process added (with what it read) atomically; a file that cannot be written is skipped."""
        if not self.added or self._entries is None:
            return
        self.added = False
        write_atomically(self._path(), kept(self._entries, self.used, self.limit), prefix=self._prefix)

    def reset(self) -> None:
        """Forget what was read, so a test can point the cache elsewhere."""
        self._entries, self.added = None, False
        self.used.clear()


def read_dict(path: Path) -> dict[Any, Any]:
    """The dict marshalled in `path`; empty when there is no file yet, or one another run was writing (then this
    run compiles, and writes its own at exit)."""
    try:
        with open(path, "rb") as file:
            stored = marshal.loads(file.read())  # marshal.load(file) reads in small pieces: 40 times slower
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    return stored if isinstance(stored, dict) else {}


def kept(entries: dict[_Key, _Value], used: set[_Key], limit: int) -> dict[_Key, _Value]:
    """`entries`, or when there are more than `limit` of them, only those this process used (the newest `limit`)."""
    if len(entries) <= limit:
        return entries
    keep = set([key for key in entries if key in used][-limit:])
    return {key: value for key, value in entries.items() if key in keep}


def write_atomically(target: Path, value: Any, prefix: str) -> None:
    """`value` marshalled into `target`, replacing it at once (a reader sees the old file or the new one); skipped
    when it cannot be written."""
    import tempfile  # only a run that compiled something new writes

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=prefix, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as file:
                marshal.dump(value, file)
            os.replace(temporary, target)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass
