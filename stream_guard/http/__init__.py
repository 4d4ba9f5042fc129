"""The HTTP edge: `stream-guard serve`, checks over HTTP for services that decide before they deliver.

    app.py      the routes and their handlers (Service)
    server.py   running it: judge processes, drift store, listening, a graceful stop
    bodies.py   request bodies within their limits (413), line by line for a streamed answer
    auth.py     bearer tokens: the dashboard's, per tenant
    openapi.py  /openapi.json, from the wire shapes
    metrics.py  /metrics
"""
