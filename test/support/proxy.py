"""A TCP pipe to the apiserver that a test can cut: one client loses the apiserver, as in a network partition,
while the others keep it and nothing in the client is replaced."""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpProxy:
    """A byte pipe to the apiserver that a test can cut, so one client is disconnected while others are not."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open = threading.Event()
        self._open.set()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        threading.Thread(target=self._accept, daemon=True, name="test-proxy").start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return  # closed
            if not self._open.is_set():
                downstream.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                downstream.close()
                continue
            with self._lock:
                self._sockets.update((downstream, upstream))
            for src, dst in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Drop every open connection and turn new ones away until `resume`."""
        self._open.clear()
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def resume(self) -> None:
        self._open.set()

    def close(self) -> None:
        self.cut()
        self._listener.close()
