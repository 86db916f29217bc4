"""The REST client alone, without a cluster: its CPU per request and per watch event against a loopback HTTPS server.

    PYTHONPATH=hack .venv/bin/python -m bench.client_bench [--jobs 100] [--rounds 5] [--threads 16]

The server is a process of its own (so its CPU is not the client's), speaking as the apiserver does: TLS with a
client certificate (RSA 2048, as the bench's operator user), keep-alive HTTP/1.1, an answer over 2 KB chunked as Go
sends it, a create answered with the object and the fields the apiserver adds, a watch as one chunk per event. The
client is tfop's KubeClient: each round creates the Pods and Services the bench's jobs have (the limit's requests,
bench/limit.py) from `--threads` threads, as tfop's request threads send them, then reads a watch of as many pod
events. CPU is the client process's (user + system, every thread) per request and per event: the least of the rounds,
which a loaded machine moves least, and the median. The server counts connections, so a client that opens one per
request shows it. To compare two commits, run it with the other checkout first on PYTHONPATH (hack stays this one's).
"""

from __future__ import annotations

import argparse
import json
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ADDED = {"uid": "0b5bdd8c-3b1f-4a57-9a53-6f4bd1c5e0a1", "resourceVersion": "123456",
         "creationTimestamp": "2026-12-02T12:00:00Z",
         "managedFields": [{"manager": "tfop", "operation": "Update", "apiVersion": "v1",
                            "time": "2026-12-02T12:00:00Z", "fieldsType": "FieldsV1",
                            "fieldsV1": {f"f:field{i}": {} for i in range(40)}}]}
HEADERS = (b"Audit-Id: 4d1c2a9e-5b0e-4a55-8a86-1f1f0e1f2d3c\r\nCache-Control: no-cache, private\r\n"
           b"Content-Type: application/json\r\nX-Kubernetes-Pf-Flowschema-Uid: 9b7e8a9c-0f49-4e0e-9c67-0c8a0e6f1c11\r\n"
           b"X-Kubernetes-Pf-Prioritylevel-Uid: 1f0d1c64-8d0b-43b5-8d22-6a8f1f0b1b55\r\n"
           b"Date: Wed, 02 Dec 2026 12:00:00 GMT\r\n")
_COUNTING = threading.Lock()


def _job(index: int) -> dict[str, Any]:
    """A bench job as the apiserver answers its create: with its namespace and uid."""
    from bench.workload import tfjob
    job = tfjob(f"job-{index:04d}")
    job["metadata"].update({"namespace": "bench", "uid": f"00000000-0000-4000-8000-{index:012d}"})
    return job


