"""Units and money: the units a number can carry (durations in days, with a calendar unit's slack; sizes, weights,
distances, temperatures; rates per period or per unit), currencies and their signs, and reading them after a number."""

from __future__ import annotations

from stream_guard.text.quantities.numbers import _read_and_a_half
from stream_guard.text.quantities.scan import _glued, _Parse, _skip_glued, _Tok, _Unit

_MONTH_DAYS = (28.0, 31.0)


_YEAR_DAYS = (365.0, 366.0)


def _units() -> dict[str, _Unit]:
    table: dict[str, _Unit] = {}

    def add(names: str, unit: _Unit) -> None:
        for name in names.split():
            table[name] = unit

    add("second seconds sec secs", _Unit("day", 1 / 86400))
    add("minute minutes min mins", _Unit("day", 1 / 1440))
    add("hour hours hr hrs", _Unit("day", 1 / 24))
    add("day days", _Unit("day", 1.0))
    add("night nights", _Unit("night", 1.0))
    add("week weeks wk wks", _Unit("day", 7.0))
    add("fortnight fortnights", _Unit("day", 14.0))
    add("month months mo mos", _Unit("day", 30.0, _MONTH_DAYS))
    add("year years yr yrs", _Unit("day", 365.0, _YEAR_DAYS))
    add("decade decades", _Unit("day", 3652.5, (3650.0, 3653.0)))
    add("century centuries", _Unit("day", 36525.0, (36500.0, 36525.0)))
    add("percent pct", _Unit("percent", 1.0))
    add("dollar dollars usd bucks", _Unit("usd", 1.0))
    add("cent cents", _Unit("usd", 0.01))
    add("euro euros eur", _Unit("eur", 1.0))
    add("gbp sterling", _Unit("gbp", 1.0))
    add("yen jpy", _Unit("jpy", 1.0))
    add("rupee rupees inr", _Unit("inr", 1.0))
    add("kb kilobyte kilobytes", _Unit("gb", 1e-6))
    add("mb megabyte megabytes", _Unit("gb", 1e-3))
    add("gb gigabyte gigabytes gig gigs", _Unit("gb", 1.0))
    add("tb terabyte terabytes", _Unit("gb", 1e3))
    add("pb petabyte petabytes", _Unit("gb", 1e6))
    add("kbps", _Unit("mbps", 1e-3))
    add("mbps", _Unit("mbps", 1.0))
    add("gbps", _Unit("mbps", 1e3))
    add("mcg µg ug microgram micrograms", _Unit("kg", 1e-9))
    add("mg milligram milligrams", _Unit("kg", 1e-6))
    add("g gram grams", _Unit("kg", 1e-3))
    add("kg kgs kilogram kilograms kilo kilos", _Unit("kg", 1.0))
    add("lb lbs pound pounds", _Unit("kg", 0.45359237))
    add("oz ounce ounces", _Unit("kg", 0.028349523))
    add("tonne tonnes", _Unit("kg", 1000.0))
    # "ton" is 907 kg (short), 1000 kg (metric) or 1016 kg (long) depending on who writes it: any of them.
    add("ton tons", _Unit("kg", 1000.0, (907.18474, 1016.0469088)))
    add("mm millimeter millimeters millimetre millimetres", _Unit("m", 1e-3))
    add("cm centimeter centimeters centimetre centimetres", _Unit("m", 1e-2))
    add("meter meters metre metres", _Unit("m", 1.0))
    add("km kms kilometer kilometers kilometre kilometres", _Unit("m", 1e3))
    add("mile miles", _Unit("m", 1609.344))
    add("ft foot feet", _Unit("m", 0.3048))
    add("inch inches", _Unit("m", 0.0254))
    add("yard yards", _Unit("m", 0.9144))
    add("ml milliliter milliliters millilitre millilitres", _Unit("l", 1e-3))
    add("dl deciliter deciliters decilitre decilitres", _Unit("l", 0.1))
    add("liter liters litre litres", _Unit("l", 1.0))
    add("gallon gallons gal", _Unit("l", 3.785411784))
    add("cup cups", _Unit("cup", 1.0))
    add("teaspoon teaspoons tsp", _Unit("tsp", 1.0))
    add("tablespoon tablespoons tbsp", _Unit("tsp", 3.0))
    # Speeds are rates like any "km/h" or "miles per hour": metres per day, so every spelling compares.
    add("mph", _Unit("m/day", 1609.344 * 24))
    add("kph kmh", _Unit("m/day", 1000.0 * 24))
    add("calorie calories kcal", _Unit("kcal", 1.0))
    add("kw kilowatt kilowatts", _Unit("kw", 1.0))
    add("kwh", _Unit("kwh", 1.0))
    add("mw megawatt megawatts", _Unit("kw", 1e3))
    add("times", _Unit("times", 1.0))
    add("bp bps", _Unit("bp", 1.0))
    return table


