"""Tenant monitoring, the pure part: rates per tenant in event-time daily windows, alert rules on their
movement, the weekly review sample and its grades, dashboard pages and Prometheus metrics.

    observation.py  a verdict -> the counts it adds (the only reader of the verdict's shape)
    windows.py      days, weeks, DayCounts and sums over windows
    ledger.py       a tenant's books: count, close days in event time, evaluate, sample, prune
    rules.py        rate_shift, citation_mismatch_rate, review_failure_rate
    sampling.py     the deterministic weekly sample (bottom-k of a keyed hash)
    review.py       review items for graders, and joining grades back to tenants
    (the [monitor] table is stream_guard/config/monitor.py)
    tokens.py       access tokens and their hashes (python -m stream_guard.ops.monitoring.tokens)
    access.py       logins and session cookies
    dashboard.py    the pages; charts.py their inline SVG
    metrics.py      per-tenant Prometheus metrics

The streaming side (agents/monitor.py) moves records between topics and tables and calls these.
"""
