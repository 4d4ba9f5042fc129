"""Every conversion factor of the quantity reader, checked against pint (a test oracle, never used at runtime)."""

from __future__ import annotations

import pint
import pytest

from stream_guard.text.quantities import UNITS, extract_quantities

UREG = pint.UnitRegistry()

# Our normalised unit -> the pint unit it is expressed in.
BASES = {
    "day": "day",
    "kg": "kilogram",
    "m": "meter",
    "l": "liter",
    "gb": "gigabyte",
    "mbps": "megabit / second",
    "kw": "kilowatt",
    "kwh": "kilowatt_hour",
    "tsp": "teaspoon",
    "kcal": "kilocalorie",
    "m/day": "meter / day",
}
# Each word of the table -> how pint spells it. Where a word means several sizes ("ton"), all of them.
PINT_NAMES: dict[str, tuple[str, ...]] = {
    **{w: ("second",) for w in "second seconds sec secs".split()},
    **{w: ("minute",) for w in "minute minutes min mins".split()},
    **{w: ("hour",) for w in "hour hours hr hrs".split()},
    **{w: ("day",) for w in "day days".split()},
    **{w: ("week",) for w in "week weeks wk wks".split()},
    **{w: ("fortnight",) for w in "fortnight fortnights".split()},
    **{w: ("month",) for w in "month months mo mos".split()},
    **{w: ("year", "julian_year") for w in "year years yr yrs".split()},
    **{w: ("10 * year",) for w in "decade decades".split()},  # pint's "decade" is a logarithmic unit
    **{w: ("century",) for w in "century centuries".split()},
    **{w: ("kilobyte",) for w in "kb kilobyte kilobytes".split()},
    **{w: ("megabyte",) for w in "mb megabyte megabytes".split()},
    **{w: ("gigabyte",) for w in "gb gigabyte gigabytes gig gigs".split()},
    **{w: ("terabyte",) for w in "tb terabyte terabytes".split()},
    **{w: ("petabyte",) for w in "pb petabyte petabytes".split()},
    "kbps": ("kilobit / second",),
    "mbps": ("megabit / second",),
    "gbps": ("gigabit / second",),
    **{w: ("microgram",) for w in "mcg µg ug microgram micrograms".split()},
    **{w: ("milligram",) for w in "mg milligram milligrams".split()},
    **{w: ("gram",) for w in "g gram grams".split()},
    **{w: ("kilogram",) for w in "kg kgs kilogram kilograms kilo kilos".split()},
    **{w: ("pound",) for w in "lb lbs pound pounds".split()},
    **{w: ("ounce",) for w in "oz ounce ounces".split()},
    **{w: ("metric_ton",) for w in "tonne tonnes".split()},
    **{w: ("ton", "metric_ton", "long_ton") for w in "ton tons".split()},
    **{w: ("millimeter",) for w in "mm millimeter millimeters millimetre millimetres".split()},
    **{w: ("centimeter",) for w in "cm centimeter centimeters centimetre centimetres".split()},
    **{w: ("meter",) for w in "meter meters metre metres".split()},
    **{w: ("kilometer",) for w in "km kms kilometer kilometers kilometre kilometres".split()},
    **{w: ("mile",) for w in "mile miles".split()},
    **{w: ("foot",) for w in "ft foot feet".split()},
    **{w: ("inch",) for w in "inch inches".split()},
    **{w: ("yard",) for w in "yard yards".split()},
    **{w: ("milliliter",) for w in "ml milliliter milliliters millilitre millilitres".split()},
    **{w: ("deciliter",) for w in "dl deciliter deciliters decilitre decilitres".split()},
    **{w: ("liter",) for w in "liter liters litre litres".split()},
    **{w: ("gallon",) for w in "gallon gallons gal".split()},  # the US gallon, as US-English answers mean
    **{w: ("teaspoon",) for w in "teaspoon teaspoons tsp".split()},
    **{w: ("tablespoon",) for w in "tablespoon tablespoons tbsp".split()},
    "mph": ("mile / hour",),
    **{w: ("kilometer / hour",) for w in "kph kmh".split()},
    **{w: ("kilocalorie",) for w in "calorie calories kcal".split()},  # a food "calorie" is a kilocalorie
    **{w: ("kilowatt",) for w in "kw kilowatt kilowatts".split()},
    "kwh": ("kilowatt_hour",),
    **{w: ("megawatt",) for w in "mw megawatt megawatts".split()},
}
# Units that are counts or currencies rather than physical measures: nothing for pint to convert.
NOT_PHYSICAL = frozenset("night percent usd eur gbp jpy inr times bp cup".split())


def _pint_factor(name: str, base: str) -> float:
    return float(UREG.parse_expression(name).to(base).magnitude)


def test_every_unit_word_has_an_oracle_or_is_not_physical() -> None:
    missing = sorted(w for w, u in UNITS.items() if u.unit not in NOT_PHYSICAL and w not in PINT_NAMES)
    assert missing == []
    assert {u.unit for w, u in UNITS.items() if w in PINT_NAMES} <= set(BASES)


@pytest.mark.parametrize("word", sorted(PINT_NAMES))
def test_conversion_factor_matches_pint(word: str) -> None:
    unit = UNITS[word]
    base = BASES[unit.unit]
    factors = [_pint_factor(name, base) for name in PINT_NAMES[word]]
    if unit.slack is None:
        assert factors == [pytest.approx(unit.factor, rel=1e-6)] * len(factors)
    else:
        # Calendar months and years, and "ton": every size the word can mean lies within the slack, and the
        # nominal factor too.
        low, high = unit.slack
        for factor in [*factors, unit.factor]:
            assert low * (1 - 1e-9) <= factor <= high * (1 + 1e-9)


@pytest.mark.parametrize(
    ("text", "pint_expression", "base"),
    [
        ("drove at 100 km/h", "100 kilometer / hour", "meter / day"),
        ("drove at 100 kmh", "100 kilometer / hour", "meter / day"),
        ("drove at 62 mph", "62 mile / hour", "meter / day"),
        ("drove at 62 miles per hour", "62 mile / hour", "meter / day"),
        ("ran at 10 m/s", "10 meter / second", "meter / day"),
        ("a dose of 0.5 mg/kg", "0.5 milligram / kilogram", "kilogram / kilogram"),
        ("take 5 mg per day", "5 milligram / day", "kilogram / day"),
        ("glucose of 90 mg/dL", "90 milligram / deciliter", "kilogram / liter"),
        ("flows at 2 liters per minute", "2 liter / minute", "liter / day"),
    ],
)
def test_rates_convert_as_pint_does(text: str, pint_expression: str, base: str) -> None:
    (q,) = extract_quantities(text)
    assert q.value == pytest.approx(UREG.parse_expression(pint_expression).to(base).magnitude, rel=1e-6)
