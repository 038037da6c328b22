"""Structured JSON logs (one JSON object per line) for the app and gunicorn."""
from __future__ import annotations

import json
import logging
import time


class JsonFormatter(logging.Formatter):
    """Render a record as one JSON line; `extra={...}` fields are kept."""
    SKIP = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in self.SKIP and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure(level: str = "INFO") -> None:
    """Send the `service` and `gunicorn` loggers to stderr as JSON lines."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    for name in ("service", "gunicorn.error"):
        log = logging.getLogger(name)
        log.handlers[:] = [handler]
        log.setLevel(level)
        log.propagate = False


# gunicorn's logconfig_dict (merged into gunicorn's defaults, whose root logger uses "console")
GUNICORN_LOGCONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "service.logs.JsonFormatter"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"},
        "error_console": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"},
    },
    "root": {"level": "INFO", "handlers": ["console"]},
    "loggers": {
        "gunicorn.error": {"level": "INFO", "handlers": ["error_console"], "propagate": False, "qualname": "gunicorn.error"},
        "gunicorn.access": {"level": "WARNING", "handlers": ["console"], "propagate": False, "qualname": "gunicorn.access"},
        "service": {"level": "INFO", "handlers": ["console"], "propagate": False},
    },
}
