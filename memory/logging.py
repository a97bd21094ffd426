"""structlog JSON logs. Bind ids (agent_id, user_id, session_id, workflow_id) where work starts."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

_SECRET_KEYS = re.compile(r"(api[_-]?key|token|secret|password|authorization|uri)", re.IGNORECASE)
# A URI's user:password (a mistyped "postgresql//" too) and a libpq keyword's password.
_URI_CREDENTIALS = re.compile(r"(//)[^/@\s]+@")
_KEYWORD_PASSWORD = re.compile(r"\b(password|passwd|pwd)(\s*=\s*)('[^']*'|\S+)", re.IGNORECASE)


def redact_text(text: str) -> str:
    """``text`` without the credentials it may quote (an exception's message, a traceback)."""
    text = _URI_CREDENTIALS.sub(r"\1[redacted]@", text)
    return _KEYWORD_PASSWORD.sub(r"\1\2[redacted]", text)


def _redact(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Never log a secret: drop values of secret-looking keys and credentials inside strings.
    Runs after format_exc_info, so a traceback's messages are redacted as well."""
    for key, value in list(event.items()):
        if key != "event" and _SECRET_KEYS.search(key) and not key.endswith(("_tokens", "_count")):
            event[key] = "[redacted]"
        elif isinstance(value, str):
            event[key] = redact_text(value)
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
    ]
    # The traceback rendered, then redacted, then written.
    last: list[Any] = [
        structlog.processors.format_exc_info,
        _redact,
        structlog.processors.JSONRenderer(),
    ]
    structlog.configure(
        processors=[*shared, *last],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            # ExtraAdder: a stdlib record's extra= fields (the workflows' step, reason, ids; the
            # SDK's temporal_workflow / temporal_activity) are the line's fields.
            foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder()],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *last],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(lvl)


def get_logger(**ids: Any) -> structlog.stdlib.BoundLogger:
    logger: structlog.stdlib.BoundLogger = structlog.get_logger("mnemos").bind(**ids)
    return logger
