from __future__ import annotations

import builtins
import dataclasses
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest

from stream_guard.text import generated_code
from tests.support.cache_files import own_cache_file


@pytest.fixture()
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache directory of this test's own; the process's cache as it was afterwards."""
    yield from own_cache_file(generated_code, ".code-", tmp_path, monkeypatch)


def _classes() -> list[type]:
    """Dataclasses of every kind whose methods dataclasses writes: defaults, factories, frozen, ordered, slots,
    keyword-only, a post-init, init-only variables, a class variable."""

    @dataclasses.dataclass
    class Plain:
        name: str
        count: int = 0
        tags: list[str] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True, order=True, slots=True)
    class Frozen:
        key: str
        weight: float = 1.0

    @dataclasses.dataclass(kw_only=True, eq=False, unsafe_hash=False)
    class Keywords:
        limit: int
        label: typing.Optional[str] = None
        scale: dataclasses.InitVar[float] = 1.0
        kind: typing.ClassVar[str] = "k"

        def __post_init__(self, scale: float) -> None:
            self.limit = int(self.limit * scale)

    return [Plain, Frozen, Keywords]


_METHODS = ("__init__", "__repr__", "__eq__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__setattr__",
            "__delattr__", "__getstate__", "__setstate__")


def _codes(classes: list[type]) -> list[tuple[str, str, Any]]:
    return [(cls.__name__, name, getattr(vars(cls).get(name), "__code__", None))
            for cls in classes for name in _METHODS]


def test_a_dataclass_gets_the_methods_it_gets_without_the_cache(fresh_cache: Path) -> None:
    plain = _classes()
    with generated_code.compiled_once():
        first = _classes()
    with generated_code.compiled_once():
        again = _classes()  # served from the cache this time
    generated_code.save()
    generated_code._reset_for_tests()
    with generated_code.compiled_once():
        from_disk = _classes()
    expected = _codes(plain)
    assert again[0].__init__.__code__ is first[0].__init__.__code__  # not compiled again: the same code object
    assert plain[0].__init__.__code__ is not first[0].__init__.__code__
    assert sum(code is not None for *_, code in expected) >= 10
    for served in (first, again, from_disk):
        # Code objects compare their bytecode, constants, names, flags, line table: equal means the same function.
        assert _codes(served) == expected
    a, b = from_disk[1]("x"), from_disk[1]("y", 2.0)
    assert a < b and a == from_disk[1]("x") and hash(a) == hash(from_disk[1]("x"))
    assert repr(from_disk[0]("n")).endswith(".Plain(name='n', count=0, tags=[])")
    assert from_disk[2](limit=3, scale=2.0).limit == 6


def test_a_forward_reference_compiles_to_what_typing_compiles(fresh_cache: Path) -> None:
    texts = ["list[int]", "typing.Optional['Plain']", "dict[str, tuple[int, ...]]"]
    expected = [typing.ForwardRef(text).__forward_code__ for text in texts]
    with generated_code.compiled_once():
        served = [typing.ForwardRef(text).__forward_code__ for text in texts]
        again = [typing.ForwardRef(text).__forward_code__ for text in texts]
    assert served == expected and all(a is b for a, b in zip(served, again))
    with pytest.raises(SyntaxError):  # what typing reports for a text that is no expression, as before
        with generated_code.compiled_once():
            typing.ForwardRef("not an expression!")


def test_the_routing_lasts_as_long_as_the_outermost_block(fresh_cache: Path) -> None:
    assert "exec" not in vars(dataclasses) and "compile" not in vars(typing)
    with generated_code.compiled_once():
        with generated_code.compiled_once():
            assert vars(dataclasses)["exec"] is generated_code._exec
        assert vars(typing)["compile"] is generated_code._compile
    assert "exec" not in vars(dataclasses) and "compile" not in vars(typing)


def test_calls_the_cache_does_not_serve_go_to_the_builtins(fresh_cache: Path) -> None:
    namespace: dict[str, Any] = {}
    generated_code._exec("x = 1", namespace)  # globals alone
    code = builtins.compile("y = 2", "<string>", "exec")
    generated_code._exec(code, namespace, namespace)  # already compiled
    assert namespace["x"] == 1 and namespace["y"] == 2
    assert type(generated_code._compile("1 + 2", "<string>", "eval", flags=0x400)).__name__ == "Expression"  # an AST
    # Compiled as dataclasses' own `exec` compiles it: no __future__ flags of the caller (this module has one).
    assert generated_code._load() == {("x = 1", "<string>", "exec"): builtins.compile("x = 1", "<string>", "exec",
                                                                                       dont_inherit=True)}


def test_a_damaged_or_unwritable_file_only_costs_the_compilation(fresh_cache: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fresh_cache.mkdir(parents=True)
    generated_code.cache_file().write_bytes(b"\x00not marshal")
    expected: Callable[..., Any] = _classes()[0].__init__
    with generated_code.compiled_once():
        assert _classes()[0].__init__.__code__ == expected.__code__
    blocked = fresh_cache / "a-file"
    blocked.write_bytes(b"")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # its directory cannot be made: skipped, not an error
    generated_code.save()
    assert not (blocked / "stream-guard").exists()


def test_a_full_file_makes_room_for_what_this_process_uses(fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generated_code._FILE, "limit", 3)
    for n in range(3):  # an earlier release's texts fill the file
        generated_code.compiled(f"old{n}", "<string>", "eval")
    generated_code.save()
    generated_code._reset_for_tests()
    generated_code.compiled("old0", "<string>", "eval")  # still asked for: kept
    generated_code.compiled("new", "<string>", "eval")  # one the full file lacks: it keeps what this process used
    generated_code.save()
    generated_code._reset_for_tests()
    assert [source for source, *_ in generated_code._load()] == ["old0", "new"]
