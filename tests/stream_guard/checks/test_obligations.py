from __future__ import annotations

from contradictions import found_by

from stream_guard.checks.obligations import analyze_obligations

NDA = "The Receiving Party shall not disclose Confidential Information to any third party."
NOTICE = "The tenant must give sixty days' notice before moving out."


found = found_by(analyze_obligations)


def test_permission_obligation_and_prohibition_conflict() -> None:
    assert found(NDA, "The receiving party may disclose confidential information to third parties.") == [
        ("obligation", "may disclose", "shall not disclose")]
    assert found(NOTICE, "The tenant may give sixty days' notice before moving out.") == [
        ("obligation", "may give", "must give")]


def test_the_same_force_in_other_words_agrees() -> None:
    assert found(NDA, "The receiving party must not disclose confidential information to any third party.") == []
    assert found(NOTICE, "The tenant is required to give sixty days' notice before moving out.") == []


def test_another_action_is_not_compared() -> None:
    assert found(NDA, "The receiving party may keep confidential information for its records.") == []


def test_optional_conflicts_only_with_required_and_conditions_are_not_compared() -> None:
    report = "You must report the scholarship as income."
    assert found(report, "You do not have to report the scholarship as income.") == [
        ("obligation", "do not have to report", "must report")]
    assert found("You may report the scholarship as income.", "You do not have to report the scholarship as income.") == []
    assert found(report, "If it exceeds tuition, you do not have to report the scholarship as income.") == []


def test_the_same_condition_is_compared() -> None:
    source = "However, if you are not a degree-seeking student, you must include the scholarship as taxable income."
    assert found(source, "If you are not a degree-seeking student, you may include the scholarship as taxable income.") == [
        ("obligation", "may include", "must include")]
    assert found(source, "If you are a new student at a community college, you may include the scholarship as income.") == []


def test_a_bracketed_optional_or_required_is_the_item_s_force() -> None:
    # A recipe or a form marks an item "(optional)" or "(required)": the answer that turns one into the other
    # contradicts it; the same mark, or a mark on another item, does not.
    recipe = "Add the string beans, kangkong and sili (for spice - optional). Let boil for 2 minutes."
    assert found(recipe, "Add the string beans, kangkong, and sili (required).") == [
        ("obligation", "sili (required)", "sili (for spice - optional)")]
    assert found(recipe, "Add the string beans, kangkong, and sili (optional).") == []
    assert found(recipe, "Add the string beans (required), kangkong and sili.") == []
