"""One quantity as written in a text: the value type every reader produces and every check compares."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Quantity:
    """One quantity as written in a text.

    `text` is the literal span (`source[start:end] == text`). `value` is the number in `unit` (the first
    bound for a range); `low`/`high` bound what the text claims (a range, or a calendar unit's slack).
    `unit` is the normalised unit ("day", "usd", "percent", "gb", "kg", ...) or None for a bare count,
    in which case `counted` holds the stems of the noun being counted ("1,200 users" -> {"user"}).
    `subject` holds the content stems near the value within its clause. `qualifier` is "approx",
    "at_least", "at_most" or None. `precision` is half the last written digit, scaled ("1.2 million" ->
    50,000), so a rounded figure can still agree with a precise one.
    """

    text: str
    start: int
    end: int
    value: float
    low: float
    high: float
    unit: str | None
    subject: frozenset[str] = frozenset()
    counted: frozenset[str] = frozenset()
    qualifier: str | None = None
    precision: float = 0.0
    magnitude: float = 0.0  # the written number times its scale, before unit conversion ("two weeks" -> 2)
    # A rate's numerator alone, (unit, value): "5 mg per day" -> ("kg", 5e-6). Lets the numeric check accept
    # "5 mg per day" where the context says "5 mg" without ever comparing a rate with a plain amount.
    numerator: tuple[str, float] | None = None
    # The bound or approximation words written before the value, as written up to it ("no more than "), so
    # `lead + text` is the literal phrase a finding quotes and a repair replaces; "" when there are none.
    lead: str = ""

    # Whether two numbers were written ("5 to 7 days", "$10-$20"), not one with a calendar unit's slack ("six and
    # a half months" is one value between 182 and 201.5 days, not a range).
    ranged: bool = False

    @property
    def is_range(self) -> bool:
        return self.ranged and self.high > self.low

    @property
    def dimension(self) -> str:
        """Comparison key: the unit, or "count" for bare numbers."""
        return self.unit or "count"
