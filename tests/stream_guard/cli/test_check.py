import argparse
import io
import os
import subprocess
import sys

import orjson
import pytest
from scenarios import BILLING, CLEAN, PRICE_DRIFTED, PRICE_STABLE, price_event

from stream_guard.cli import check as cli
from stream_guard.config.load import build_config
from stream_guard.engine import pool as parallel
from stream_guard.engine.judging import judge_payloads
from stream_guard.engine.pipeline import Guard


def run_check(tmp_path, lines, *args):
    """`stream-guard check FILE --ner regex ARGS` through its entry function in this process (a file this small
    is judged in one process, this one): the exit code, stdout and stderr a user would see. The command as a real
    process is run by the bad-setting and the stdin tests below, and by tests/test_readme_commands.py."""
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    argv = [str(path), "--ner", "regex", *args]
    out, err = io.BytesIO(), io.StringIO()
    code = cli.run_check(cli.parser().parse_args(argv), out, err)
    proc = subprocess.CompletedProcess(["stream-guard", "check", *argv], code, out.getvalue(), err.getvalue().encode())
    return proc, [orjson.loads(line) for line in proc.stdout.splitlines()]


def test_one_verdict_line_per_input_line_in_order_with_errors_inline(tmp_path):
    lines = [
        orjson.dumps(CLEAN.to_dict()),
        b'{"event_id": "broken", ',
        orjson.dumps({"event_id": "no-answer", "question": "q"}),
        orjson.dumps(BILLING.to_dict()),
    ]
    proc, out = run_check(tmp_path, lines)
    assert proc.returncode == 1, proc.stderr  # a script must not miss the failed lines
    assert len(out) == 4
    assert out[0]["event_id"] == CLEAN.event_id and out[0]["routing"] == "accept"
    assert out[1]["line"] == 2 and "not valid JSON" in out[1]["error"]
    assert out[2] == {"line": 3, "error": "answer: is required", "field": "answer", "reason": "is required",
                      "stage": "decode", "event_id": "no-answer"}
    assert out[3]["event_id"] == BILLING.event_id and out[3]["routing"] == "healed_accept"
    for verdict in (out[0], out[3]):
        for key in ("tenant", "flagged", "hallucination_score", "risk", "delivered_answer", "original_answer",
                    "hallucinated_statements", "verified_statements", "checks", "healing", "latency_ms"):
            assert key in verdict
    assert b"2 verdicts" in proc.stderr and b"2 errors" in proc.stderr
    # The count and the first failed lines, each naming the file, the line and the field.
    err = proc.stderr.decode()
    assert "2 line(s) failed" in err
    assert f"{tmp_path / 'events.jsonl'}:2: $: payload is not valid JSON" in err
    assert f"{tmp_path / 'events.jsonl'}:3: answer: is required" in err


def test_drift_history_carries_across_lines_of_one_run(tmp_path):
    events = [price_event(f"p{i}", PRICE_STABLE) for i in range(40)] + [price_event("drift", PRICE_DRIFTED)]
    proc, out = run_check(tmp_path, [orjson.dumps(e.to_dict()) for e in events])
    assert proc.returncode == 0
    assert out[-1]["checks"]["drift"]["flagged"] and not out[0]["checks"]["drift"]["flagged"]


def test_drift_db_carries_history_across_runs(tmp_path):
    db = str(tmp_path / "drift.db")
    stable = [orjson.dumps(price_event(f"p{i}", PRICE_STABLE).to_dict()) for i in range(4)]
    run_check(tmp_path, stable, "--drift-db", db)
    proc, out = run_check(tmp_path, [orjson.dumps(price_event("d", PRICE_DRIFTED).to_dict())], "--drift-db", db)
    assert out[0]["checks"]["drift"]["flagged"]


