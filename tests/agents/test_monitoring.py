"""Tenant monitoring end to end on a real broker and a real worker: 40 days of event-time traffic for three
tenants pushed in well under a minute, the alerts it must (and must not) raise, the weekly review loop, the
dashboard in a real browser, a replay, and state rebuilt from the changelogs after the data directory is lost.

The traffic is built so that exactly one thing moves per tenant, whatever the checks do to the answers:

- steady: 12 answers a day, the same mix every day (9 grounded and correctly cited, 3 with one unsupported
  claim, which the healer repairs). Nothing moves: no alert, ever.
- claims: the same until day 30, then the 3 repaired answers carry two unsupported claims instead of one:
  the per-claim refusal rate goes from 12.5 % to 22 % while answers, routing and flags stay the same.
- cites: the same until day 30, then the 3 repaired answers cite the wrong chunk: the citation-mismatch rate
  goes from 0 to 14 % a day while claims, routing and flags stay the same. Its graded review sample of one
  week also comes back with 5 answers judged wrong.

The expected numbers come from judging the same traffic offline with the same core (`offline_days`); a first,
broker-free test checks that the traffic really moves one rate per tenant under the current detector. The
module shares two workers (starting one costs ~10 s on two shared cores); the replay test (in `make test-long`)
stops them and restores a third from the changelogs, and the browser test comes last (see the `browser`
fixture).
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Iterator

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families
from streamkit import REPO, TEST_ENV, Names, Worker, event, produce, read_json, wait_for

from stream_guard.agents.clients import start_producer
from stream_guard.agents.topics import ensure_topics
from stream_guard.config.load import build_config
from stream_guard.wire.events import decode_event
from stream_guard.wire.labels import load_labels
from stream_guard.ops.monitoring.observation import observe
from stream_guard.engine.pipeline import Guard
from stream_guard.text.questions import question_hash
from stream_guard.ops.monitoring.tokens import hash_token
from stream_guard.ops.monitoring.windows import DAY_MS, RATES, DayCounts, day_label, day_of

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(600)]

TOKENS = {"steady": "steady-token-0123456789abcdef", "claims": "claims-token-0123456789abcdef",
          "cites": "cites-token-0123456789abcdef"}
OPERATOR = "operator-token-0123456789abcdef"
MONITOR_KINDS = {"rate_shift", "citation_mismatch_rate", "review_failure_rate"}
# 12 a day: enough for every rule's minimum counts (100 claims or citations in a trailing week, 3 questions
# drifting) with the fewest answers to judge.
DAYS, PER_DAY, STEP_DAY = 40, 12, 30
TODAY = int(time.time() * 1000) // DAY_MS
BASE_DAY = TODAY - DAYS - 1 - (TODAY - DAYS - 1 + 3) % 7  # a Monday, so that weeks start with the traffic


def _context(i: int) -> list[dict[str, str]]:
    return [{"id": f"kb-{i}", "text": f"Plan {i} costs ${10 + i} per month and includes {i + 2} user seats."},
            {"id": f"kb-s{i}", "text": f"Support for plan {i} is available by email on weekdays."}]


def _answer(tenant: str, day: int, i: int) -> tuple[str, str]:
    """(question, answer) of the i-th answer of a tenant's day."""
    if i % 4 != 3:
        return (f"What does plan {i} cost and include?",
                f"Plan {i} costs ${10 + i} per month and includes {i + 2} user seats [kb-{i}]. "
                f"Support for plan {i} is available by email on weekdays [kb-s{i}].")
    # The repaired answers also drift every day (the history holds what was delivered, the repaired text): the
    # variants keep their question, so that they drift just as much.
    question, extra = f"What does plan {i} cost?", "It also includes a free analytics dashboard with quarterly business reviews."
    if tenant == "claims" and day >= STEP_DAY:
        return question, (f"Plan {i} costs ${10 + i} per month [kb-{i}]. {extra} "
                          "Every customer receives yearly onsite training workshops.")
    if tenant == "cites" and day >= STEP_DAY:
        return question, f"It costs ${10 + i} per month with {i + 2} user seats [kb-s{i}]. {extra}"
    return question, f"Plan {i} costs ${10 + i} per month [kb-{i}]. {extra}"


