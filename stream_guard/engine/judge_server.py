"""The fork server's own start-up (engine/pool.py starts judge processes through a fork server): the server
imports this module first, and nothing else imports it.

It makes the server die with the thread that started it, as every judge process dies with the server, so that
killing the parent (a worker, a test run, `check`) leaves no server or judge behind; by importing the pool, it
imports the whole core once, for every judge the server forks; and when the pool that started it names a spaCy
model (pool.SERVER_MODEL_ENV), it imports spaCy and loads that model once, so that every judge it forks starts
with the model loaded (text/ner.py caches loaded models per process, and a fork inherits the cache) instead of
each paying about half a second of CPU to load its own.
"""

import os

from stream_guard.engine.pool import SERVER_MODEL_ENV, die_with_parent
from stream_guard.text.ner import preload_model

die_with_parent()
if os.environ.get(SERVER_MODEL_ENV):
    preload_model(os.environ[SERVER_MODEL_ENV])