def test_unreadable_input_exits_1(tmp_path, capsys):
    from stream_guard.cli import main

    assert main(["check", str(tmp_path / "missing.jsonl")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_bad_config_file_is_reported(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[detector]\nnot_a_setting = 1\n")
    proc, _ = run_check(tmp_path, [orjson.dumps(CLEAN.to_dict())], "--config", str(cfg))
    assert proc.returncode == 2 and b"not_a_setting" in proc.stderr


def test_strict_preset_demands_more_overlap_per_claim(tmp_path):
    # 7 of 12 content words grounded: enough for the general preset (0.40), not for strict (0.70).
    event = {"event_id": "r", "question": "How fast are refunds?",
             "context": ["Refunds are processed within 5 business days after we receive the returned item."],
             "answer": "Refunds are processed within 5 business days once our warehouse team carefully "
                       "inspects every returned item."}
    _, general = run_check(tmp_path, [orjson.dumps(event)], "--preset", "general")
    _, strict = run_check(tmp_path, [orjson.dumps(event)], "--preset", "strict")
    assert general[0]["checks"]["faithfulness"]["score"] == 1.0
    assert strict[0]["checks"]["faithfulness"]["score"] == 0.0


# --- hardening: bad lines cost only themselves; configuration is checked at start -----------------------------


DEEP = b'{"event_id": "deep", "answer": "The answer.", "metadata": ' + b'{"a": ' * 300 + b"1" + b"}" * 300 + b"}"


def check_in_process(lines, **flags):
    """`stream-guard check` in this process (its main thread, so the CPU budget is enforced as in a run)."""
    source = io.BytesIO(b"".join(line + b"\n" for line in lines))
    args = argparse.Namespace(path="-", config=None, preset=None, ner="regex", drift_db=None, output="-",
                              quiet=True, **{"jobs": 1, **flags})
    out, err = io.BytesIO(), io.StringIO()
    stdin = cli.sys.stdin
    cli.sys.stdin = argparse.Namespace(buffer=source)
    try:
        code = cli.run_check(args, out, err)
    finally:
        cli.sys.stdin = stdin
    return code, [orjson.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_a_poison_line_is_an_error_object_and_every_later_line_is_judged(tmp_path):
    lines = [orjson.dumps(CLEAN.to_dict()), DEEP, orjson.dumps(BILLING.to_dict()),
             orjson.dumps({**CLEAN.to_dict(), "event_id": "big", "answer": "x" * 1_100_000})]
    proc, out = run_check(tmp_path, lines)
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    assert [o.get("event_id") for o in out] == [CLEAN.event_id, "deep", BILLING.event_id, "big"]
    assert out[1] == {"line": 2, "error": "metadata: is nested more than 32 levels deep", "field": "metadata",
                      "reason": "is nested more than 32 levels deep", "stage": "decode", "event_id": "deep"}
    assert out[3]["line"] == 4 and "over the limit of 1000000" in out[3]["error"]  # the payload limit, as streaming


def test_a_utf8_bom_does_not_make_line_one_an_error(tmp_path):
    proc, out = run_check(tmp_path, [b"\xef\xbb\xbf" + orjson.dumps(CLEAN.to_dict()), orjson.dumps(BILLING.to_dict())])
    assert [o.get("routing") for o in out] == ["accept", "healed_accept"]


def test_an_event_over_its_cpu_budget_is_a_timeout_with_its_line_and_cost(monkeypatch):
    class SlowOnCue(Guard):
        def _decide(self, event, *args):
            while event.event_id == "slow":
                sum(range(1000))
            return super()._decide(event, *args)

    monkeypatch.setattr(parallel, "Guard", SlowOnCue)  # --jobs 1 judges in this process
    monkeypatch.setenv("STREAM_GUARD_EVENT_BUDGET_MS", "40")
    slow = orjson.dumps({**CLEAN.to_dict(), "event_id": "slow"})
    code, out, _ = check_in_process([orjson.dumps(CLEAN.to_dict()), slow, orjson.dumps(BILLING.to_dict())])
    assert code == 1
    assert [o.get("routing") for o in out] == ["accept", None, "healed_accept"]
    timeout = out[1]
    assert (timeout["line"], timeout["event_id"], timeout["stage"]) == (2, "slow", "timeout")
    assert timeout["cost_ms"] >= 40 and timeout["error"].startswith("$: timeout: spent")


def test_a_judge_failure_carries_its_line(monkeypatch):
    class FailsOnCue(Guard):
        def _decide(self, event, *args):
            if event.event_id == "boom":
                raise RuntimeError("injected")
            return super()._decide(event, *args)

    monkeypatch.setattr(parallel, "Guard", FailsOnCue)
    code, out, _ = check_in_process([orjson.dumps({**CLEAN.to_dict(), "event_id": "boom"}),
                                     orjson.dumps(CLEAN.to_dict())])
    assert out[0] == {"line": 1, "event_id": "boom", "error": "$: RuntimeError: injected", "field": "$",
                      "reason": "RuntimeError: injected", "stage": "judge"}
    assert out[1]["routing"] == "accept"


def test_a_bad_setting_exits_2_naming_it_without_a_traceback(tmp_path):
    """The process as a user sees it; the other bad values below run the same entry point in this process."""
    path = tmp_path / "events.jsonl"
    path.write_bytes(orjson.dumps(CLEAN.to_dict()) + b"\n")
    proc = subprocess.run([sys.executable, "-m", "stream_guard.cli", "check", str(path), "--ner", "regex"],
                          capture_output=True, timeout=120, env={**os.environ, "STREAM_GUARD_FLAG_THRESHOLD": "x"})
    assert proc.returncode == 2 and b"flag_threshold: expected a finite number, got 'x'" in proc.stderr
    assert b"Traceback" not in proc.stderr and proc.stdout == b""


@pytest.mark.parametrize(("env", "needle"), [
    ({"STREAM_GUARD_FLAG_THRESHOLD": "5"}, "flag_threshold: must be a number from 0 to 1"),
    ({"STREAM_GUARD_NER": "foo"}, "ner: must be one of auto, spacy, regex"),
    ({"STREAM_GUARD_LIMITS_MAX_ANSWER_CHARS": "x"}, "limits.max_answer_chars: expected an integer"),
    ({"STREAM_GUARD_DRIFT_MIN_HISTORY": "0"}, "drift_min_history: must be an integer of at least 1"),
    ({"STREAM_GUARD_WINDOW_SIZE": "-1"}, "window_size: must be an integer of at least 1"),
    ({"STREAM_GUARD_FLAG_TRESHOLD": "0.5"}, "unknown environment variable(s): STREAM_GUARD_FLAG_TRESHOLD"),
])
def test_a_bad_setting_is_named_before_any_line_is_judged(tmp_path, env, needle, monkeypatch, capsys):
    from stream_guard.cli import main

    path = tmp_path / "events.jsonl"
    path.write_bytes(orjson.dumps(CLEAN.to_dict()) + b"\n")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["check", str(path), "--ner", "regex"]) == 2
    out, err = capsys.readouterr()
    assert needle in err and "Traceback" not in err and out == ""


def test_a_bad_setting_in_the_config_file_exits_2_too(tmp_path):
    cfg = tmp_path / "guard.toml"
    cfg.write_text('[detector]\nflag_threshold = "x"\n')
    proc, _ = run_check(tmp_path, [orjson.dumps(CLEAN.to_dict())], "--config", str(cfg))
    assert proc.returncode == 2 and b"flag_threshold: expected a finite number" in proc.stderr


# Payloads at the edges of the contract. The worker's decode path is judge_payloads on the raw bytes.
EDGE_PAYLOADS = [
    b"\xef\xbb\xbf" + orjson.dumps(CLEAN.to_dict()),
    orjson.dumps({**CLEAN.to_dict(), "metadata": []}),
    orjson.dumps({**CLEAN.to_dict(), "metadata": False}),
    orjson.dumps({**CLEAN.to_dict(), "metadata": 0}),
    orjson.dumps({**CLEAN.to_dict(), "metadata": ""}),
    orjson.dumps({**CLEAN.to_dict(), "metadata": True}),
    orjson.dumps({**CLEAN.to_dict(), "metadata": None}),
    orjson.dumps({**CLEAN.to_dict(), "answer": ""}),
    orjson.dumps({**CLEAN.to_dict(), "answer": "  "}),
    orjson.dumps({**CLEAN.to_dict(), "answer": "y" * 1_000_001}),
    DEEP,
    b"\xff\xfe not utf-8",
    b"[1, 2]",
    b'{"event_id": "e"',
    orjson.dumps({**CLEAN.to_dict(), "produced_at": -1}),
    orjson.dumps({**CLEAN.to_dict(), "context": [{"id": 1, "text": "a"}, {"id": "1", "text": "b"}]}),
]


def test_check_and_the_worker_accept_and_refuse_the_same_events_with_the_same_messages():
    _, out, _ = check_in_process(EDGE_PAYLOADS)
    worker = judge_payloads(Guard(build_config(None, None, "regex")), EDGE_PAYLOADS, {}, 0)
    assert len(out) == len(worker.items) == len(EDGE_PAYLOADS)
    for number, (line, item) in enumerate(zip(out, worker.items), start=1):
        if item.ok:
            assert line["event_id"] == item.event_id and line["routing"] == item.routing
        else:
            assert line == {"line": number, **item.error_object()}
    refused = [line.get("field") for line in out if "error" in line]
    assert refused == ["metadata"] * 5 + ["$", "metadata", "$", "$", "$", "produced_at", "context[1].id"]
    # An empty or blank answer is judged, by both: nothing to deliver, so fallback, and the verdict says why.
    empty = [line for line in out if line.get("original_answer", "x").strip() == ""]
    assert len(empty) == 2 and all(v["routing"] == "fallback" and v["reason"]["code"] == "empty_answer" for v in empty)


def test_a_small_file_is_judged_in_one_process_and_stdin_on_every_core(tmp_path):
    # A spawned judge pays its own start-up (spaCy's model), so a few events never get more than one.
    proc, out = run_check(tmp_path, [orjson.dumps(CLEAN.to_dict()), orjson.dumps(BILLING.to_dict())])
    assert len(out) == 2 and ", 1 process(es)" in proc.stderr.decode()
    piped = subprocess.run([sys.executable, "-m", "stream_guard.cli", "check", "-", "--ner", "regex"],
                           input=orjson.dumps(CLEAN.to_dict()) + b"\n", capture_output=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    cores = len(os.sched_getaffinity(0))
    assert f", {cores} process(es)" in piped.stderr.decode()


def test_every_line_judged_exits_0_and_a_misspelt_field_is_named_with_its_suggestion(tmp_path):
    misspelt = {**CLEAN.to_dict(), "event_id": "misspelt"}
    misspelt["contexts"] = misspelt.pop("context")
    proc, out = run_check(tmp_path, [orjson.dumps(misspelt), orjson.dumps(CLEAN.to_dict())])
    assert proc.returncode == 0, proc.stderr  # judged (without the field), as the contract allows
    assert [o["event_id"] for o in out] == ["misspelt", CLEAN.event_id]
    assert out[0]["routing"] != out[1]["routing"]  # without its context the answer is not grounded
    err = proc.stderr.decode()
    assert f"{tmp_path / 'events.jsonl'}:1: contexts: is not a field of the event contract; did you mean `context`?" in err


def test_strict_fields_refuses_a_misspelt_field_naming_it(tmp_path, monkeypatch):
    config = tmp_path / "strict.toml"
    config.write_text("[detector.limits]\nstrict_fields = true\n")
    event = {**CLEAN.to_dict(), "citation": ["1"]}
    proc, out = run_check(tmp_path, [orjson.dumps(event)], "--config", str(config))
    assert proc.returncode == 1
    assert out == [{"line": 1, "field": "citation", "stage": "decode", "event_id": CLEAN.event_id,
                    "reason": "is not a field of the event contract; did you mean `citations`?",
                    "error": "citation: is not a field of the event contract; did you mean `citations`?"}]


def test_check_collects_young_objects_less_often(tmp_path):
    import gc

    from stream_guard.collector import YOUNG_THRESHOLD

    thresholds = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        path = tmp_path / "one.jsonl"
        path.write_bytes(orjson.dumps(price_event("p", PRICE_STABLE).to_dict()) + b"\n")
        assert cli.main([str(path), "--ner", "regex", "-q", "-o", str(tmp_path / "out.jsonl")]) == 0
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    finally:
        gc.set_threshold(*thresholds)


def _run_check_file(path, *args):
    out, err = io.BytesIO(), io.StringIO()
    code = cli.run_check(cli.parser().parse_args([str(path), "--ner", "regex", *args]), out, err)
    return code, [orjson.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_a_pretty_printed_event_or_array_is_judged_as_produce_reads_it(tmp_path):
    # The README's contract example is one event over several lines; `produce` and `serve` take it, so does check.
    one = tmp_path / "event.json"
    one.write_bytes(orjson.dumps(BILLING.to_dict(), option=orjson.OPT_INDENT_2))
    code, out, err = _run_check_file(one)
    assert code == 0, err
    assert [v["event_id"] for v in out] == [BILLING.event_id] and out[0]["routing"] == "healed_accept"
    many = tmp_path / "events.json"
    many.write_bytes(orjson.dumps([CLEAN.to_dict(), {"event_id": "no-answer"}, BILLING.to_dict()],
                                  option=orjson.OPT_INDENT_2))
    code, out, err = _run_check_file(many)
    assert code == 1  # the second element has no answer
    assert [v.get("event_id") for v in out] == [CLEAN.event_id, "no-answer", BILLING.event_id]
    assert out[1]["line"] == 2 and out[1]["field"] == "answer"


def test_jsonl_whose_first_line_is_broken_keeps_its_line_numbers(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"event_id": "broken", \n\n' + orjson.dumps(CLEAN.to_dict()) + b"\n"
                     + b'{"event_id": "also-broken"\n')
    code, out, err = _run_check_file(path)
    assert code == 1
    assert [v.get("line") for v in out] == [1, None, 4]
    assert out[1]["event_id"] == CLEAN.event_id


def test_after_a_broken_first_line_lines_split_where_the_stream_splits_them(tmp_path):
    # JSON allows a carriage return as whitespace; a JSONL line holding one is one event whether or not the
    # file's first line made check read the file whole.
    event = orjson.dumps(CLEAN.to_dict()).replace(b'{"', b'{\r"', 1)
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"event_id": "broken", \n' + event + b"\n")
    code, out, err = _run_check_file(path)
    assert [v.get("line") for v in out] == [1, None], out
    assert out[1]["event_id"] == CLEAN.event_id