def traffic() -> list[bytes]:
    """Every tenant's 40 days, in event-time order."""
    out = []
    for day in range(DAYS):
        for i in range(PER_DAY):
            for tenant in TOKENS:
                question, answer = _answer(tenant, day, i)
                out.append(event(f"{tenant}-{day:02d}-{i:02d}", question, _context(i), answer, tenant=tenant,
                                 produced_at=(BASE_DAY + day) * DAY_MS + (8 * 60 + 30 * i) * 60_000))
    return out


@functools.cache
def offline_days() -> dict[tuple[str, int], DayCounts]:
    """The traffic judged offline by the same core and settings as the worker (regex NER, drift history kept
    per question), counted per tenant and day by the same `observe`: the numbers the worker must reach."""
    guard = Guard(build_config(None, None, "regex"))
    histories: dict[str, Any] = {}
    out: dict[tuple[str, int], DayCounts] = {}
    payloads = traffic()
    for start in range(0, len(payloads), 32):
        answers = [decode_event(p) for p in payloads[start:start + 32]]
        keys = {question_hash(a.tenant, a.question) for a in answers}
        results, updated = guard.evaluate_batch(answers, {k: histories.get(k, []) for k in keys})
        histories.update(updated)
        for result in results:
            obs = observe(result.to_dict())
            key = (obs.tenant, day_of(obs.at_ms) - BASE_DAY)
            out[key] = out[key].plus(obs.day_counts()) if key in out else obs.day_counts()
    return out


def offline_window(tenant: str, rate: str, first: int, last: int) -> tuple[int, int]:
    """(numerator, denominator) of a rate over days first..last of a tenant's offline counts."""
    numerator, denominator = RATES[rate]
    days = [offline_days()[(tenant, d)] for d in range(max(first, 0), last + 1)]
    return sum(d.count(numerator) for d in days), sum(d.count(denominator) for d in days)


def test_the_traffic_moves_one_rate_per_tenant_under_this_detector() -> None:
    """The premise of the end-to-end test, checked offline: if the detector changes what these answers
    count as, this fails first and says which rate moved."""
    moved = {"steady": set(), "claims": {"refusal"}, "cites": {"citation_mismatch"}}
    for tenant, expected in moved.items():
        for rate in RATES:
            before = {offline_days()[(tenant, d)].rate(rate) for d in range(3, STEP_DAY)}  # drift needs 3 days
            after = {offline_days()[(tenant, d)].rate(rate) for d in range(STEP_DAY, DAYS)}
            assert len(before) == 1 and len(after) == 1, (tenant, rate, before, after)
            assert (before != after) == (rate in expected), (tenant, rate, before, after)


