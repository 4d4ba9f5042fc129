"""How the configuration model is declared and checked: constraints beside each field, values read from a TOML
file or the environment, errors that name the key path, the value and the reason.

A section is a frozen msgspec Struct whose fields carry their rules in `Annotated` metadata:

    window_size: Annotated[int, at_least(1), Doc("drift history kept per question")] = 50

`check(obj)` (every section's `__post_init__`) runs each field's rules in declaration order, then the
relations between keys (relations.py, the one table of cross-key rules). `build(cls, layers)` reads
mappings of text or TOML values into a section, lowest precedence first. A value that cannot work raises
ConfigError: `stream.partitions: must be at least 1, got 0`.
"""

from __future__ import annotations

import math
import re
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any, Callable, ClassVar, Literal, Mapping, Sequence, Union, get_args, get_origin

import msgspec

from stream_guard.config.relations import RELATIONS
from stream_guard.errors import ConfigurationError

_MISSING: Any = object()


class ConfigError(ConfigurationError):
    """A configuration value that cannot work: `key` is its path ("limits.max_chunks", "stream.partitions"),
    `value` what was given (when one was), `reason` why it cannot work."""

    def __init__(self, key: str, reason: str, value: Any = _MISSING) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason
        self.value = None if value is _MISSING else value

    def cli_message(self) -> str:
        return f"bad configuration: {self}"


@dataclass(frozen=True)
class Check:
    """A rule on one field's value: `test(value)` must hold, else the field is refused with `reason` and the
    value (", got <value>"). `reason` may be a function of the value, for a reason that names its parts."""

    test: Callable[[Any], bool]
    reason: str | Callable[[Any], str]
    rule: str | None = None  # how the docs state it, when `reason` is a function

    def explain(self, value: Any) -> str:
        text = self.reason(value) if callable(self.reason) else self.reason
        return f"{text}, got {value!r}"


@dataclass(frozen=True)
class Doc:
    """What a key does, for the generated key tables (docs/CONFIG.md)."""

    text: str


@dataclass(frozen=True)
class Parse:
    """How a key's value is read from a file or the environment when plain type conversion is not enough
    (a token hash given as text or a list): `read(key, raw) -> value`, raising ConfigError."""

    read: Callable[[str, Any], Any]


@dataclass(frozen=True)
class Secret:
    """A credential: never shown in a repr or a log, and set from the environment (a Kubernetes Secret)."""


