"""HTTP/1.1 transport of the client: keep-alive connections per endpoint, one attempt per
endpoint, and the retry loop (endpoint failover, backoff with jitter, Retry-After) that
every call goes through. It follows the Go client (client/retry.go, client/attempt.go)."""

from __future__ import annotations

import http.client
import json
import math
import os
import random
import socket
import ssl
import threading
import time
import unicodedata
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import (
    LeaseLost,
    NoLeader,
    PermissionDenied,
    RaftlockError,
    ServerError,
    TLSError,
    TooManyRequests,
    Unauthenticated,
    Unavailable,
    UnknownOutcome,
    Unreachable,
    error_for,
)

#: Set by a follower that forwarded the request: the leader's HTTP address.
LEADER_HEADER = "X-Raftlock-Leader"
#: An absurd Retry-After is capped at a day.
MAX_RETRY_AFTER = 24 * 3600.0
#: How long a connection attempt to one endpoint may take (as the Go client's dialer).
DIAL_TIMEOUT = 2.0

#: The rule every name follows, word for word the server's (api.NameRule).
NAME_RULE = 'a name is 1 to 512 bytes of UTF-8, segments separated by "/", with no empty segment, no "." or ".." segment, and no control characters'


def check_name(kind: str, name: object) -> None:
    """Raise InvalidRequest (code invalid_name) unless name is a valid name of a lock
    (semaphore, election): the server's rule, with the server's message, checked before
    anything is sent."""
    from .errors import InvalidRequest

    ok = isinstance(name, str)
    if ok:
        assert isinstance(name, str)
        try:
            n = len(name.encode("utf-8"))
        except UnicodeEncodeError:
            n = 0
        ok = 1 <= n <= 512 and not any(unicodedata.category(c) == "Cc" for c in name)
        ok = ok and all(seg not in ("", ".", "..") for seg in name.split("/"))
    if not ok:
        raise InvalidRequest(f"invalid {kind} name: {NAME_RULE}", code="invalid_name")


@dataclass
class Endpoint:
    """One node's base URL, split for http.client."""

    base: str
    scheme: str
    host: str
    port: int
    prefix: str = ""  # the endpoint URL's path (a proxy's mount point), kept before every route

    @property
    def hostport(self) -> str:
        """The host:port the leader header names."""
        return f"{self.host}:{self.port}" if ":" not in self.host else f"[{self.host}]:{self.port}"


def given_or_environment(endpoints: list[str] | str | None, token: str | None) -> tuple[list[str] | str, str | None]:
    """The endpoints and token a client was given, each defaulting to the environment's
    (RAFTLOCK_ENDPOINTS, RAFTLOCK_TOKEN) when None, as the command line's are."""
    if endpoints is None:
        endpoints = os.environ.get("RAFTLOCK_ENDPOINTS", "")
        if not endpoints.strip():
            raise ValueError("no endpoints given, and RAFTLOCK_ENDPOINTS is not set")
    if token is None:
        token = os.environ.get("RAFTLOCK_TOKEN") or None
    return endpoints, token


def parse_endpoints(endpoints: list[str] | str, tls_on: bool) -> list[Endpoint]:
    """Turn the endpoints given to Client into Endpoints. A bare host:port means https
    when TLS is configured and http otherwise; with TLS an http:// endpoint is refused, so
    that a forgotten scheme cannot send a token or a lease ID in clear text."""
    if isinstance(endpoints, str):
        endpoints = endpoints.split(",")
    out: list[Endpoint] = []
    for e in endpoints:
        e = e.strip()
        if not e:
            continue
        if "://" not in e:
            e = ("https://" if tls_on else "http://") + e
        u = urllib.parse.urlsplit(e)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"endpoint {e!r} is not an http(s) URL such as http://127.0.0.1:7001")
        if u.scheme == "http" and tls_on:
            raise ValueError(f"endpoint {e!r} is plain HTTP but TLS is configured: use https://{u.netloc}")
        port = u.port or (443 if u.scheme == "https" else 80)
        if u.query or u.fragment:
            raise ValueError(f"endpoint {e!r} has a query or fragment; give a base URL such as http://127.0.0.1:7001")
        out.append(Endpoint(base=e.rstrip("/"), scheme=u.scheme, host=u.hostname, port=port, prefix=u.path.rstrip("/")))
    if not out:
        raise ValueError("no endpoints given")
    return out


