"""cached_property without functools' lock: computed on first read, kept in the instance."""

from __future__ import annotations

import functools

import pytest

from stream_guard.text.cached_view import cached_property
from stream_guard.text.inspection import Inspection


class _NoLock:
    def __enter__(self) -> None:
        raise AssertionError("the lock was taken")

    def __exit__(self, *exc: object) -> None:
        pass


class Counted:
    def __init__(self) -> None:
        self.calls = 0

    @cached_property
    def view(self) -> tuple[int, ...]:
        self.calls += 1
        return (self.calls,)


def test_a_view_is_computed_on_first_read_and_kept_without_taking_a_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Counted.__dict__["view"], "lock", _NoLock(), raising=False)
    one, two = Counted(), Counted()
    assert one.view is one.view and one.calls == 1 and one.__dict__["view"] == (1,)
    assert two.view == (1,) and two.calls == 1  # each instance its own
    assert isinstance(Counted.__dict__["view"], functools.cached_property) and Counted.view is Counted.__dict__["view"]


def test_the_inspection_views_are_these() -> None:
    views = [v for v in vars(Inspection).values() if isinstance(v, functools.cached_property)]
    assert views and all(isinstance(v, cached_property) for v in views)


def test_without_a_name_it_refuses_as_functools_does() -> None:
    loose = cached_property(lambda self: 1)
    with pytest.raises(TypeError):
        loose.__get__(Counted())