UNITS: dict[str, _Unit] = _units()


DURATION_UNITS = frozenset(k for k, v in UNITS.items() if v.unit == "day")


# Glued to the digits ("10kg", "4GB", "30min"); single letters only where they cannot be a label.
_ATTACHED_UNITS: dict[str, _Unit] = {
    **{k: v for k, v in UNITS.items() if len(k) > 1},
    "h": UNITS["hour"],
    "g": UNITS["gram"],
    "m": UNITS["meter"],
    "l": UNITS["liter"],
    "x": UNITS["times"],
    "s": UNITS["second"],
    "d": UNITS["day"],
}


_DEGREE_UNITS = {"f": "degf", "fahrenheit": "degf", "c": "degc", "celsius": "degc", "centigrade": "degc"}


MONEY_UNITS = frozenset("usd eur gbp jpy inr".split())


# Units that never take a denominator: "25% per year" is a percentage, "3 days per week" a schedule.
_NOT_RATED = frozenset("percent percentage_point bp degree degc degf age_years business_day night".split())


_RATE_PERIODS = frozenset("second minute hour day week fortnight month year".split())


_PER_ADVERBS = {"hourly": "hour", "daily": "day", "weekly": "week", "monthly": "month", "yearly": "year",
                "annually": "year"}  # fmt: skip


_CURRENCY_SYMBOLS = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy", "₹": "inr"}


_CURRENCY_CODES = {"usd": "usd", "eur": "eur", "gbp": "gbp", "jpy": "jpy", "inr": "inr"}


# Between a number and its unit: "14 calendar days", "5 business days", "3 more weeks".
_UNIT_MODIFIERS = frozenset(
    "calendar full consecutive more additional extra straight whole solid long short entire".split()
)


_BUSINESS_MODIFIERS = frozenset("business working".split())


def _unit_follows(toks: list[_Tok], i: int) -> bool:
    j = i + 1
    if j < len(toks) and toks[j].text in "%":
        return True
    if j < len(toks) and (toks[j].low in _UNIT_MODIFIERS or toks[j].low in _BUSINESS_MODIFIERS):
        j += 1
    return j < len(toks) and toks[j].low in UNITS and toks[j].low != "times"


def _read_currency_prefix(toks: list[_Tok], i: int, parse: _Parse) -> None:
    if i == 0:
        return
    prev = toks[i - 1]
    if prev.text in _CURRENCY_SYMBOLS:
        parse.currency = _CURRENCY_SYMBOLS[prev.text]
        parse.first = i - 1
        # "US$10", "A$10": the letters before the symbol belong to the literal span.
        if i > 1 and _glued(toks[i - 2], prev) and toks[i - 2].text.isalpha() and toks[i - 2].text.isupper():
            parse.first = i - 2
    elif prev.low in _CURRENCY_CODES and prev.text.isupper():
        parse.currency = _CURRENCY_CODES[prev.low]
        parse.first = i - 1


def _read_compound(toks: list[_Tok], i: int, parse: _Parse) -> _Parse | int | None:
    """"30-day", "5-year-old", "12-member": a number glued by a hyphen to a word."""
    word = toks[i + 2]
    if word.low in UNITS:
        parse.unit, parse.last = UNITS[word.low], i + 2
        return None
    if word.low in _BUSINESS_MODIFIERS and i + 4 < len(toks) and toks[i + 4].low in ("day", "days"):
        parse.unit, parse.last = _Unit("business_day", 1.0), i + 4
        return None
    if len(word.text) == 1 or word.text.isupper():
        return _skip_glued(toks, i)  # 10-K, 3-D
    parse.counted_from = i + 2
    parse.last = i  # the counted noun is not part of the literal value
    return None


def _read_degree(toks: list[_Tok], parse: _Parse) -> None:
    j = parse.last + 1
    if j < len(toks) and toks[j].low in _DEGREE_UNITS:
        parse.unit = _Unit(_DEGREE_UNITS[toks[j].low], 1.0)
        parse.last = j


