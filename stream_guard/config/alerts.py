"""`[alerts]`: forwarding the alerts topic to a webhook (`stream-guard alerts --webhook URL`): where, in which
shape, how hard to try, and where the alerts that cannot be delivered go.

```toml
[alerts]
webhook = "http://alertmanager:9093/api/v2/alerts"
format = "alertmanager"                      # alertmanager | slack | json
dashboard_url = "https://guard.example.com"  # each alert links to its tenant's page there
```

Every key has an environment variable `STREAM_GUARD_ALERTS_<KEY>` (load.py); `--webhook` and `--format` override.
The webhook's key was `to` (and its variable STREAM_GUARD_ALERTS_TO); load.py's RENAMED still reads both, with a
warning.
"""


from typing import Annotated, ClassVar

from stream_guard.config.relations import valid_topic
from stream_guard.config.schema import NON_EMPTY_TEXT, TEXT, Check, Doc, Secret, Section, above, count_between, one_of

FORMATS = ("alertmanager", "slack", "json")


def _url(value: object) -> bool:
    return isinstance(value, str) and (value == "" or value.startswith(("http://", "https://")))


class AlertSettings(Section, frozen=True):
    WHAT: ClassVar[str] = "alerts setting"
    PREFIX: ClassVar[str] = "alerts."

    webhook: Annotated[str, Check(_url, "must be empty or an http:// or https:// URL"),
                       Doc("The webhook's URL (`--webhook`). Formerly `to` (`STREAM_GUARD_ALERTS_TO`): still read, "
                           "with a warning.")] = ""
    format: Annotated[str, one_of(*FORMATS), Doc("alertmanager (its v2 API), slack (an incoming webhook) or json "
                                                 "(the alert record as it is).")] = "json"
    dashboard_url: Annotated[str, Check(_url, "must be empty or an http:// or https:// URL"),
                             Doc("Where the workers' dashboard is reached; each alert links to its tenant's page "
                                 "there.")] = ""
    group_id: Annotated[str, NON_EMPTY_TEXT, Doc("Consumer group whose committed offsets say what was "
                                                 "delivered.")] = "stream-guard-alerts"
    dead_letter_topic: Annotated[str, Check(valid_topic, "must be a topic name"),
                                 Doc("Alerts the webhook refused or never took, with why.")] = "guard.alerts.dlq"
    max_attempts: Annotated[int, count_between(1, 1000), Doc("Tries per alert before it is dead-lettered (a refusal, "
                                                        "4xx other than 408 and 429, is not retried).")] = 8
    backoff_initial_s: Annotated[float, above(0, 3600), Doc("Wait after the first failed try; doubles each "
                                                        "time.")] = 0.5
    backoff_max_s: Annotated[float, above(0, 86_400), Doc("Longest wait between tries.")] = 30.0
    timeout_s: Annotated[float, above(0, 3600), Doc("How long one try may take.")] = 10.0
    header: Annotated[str, Secret(), TEXT, Doc("An extra request header, `Name: value` (an Authorization for the "
                                     "webhook; set it from the environment).")] = ""
