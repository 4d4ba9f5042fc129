"""Quantities in prose: numbers with units, money, percents, spelled-out numbers, durations, ranges.

`extract_quantities(text)` turns "returns within two weeks" into a `Quantity` whose value is 14.0 in unit
"day", keeping the literal span ("two weeks") so a healer can patch it in place and the content stems
around it ("return") so the contradiction checks can tell which subject a value belongs to.

Decisions worth knowing (each one trades recall for precision, on purpose):

- Durations normalise to days. Weeks, fortnights, hours, minutes and seconds convert exactly. A month is
  28-31 days and a year 365-366 days, so "a month" agrees with "30 days" and "31 days" but not with
  "14 days"; "12 months" agrees with "a year". Business/working days are their own unit: "5 business days"
  is never compared with "7 days".
- Labels are not values: letter-hyphen prefixes (SKU-441, COVID-19, GPT-4, W-2), digits glued to letters
  (A380, 1040EZ, 4G), numbers after a label word (Form 1040, Passage 2, Section 8, version 3) or after a
  capitalised name (Boeing 747, Fortune 500), list markers ("1. "), citations ("[2]"), versions (3.5.1),
  times (10:30, 5pm), ordinals (3rd) and scores (24-17).
- Bare four-digit numbers in 1900-2100 without a unit or currency are years; `stream_guard.checks.dates`
  owns them.
- "a"/"an" is the number one only before a duration and after a word that introduces one ("within a month",
  "for a year"), so "$10 a month" stays a billing cycle, not a duration.
- "one" is a number only before a unit ("one week"); as a pronoun ("one of the") it is not.
- Ranges ("5-7 days", "5 to 7 days", "between 5 and 7 days", "$10-$20") keep both bounds; a descending
  pair joined by a hyphen is a score or an identifier, not a range.
- Approximate answers ("about 30", "nearly 1.2 million") and rounded figures get a tolerance (compare.py).
  "more than 100", "up to 30 days", "no more than 4 g", "shall not exceed $50,000", "10 or more" are bounds
  (bounds.py), and a bound is a limit: it bears out only itself, never another value of its unit; an
  answer's range must lie inside the source's. "within" is not a bound: "within 14 days" is the window.
- Legal numerals ("thirty (30) days", "30 (thirty) days") are one value, written twice.
- Ages ("a 26-year-old", "26 years old") are their own unit, never compared with durations.
- Only ASCII digits are numbers; other Unicode digits ("²", "٣") are ignored.
- Rates are their own units: "100 km/h", "62 mph" and "60 miles per hour" are metres per day, "0.5 mg/kg" is
  kilograms per kilogram, "5 mg per day" and "3 times a week" are per day. A rate compares only with rates
  of the same kind, never with a distance or a plain dose; `Quantity.numerator` keeps its amount so the
  numeric check can still accept "5 mg per day" where the context says "5 mg". A price per month stays a
  price: billing cycles belong to the billing check.
- "1.234,56" (dot thousands, decimal comma) is one number; "1.2M dollars" is 1.2 million dollars (a glued
  M, B or K is a scale only before a currency word or after a currency sign, so "3M" stays a name).
- Spelled numbers add up only as English composes them: "five six" is two numbers, and two pairs in a row
  ("nineteen ninety-nine") are a year, left to the dates check.
- "ton" is any of the short, metric and long ton; "tonne" is 1,000 kg.
"""

from stream_guard.text.quantities.compare import bears_out, comparable, same_value, values_agree, written_in
from stream_guard.text.quantities.numbers import NUMBER_WORDS
from stream_guard.text.quantities.quantity import Quantity
from stream_guard.text.quantities.reading import extract_quantities, may_contain_quantity
from stream_guard.text.quantities.units import DURATION_UNITS, UNITS

__all__ = ["DURATION_UNITS", "NUMBER_WORDS", "UNITS", "Quantity", "bears_out", "comparable", "extract_quantities",
           "may_contain_quantity", "same_value", "values_agree", "written_in"]