@dataclass
class Request:
    """One API call; Transport.do sends it to as many endpoints as it takes."""

    op: str  # for error messages: 'acquire "accounts/A"'
    method: str
    path: str  # escaped
    query: dict[str, str] | None = None
    # body returns the JSON body of the next attempt (None: no body). Called per attempt, so
    # that a waiting acquire sends the wait that remains.
    body: Callable[[], Any] | None = None
    # wait returns the server-side wait (seconds) of the next attempt, added to its timeout.
    wait: Callable[[], float] | None = None
    attempt_timeout: float = 0.0  # overrides the client's per-attempt timeout when > 0
    max_backoff: float = 0.0  # overrides the client's maximum backoff when > 0
    secrets: list[str] = field(default_factory=list)  # never shown in error texts


@dataclass
class Result:
    """What the caller learns about the attempts of a call."""

    sent: float = 0.0  # monotonic send time of the answered attempt
    first: float = 0.0  # monotonic send time of the first attempt (it may have been applied)
    attempts: int = 0


class Cancel:
    """Cancels a call in flight from another thread: the attempt's socket is shut down (the
    server then drops a wait) and the call raises ``error``. Used to end a waiting acquire
    when its lease is lost."""

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

    def _track(self, s: socket.socket | None, on: bool) -> None:
        if s is None:
            return
        with self._mu:
            if on:
                self._socks.add(s)
            else:
                self._socks.discard(s)


def _mono() -> float:
    return time.monotonic()


def upper_half(backoff: float) -> float:
    """A pause drawn at random from the upper half of backoff (full jitter, with a floor)."""
    return backoff / 2 + random.uniform(0, backoff / 2)


def parse_retry_after(v: str | None) -> float | None:
    """Read a Retry-After header (delay-seconds or an HTTP date); None when absent, bad or past."""
    if not v:
        return None
    v = v.strip()
    try:
        n = int(v)
        return min(float(n), MAX_RETRY_AFTER) if n > 0 else None
    except ValueError:
        pass
    try:
        from email.utils import parsedate_to_datetime

        t = parsedate_to_datetime(v).timestamp() - time.time()
        return t if t > 0 else None
    except (TypeError, ValueError, IndexError):
        return None