@dataclass(frozen=True)
class EnvList:
    """Read from the environment as a comma-separated list (the file takes a TOML list)."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- rules used beside the fields ---------------------------------------------------------------------------


def between(low: float, high: float, reason: str | None = None) -> Check:
    return Check(lambda v: _is_number(v) and low <= v <= high, reason or f"must be a number from {low:g} to {high:g}")


def count_at_least(low: int, reason: str | None = None) -> Check:
    return Check(lambda v: _is_count(v) and v >= low, reason or f"must be an integer of at least {low}")


def count_between(low: int, high: int, reason: str | None = None) -> Check:
    """An integer in [low, high]: the upper bound catches a unit mistake (milliseconds given as microseconds)
    before it turns into a worker that never becomes ready."""
    return Check(lambda v: _is_count(v) and low <= v <= high, reason or f"must be an integer of at least {low} and at most {high}")


def above(low: float, high: float, reason: str | None = None) -> Check:
    """A number in (low, high]."""
    return Check(lambda v: _is_number(v) and low < v <= high, reason or f"must be above {low:g} and at most {high:g}")


def at_least(low: float, reason: str | None = None) -> Check:
    return Check(lambda v: _is_number(v) and v >= low, reason or f"must be at least {low:g}")


def positive(reason: str = "must be positive") -> Check:
    return Check(lambda v: _is_number(v) and v > 0, reason)


def non_negative(reason: str = "must not be negative") -> Check:
    return Check(lambda v: _is_number(v) and v >= 0, reason)


def one_of(*choices: str) -> Check:
    return Check(lambda v: v in choices, f"must be one of {', '.join(choices)}")


NON_EMPTY_TEXT = Check(lambda v: isinstance(v, str) and bool(v.strip()), "must be non-empty text")
BOOLEAN = Check(lambda v: isinstance(v, bool), "must be true or false")
TEXT = Check(lambda v: isinstance(v, str), "must be text")


# --- the fields of a section --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """One field of a section as the loader and the docs see it."""

    name: str  # the attribute
    key: str  # the key in a file (and, upper-cased, in the environment)
    type: Any  # without its Annotated metadata
    default: Any
    checks: tuple[Check, ...]
    doc: str
    parse: Parse | None
    env_list: bool
    secret: bool

    @property
    def section(self) -> type[msgspec.Struct] | None:
        """The nested section type (`[detector.limits]`), or None for a value."""
        return self.type if isinstance(self.type, type) and issubclass(self.type, msgspec.Struct) else None


@cache
def specs(cls: type[msgspec.Struct]) -> tuple[Spec, ...]:
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for info in msgspec.structs.fields(cls):
        hint = hints[info.name]
        extras: Sequence[Any] = ()
        if get_origin(hint) is typing.Annotated:
            hint, *extras = get_args(hint)
        default = info.default if info.default is not msgspec.NODEFAULT else (
            info.default_factory() if info.default_factory is not msgspec.NODEFAULT else _MISSING)
        out.append(Spec(
            name=info.name, key=info.encode_name, type=hint, default=default,
            checks=tuple(e for e in extras if isinstance(e, Check)),
            doc=next((e.text for e in extras if isinstance(e, Doc)), ""),
            parse=next((e for e in extras if isinstance(e, Parse)), None),
            env_list=any(isinstance(e, EnvList) for e in extras),
            secret=any(isinstance(e, Secret) for e in extras)))
    return tuple(out)


def optional(kind: Any) -> Any:
    """T for `T | None`, else None."""
    if get_origin(kind) in (Union, getattr(__import__("types"), "UnionType")):
        args = [a for a in get_args(kind) if a is not type(None)]
        if len(args) == 1 and len(get_args(kind)) == 2:
            return args[0]
    return None


# --- checking -----------------------------------------------------------------------------------------------


def check(obj: msgspec.Struct, prefix: str = "") -> None:
    """Every field's rules, in declaration order, then the relations between keys; ConfigError names the first
    that fails. Nested sections were checked when they were built."""
    for spec in specs(type(obj)):
        value = getattr(obj, spec.name)
        if spec.section is not None:
            if not isinstance(value, spec.section):
                raise ConfigError(prefix + spec.key, f"must be {getattr(spec.section, 'TABLE', 'a table')}, "
                                                     f"got {type(value).__name__}", value)
            continue
        for rule in spec.checks:
            if not rule.test(value):
                raise ConfigError(prefix + spec.key, rule.explain(value), value)
    check_relations(obj, prefix)


def check_relations(obj: Any, prefix: str = "") -> None:
    """The rules between keys that relations.py lists for `obj`'s type (a section, or the whole Config)."""
    for relation in RELATIONS.get(type(obj).__name__, ()):
        problem = relation(obj)
        if problem is not None:
            key, reason = problem
            raise ConfigError(prefix + key, reason, getattr_path(obj, key))


def getattr_path(obj: Any, key: str) -> Any:
    """The value at a dotted key path (`limits.max_event_bytes`), for the error; None when there is none."""
    value = obj
    for part in key.split("."):
        value = getattr(value, part, None)
    return value


class Section(msgspec.Struct, frozen=True):
    """A section of the configuration: checked whenever one is built (in code, from a file, from the
    environment), so a bad value fails at start with its key, never on every event later."""

    # In messages: "unknown <WHAT>(s): ..."; a nested section's table, "expected <TABLE>".
    WHAT: ClassVar[str] = "key"
    TABLE: ClassVar[str] = "a table"
    # Where the section's keys sit in messages ("stream." for [stream]); nested sections add their own key.
    PREFIX: ClassVar[str] = ""

    def __post_init__(self) -> None:
        check(self, self.PREFIX)

    def __repr__(self) -> str:
        shown = ", ".join(f"{spec.name}={'***' if spec.secret and getattr(self, spec.name) else getattr(self, spec.name)!r}"
                          for spec in specs(type(self)))
        return f"{type(self).__name__}({shown})"

    def validate(self) -> Any:
        """Check this section again (it was checked when built); returns it."""
        check(self, self.PREFIX)
        return self

    def with_overrides(self, **overrides: Any) -> Any:
        """A copy with `overrides` (attribute names and typed values), checked again."""
        return msgspec.structs.replace(self, **overrides)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


