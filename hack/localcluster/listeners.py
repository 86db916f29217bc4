"""Who listens where on this machine, read from /proc: so that a component about to bind an address can find it taken
by a process that is not this cluster's (a socat relay or a CoreDNS left over by an earlier cluster) and say which,
instead of starting beside it. A leftover relay still answers the health probe, and pods would then reach an
apiserver that is gone, or another cluster's.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

TCP_LISTEN = "0A"  # /proc/net/tcp's state of a listening socket; a bound UDP socket has no such state
WILDCARDS = ("0.0.0.0", "::")


@dataclass(frozen=True)
class Address:
    protocol: str  # "tcp" or "udp"
    ip: str
    port: int

    def __str__(self) -> str:
        return f"{self.protocol} {self.ip}:{self.port}"


@dataclass(frozen=True)
class Holder:
    """A socket bound where an Address would be (its own address, or the wildcard on the same port)."""

    address: Address
    pid: int | None  # None when no process we can read holds it (another user's, or a kernel socket)
    command: str

    def __str__(self) -> str:
        who = f"pid {self.pid} ({self.command})" if self.pid is not None else "a process this user cannot see"
        return f"{self.address} is held by {who}"


def _ip(hex_address: str) -> str:
    """/proc/net's address: IPv4 as one little-endian word, IPv6 as four."""
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    address = ipaddress.IPv6Address(words)
    return str(address.ipv4_mapped or address)


def bound_sockets(protocol: str, proc: Path = Path("/proc")) -> list[tuple[Address, str]]:
    """(address, socket inode) of every listening TCP socket or bound UDP socket, IPv4 and IPv6."""
    found = []
    for table in (protocol, f"{protocol}6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if protocol == "tcp" and state != TCP_LISTEN:
                continue
            hex_ip, hex_port = local.split(":")
            found.append((Address(protocol, _ip(hex_ip), int(hex_port, 16)), inode))
    return found


def _socket_owners(inodes: set[str], proc: Path) -> dict[str, int]:
    owners: dict[str, int] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    owners.setdefault(link[8:-1], int(entry.name))
        except OSError:  # gone, or not ours to read
            continue
    return owners


def _command(pid: int, proc: Path) -> str:
    try:
        return (proc / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def holders(wanted: list[Address], proc: Path = Path("/proc")) -> list[Holder]:
    """The sockets already bound where `wanted` would bind, each with the process holding it."""
    matches: list[tuple[Address, str]] = []
    for protocol in sorted({address.protocol for address in wanted}):
        for bound, inode in bound_sockets(protocol, proc):
            if any(bound.port == address.port and address.protocol == protocol
                   and bound.ip in (address.ip, *WILDCARDS) for address in wanted):
                matches.append((bound, inode))
    owners = _socket_owners({inode for _, inode in matches}, proc) if matches else {}
    return [Holder(bound, owners.get(inode), _command(owners[inode], proc) if inode in owners else "")
            for bound, inode in matches]
