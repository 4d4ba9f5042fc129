"""Source text the standard library compiles while modules import, compiled once per Python version.

`dataclasses` writes the methods of every dataclass as Python source and compiles it (`exec` of a string: about
five functions per class), and `typing` compiles every string annotation it meets (`ForwardRef`). A start-up
that imports our modules, spaCy, thinc, pydantic and confection defines about 140 dataclasses and 1,000 forward
references: about a tenth of a PROBE run's CPU went to parsing and compiling that text, the same text on every
start-up. `compiled_once` serves those two modules' compilations from a file of code objects under the user's
cache directory (beside the regex cache: regex_cache.cache_dir), written at exit by a run that compiled
something new.

What a module gets is what it would have compiled: `compile` of the same text, file name and mode, with no
compiler flags inherited (dataclasses and typing import no `__future__` features, so their own `exec` and
`compile` inherit none: tests/stream_guard/text/test_generated_code.py compares the code objects). The file is
named for the interpreter's version and its bytecode magic number, so another Python never reads it; one that
cannot be read or written means compiling as before. At most `MAX_ENTRIES` texts are kept; a file that would hold
more keeps only what the process writing it used (text/cache_file.py).
"""

from __future__ import annotations

import builtins
import dataclasses
import importlib.util
import sys
import types
import typing
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from stream_guard.text import regex_cache
from stream_guard.text.cache_file import CacheFile

MAX_ENTRIES = 8192
_FORMAT = 1  # bump when what is stored per text changes


def cache_file() -> Path:
    version = "".join(str(part) for part in sys.version_info[:3])
    magic = importlib.util.MAGIC_NUMBER.hex()
    return regex_cache.cache_dir() / f"code-{sys.implementation.name}{version}-{magic}-v{_FORMAT}.marshal"


# (source, file name, mode) -> code
_FILE: CacheFile[tuple[str, str, str], types.CodeType] = CacheFile(cache_file, MAX_ENTRIES, prefix=".code-")


def compiled(source: str, filename: str, mode: str) -> types.CodeType:
    """`compile(source, filename, mode, dont_inherit=True)`, from the file when this text was compiled before."""
    key = (source, filename, mode)
    code = _FILE.entries().get(key)
    if code is None:
        code = builtins.compile(source, filename, mode, dont_inherit=True)
        _FILE.add(key, code)
    else:
        _FILE.used.add(key)
    return code


def _exec(source: Any, globals: Any = None, locals: Any = None, /, **kwargs: Any) -> None:  # noqa: A002
    """`exec` as dataclasses calls it, its source text compiled once; anything else is the builtin's."""
    if type(source) is str and globals is not None and not kwargs:
        source = compiled(source, "<string>", "exec")
    if locals is None:
        builtins.exec(source, globals, **kwargs)
    else:
        builtins.exec(source, globals, locals, **kwargs)


def _compile(source: Any, filename: Any, mode: Any, flags: int = 0, dont_inherit: bool = False,
             optimize: int = -1, **kwargs: Any) -> Any:
    """`compile` as typing calls it (a forward reference's text, "<string>", "eval"), once per text."""
    if type(source) is str and type(filename) is str and type(mode) is str and not flags and optimize == -1 \
            and not kwargs:
        return compiled(source, filename, mode)
    return builtins.compile(source, filename, mode, flags, dont_inherit, optimize, **kwargs)


# The modules whose calls are served, and the name each calls: a module attribute of that name shadows the builtin
# for that module's code alone.
_ROUTED = ((dataclasses, "exec", _exec), (typing, "compile", _compile))


@contextmanager
def compiled_once() -> Iterator[None]:
    """Within: dataclasses' `exec` of the methods it writes and typing's `compile` of forward references are
    `compiled`. For imports (our modules', spaCy's): their dataclasses and annotations are fixed text. Nested
    blocks leave the routing to the outermost one; a module that already has such an attribute is left alone."""
    routed = [(module, name, stand_in) for module, name, stand_in in _ROUTED if name not in vars(module)]
    for module, name, stand_in in routed:
        setattr(module, name, stand_in)
    try:
        yield
    finally:
        for module, name, _ in routed:
            vars(module).pop(name, None)


def _load() -> dict[tuple[str, str, str], types.CodeType]:
    return _FILE.entries()


def save() -> None:
    """Write what this process compiled (with what it read); also done at exit."""
    _FILE.save()


def _reset_for_tests() -> None:
    """Forget what was read, so a test can point the cache elsewhere."""
    _FILE.reset()
