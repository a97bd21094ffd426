"""structlog JSON logs. Bind ids (agent_id, user_id, session_id, workflow_id) where work starts."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

_SECRET_KEYS = re.compile(r"(api[_-]?key|token|secret|password|authorization|uri)", re.IGNORECASE)
_URI_CREDENTIALS = re.compile(r"(\w+://)[^/@\s]+@")


def _redact(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Never log a secret: drop values of secret-looking keys and credentials inside URIs."""
    for key, value in list(event.items()):
        if key != "event" and _SECRET_KEYS.search(key) and not key.endswith(("_tokens", "_count")):
            event[key] = "[redacted]"
        elif isinstance(value, str):
            event[key] = _URI_CREDENTIALS.sub(r"\1[redacted]@", value)
    return event


class _Stderr:
    """Writes each line to the ``sys.stderr`` of the moment, not the one at configuration time:
    a logger cached on first use keeps working when stderr is replaced later (a test's capture
    that has since closed, a daemon that redirected it)."""

    def msg(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    log = debug = info = warning = warn = error = critical = exception = fatal = msg


def _stderr_logger(*_: Any) -> _Stderr:
    return _Stderr()


def configure_logging(level: str = "info") -> None:
    """JSON lines on stderr for our logs and for the libraries' stdlib logs alike."""
    lvl = logging.getLevelName(level.upper())
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _redact,
    ]
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processor=structlog.processors.JSONRenderer(), foreign_pre_chain=shared
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(lvl)


def get_logger(**ids: Any) -> structlog.stdlib.BoundLogger:
    logger: structlog.stdlib.BoundLogger = structlog.get_logger("mnemos").bind(**ids)
    return logger
