"""What can stop the operator before it starts, said in one line with the fix, and the exit code that goes with it:
2 for flags or config the user must change, 1 for a cluster that cannot be reached or is not ready for tfop.

Every such failure is reported twice on stderr: one structured log line (JSON in a pod, so log pipelines see it)
and one plain line, the last thing printed, for the person at the terminal.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import structlog

from tfop import logs

EXIT_UNREACHABLE = 1  # the cluster cannot be reached, refuses us, or lacks the CRD
EXIT_USAGE = 2  # flags or config

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

log = structlog.get_logger("tfop")


@dataclass(frozen=True)
class StartupError(Exception):
    exit_code: int
    event: str  # the structured line's event, e.g. "invalid flags"
    problem: str
    fix: str

    def __str__(self) -> str:
        text = f"{self.problem}; {self.fix}" if self.fix else self.problem
        return " ".join(text.split())  # one line, whatever a library's message held


def report_startup_error(error: StartupError) -> None:
    if not logs.is_configured():
        logs.configure()
    log.error(error.event, error=" ".join(error.problem.split()), fix=error.fix, exit_code=error.exit_code)
    print(f"tfop: error: {error}", file=sys.stderr, flush=True)


def dns_label_problem(name: str) -> str | None:
    """Why `name` cannot be a namespace (a DNS-1123 label), or None."""
    if not name:
        return "a namespace name cannot be empty"
    if len(name) > 63 or not _DNS_LABEL.match(name):
        return f"{name!r} is not a namespace name (lowercase letters, digits and '-', at most 63 characters)"
    return None


def dns_subdomain_problem(name: str) -> str | None:
    if not name or len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        return f"{name!r} is not a valid object name (lowercase letters, digits, '-' and '.')"
    return None


@dataclass(frozen=True)
class ListenAddress:
    """A parsed host:port. An empty host means every address, IPv6 and IPv4 where the machine has both."""

    host: str
    port: int

    @property
    def is_ipv6(self) -> bool:
        return ":" in self.host

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if self.is_ipv6 else f"{self.host}:{self.port}"


def parse_listen_address(text: str, flag: str) -> ListenAddress:
    """`host:port`, `[ipv6]:port` or `:port`; raises StartupError naming the flag."""
    example = f"e.g. {flag} 127.0.0.1:8080, {flag} [::1]:8080 or {flag} :8080"
    host, port_text = _split_host_port(text)
    if host is None or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise StartupError(EXIT_USAGE, "invalid flags", f"{flag} {text!r} is not host:port with a port 0-65535",
                           example)
    if ":" in host and not text.startswith("["):
        raise StartupError(EXIT_USAGE, "invalid flags", f"{flag} {text!r}: an IPv6 address needs brackets",
                           f"write [{host}]:{port_text}")
    return ListenAddress(host, int(port_text))


def _split_host_port(text: str) -> tuple[str | None, str]:
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or text[end + 1:end + 2] != ":":
            return None, ""
        return text[1:end], text[end + 2:]
    host, sep, port = text.rpartition(":")
    return (host if sep else None), port
