"""The streaming edge of stream-guard: Faust agents, topics, the judge process, the embedded broker, and the
alerts topic forwarded to a webhook (alert_forwarder.py).

Lives in the repository's top-level agents/ folder and installs as `stream_guard.agents`, so that the wheel
adds a single top-level import name and coexists with other packages that import as `agents`.
"""
