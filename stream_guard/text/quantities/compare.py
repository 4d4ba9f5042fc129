"""How two quantities compare: whether they measure the same thing, whether they state the same value (ranges,
rounding and conversions within their tolerances), and whether a source's value bears out an answer's.

Two readings, for two questions:

- `same_value(a, b)`: the two state one value (either way round). "30 days" anywhere in a source attests "30
  days" in an answer; "up to 10" and "at least 10" are not the same value.
- `bears_out(source, answer)`: the source's value makes the answer's true, read about the same subject (the
  caller checks the subject). The answer's values must lie inside the source's, never the reverse: "7
  minutes" inside "6 to 9 minutes" is borne out, "6 to 18 minutes" is not; a limit is a value of its own ("up
  to 30 days" bears out "30 days" and "up to 30 days", not "14 days"), and a bound in the answer is borne out
  by a stated value that meets it ("more than 100" by "120").
- `values_agree(a, b)`: whether both can be true at once (bounds widened either way); used where two context
  values are weighed against each other, never to support an answer.
"""

from __future__ import annotations

from stream_guard.text.quantities.bounds import APPROX, AT_LEAST, AT_MOST, BOUNDS
from stream_guard.text.quantities.quantity import Quantity

_APPROX_TOLERANCE = 0.10


_CONVERSION_TOLERANCE = 0.02  # 10 lb vs 4.5 kg: conversions are rounded when written


def comparable(a: Quantity, b: Quantity) -> bool:
    """Same dimension, and for bare counts the same counted noun (both empty counts as the same)."""
    if a.dimension != b.dimension:
        return False
    if a.unit is None:
        return (not a.counted and not b.counted) or bool(a.counted & b.counted)
    return True


def _bounds(q: Quantity, widen: bool, bound_qualifier: bool = True) -> tuple[float, float]:
    low, high = q.low, q.high
    if not widen:
        return low, high
    pad = max(q.precision, abs(high) * 1e-9)
    if q.unit in ("kg", "m", "l") or (q.unit is not None and "/" in q.unit):
        pad = max(pad, abs(high) * _CONVERSION_TOLERANCE)
    low, high = low - pad, high + pad
    if q.qualifier == APPROX:
        low, high = low * (1 - _APPROX_TOLERANCE), high * (1 + _APPROX_TOLERANCE)
    elif q.qualifier == AT_LEAST and bound_qualifier:
        high = float("inf")
    elif q.qualifier == AT_MOST and bound_qualifier:
        low = float("-inf") if q.unit is None or q.unit == "percent" else min(low, 0.0)
    return low, high


def _inside(inner: Quantity, outer: Quantity, bound_qualifier: bool = False) -> bool:
    """`inner`'s stated values lie within `outer`'s, widened by rounding (and by its bound if asked)."""
    low, high = _bounds(outer, widen=True, bound_qualifier=bound_qualifier)
    return low <= inner.low and inner.high <= high


def _opposite_bounds(a: Quantity, b: Quantity) -> bool:
    return a.qualifier in BOUNDS and b.qualifier in BOUNDS and a.qualifier != b.qualifier


def _points_agree(a: Quantity, b: Quantity) -> bool:
    """Two single values agree when one, as written, lies within the other widened by its rounding, "about" or
    calendar slack ("a month" is 28 to 31 days, one of which is 30)."""
    return _inside(a, b) or _inside(b, a)


def same_value(a: Quantity, b: Quantity) -> bool:
    """Whether `a` and `b` state one value: two ranges with the same ends, or two single values that agree;
    opposite limits on one number ("up to 10", "at least 10") are not one value, nor a range and a value."""
    if _opposite_bounds(a, b):
        return False
    a_range, b_range = a.is_range, b.is_range
    if a_range or b_range:
        return a_range and b_range and _inside(a, b) and _inside(b, a)
    return _points_agree(a, b)


def bears_out(source: Quantity, answer: Quantity) -> bool:
    """Whether what `source` states makes `answer` true (the same subject assumed): see the module doc."""
    if _opposite_bounds(source, answer):
        return False
    if source.qualifier in BOUNDS:
        return same_value(source, answer)  # a limit bears out only itself
    if answer.qualifier in BOUNDS:
        return _inside(source, answer, bound_qualifier=True)  # "more than 100" by "120"
    if source.is_range:
        return _inside(answer, source)  # "7 minutes" in "6 to 9 minutes"; never "6 to 18" in "6 to 9"
    return same_value(source, answer)


def values_agree(a: Quantity, b: Quantity) -> bool:
    """Whether two comparable quantities can both be true: one's stated bounds fit inside the other's
    bounds widened by rounding and qualifiers ("about", "more than", "up to")."""
    # Two bounds of the same kind ("up to 30 days" vs "up to 14 days") state different limits.
    bounded = not (a.qualifier == b.qualifier and a.qualifier in BOUNDS)
    a_low, a_high = _bounds(a, widen=False)
    b_low, b_high = _bounds(b, widen=False)
    wa_low, wa_high = _bounds(a, widen=True, bound_qualifier=bounded)
    wb_low, wb_high = _bounds(b, widen=True, bound_qualifier=bounded)
    return (wa_low <= b_low and b_high <= wa_high) or (wb_low <= a_low and a_high <= wb_high)


def written_in(text: str, value: float) -> bool:
    """Whether `value` occurs in `text` in digits, with or without thousands separators. A plain substring
    test (so "131" is also found inside "1310"): it only ever makes the checks more conservative."""
    if value != value or value in (float("inf"), float("-inf")):
        return False
    if value == int(value) and abs(value) < 1e15:
        whole = int(value)
        return str(whole) in text or (abs(whole) >= 1000 and f"{whole:,}" in text)
    return f"{value:g}" in text
