"""The threaded client's transport: keep-alive sockets per endpoint (TLS through
``ssl.SSLContext``), each answer read by the protocol core's parser (``_core``), and the
core's retry policy driven with blocking attempts and ``time.sleep``. The asyncio client
drives the same core over asyncio streams (``raftlock.aio``)."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from typing import Any, Iterator

from ._core import (
    DIAL_TIMEOUT,
    NAME_RULE,
    BrokenAnswer,
    Endpoint,
    Endpoints,
    Request,
    Result,
    ResponseParser,
    check_name,
    encode,
    interpret,
    may_have_applied,
    ms,
    name_path,
    parse_endpoints,
    parse_retry_after,
    retry_policy,
    tls_error,
    unavailable,
)
from .errors import RaftlockError

#: Bytes asked of the socket per read.
READ_SIZE = 65536


class Cancel:
    """Cancels a call in flight from another thread: the attempt's socket is shut down (the
    server then drops a wait) and the call raises ``error``. Used to end a waiting acquire
    when its lease is lost, and a watch when it is closed."""

    def __init__(self) -> None:
        self._mu = threading.Lock()
        self._socks: set[socket.socket] = set()
        self.error: RaftlockError | None = None

    def cancel(self, error: RaftlockError) -> None:
        """Cancel the call with ``error``."""
        with self._mu:
            if self.error is None:
                self.error = error
            socks = list(self._socks)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def track(self, s: socket.socket, on: bool) -> None:
        """Shut s down on a cancel while on (shut it down at once if already cancelled)."""
        with self._mu:
            if on:
                self._socks.add(s)
            else:
                self._socks.discard(s)
            cancelled = on and self.error is not None
        if cancelled:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _recv_until(sock: socket.socket, parser: ResponseParser, end: float, body: bytearray | None) -> bool:
    """Read into parser until its head is complete (body None) or the whole answer is (body
    collects it); returns whether any byte came. Raises OSError (timeouts included) and
    BrokenAnswer."""
    got = False
    while not (parser.done if body is not None else parser.head_done):
        sock.settimeout(max(end - time.monotonic(), 0.001))
        chunk = sock.recv(READ_SIZE)
        if not chunk:
            if not got and body is not None:
                raise ConnectionResetError("the connection closed before any answer")
            parser.eof()
            break
        got = True
        for piece in parser.feed(chunk):
            if body is not None:
                body += piece
    return got


class Stream:
    """An open streaming answer (the event stream): ``pieces()`` yields its body as it comes;
    ``close()`` (from any thread) ends it."""

    def __init__(self, sock: socket.socket, parser: ResponseParser, first: list[bytes]) -> None:
        self._sock = sock
        self._parser = parser
        self._first = first
        self._closed = False

    def pieces(self) -> Iterator[bytes]:
        """The body's pieces until the stream ends (the server or close() ended it);
        raises OSError or BrokenAnswer when it broke off."""
        yield from self._first
        self._first = []
        while not self._parser.done and not self._closed:
            self._sock.settimeout(None)  # the server pings every 15 s; close() shuts the socket down
            chunk = self._sock.recv(READ_SIZE)
            if not chunk:
                self._parser.eof()
                return
            yield from self._parser.feed(chunk)

    def close(self) -> None:
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()


class Transport:
    """Keep-alive connections to the endpoints and the retry loop around them."""

    def __init__(
        self,
        endpoints: list[Endpoint],
        *,
        tls: ssl.SSLContext | None,
        token: str | None,
        timeout: float,
        min_backoff: float,
        max_backoff: float,
    ) -> None:
        self.eps = Endpoints(endpoints)
        self.endpoints = endpoints
        self.tls = tls
        self._auth = f"Bearer {token.strip()}" if token and token.strip() else None
        self.timeout = timeout
        self.min_backoff = min_backoff
        self.max_backoff = max(max_backoff, min_backoff)
        self._mu = threading.Lock()
        self._idle: dict[int, list[socket.socket]] = {i: [] for i in range(len(endpoints))}
        self._closed = False

    def preferred(self) -> int:
        return self.eps.preferred()

    # --- connections ----------------------------------------------------------------------

    def _dial(self, e: Endpoint, timeout: float) -> socket.socket:
        sock = socket.create_connection((e.host, e.port), timeout=timeout)
        if e.scheme == "https":
            ctx = self.tls or ssl.create_default_context()
            try:
                sock = ctx.wrap_socket(sock, server_hostname=e.host)
            except BaseException:
                sock.close()
                raise
        return sock

    def _get(self, ep: int) -> socket.socket | None:
        with self._mu:
            return self._idle[ep].pop() if self._idle[ep] else None

    def _put(self, ep: int, sock: socket.socket) -> None:
        with self._mu:
            if not self._closed and len(self._idle[ep]) < 16:
                self._idle[ep].append(sock)
                return
        sock.close()

    def close(self) -> None:
        """Close every idle connection."""
        with self._mu:
            self._closed = True
            socks = [s for ss in self._idle.values() for s in ss]
            for ss in self._idle.values():
                ss.clear()
        for s in socks:
            s.close()

    # --- one attempt ----------------------------------------------------------------------

    def attempt(self, ep: int, req: Request, timeout: float, cancel: Cancel | None = None) -> tuple[float, Any]:
        """Send req once to endpoint ep; returns (send time, answer value), else raises a
        RaftlockError with ``sent`` (and ``dialed`` for Unavailable) set."""
        e = self.endpoints[ep]
        data = encode(req, e, self._auth)
        end = time.monotonic() + timeout
        for fresh_retry in (True, False):
            sock = self._get(ep)
            reused = sock is not None
            sent = time.monotonic()
            dialing = False
            try:
                if sock is None:
                    dialing = True
                    sock = self._dial(e, min(DIAL_TIMEOUT, timeout))
                    dialing = False
                if cancel is not None:
                    cancel.track(sock, True)
                try:
                    sock.settimeout(max(end - time.monotonic(), 0.001))
                    sock.sendall(data)
                    parser = ResponseParser(head_only=req.method == "HEAD")
                    body = bytearray()
                    _recv_until(sock, parser, end, body)
                finally:
                    if cancel is not None:
                        cancel.track(sock, False)
            except (ssl.SSLCertVerificationError, ssl.SSLError) as exc:
                if sock is not None:
                    sock.close()
                if cancel is not None and cancel.error is not None:
                    raise cancel.error from None
                raise tls_error(req, e, str(exc), sent) from None
            except (OSError, BrokenAnswer) as exc:
                if sock is not None:
                    sock.close()
                if cancel is not None and cancel.error is not None:
                    raise cancel.error from None
                # A kept-alive connection the server closed while idle fails on first use
                # before the request reached the server: try once more on a new connection.
                if reused and fresh_retry and isinstance(exc, (BrokenPipeError, ConnectionResetError)):
                    continue
                what = "timed out" if isinstance(exc, TimeoutError) else repr(exc)
                raise unavailable(req, e, what, sent, dialing and isinstance(exc, (ConnectionRefusedError, TimeoutError))) from None
            break
        if parser.keep_alive:
            self._put(ep, sock)
        else:
            sock.close()
        self.eps.note_answer(ep, parser.status, parser.headers)
        try:
            return sent, interpret(req, e, parser.status, parser.headers, bytes(body))
        except RaftlockError as err:
            err.sent = sent  # type: ignore[attr-defined]
            raise

    # --- the retry loop -------------------------------------------------------------------

    def do(self, req: Request, deadline: float, cancel: Cancel | None = None) -> tuple[Any, Result]:
        """Send req until an endpoint answers with anything but no_leader, unknown_outcome
        or too_many_requests (or a failed connection), or ``deadline`` (monotonic) passes:
        the core's retry policy (``_core.retry_policy``), driven with blocking attempts.
        The error raised carries ``result`` (a Result) as an attribute."""
        gen = retry_policy(
            self.eps, req, deadline, timeout=self.timeout, min_backoff=self.min_backoff, max_backoff=self.max_backoff,
            cancelled=(lambda: cancel.error) if cancel is not None else (lambda: None),
        )
        try:
            action = next(gen)
            while True:
                if action[0] == "sleep":
                    time.sleep(action[1])
                    action = next(gen)
                    continue
                _, ep, t = action
                try:
                    sent, value = self.attempt(ep, req, t, cancel)
                except RaftlockError as err:
                    action = gen.send(("err", err))
                else:
                    action = gen.send(("ok", sent, value))
        except StopIteration as stop:
            return stop.value

    # --- streams --------------------------------------------------------------------------

    def open_stream(self, ep: int, req: Request) -> Stream:
        """Open the streaming answer of req on endpoint ep: once its head (a 200) came within
        the client's timeout. An error answer raises its library error; a failed connection
        Unavailable."""
        e = self.endpoints[ep]
        sent = time.monotonic()
        end = sent + self.timeout
        sock: socket.socket | None = None
        try:
            sock = self._dial(e, min(DIAL_TIMEOUT, self.timeout))
            sock.settimeout(self.timeout)
            sock.sendall(encode(req, e, self._auth))
            parser = ResponseParser(stream=True)
            body = bytearray()
            while not parser.head_done:
                sock.settimeout(max(end - time.monotonic(), 0.001))
                chunk = sock.recv(READ_SIZE)
                if not chunk:
                    parser.eof()
                    break
                for piece in parser.feed(chunk):
                    body += piece
            if parser.status != 200:
                while not parser.done and len(body) < (1 << 20):
                    sock.settimeout(max(end - time.monotonic(), 0.001))
                    chunk = sock.recv(READ_SIZE)
                    if not chunk:
                        break
                    for piece in parser.feed(chunk):
                        body += piece
                sock.close()
                self.eps.note_answer(ep, parser.status, parser.headers)
                interpret(req, e, parser.status, parser.headers, bytes(body))
                raise unavailable(req, e, f"answered {parser.status}", sent, False)
        except (ssl.SSLCertVerificationError, ssl.SSLError) as exc:
            if sock is not None:
                sock.close()
            raise tls_error(req, e, str(exc), sent) from None
        except (OSError, BrokenAnswer) as exc:
            if sock is not None:
                sock.close()
            raise unavailable(req, e, "timed out" if isinstance(exc, TimeoutError) else repr(exc), sent, sock is None) from None
        return Stream(sock, parser, [bytes(body)] if body else [])


__all__ = [
    "NAME_RULE",
    "Cancel",
    "Stream",
    "Transport",
    "check_name",
    "may_have_applied",
    "ms",
    "name_path",
    "parse_endpoints",
    "parse_retry_after",
]
