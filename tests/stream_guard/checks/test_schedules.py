from __future__ import annotations

from contradictions import found_by

from stream_guard.checks.schedules import analyze_schedules

SUPPORT = "Our support team is available Monday to Friday, 9 am to 5 pm Eastern Time."
PHARMACY = "Pharmacy hours: weekdays 8:00 am to 9:00 pm; Saturday 9:00 am to 6:00 pm; closed on Sundays."


found = found_by(analyze_schedules)


def test_other_hours_days_or_zone_are_contradictions_naming_both() -> None:
    assert found(SUPPORT, "Support is available Mon-Fri 9am-6pm ET.") == [("hours", "9am-6pm", "9 am to 5 pm")]
    assert found(SUPPORT, "Support is available Monday to Saturday, 9 am to 5 pm Eastern Time.") == [
        ("weekday", "Monday to Saturday", "Monday to Friday")]
    assert found(SUPPORT, "Support is available Monday to Friday, 9 am to 5 pm Pacific Time.") == [
        ("time_zone", "Pacific Time", "Eastern Time")]


def test_the_same_schedule_in_other_words_agrees() -> None:
    assert found(SUPPORT, "Support is available Mon-Fri 9am-5pm ET.") == []
    assert found("The pharmacy closes at 16:00 on Saturdays.", "The pharmacy closes at 4 pm on Saturdays.") == []
    assert found(PHARMACY, "On Saturday the pharmacy is open from 9 am to 6 pm.") == []


def test_hours_are_compared_day_by_day_and_closed_days_count() -> None:
    assert found(PHARMACY, "On Saturday the pharmacy is open from 9:00 am to 9:00 pm.") == [
        ("hours", "9:00 am to 9:00 pm", "9:00 am to 6:00 pm")]
    [(kind, ours, theirs)] = found(PHARMACY, "The pharmacy is open on Sundays.")
    assert (kind, ours) == ("weekday", "Sundays") and "closed" in theirs


def test_another_subject_is_not_compared() -> None:
    assert found("The museum is open Monday to Friday.", "The bakery is open on Saturday.") == []
