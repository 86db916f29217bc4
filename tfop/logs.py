"""Structured logging, configured once per process: JSON lines in a cluster (no TTY), readable in a terminal.

Every line about a job carries `job=namespace/name`: bind it with `log.bind(job=key)`. Libraries that log through
the standard `logging` module (urllib3, kubernetes) and Python warnings (urllib3's InsecureRequestWarning) are
rendered by the same processors, so a JSON log stays JSON from its first line to its last.
"""

from __future__ import annotations

import logging
import sys
import warnings
from typing import Literal

import structlog

LogFormat = Literal["auto", "json", "console"]

_state = {"configured": False}


def is_configured() -> bool:
    return _state["configured"]


def configure(log_format: LogFormat = "auto", level: str = "info") -> None:
    numeric_level = logging.getLevelName(level.upper())
    if not isinstance(numeric_level, int):
        raise ValueError(f"unknown log level {level!r}")
    use_json = log_format == "json" or (log_format == "auto" and not sys.stderr.isatty())
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.StackInfoRenderer(), structlog.processors.format_exc_info,
                    renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    # The standard library's records go through the same processors, with the library's logger name.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name, structlog.stdlib.ExtraAdder()],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info, renderer]))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    # Libraries chatter at info; their warnings and errors are what an operator needs to see.
    root.setLevel(max(numeric_level, logging.WARNING))
    # warnings.warn() becomes a record of the `py.warnings` logger; each distinct warning is logged once.
    logging.captureWarnings(True)
    warnings.simplefilter("default")
    _state["configured"] = True
