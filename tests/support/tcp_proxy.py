"""A TCP proxy a test can cut and restore: an outage of a shared server (a broker other sessions
use) for the clients of one test only, without stopping the server.

:meth:`TcpProxy.cut` closes every connection through it (each side sees the other end close, as
when a server process dies) and stops listening (new connections are refused, as by a host whose
server is down); :meth:`TcpProxy.restore` listens again on the same port. The server itself
notices its clients gone and acts as on their death (RabbitMQ requeues what they held
unacknowledged).

:meth:`TcpProxy.break_after` cuts once in the middle of a client's stream instead: once the
clients sent that many more bytes through it, nothing more reaches the clients, the server is
given :data:`SETTLE_S` to act on what it got, and every open connection is closed; new ones are
accepted as before. What a client sees: a connection lost after its writes reached the server
but before the server's answers to them came back (a publish the broker took, unconfirmed).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from tests.support.servers.base import LOCALHOST, free_port

#: How often the accepting thread looks whether it should stop listening.
ACCEPT_POLL_S = 0.1
CHUNK = 65536
#: Seconds the server gets to act on the bytes it received before a break closes the connections.
#: At 0.3 s, under the suite's load, none of a broken batch's first copies reached the queue in
#: one CI run (the broker had not routed them before the connection died, as far as the logs tell).
SETTLE_S = 1.5
#: How long :meth:`TcpProxy.restore` keeps trying to bind the port again (a connection in
#: TIME_WAIT or a client's ephemeral port may hold it for a moment).
REBIND_S = 10.0


class TcpProxy:
    """Forwards 127.0.0.1:``port`` to ``upstream``; a daemon thread per direction of a connection."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = free_port()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self._acceptor: threading.Thread | None = None
        #: Connections accepted so far (a test can tell its clients went through the proxy).
        self.accepted = 0
        #: Bytes the clients may still send before the connections are broken (None: no break armed).
        self._budget: int | None = None
        #: Connections broken by :meth:`break_after` so far.
        self.broken = 0
        #: The server's sockets whose answers a break holds back (and all of the connections
        #: open at the break: closed once it has let the server settle).
        self._silenced: frozenset[socket.socket] = frozenset()

    def start(self) -> TcpProxy:
        self._listen()
        return self

    def cut(self) -> None:
        """Refuse new connections and close every open one."""
        listener, self._listener = self._listener, None
        # The open connections at once, under the lock the acceptor registers new ones with: one
        # accepted meanwhile sees the listener gone and is closed by the acceptor itself.
        with self._lock:
            open_sockets, self._sockets = self._sockets, set()
        for sock in open_sockets:
            _close(sock)
        self._stop_listening(listener)

    def restore(self) -> None:
        """Accept connections again on the same port."""
        deadline = time.monotonic() + REBIND_S
        while True:
            try:
                self._listen()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def close(self) -> None:
        self.cut()

    def break_after(self, upstream_bytes: int) -> None:
        """Once the clients have sent ``upstream_bytes`` more bytes to the server (all of them
        forwarded), stop forwarding the server's answers, wait :data:`SETTLE_S` and close every
        open connection, once; the proxy keeps accepting new ones."""
        with self._lock:
            self._budget = upstream_bytes

    def _spend(self, sent: int) -> bool:
        """Count ``sent`` bytes a client sent; True when they used up the armed budget."""
        with self._lock:
            if self._budget is None:
                return False
            self._budget -= sent
            if self._budget > 0:
                return False
            self._budget = None
            # The connections open now are the ones broken; one made meanwhile is left alone.
            doomed, self._sockets = self._sockets, set()
            self._silenced = frozenset(doomed)
            self.broken += 1
        time.sleep(SETTLE_S)
        for sock in doomed:
            _close(sock)
        self._silenced = frozenset()
        return True

    # -- internals --------------------------------------------------------------------------------

    def _listen(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((LOCALHOST, self.port))
            listener.listen(64)
        except OSError:
            listener.close()
            raise
        listener.settimeout(ACCEPT_POLL_S)
        self._listener = listener
        self._acceptor = threading.Thread(target=self._accept, args=(listener,), name="tcp-proxy-accept", daemon=True)
        self._acceptor.start()

    def _stop_listening(self, listener: socket.socket | None) -> None:
        acceptor, self._acceptor = self._acceptor, None
        if listener is None:
            return
        # The acceptor sees it is no longer the current listener within ACCEPT_POLL_S; closing the
        # socket while accept() waits on it is not reliably noticed by that thread, so wait first.
        if acceptor is not None:
            acceptor.join(5)
        listener.close()

    def _accept(self, listener: socket.socket) -> None:
        while self._listener is listener:
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _close(client)
                continue
            server.settimeout(None)
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    _close(client)
                    _close(server)
                    return
                self._sockets.update((client, server))
                self.accepted += 1
            for source, sink, upstream in ((client, server, True), (server, client, False)):
                threading.Thread(
                    target=self._pump, args=(source, sink, upstream), name="tcp-proxy-pump", daemon=True
                ).start()

    def _pump(self, source: socket.socket, sink: socket.socket, upstream: bool) -> None:
        try:
            while data := source.recv(CHUNK):
                if upstream or source not in self._silenced:
                    sink.sendall(data)
                if upstream and self._spend(len(data)):
                    break
        except OSError:
            pass
        # One side ended (or the proxy was cut): end both, as a dead peer would.
        with self._lock:
            self._sockets.discard(source)
            self._sockets.discard(sink)
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
