"""The fork server's own start-up (engine/pool.py starts judge processes through a fork server): the server
imports this module first, and nothing else imports it.

It makes the server die with the thread that started it, as every judge process dies with the server, so that
killing the parent (a worker, a test run, `check`) leaves no server or judge behind; and, by importing the pool,
it imports the whole core once, for every judge the server forks.
"""

from stream_guard.engine.pool import die_with_parent

die_with_parent()