def _read_unit(toks: list[_Tok], parse: _Parse) -> None:
    j = parse.last + 1
    if j >= len(toks):
        return
    business = False
    if toks[j].low in _BUSINESS_MODIFIERS or toks[j].low in _UNIT_MODIFIERS:
        business = toks[j].low in _BUSINESS_MODIFIERS
        if j + 1 < len(toks) and toks[j + 1].low in UNITS:
            j += 1
        else:
            return
    word = toks[j]
    if word.text == "%":
        parse.unit, parse.last = UNITS["percent"], j
        return
    if word.text == "°":
        parse.last = j
        nxt = toks[j + 1] if j + 1 < len(toks) else None
        if nxt is not None and _glued(word, nxt) and nxt.low in _DEGREE_UNITS:
            parse.unit, parse.last = _Unit(_DEGREE_UNITS[nxt.low], 1.0), j + 1
        else:
            parse.unit = _Unit("degree", 1.0)
        return
    low = word.low
    if low in ("per", "percentage", "basis") and j + 1 < len(toks):
        nxt = toks[j + 1].low
        if low == "per" and nxt == "cent":
            parse.unit, parse.last = UNITS["percent"], j + 1
        elif low == "percentage" and nxt in ("point", "points"):
            parse.unit, parse.last = _Unit("percentage_point", 1.0), j + 1
        elif low == "percentage":
            parse.unit, parse.last = UNITS["percent"], j  # "49 percentage chance": a percent, as written
        elif low == "basis" and nxt in ("point", "points"):
            parse.unit, parse.last = UNITS["bps"], j + 1
        return
    if low in ("degree", "degrees"):
        parse.unit, parse.last = _Unit("degree", 1.0), j
        _read_degree(toks, parse)
        return
    metres_per = low == "m" and _per_slash_at(toks, j + 1)  # "10 m/s"; a lone "m" may be "million"
    if low in _CURRENCY_CODES and word.text.isupper() or low in UNITS and low not in ("m", "in") or metres_per:
        unit = UNITS["meter"] if metres_per else UNITS.get(low) or _Unit(_CURRENCY_CODES[low], 1.0)
        if unit.unit == "day" and business:
            unit = _Unit("business_day", 1.0)
        if low == "times" and parse.currency:
            return
        # "$5 dollars" is money either way; "pounds" after a currency symbol is the currency, not weight.
        if parse.currency and unit.unit not in ("usd", "eur", "gbp", "jpy", "inr"):
            if low in ("pound", "pounds"):
                parse.last = j
            return
        parse.unit, parse.last = unit, j
        _read_and_a_half(toks, parse)
        _read_per(toks, parse)


def _money_word_at(toks: list[_Tok], j: int) -> bool:
    return j < len(toks) and (
        (toks[j].low in UNITS and UNITS[toks[j].low].unit in MONEY_UNITS)
        or (toks[j].low in _CURRENCY_CODES and toks[j].text.isupper())
    )


def _per_slash_at(toks: list[_Tok], j: int) -> bool:
    """A glued "/unit" at token j ("/h" of "km/h", "/kg" of "mg/kg")."""
    return (
        j + 1 < len(toks)
        and toks[j].text == "/"
        and _glued(toks[j - 1], toks[j])
        and _glued(toks[j], toks[j + 1])
        and toks[j + 1].low in _ATTACHED_UNITS
    )


def _read_per(toks: list[_Tok], parse: _Parse) -> None:
    """A rate after a unit: "km/h", "mg/kg", "5 mg per day", "3 times a week", "2 g daily". The value becomes
    a compound unit (metres per day, kilograms per kilogram, times per day), so a rate only ever meets rates
    of the same kind: "100 km/h" is never a distance, "0.5 mg/kg" never a dose in mg. Money is left alone:
    a price per month is a billing cycle, which the billing check owns."""
    unit = parse.unit
    if unit is None or parse.currency or unit.unit in MONEY_UNITS or unit.unit in _NOT_RATED:
        return
    j = parse.last + 1
    if j >= len(toks):
        return
    word = toks[j].low
    per: _Unit | None = None
    last = j + 1
    if _per_slash_at(toks, j):
        per = _ATTACHED_UNITS[toks[j + 1].low]
    elif word == "per" and j + 1 < len(toks):
        per = UNITS.get(toks[j + 1].low)
    elif word in ("a", "an") and j + 1 < len(toks) and toks[j + 1].low in _RATE_PERIODS:
        per = UNITS[toks[j + 1].low]
    elif word in _PER_ADVERBS:
        per, last = UNITS[_PER_ADVERBS[word]], j
    if per is None or per.unit in MONEY_UNITS or per.unit in _NOT_RATED:
        return
    parse.unit, parse.last = _rate(unit, per), last


def _rate(num: _Unit, den: _Unit) -> _Unit:
    """`num` per `den`; calendar slack on either side widens the rate's bounds accordingly."""
    slack = None
    if num.slack is not None or den.slack is not None:
        n_low, n_high = num.slack or (num.factor, num.factor)
        d_low, d_high = den.slack or (den.factor, den.factor)
        slack = (n_low / d_high, n_high / d_low)
    return _Unit(f"{num.unit}/{den.unit}", num.factor / den.factor, slack, den.factor)


def _numerator(unit: _Unit | None, magnitude: float) -> tuple[str, float] | None:
    if unit is None or "/" not in unit.unit:
        return None
    return unit.unit.split("/", 1)[0], magnitude * unit.factor * unit.per_factor
