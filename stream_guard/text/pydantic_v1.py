"""confection imported without pydantic's v1 API, which nothing that loads a spaCy model uses.

spaCy imports thinc, thinc imports confection, and confection's `validation` imports `pydantic.v1` (about 6% of
the CPU of a `check` that loads spaCy: pydantic's whole v1 package) for two names only: v1's `BaseModel`, to tell a
v1 model passed as a schema (`_is_pydantic_model`), and its `ValidationError`, to catch what such a model raises.
spaCy 3.8's schemas are pydantic v2 models, and thinc and spaCy import nothing of v1.

While confection is imported (`without_pydantic_v1`), `pydantic.v1` cannot be, so confection takes it for absent;
then its `BaseModel` name gets `_V1BaseModel`, which answers `issubclass` as v1's `BaseModel` would: no class is a
v1 model while `pydantic.v1.main` has not been imported (the v1 `BaseModel` is defined there), and once it has, the
real classes take both names back before the answer is given, so a v1 model is told, validated and its errors
caught as before. Only for the confection it was checked on (`CONFECTION_VERSIONS`, tests/stream_guard/text/
test_pydantic_v1.py), only when neither confection's validation nor `pydantic.v1` is imported yet: otherwise
confection is imported as it is."""

from __future__ import annotations

import importlib.metadata
import sys
from contextlib import contextmanager
from typing import Any, Iterator

CONFECTION_VERSIONS = ("1.3.",)
_V1, _V1_MAIN, _VALIDATION = "pydantic.v1", "pydantic.v1.main", "confection.validation"


class _V1BaseModel:
    """Stands for `pydantic.v1.BaseModel` in confection's validation module until `pydantic.v1` is imported."""

    def __subclasscheck__(self, cls: type) -> bool:
        if _V1_MAIN not in sys.modules:
            return False  # no v1 model can exist before the module that defines v1's BaseModel is run
        from pydantic.v1 import BaseModel, ValidationError

        validation = sys.modules[_VALIDATION]
        validation._PydanticV1BaseModel = BaseModel
        validation._PydanticV1ValidationError = ValidationError
        return issubclass(cls, BaseModel)


def _confection_checked() -> bool:
    try:
        return importlib.metadata.version("confection").startswith(CONFECTION_VERSIONS)
    except importlib.metadata.PackageNotFoundError:
        return False


@contextmanager
def without_pydantic_v1() -> Iterator[None]:
    """Within: an import of confection (spaCy's, thinc's) does not import `pydantic.v1` (module docstring)."""
    if _VALIDATION in sys.modules or _V1 in sys.modules or not _confection_checked():
        yield
        return
    sys.modules[_V1] = None  # type: ignore[assignment]  # "import pydantic.v1" raises ImportError
    try:
        yield
    finally:
        if sys.modules.get(_V1, False) is None:
            del sys.modules[_V1]
        validation: Any = sys.modules.get(_VALIDATION)
        if validation is not None and getattr(validation, "_PydanticV1BaseModel", False) is None:
            validation._PydanticV1BaseModel = _V1BaseModel()
