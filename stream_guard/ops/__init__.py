"""Operations: what runs around the engine to measure, tune and watch it.

    sources.py          where recorded answers come from (a file; a topic through the edge's RecordedSource)
    backtest.py         judge recorded answers with a candidate configuration, compare with live and labels
    backtest_report.py  its plots and HTML page
    calibration.py      choose flag_threshold (and refit the score model) from labelled answers
    evaluation.py       ROC AUC, precision and recall, the decision metrics both report
    alerting.py         alert dedupe records and the per-partition latency budget
    latency.py          per-partition latency windows and lag for the metrics topic
    display.py          one readable line per record (tail, up)
    webhooks.py         alerts as webhook bodies (Alertmanager, Slack, JSON) for `stream-guard alerts`
    process_metrics.py  what every service's /metrics starts from (build info, process collectors)
    monitoring/         tenant monitoring, the pure part
"""
