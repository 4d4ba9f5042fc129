"""The engine: one event in, one verdict out, and the processes that do it at scale.

    detector.py  runs every check on one answer and assembles the report (HallucinationDetector)
    pipeline.py  Guard: inspect, heal, score, route, and what enters drift history
    judging.py   a batch of raw payloads judged: bytes in, bytes out, each event's failure its own
    budget.py    the CPU budget of one event
    history.py   drift history stores (memory, SQLite; the worker keeps its own in a table)
    alerts.py    the alerts a judged event raises
    pool.py      the one pool of judge processes (check -j, backtest, calibrate, the worker, serve)
    dispatch.py  concurrent callers onto the pool (serve): batches as processes free up, each question in order
    incremental.py  an answer checked sentence by sentence as it is generated
    judge_server.py  the start-up of the fork server that forks the pool's judge processes
"""