# --- reading values -----------------------------------------------------------------------------------------


def coerce(key: str, kind: Any, value: Any) -> Any:
    """A value from a file (typed) or the environment (text) as `kind`. Either is accepted; anything ambiguous
    is refused (an int where a float is wanted is fine; a bool where a number is, is not)."""
    text = value.strip() if isinstance(value, str) else None
    inner = optional(kind)
    if inner is not None:
        return None if value is None or text == "" else coerce(key, inner, value)
    if kind is bool:
        if isinstance(value, bool):
            return value
        if text is not None and text.lower() in ("1", "true", "yes", "on"):
            return True
        if text is not None and text.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(key, f"expected a boolean, got {value!r}", value)
    if kind is int:
        if _is_count(value):
            return value
        if text is not None and re.fullmatch(r"[+-]?\d+", text.replace("_", "")):
            return int(text.replace("_", ""))
        raise ConfigError(key, f"expected an integer, got {value!r}", value)
    if kind is float:
        number = float(value) if _is_number(value) else None
        if number is None and text is not None:
            try:
                number = float(text)
            except ValueError:
                number = None
        if number is None or not math.isfinite(number):
            raise ConfigError(key, f"expected a finite number, got {value!r}", value)
        return number
    if kind is str or get_origin(kind) is Literal:
        if text is None:
            raise ConfigError(key, f"expected text, got {value!r}", value)
        return text
    if get_origin(kind) is tuple:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(key, f"expected a list, got {value!r}", value)
        return tuple(coerce(f"{key}[{i}]", get_args(kind)[0], item) for i, item in enumerate(value))
    raise TypeError(f"{key}: unsupported setting type {kind!r}")  # pragma: no cover - a new field's type


def build(cls: type[Any], layers: Sequence[Mapping[str, Any] | None], prefix: str = "", base: Any = None) -> Any:
    """`base` (else the section's defaults) with each layer's keys over it, lowest precedence first, the section
    checked after each layer (a bad value is refused even when a later layer would override it). Unknown keys
    are an error, never ignored; a nested section is merged key by key. A layer value that is already the
    section (a TopicNames in flags) is taken as is."""
    fields = {spec.key: spec for spec in specs(cls)}
    current = base if base is not None else cls()
    for layer in layers:
        if not layer:
            continue
        if not isinstance(layer, Mapping):
            raise ConfigError(prefix.rstrip(".") or "config", f"expected a table, got {type(layer).__name__}", layer)
        unknown = sorted(set(layer) - set(fields))
        if unknown:
            raise ConfigError(prefix + unknown[0], f"unknown {cls.WHAT}(s): {', '.join(unknown)}")
        values: dict[str, Any] = {}
        for key, raw in layer.items():
            spec = fields[key]
            if spec.section is not None:
                values[spec.name] = _nested(spec, raw, prefix + key, getattr(current, spec.name))
            elif spec.parse is not None:
                values[spec.name] = spec.parse.read(prefix + key, raw)
            else:
                values[spec.name] = coerce(prefix + key, spec.type, raw)
        current = msgspec.structs.replace(current, **values)
    return current


def _nested(spec: Spec, raw: Any, key: str, base: Any) -> Any:
    section = spec.section
    assert section is not None
    if isinstance(raw, section):
        return raw
    if not isinstance(raw, Mapping):
        raise ConfigError(key, f"expected {section.TABLE}, got {type(raw).__name__}", raw)
    try:
        return build(section, [raw], f"{key}.", base)
    except ConfigError as exc:
        # A nested section checks itself under its usual path ("monitor.rules."); here it sits at `key`
        # ("monitor.tenants.acme.rules").
        usual = section.PREFIX
        if usual and exc.key.startswith(usual) and usual != f"{key}.":
            raise ConfigError(f"{key}.{exc.key[len(usual):]}", exc.reason, exc.value) from None
        raise
