"""How every herald process logs: each one (worker, reconciler, API server, CLI command)
starts through ``herald``'s entry point, which calls :func:`configure` once.

``HERALD_LOG_FORMAT=text`` (the default) writes ``time LEVEL logger: message`` lines;
``json`` writes one JSON object a line – ``time`` (UTC, ISO 8601), ``level``, ``logger``,
``message``, and ``exception`` with the traceback's text when there is one – for a log
collector to read without parsing. Libraries' loggers (rq's, uvicorn's) go through the
same handler, so a process never mixes the two forms.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonLines(logging.Formatter):
    """One JSON object per record, on one line (newlines in the message are escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, str] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False)


def configure(log_format: str, level: int = logging.WARNING) -> None:
    """Send every log record to stderr in ``log_format`` (``text`` or ``json``)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLines() if log_format == "json" else logging.Formatter(TEXT))
    logging.basicConfig(level=level, handlers=[handler], force=True)