class Client:
    """HTTP against the worker's web port, with or without a session cookie or bearer token."""

    def __init__(self, worker: Worker) -> None:
        self.base = f"http://127.0.0.1:{worker.web_port}"

    def request(self, path: str, *, token: str | None = None, cookie: str | None = None,
                form: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        headers = {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if cookie:
            headers["Cookie"] = cookie
        if form is not None:
            headers["Origin"] = self.base  # a form posted from the dashboard's own page (others are refused)
        data = "&".join(f"{k}={v}" for k, v in form.items()).encode() if form is not None else None
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(urllib.request.Request(self.base + path, data=data, headers=headers), timeout=5) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def view(self, tenant: str, token: str | None = None) -> dict[str, Any]:
        status, _, body = self.request(f"/monitor/api/t/{tenant}", token=token or TOKENS[tenant])
        assert status == 200, body
        return orjson.loads(body)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@pytest.fixture(scope="module")
def monitored(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Two workers that have judged the 40 days of traffic and closed their days. Both start before any
    traffic, so each owns half the partitions from the start; the three tenants sit on partitions 0, 1 and
    2, so each worker owns some tenants and not others."""
    tmp = tmp_path_factory.mktemp("monitoring")
    names = Names(kafka_bootstrap)
    asyncio.run(ensure_topics(names.settings()))
    config = tmp / "stream-guard.toml"
    config.write_text(f'[monitor]\noperator_token_sha256 = "{hash_token(OPERATOR)}"\n'
                      + "".join(f'[monitor.tenants.{t}]\ntoken_sha256 = "{hash_token(token)}"\n'
                                for t, token in TOKENS.items()))
    env = {"STREAM_GUARD_MONITOR_ENABLED": "true", "STREAM_GUARD_MONITOR_SESSION_SECRET": "test-session-secret-0123456789abcdef",
           "STREAM_GUARD_MONITOR_REVIEW_SALT": "test-salt"}
    state: dict[str, Any] = {"names": names, "tmp": tmp, "config": config, "env": env, "workers": []}

    def start(name: str) -> Worker:
        worker = Worker(names, tmp / f"state-{name}", tmp / f"{name}.log", name=name, config=config, extra_env=env)
        state["workers"].append(worker.start())
        return worker

    try:
        workers = [start("m1").wait_ready(), start("m2").wait_ready()]
        deadline = time.monotonic() + 180
        while sorted(len(_owned(w)) for w in workers) != [2, 2] or not all(w.ready() for w in workers):
            assert time.monotonic() < deadline, [sorted(_owned(w)) for w in workers]
            time.sleep(0.5)
        payloads = traffic()
        started = time.monotonic()
        produce(names, payloads)
        wait_for(names, names.topics.verdicts, lambda rs: len(rs) >= len(payloads), timeout=300)
        state["judged_s"] = time.monotonic() - started
        client = Client(workers[0])
        # Every tenant's days close once all judging partitions are idle: up to day 38 (day 39 is still open).
        # Generous: `make test` runs this beside three other test files on a shared machine.
        deadline = time.monotonic() + 240
        while not all(client.view(t).get("as_of_day") == day_label(BASE_DAY + DAYS - 2) for t in TOKENS):
            assert time.monotonic() < deadline, f"days did not close: {[client.view(t)['as_of_day'] for t in TOKENS]}"
            time.sleep(0.5)
        state.update(client=client, pair=workers, start=start)
        yield state
    finally:
        for worker in state["workers"]:
            if worker.proc is not None and worker.proc.poll() is None:
                worker.stop()


def _owned(worker: Worker) -> set[int]:
    """The judging partitions a worker owns (from its lag gauges)."""
    return {int(labels["partition"]) for labels, _ in worker.series("stream_guard_consumer_lag")
            if labels["topic"].endswith("-answers-repartition")}


def _local(client: Client) -> list[str]:
    status, _, body = client.request("/monitor/api/local", token=OPERATOR)
    return [v["tenant"] for v in orjson.loads(body)["tenants"]] if status == 200 else []


def monitor_alerts(names: Names) -> list[dict[str, Any]]:
    return [a for a in read_json(names, names.topics.alerts, until=10**9, timeout=2.0) if a["kind"] in MONITOR_KINDS]


def _signature(alert: dict[str, Any]) -> tuple[Any, ...]:
    evidence = alert["evidence"]
    return alert["tenant"], alert["kind"], evidence.get("level") or evidence.get("rate") or evidence.get("week")


def test_each_rule_fires_once_where_the_numbers_moved_and_nowhere_else(monitored: dict[str, Any]) -> None:
    names = monitored["names"]
    alerts = monitor_alerts(names)
    assert sorted(_signature(a) for a in alerts) == [
        ("cites", "citation_mismatch_rate", "critical"),
        ("cites", "citation_mismatch_rate", "warning"),
        ("cites", "rate_shift", "citation_mismatch"),
        ("claims", "rate_shift", "refusal"),
    ], [a["summary"] for a in alerts]
    by = {_signature(a): a for a in alerts}

    def fired_on(evidence: dict[str, Any]) -> int:
        return [d for d in range(DAYS) if day_label(BASE_DAY + d) == evidence["window"]["last_day"]][0]

    def windows(tenant: str, rate: str, day: int) -> tuple[tuple[int, int], tuple[int, int]]:
        return offline_window(tenant, rate, day - 6, day), offline_window(tenant, rate, day - 36, day - 7)

    # The refusal shift fired on the first day its trailing week moved more than 30 % against the 30 days
    # before, with exactly the offline numbers.
    refusal = by[("claims", "rate_shift", "refusal")]["evidence"]
    day = fired_on(refusal)
    (num, den), (base_num, base_den) = windows("claims", "refusal", day)
    assert (refusal["numerator"], refusal["denominator"]) == (num, den)
    assert (refusal["baseline_numerator"], refusal["baseline_denominator"]) == (base_num, base_den)
    assert (num / den) / (base_num / base_den) - 1 > 0.30 and refusal["direction"] == "up"
    (num, den), (base_num, base_den) = windows("claims", "refusal", day - 1)
    assert (num / den) / (base_num / base_den) - 1 <= 0.30 and STEP_DAY <= day < STEP_DAY + 7
    assert all(e.startswith("claims-") and int(e.split("-")[1]) >= STEP_DAY for e in refusal["examples"])
    assert refusal["examples"] and "rose" in by[("claims", "rate_shift", "refusal")]["summary"]

    # Citation mismatch: a warning the first day the trailing rate passed 4 %, critical the first past 8 %.
    for level, threshold in (("warning", 0.04), ("critical", 0.08)):
        evidence = by[("cites", "citation_mismatch_rate", level)]["evidence"]
        day = fired_on(evidence)
        (num, den), _ = windows("cites", "citation_mismatch", day)
        assert (evidence["numerator"], evidence["denominator"]) == (num, den) and num / den > threshold
        (num, den), _ = windows("cites", "citation_mismatch", day - 1)
        assert num / den <= threshold
        assert evidence["baseline"] == 0.0 and all(e.startswith("cites-") for e in evidence["examples"])

    # The weekly samples: 30 answers per tenant per closed week (5 weeks closed), with what a grader needs.
    # Read until all 450 are there: a fixed 2 s read (consumer start included) fell 18 short on a loaded machine.
    reviews = read_json(names, names.topics.review, until=3 * 5 * 30, timeout=60.0)
    weeks = {(r["tenant"], r["week"]) for r in reviews}
    assert len(reviews) == 3 * 5 * 30 and len(weeks) == 15
    assert all(sum(1 for r in reviews if (r["tenant"], r["week"]) == week) == 30 for week in weeks)
    item = reviews[0]
    assert item["question"] and item["context"][0]["text"] and item["delivered_answer"] and item["original_answer"]
    assert isinstance(item["findings"], list) and item["label_meaning"]

    # Grades come back: 5 of the cites tenant's week-2 sample wrong, 1 of steady's; and one bad label.
    week = sorted({r["week"] for r in reviews})[1]
    grades = []
    for tenant, wrong in (("cites", 5), ("steady", 1)):
        sample = [r["event_id"] for r in reviews if r["tenant"] == tenant and r["week"] == week]
        grades += [orjson.dumps({"event_id": e, "label": int(k < wrong), "grader": "ana", "note": "checked"})
                   for k, e in enumerate(sample)]
    grades.append(b'{"event_id": "cites-00-01", "label": "wrong"}')
    asyncio.run(_send(names, names.topics.labels, grades))
    review_alerts = wait_for(names, names.topics.alerts,
                             lambda rs: any(a["kind"] == "review_failure_rate" for a in rs), timeout=60)
    [review] = [a for a in review_alerts if a["kind"] == "review_failure_rate"]
    # It fires as soon as more than 3 are wrong among at least review_min_graded (10) grades, whichever came first.
    assert review["tenant"] == "cites" and review["evidence"]["wrong"] in (4, 5) and review["evidence"]["graded"] >= 10
    assert review["evidence"]["week"] == week
    dead = wait_for(names, names.topics.dlq, lambda rs: any(r.get("stage") == "label" for r in rs), timeout=30)
    assert any("label" in str(r.get("field")) for r in dead if r.get("stage") == "label")
    # The labels topic dumped for backtests: the valid grades only, and the command stops at the end.
    dump = subprocess.run([sys.executable, "-m", "stream_guard.agents", "tail", "labels", "--from-beginning",
                           "--to-end", "--broker", names.broker], cwd=REPO, env={**os.environ, **names.env()},
                          capture_output=True, text=True, timeout=60, check=False)
    assert dump.returncode == 0, dump.stderr
    path = monitored["tmp"] / "labels.jsonl"
    path.write_text(dump.stdout)
    labels = load_labels(path)
    assert len(labels) == 60 and sum(label.label for label in labels.values()) == 6

    client = monitored["client"]
    deadline = time.monotonic() + 30
    while (steady_week := next(r for r in client.view("steady")["reviews"] if r["week"] == week))["graded"] < 30:
        assert time.monotonic() < deadline, steady_week  # the grades join steady's week too
        time.sleep(0.5)
    assert (steady_week["wrong"], steady_week["over_limit"]) == (1, False)
    assert not [a for a in monitor_alerts(names) if a["tenant"] == "steady"]

    # The rates behind them, as the tenant's own API serves them.
    # Each worker owns some tenants; either one serves every tenant (asking the owner for the others), and a
    # tenant token stays a tenant token across that hop.
    pair = monitored["pair"]
    local = [_local(Client(w)) for w in pair]
    assert all(local) and sorted(local[0] + local[1]) == sorted(TOKENS), local
    views = [{t: Client(w).view(t) for t in TOKENS} for w in pair]
    assert views[0] == views[1]
    for worker in pair:
        other = Client(worker)
        assert other.request("/monitor/api/t/cites", token=TOKENS["claims"])[0] == 404
        status, _, body = other.request("/monitor/api/all", token=OPERATOR)
        assert status == 200 and sorted(v["tenant"] for v in orjson.loads(body)["tenants"]) == sorted(TOKENS)

    # As of day 38 (the last closed day): the trailing window is days 32-38, the baseline days 2-31.
    view = client.view("claims")
    (num, den), (base_num, base_den) = windows("claims", "refusal", DAYS - 2)
    baseline = base_num / base_den
    assert view["rates"]["refusal"]["value"] == round(num / den, 6) and view["rates"]["flagged"]["change"] == 0.0
    assert view["rates"]["refusal"]["baseline"] == round(baseline, 6)
    assert [d["answers"] for d in view["days"] if d["answers"]] == [PER_DAY] * DAYS
    assert [d["rates"]["refusal"] for d in view["days"] if d["answers"]] == [
        offline_days()[("claims", d)].rate("refusal") for d in range(DAYS)]
    key = ("stream_guard_tenant_rate", (("rate", "refusal"), ("tenant", "claims"), ("window", "baseline")))
    deadline = time.monotonic() + 15  # the gauges are summed every few seconds, not at the scrape
    while True:
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for w in pair
                   for family in text_string_to_metric_families(w.metrics()) for s in family.samples
                   if s.name.startswith("stream_guard_tenant_") and s.labels.get("tenant")
                   and s.labels["tenant"] in _local(Client(w))}
        if samples.get(key) == pytest.approx(baseline) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert samples[key] == pytest.approx(baseline)
    assert samples[("stream_guard_tenant_answers_total", (("outcome", "counted"), ("tenant", "steady")))] == DAYS * PER_DAY
    print(f"\n40 days x 3 tenants ({3 * DAYS * PER_DAY} answers) judged in {monitored['judged_s']:.1f}s")


async def _send(names: Names, topic: str, payloads: list[bytes]) -> None:
    producer = await start_producer(names.broker)
    try:
        await asyncio.gather(*[await producer.send(topic, p) for p in payloads])
    finally:
        await producer.stop()


@pytest.mark.long  # the whole traffic again, a rolling stop and a restore from the changelogs: ~2 minutes
def test_a_replay_adds_nothing_and_lost_state_comes_back_from_the_changelogs(monitored: dict[str, Any]) -> None:
    names, client = monitored["names"], monitored["client"]
    before = {t: client.view(t) for t in TOKENS}
    alerts_before = monitor_alerts(names)
    reviews_before = len(read_json(names, names.topics.review, until=10**9, timeout=2.0))

    payloads = traffic()
    produce(names, payloads)
    wait_for(names, names.topics.verdicts, lambda rs: len(rs) >= 2 * len(payloads), timeout=300)
    pair = monitored["pair"]
    deadline = time.monotonic() + 60
    while sum(_counter(w, "duplicate") for w in pair) != len(payloads):
        assert time.monotonic() < deadline, [_counter(w, "duplicate") for w in pair]
        time.sleep(0.5)
    time.sleep(3)  # several progress reports: any day the replay could have closed has closed
    assert monitor_alerts(names) == alerts_before
    assert len(read_json(names, names.topics.review, until=10**9, timeout=2.0)) == reviews_before
    assert {t: client.view(t) for t in TOKENS} == before

    # Stop the pair as a rolling shutdown would: m1 first, m2 takes its partitions over (restoring their tables
    # from the changelogs), then m2. Lose both data directories and start one worker: the tables come back from
    # their changelogs. (Two leaves within a few milliseconds could wedge the embedded broker's group
    # coordinator: the next member re-joined at the same generation for minutes, 1 run in 4.)
    first, second = pair
    for worker in (first, second):
        assert worker.proc is not None
        worker.proc.send_signal(signal.SIGTERM)
        worker.proc.wait(timeout=60)  # no second signal: it could land after Faust's handler is gone
        assert worker.stop() == 0, worker.log_tail()
        if worker is first:
            deadline = time.monotonic() + 120
            while len(_owned(second)) != 4 or not second.ready():
                assert time.monotonic() < deadline, (sorted(_owned(second)), second.log_tail())
                time.sleep(0.5)
    for worker in pair:
        shutil.rmtree(worker.data_dir)
    time.sleep(float(TEST_ENV["STREAM_GUARD_SESSION_TIMEOUT_S"]) + 1)
    again = monitored["start"]("m3").wait_ready()
    restored = monitored["client"] = Client(again)
    assert {t: restored.view(t) for t in TOKENS} == before
    # The all-tenants page lists a partition's tenants once the overview has read it (a 2 s timer, or sooner from
    # a progress report); until then it says it is not complete ("more to come"), which is what an operator sees.
    deadline = time.monotonic() + 60
    while True:
        status, _, body = restored.request("/monitor/api/all", token=OPERATOR)
        assert status == 200
        listing = orjson.loads(body)
        if listing["complete"]:
            break
        assert time.monotonic() < deadline, listing
        time.sleep(0.5)
    assert sorted(v["tenant"] for v in listing["tenants"]) == sorted(TOKENS)


def _counter(worker: Worker, outcome: str) -> float:
    return sum(value for _, value in worker.series("stream_guard_tenant_answers_total", outcome=outcome))


def test_a_tenant_sees_its_own_dashboard_and_nothing_of_anyone_else(monitored: dict[str, Any], browser: Any) -> None:
    client: Client = monitored["client"]
    base = client.base
    page = browser.new_page()
    try:
        page.goto(f"{base}/monitor/t/claims")
        assert "Sign in" in page.content()
        page.goto(f"{base}/monitor/login")
        page.fill("#token", "claims-token-but-wrong-0123456")
        page.click("button[type=submit]")
        assert "not valid" in page.content()
        page.fill("#token", TOKENS["claims"])
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/monitor/t/claims")
        assert page.locator("h1").inner_text() == "Monitoring: claims"
        # The charts are drawn: one per rate plus latency and volume, each with its daily points.
        charts = page.locator("svg.chart")
        assert charts.count() == 9
        box = page.locator("#chart-refusal").bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 100
        assert page.locator("#chart-refusal polyline.series").count() == 1
        assert page.locator("#chart-refusal circle").count() == DAYS
        assert page.locator("#rates tr[data-rate=refusal]").inner_text().count("%") >= 2
        assert "rate_shift" in page.locator("#alerts").inner_text()

        # Editing the URL or calling the API for another tenant, or for everyone, gets a plain 404.
        for path in ("/monitor/t/cites", "/monitor/api/t/cites", "/monitor/t/nobody", "/monitor/all",
                     "/monitor/api/all", "/monitor/api/local", "/monitor/t/claims%20", "/monitor/t/CLAIMS"):
            response = page.goto(base + path)
            assert response.status == 404, path
            assert "cites" not in page.content() and "steady" not in page.content()
        response = page.goto(f"{base}/monitor/api/t/claims")
        assert response.status == 200 and orjson.loads(response.body())["tenant"] == "claims"
        headers = response.headers
        assert "no-store" in headers["cache-control"] and "default-src 'none'" in headers["content-security-policy"]
        cookies = page.context.cookies()
        [session] = [c for c in cookies if c["name"] == "sg_monitor"]
        assert session["httpOnly"] and session["sameSite"] == "Strict" and session["path"] == "/monitor"
        # No external request of any kind: every resource the page loaded came from the worker.
        loaded: list[str] = []
        page.on("request", lambda r: loaded.append(r.url))
        page.goto(f"{base}/monitor/t/claims")
        assert loaded and all(url.startswith(base) for url in loaded)
        page.click("text=Sign out")
        assert page.goto(f"{base}/monitor/t/claims").status == 401
    finally:
        page.close()

    # The same from a script: no token or a wrong one gets nothing, a tenant token only its own tenant.
    for token in (None, "", "nope", hash_token(TOKENS["claims"])):
        for path in ("/monitor/api/t/claims", "/monitor/api/all", "/monitor/t/claims"):
            status, _, body = client.request(path, token=token)
            assert status == 401 and b"claims" not in body.replace(b"/monitor/t/claims", b""), (path, token)
    forged = "eyJyIjoib3BlcmF0b3IiLCJ0IjpudWxsLCJiIjoieCIsImUiOjk5OTk5OTk5OTl9.AAAA"
    assert client.request("/monitor/api/all", cookie=f"sg_monitor={forged}")[0] == 401
    assert client.request("/monitor/api/t/claims", token=TOKENS["cites"])[0] == 404
    status, _, body = client.request("/monitor/api/all", token=OPERATOR)
    # Worst first: the tenants whose rates moved (and alerted) before the one that stayed steady.
    assert status == 200 and [v["tenant"] for v in orjson.loads(body)["tenants"]][-1] == "steady"
    assert client.request("/monitor/login", form={"token": OPERATOR})[1]["Location"] == "/monitor/all"


def test_a_client_guessing_tokens_is_locked_out_even_with_the_right_one(monitored: dict[str, Any]) -> None:
    # Last in this module: it locks 127.0.0.1 out of this worker's dashboard for login_lockout_minutes.
    client: Client = monitored["client"]
    statuses = [client.request("/monitor/api/t/claims", token=f"guess-{n}-0123456789abcdef")[0] for n in range(11)]
    # Ten failures within the window lock the client out (the earlier tests' wrong tokens may count too).
    assert 401 in statuses and statuses[-1] == 429 and set(statuses) == {401, 429}
    assert statuses.index(429) <= 10 and all(s == 429 for s in statuses[statuses.index(429):])
    status, headers, body = client.request("/monitor/api/t/claims", token=TOKENS["claims"])
    assert status == 429 and 1 <= int(headers["Retry-After"]) <= 300 and b"claims" not in body
    status, _, body = client.request("/monitor/login", form={"token": TOKENS["claims"]})
    assert status == 429 and b"Too many failed sign-ins" in body