def _framed(code: bytes, body: bytes) -> bytes:
    if len(body) > 2048:  # Go's server chunks what it cannot buffer before the headers go
        return (b"HTTP/1.1 " + code + b"\r\n" + HEADERS + b"Transfer-Encoding: chunked\r\n\r\n"
                + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
    return b"HTTP/1.1 " + code + b"\r\n" + HEADERS + b"Content-Length: %d\r\n\r\n" % len(body) + body


def _serve_one(conn: ssl.SSLSocket, watch_events: list[bytes], counts: dict[str, int]) -> None:
    reader = conn.makefile("rb")
    while True:
        line = reader.readline()
        if not line:
            return
        length = 0
        while (header := reader.readline()) not in (b"\r\n", b""):
            name, _, value = header.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        body = reader.read(length) if length else b""
        method, target = line.split()[:2]
        with _COUNTING:
            counts["requests"] += 1
        if b"watch=true" in target:
            conn.sendall(b"HTTP/1.1 200 OK\r\n" + HEADERS + b"Transfer-Encoding: chunked\r\n\r\n")
            for event in watch_events:
                conn.sendall(b"%x\r\n" % len(event) + event + b"\r\n")
            conn.sendall(b"0\r\n\r\n")
            continue
        if method == b"POST" and body:
            sent = json.loads(body)
            sent["metadata"] = {**sent.get("metadata", {}), **ADDED}
            sent["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
            conn.sendall(_framed(b"201 Created", json.dumps(sent).encode()))
        else:
            conn.sendall(_framed(b"200 OK", body or b'{"kind":"Status","status":"Success"}'))


def serve(directory: Path, events: int) -> None:
    """The server's process: writes its port to `port`, serves until stdin closes, then prints its counts."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(directory / "server.crt", directory / "server.key")
    context.load_verify_locations(directory / "client.crt")
    context.verify_mode = ssl.CERT_REQUIRED
    from bench.limit import children
    pod = next(body for _, body in children(_job(0)))
    pod["metadata"].update(ADDED)
    watch_events = [json.dumps({"type": "MODIFIED", "object": {**pod, "metadata": {
        **pod["metadata"], "resourceVersion": str(n)}}}).encode() + b"\n" for n in range(events)]
    counts = {"connections": 0, "requests": 0}
    listener = socket.create_server(("127.0.0.1", 0))
    (directory / "port.new").write_text(str(listener.getsockname()[1]))
    (directory / "port.new").rename(directory / "port")  # whole when it appears

    def accept() -> None:
        while True:
            raw, _ = listener.accept()
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with _COUNTING:
                counts["connections"] += 1

            def handle(raw: socket.socket = raw) -> None:
                try:
                    with context.wrap_socket(raw, server_side=True) as conn:
                        _serve_one(conn, watch_events, counts)
                except OSError:
                    pass
            threading.Thread(target=handle, daemon=True).start()
    threading.Thread(target=accept, daemon=True).start()
    sys.stdin.read()
    print(json.dumps(counts), flush=True)


def _pki(directory: Path) -> None:
    for name, subject, extra in (("server", "/CN=127.0.0.1", ["-addext", "subjectAltName=IP:127.0.0.1"]),
                                 ("client", "/CN=bench-operator", [])):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", subject,
                        "-keyout", str(directory / f"{name}.key"), "-out", str(directory / f"{name}.crt"), *extra],
                       check=True, capture_output=True)


def measure(directory: Path, jobs: int, rounds: int, threads: int, events: int) -> dict[str, Any]:
    from bench.limit import children
    from tfop.kube import credentials
    from tfop.kube.client import KubeClient
    from tfop.kube.resource import PODS

    config = credentials.Configuration()
    config.host = f"https://127.0.0.1:{(directory / 'port').read_text()}"
    config.ssl_ca_cert = str(directory / "server.crt")
    config.cert_file, config.key_file = str(directory / "client.crt"), str(directory / "client.key")
    client = KubeClient(config, qps=0)
    writes = [child for index in range(jobs) for child in children(_job(index))]
    per_request, per_event = [], []
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda child: client.create(child[0], child[1], "bench"), writes[:threads]))  # connections
        for _ in range(rounds):
            started = time.process_time()
            list(pool.map(lambda child: client.create(child[0], child[1], "bench"), writes))
            per_request.append((time.process_time() - started) / len(writes))
            started = time.process_time()
            with client.watch(PODS, "bench", resource_version="1", timeout_seconds=60) as stream:
                seen = sum(1 for _ in stream)
            per_event.append((time.process_time() - started) / max(1, seen))
    client.close()
    return {"requests": len(writes), "per_request": per_request, "per_event": per_event}


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.client_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=100, help="the bench's jobs whose Pods and Services are created")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=16, help="request threads (tfop's: 16)")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--events", type=int, default=1400, help="pod events in each round's watch")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.events)
        return
    with tempfile.TemporaryDirectory(prefix="client-bench-") as temporary:
        directory = Path(temporary)
        _pki(directory)
        server = subprocess.Popen([sys.executable, "-m", "bench.client_bench", "--serve", str(directory),
                                   "--events", str(args.events)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        try:
            while not (directory / "port").exists():
                if server.poll() is not None:
                    raise SystemExit("the loopback server did not start")
                time.sleep(0.05)
            figures = measure(directory, args.jobs, args.rounds, args.threads, args.events)
        finally:
            counts, _ = server.communicate("", timeout=30)
    import tfop
    print(f"tfop from {Path(tfop.__file__).parent.parent}: {figures['requests']} creates from {args.threads} "
          f"threads and a watch of {args.events} pod events, {args.rounds} rounds")
    for label, spent in (("CPU per request", figures["per_request"]), ("CPU per watch event", figures["per_event"])):
        print(f"  {label:<20} {1e6 * min(spent):6.0f} us  (median {1e6 * statistics.median(spent):.0f})")
    print(f"  server: {counts.strip()}")


if __name__ == "__main__":
    main()
