"""`cached_property` without its lock: a view of an immutable object, computed on first read and kept in the
object's `__dict__`.

functools.cached_property of Python 3.11 takes a lock (one per property, for every instance) around the first
read of each instance. An event's inspection, its contradiction view and its grounding facts are new objects with
a dozen such views read once each, so the lock was taken about nine times an event; and one lock per property
serialises unrelated instances, which is why Python 3.12 dropped it. Without it, two threads reading a view first
at once may both compute it; our views are pure functions of immutable objects, so both get equal values and
one is kept. After the first read the instance's `__dict__` answers and this code never runs again (a
non-data descriptor), as with functools'.
"""

from __future__ import annotations

from functools import cached_property as _locked
from typing import Any, TypeVar

_T = TypeVar("_T")


class cached_property(_locked[_T]):  # noqa: N801: named and used as functools' is
    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        if self.attrname is None:
            raise TypeError("Cannot use cached_property instance without calling __set_name__ on it.")
        value = instance.__dict__[self.attrname] = self.func(instance)
        return value
