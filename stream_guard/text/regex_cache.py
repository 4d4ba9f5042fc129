"""Regular expressions compiled once per Python version, kept on disk between runs.

Compiling a pattern is mostly pure Python (`re._parser` parses it, `re._compiler` emits its code); matching is
C. The patterns every start-up compiles (spaCy's tokenizer affixes, the claim reader's) cost about a tenth of a
second of CPU per process, which a run that judges one event pays in full. `compile` keeps what the compiler
emitted (the code list, group names and flags) in a file under the user's cache directory and builds the
pattern from it with `_sre.compile`, the call `re.compile` itself ends with: the same pattern object, equal to
`re.compile`'s (a pattern's equality compares its source, flags and code; tests/stream_guard/text/
test_regex_cache.py checks it for every pattern routed here).

The file is named for the interpreter's version and the regex engine's `MAGIC`, so another Python never reads
it. Where this interpreter lacks the private compiler steps used here (or they changed), or the cache cannot be
read or written, `compile` is `re.compile`. Only fixed patterns (module constants, spaCy's language data) come here:
the file holds at most `MAX_ENTRIES` patterns.
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from stream_guard.text.cache_file import CacheFile

try:  # CPython's own compiler steps (3.11+); without them every pattern is compiled by re.compile
    import _sre
    from re import _compiler, _parser
except ImportError:  # pragma: no cover - another interpreter
    _sre = None  # type: ignore[assignment]

MAX_ENTRIES = 1024
_RE_COMPILE = re.compile  # the standard library's, whatever `routing_re_compile` puts in its place meanwhile
_FORMAT = 1  # bump when what is stored per pattern changes

# (pattern, flags) -> (flags after parsing, code, groups - 1, group index, index group)
_Compiled = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]


def cache_dir() -> Path:
    """Where the file lives: $XDG_CACHE_HOME/stream-guard, else ~/.cache/stream-guard. (Not a STREAM_GUARD_
    variable: those are the configuration's, which rejects one it does not know.)"""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "stream-guard"


def cache_file() -> Path:
    version = "".join(str(part) for part in sys.version_info[:3])
    return cache_dir() / f"regex-{sys.implementation.name}{version}-{getattr(_sre, 'MAGIC', 0)}-v{_FORMAT}.marshal"


# (pattern, flags) -> what the compiler emitted for it
_FILE: CacheFile[tuple[str, int], _Compiled] = CacheFile(cache_file, MAX_ENTRIES, prefix=".regex-")


def compile(pattern: str, flags: int = 0) -> re.Pattern[str]:  # noqa: A001 - named for what it stands in for
    """`re.compile(pattern, flags)` for a str pattern, built from the cached compiler output when there is one."""
    flags = int(flags)
    if _sre is None:
        return _RE_COMPILE(pattern, flags)
    entries = _FILE.entries()
    key = (pattern, flags)
    stored = entries.get(key)
    if stored is not None:
        try:
            built = _sre.compile(pattern, *stored)
            _FILE.used.add(key)
            return built  # type: ignore[no-any-return]
        except (TypeError, ValueError, RuntimeError):  # not what this engine wrote (_sre checks the code)
            del entries[key]
    try:
        stored = _compiled(pattern, flags)
        built = _sre.compile(pattern, *stored) if stored is not None else None
    except (AttributeError, TypeError):  # a Python whose private compiler steps differ: its own re.compile
        stored = built = None
    if built is None:
        return _RE_COMPILE(pattern, flags)
    _FILE.add(key, stored)
    return built  # type: ignore[no-any-return]


@contextmanager
def routing_re_compile() -> Iterator[None]:
    """Within: `re.compile` of a str pattern is `compile`. For imports (spaCy's, which imports thinc, pydantic,
    packaging and more, and the command's), whose `re.compile` calls are the modules' fixed patterns, compiled
    once per Python version instead of on every start-up (spaCy's URL pattern alone is about 12 ms). Anything
    else (bytes, a compiled pattern, a call after the block) goes to the standard library's `re.compile`."""
    if _sre is None or re.compile is not _RE_COMPILE:  # not this interpreter's, or another block is routing
        yield
        return
    re.compile = _compile_routed  # type: ignore[assignment]
    try:
        yield
    finally:
        if re.compile is _compile_routed:
            re.compile = _RE_COMPILE


def _compile_routed(pattern: Any, flags: int = 0) -> re.Pattern[Any]:
    return compile(pattern, flags) if type(pattern) is str else _RE_COMPILE(pattern, flags)


def _compiled(pattern: str, flags: int) -> _Compiled | None:
    """What `re._compiler.compile` passes to `_sre.compile` (the same steps, in the same order); None when this
    pattern asks for something the cache does not keep (bytes, debug output, the deprecated template flag)."""
    if not isinstance(pattern, str) or flags & (re.DEBUG | re.TEMPLATE):
        return None
    parsed = _parser.parse(pattern, flags)
    code = _compiler._code(parsed, flags)
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    # The opcodes are int subclasses (named constants), which marshal does not write: stored as plain ints.
    return (int(flags | parsed.state.flags), [int(op) for op in code], int(parsed.state.groups - 1), groupindex,
            tuple(indexgroup))


def _load() -> dict[tuple[str, int], _Compiled]:
    return _FILE.entries()


def save() -> None:
    """Write what this process compiled (with what it read); also done at exit."""
    _FILE.save()


def _reset_for_tests() -> None:
    """Forget what was read, so a test can point the cache elsewhere."""
    _FILE.reset()
