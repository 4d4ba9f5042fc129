"""What crosses the wire, defined once (msgspec Structs; their JSON Schemas in schemas/ are generated from them).

    events.py           the input contract (AnswerEvent)
    verdict.py          the verdict; check_details.py its checks' details
    report.py           the report one inspection makes (the seed library's HallucinationReport)
    alert.py            the alert record and its deterministic id
    deadletter.py       a dead letter's error headers
    headers.py          output headers and the W3C trace context
    metrics_summary.py  the per-partition latency summary
    labels.py           graders' labels
    inline.py           the HTTP service's and client's shapes: failures, streamed sentences, drift history
    schemas.py          the JSON Schemas (`make schemas`)
"""