def retryable(err: RaftlockError) -> bool:
    """Whether another endpoint, or a later attempt, may answer differently."""
    return isinstance(err, (Unavailable, NoLeader, UnknownOutcome, TooManyRequests, TLSError))


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
        self.endpoints = endpoints
        self.tls = tls
        self._auth = f"Bearer {token.strip()}" if token and token.strip() else None
        self.timeout = timeout
        self.min_backoff = min_backoff
        self.max_backoff = max(max_backoff, min_backoff)
        self._mu = threading.Lock()
        self._preferred = 0
        self._idle: dict[int, list[http.client.HTTPConnection]] = {i: [] for i in range(len(endpoints))}
        self._closed = False

    # --- preferred endpoint -------------------------------------------------------------

    def preferred(self) -> int:
        with self._mu:
            return self._preferred

    def set_preferred(self, i: int) -> None:
        with self._mu:
            self._preferred = i

    def note_leader(self, addr: str) -> None:
        """Make the endpoint that is the leader's HTTP address the preferred one."""
        for i, e in enumerate(self.endpoints):
            if e.hostport == addr or f"{e.host}:{e.port}" == addr:
                self.set_preferred(i)
                return

    # --- connections ----------------------------------------------------------------------

    def _get_conn(self, ep: int) -> tuple[http.client.HTTPConnection, bool]:
        with self._mu:
            if self._idle[ep]:
                return self._idle[ep].pop(), True
        e = self.endpoints[ep]
        conn: http.client.HTTPConnection
        if e.scheme == "https":
            ctx = self.tls or ssl.create_default_context()
            conn = http.client.HTTPSConnection(e.host, e.port, timeout=DIAL_TIMEOUT, context=ctx)
        else:
            conn = http.client.HTTPConnection(e.host, e.port, timeout=DIAL_TIMEOUT)
        return conn, False

    def _put_conn(self, ep: int, conn: http.client.HTTPConnection) -> None:
        with self._mu:
            if not self._closed and len(self._idle[ep]) < 16:
                self._idle[ep].append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Close every idle connection."""
        with self._mu:
            self._closed = True
            conns = [c for cs in self._idle.values() for c in cs]
            for cs in self._idle.values():
                cs.clear()
        for c in conns:
            c.close()

    # --- one attempt ----------------------------------------------------------------------

    def _redact(self, req: Request, text: str) -> str:
        for s in req.secrets:
            if s:
                text = text.replace(s, "[redacted]")
        return text

    def attempt(self, ep: int, req: Request, deadline: float, cancel: Cancel | None) -> tuple[float, Any]:
        """Send req once to endpoint ep. Returns (send time, decoded JSON answer); raises a
        RaftlockError (with ``sent`` set as an attribute) otherwise."""
        e = self.endpoints[ep]
        body: bytes | None = None
        if req.body is not None:
            body = json.dumps(req.body(), separators=(",", ":")).encode()
        timeout = req.attempt_timeout or self.timeout
        if req.wait is not None:
            timeout += req.wait()
        timeout = max(min(timeout, deadline - _mono()), 0.001)
        path = e.prefix + req.path
        if req.query:
            path += "?" + urllib.parse.urlencode(req.query)
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self._auth:
            headers["Authorization"] = self._auth
        sent = _mono()
        for retry_fresh in (True, False):
            conn, reused = self._get_conn(ep)
            sent = _mono()
            try:
                if conn.sock is None:
                    conn.timeout = min(DIAL_TIMEOUT, timeout)
                    conn.connect()
                assert conn.sock is not None
                conn.sock.settimeout(timeout)
                if cancel is not None:
                    cancel._track(conn.sock, True)
                    if cancel.error is not None:
                        conn.close()
                        raise cancel.error
                try:
                    conn.request(req.method, path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    if cancel is not None:
                        cancel._track(conn.sock, False)
            except RaftlockError:
                raise
            except (ssl.SSLCertVerificationError, ssl.SSLError) as exc:
                conn.close()
                err: RaftlockError = TLSError(f"{req.op}: {e.base}: {self._redact(req, str(exc))}")
                err.sent = sent  # type: ignore[attr-defined]
                raise err from None
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                if cancel is not None and cancel.error is not None:
                    raise cancel.error from None
                # A kept-alive connection the server closed while idle fails on first use
                # before the request reached the server: try once more on a new connection.
                if reused and retry_fresh and isinstance(
                    exc, (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)
                ):
                    continue
                err = Unavailable(f"{req.op}: {e.base}: {self._redact(req, repr(exc))}")
                err.sent = sent  # type: ignore[attr-defined]
                err.dialed = isinstance(exc, ConnectionRefusedError)  # type: ignore[attr-defined]
                raise err from None
            break
        if resp.will_close:
            conn.close()
        else:
            self._put_conn(ep, conn)
        leader = resp.getheader(LEADER_HEADER)
        if leader:
            self.note_leader(leader)
        elif resp.status < 500:
            self.set_preferred(ep)
        if 200 <= resp.status < 300:
            if not data:
                return sent, {}
            try:
                return sent, json.loads(data)
            except ValueError:
                err = ServerError(f"{req.op}: {e.base} answered {resp.status} with a body that is not the API's JSON")
                err.sent = sent  # type: ignore[attr-defined]
                raise err from None
        code, message = "", ""
        try:
            eb = json.loads(data)
            code, message = eb["error"]["code"], eb["error"].get("message", "")
        except (ValueError, KeyError, TypeError):
            pass
        if not code:
            if resp.status in (502, 503, 504):
                err = Unavailable(f"{req.op}: {e.base} answered {resp.status}")
            elif resp.status == 401:
                err = Unauthenticated(f"{req.op}: {e.base} answered 401")
            elif resp.status == 403:
                err = PermissionDenied(f"{req.op}: {e.base} answered 403")
            else:
                err = ServerError(f"{req.op}: {e.base} answered {resp.status}: {self._redact(req, data[:200].decode(errors='replace'))}")
        else:
            err = error_for(code, f"{req.op}: {self._redact(req, message)}", parse_retry_after(resp.getheader("Retry-After")))
        err.sent = sent  # type: ignore[attr-defined]
        raise err

    # --- the retry loop -------------------------------------------------------------------

    def do(self, req: Request, deadline: float, cancel: Cancel | None = None) -> tuple[Any, Result]:
        """Send req until an endpoint answers with anything but no_leader, unknown_outcome
        or too_many_requests (or the connection fails), or ``deadline`` (monotonic) passes.

        On a failure the next endpoint is tried at once; after a whole round, a pause of
        exponential backoff with jitter. A too_many_requests answer pauses for its
        Retry-After (or the backoff, if longer), and when the deadline falls before that
        pause would end, its error is raised at once. When the deadline passes, the last
        attempt's error is raised (UnknownOutcome, NoLeader, Unavailable...).

        The error raised carries ``result`` (a Result) as an attribute.
        """
        res = Result()
        n = len(self.endpoints)
        idx = self.preferred()
        backoff = self.min_backoff
        max_backoff = self.max_backoff
        if req.max_backoff > 0:
            max_backoff = req.max_backoff
            backoff = min(backoff, max_backoff)
        last: RaftlockError | None = None
        seen: dict[str, str] = {}  # each endpoint's last error, for Unreachable

        def fail(err: RaftlockError) -> RaftlockError:
            err.result = res  # type: ignore[attr-defined]
            return err

        def unreachable(err: RaftlockError) -> RaftlockError:
            # The deadline passed with no endpoint answering: name every endpoint's error,
            # not only the last one's.
            if not isinstance(err, Unavailable):
                return fail(err)
            parts = "; ".join(f"{base}: {seen.get(base, 'not tried before the deadline')}" for base in (x.base for x in self.endpoints))
            u = Unreachable(f"{req.op}: no endpoint answered before the deadline ({parts})", errors=seen)
            u.sent = getattr(err, "sent", 0.0)  # type: ignore[attr-defined]
            u.dialed = getattr(err, "dialed", False)  # type: ignore[attr-defined]
            return fail(u)

        while True:
            throttled = 0.0
            tls_fails = 0
            for i in range(n):
                if cancel is not None and cancel.error is not None:
                    raise fail(cancel.error)
                ep = (idx + i) % n
                res.attempts += 1
                try:
                    sent, out = self.attempt(ep, req, deadline, cancel)
                except RaftlockError as err:
                    if res.attempts == 1:
                        res.first = getattr(err, "sent", _mono())
                    if isinstance(err, LeaseLost) or not retryable(err):
                        raise fail(err) from None
                    last = err
                    seen[self.endpoints[ep].base] = err.message.split(f"{self.endpoints[ep].base}: ", 1)[-1]
                    if _mono() >= deadline:
                        raise unreachable(err) from None
                    if isinstance(err, TLSError):
                        tls_fails += 1
                    if isinstance(err, TooManyRequests):
                        throttled = max(err.retry_after or 0.0, 0.001)
                        break
                    self.set_preferred((ep + 1) % n)
                    continue
                if res.attempts == 1:
                    res.first = sent
                res.sent = sent
                return out, res
            assert last is not None
            if tls_fails == n:
                raise fail(last)
            idx = self.preferred()
            pause = upper_half(backoff)
            if throttled > 0:
                pause = max(pause, throttled)
            if _mono() + pause >= deadline:
                if throttled > 0:
                    raise fail(last)  # it cannot be served before the caller gives up
                time.sleep(max(deadline - _mono(), 0))
                raise unreachable(last)
            time.sleep(pause)
            backoff = min(2 * backoff, max_backoff)


def may_have_applied(err: RaftlockError) -> bool:
    """Whether a retryable failure may hide an applied request: an unknown_outcome answer,
    or a connection that failed after the request could have been sent."""
    if isinstance(err, UnknownOutcome):
        return True
    return isinstance(err, Unavailable) and not getattr(err, "dialed", False)


_KINDS = {"/v1/semaphores/": "semaphore", "/v1/elections/": "election"}


def name_path(route: str, name: str) -> str:
    """route followed by name with each segment escaped ('accounts/A' stays two segments),
    once the name is checked against the server's rule (InvalidRequest otherwise)."""
    check_name(_KINDS.get(route, "lock"), name)
    return route + "/".join(urllib.parse.quote(s, safe="") for s in name.split("/"))


def ms(seconds: float) -> int:
    """Seconds to whole milliseconds, rounding up so that a positive time never becomes 0."""
    if seconds <= 0:
        return 0
    return max(math.ceil(seconds * 1000 - 1e-6), 1)


__all__ = [
    "Cancel",
    "Endpoint",
    "Request",
    "Result",
    "Transport",
    "check_name",
    "may_have_applied",
    "ms",
    "name_path",
    "parse_endpoints",
    "parse_retry_after",
]
