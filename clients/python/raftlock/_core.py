"""The protocol core shared by the threaded client (``raftlock.Client``) and the asyncio one
(``raftlock.aio.AsyncClient``), with no I/O of its own: endpoints and names, building each
API request, encoding it as HTTP/1.1, parsing the answer (one incremental, bounded parser for
both clients, streams included), turning an answer into a value or a library error, the
retry policy (a generator each client drives with its own sleep and its own attempt), the
decoding of reads into dataclasses, Server-Sent Events, and prefix routing. It follows the
Go client (client/retry.go, client/attempt.go, client/routes.go).
"""

from __future__ import annotations

import json
import math
import os
import random
import secrets
import threading
import time
import unicodedata
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Union

from .errors import (
    CrossCluster,
    InvalidRequest,
    LeaseLost,
    NoRoute,
    PermissionDenied,
    RaftlockError,
    ServerError,
    TLSError,
    Unauthenticated,
    Unavailable,
    Unreachable,
    error_for,
)

#: Set by a follower that forwarded the request: the leader's HTTP address.
LEADER_HEADER = "X-Raftlock-Leader"
#: An absurd Retry-After is capped at a day.
MAX_RETRY_AFTER = 24 * 3600.0
#: How long a connection attempt to one endpoint may take (as the Go client's dialer).
DIAL_TIMEOUT = 2.0
#: Bounds of what the parser accepts: an answer's head, its body, one event of a stream.
MAX_HEAD_BYTES = 64 << 10
MAX_BODY_BYTES = 16 << 20
MAX_EVENT_BYTES = 16 << 20

#: The rule every name follows, word for word the server's (api.NameRule).
NAME_RULE = 'a name is 1 to 512 bytes of UTF-8, segments separated by "/", with no empty segment, no "." or ".." segment, and no control characters'

LOCKS = "/v1/locks/"
SEMAPHORES = "/v1/semaphores/"
ELECTIONS = "/v1/elections/"
HISTORY = "/v1/history/"
LOCKSETS = "/v1/locksets"

#: Bounds of a lease's TTL, in seconds (the server's 500 ms to 24 h).
MIN_TTL, MAX_TTL = 0.5, 86400.0
#: The longest single server-side wait a held acquire asks for; longer waits are re-issued.
WAIT_CHUNK = 240.0
#: The default TTL of a hold's lease (seconds).
DEFAULT_TTL = 10.0
#: The most locks in a lockset (the server's api.MaxLockSetNames).
MAX_LOCKSET_NAMES = 64
#: The server-side wait of each blocking read of observe (seconds).
OBSERVE_WAIT = 60.0


# --- names, durations, endpoints --------------------------------------------------------------


def check_name(kind: str, name: object) -> None:
    """Raise InvalidRequest (code invalid_name) unless name is a valid name of a lock
    (semaphore, election): the server's rule, with the server's message, checked before
    anything is sent."""
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


_KINDS = {SEMAPHORES: "semaphore", ELECTIONS: "election"}


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


def check_seconds(what: str, v: object) -> None:
    """Durations are seconds as numbers: a numeric string ("10") would fail deep inside, or
    be read as milliseconds by a reader of another client."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InvalidRequest(f"{what} {v!r} is a {type(v).__name__}; durations are seconds as a number (int or float), such as 10 or 0.5")


def check_ttl(ttl: float) -> None:
    check_seconds("TTL", ttl)
    if not MIN_TTL <= ttl <= MAX_TTL:
        raise InvalidRequest(f"TTL {ttl}s is outside {MIN_TTL}s to {MAX_TTL}s", code="invalid_ttl")


def check_wait(wait: float) -> None:
    check_seconds("wait", wait)
    if wait < 0:
        raise InvalidRequest(f"wait {wait}s is negative")


def check_mode(mode: str) -> None:
    if mode not in ("exclusive", "shared"):
        raise InvalidRequest(f"mode {mode!r}: want exclusive or shared")


def hold_fields(mode: str = "exclusive", max_hold: float = 0.0, lock_delay: float = 0.0) -> dict[str, Any]:
    """The request fields of a lock or lockset hold's options (mode, max_hold_ms,
    lock_delay_ms), checked."""
    check_mode(mode)
    check_seconds("max_hold", max_hold)
    check_seconds("lock_delay", lock_delay)
    if max_hold < 0 or lock_delay < 0:
        raise InvalidRequest("max_hold and lock_delay are durations of 0 or more seconds")
    f: dict[str, Any] = {}
    if mode == "shared":
        f["mode"] = "shared"
    if max_hold > 0:
        f["max_hold_ms"] = ms(max_hold)
    if lock_delay > 0:
        f["lock_delay_ms"] = ms(lock_delay)
    return f


def check_lockset(names: list[str]) -> None:
    if not isinstance(names, (list, tuple)) or not 1 <= len(names) <= MAX_LOCKSET_NAMES:
        raise InvalidRequest(f"a lockset names 1 to {MAX_LOCKSET_NAMES} locks")
    for n in names:
        check_name("lock", n)


def new_request_id() -> str:
    """An acquire's request ID: 128 random bits as 32 hex characters, as unguessable as a
    lease ID (the server derives the implicit lease from it)."""
    return secrets.token_hex(16)


@dataclass
class Endpoint:
    """One node's base URL, split for a connection."""

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
    """Turn the endpoints given to a client into Endpoints. A bare host:port means https
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


# --- requests ----------------------------------------------------------------------------------


@dataclass
class Request:
    """One API call; a transport sends it to as many endpoints as it takes."""

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
    headers: dict[str, str] = field(default_factory=dict)  # extra request headers (Last-Event-ID)


@dataclass
class Result:
    """What the caller learns about the attempts of a call (time.monotonic() values)."""

    sent: float = 0.0  # send time of the answered attempt
    first: float = 0.0  # send time of the first attempt (it may have been applied)
    attempts: int = 0


def redact(req: Request, text: str) -> str:
    for s in req.secrets:
        if s:
            text = text.replace(s, "[redacted]")
    return text


def acquire_request(
    route: str, name: str, fields: dict[str, Any], *, lease_id: str = "", ttl: float = 0.0, wait: float = 0.0, owner: str = "",
    request_id: str = "", path: str | None = None, method: str = "PUT", op: str | None = None,
) -> Request:
    """An acquire-like request (a lock, a permit, a campaign, a lockset with ``path``).
    Without lease_id it carries ``request_id`` (drawn by the caller once per call and sent
    with every retry), so that an attempt that was applied but whose answer was lost cannot
    leave a second lease behind. The wait sent is what remains of ``wait`` at each attempt."""
    check_wait(wait)
    if lease_id and request_id:
        raise InvalidRequest("a request ID is only for an acquire without a lease")
    wait_end = time.monotonic() + wait

    def remaining() -> float:
        return max(wait_end - time.monotonic(), 0.001) if wait > 0 else 0.0

    def body() -> dict[str, Any]:
        b = dict(fields)
        if lease_id:
            b["lease_id"] = lease_id
        if ttl and not lease_id:
            b["ttl_ms"] = ms(ttl)
        if wait > 0:
            b["wait_ms"] = ms(remaining())
        if owner:
            b["owner"] = owner
        if request_id:
            b["request_id"] = request_id
        return b

    return Request(
        op=op or f"acquire {name!r}", method=method, path=path if path is not None else name_path(route, name),
        body=body, wait=remaining, secrets=[lease_id, request_id],
    )


def release_request(route: str, name: str, lease_id: str, token: int) -> Request:
    if not token:
        raise InvalidRequest(f"release {name!r}: the token of the grant is required")
    path = name_path(route, name)
    return Request(op=f"release {name!r}", method="DELETE", path=path, body=lambda: {"lease_id": lease_id, "token": token}, secrets=[lease_id])


def release_set_request(lease_id: str, tokens: dict[str, int]) -> Request:
    locks = [{"name": n, "token": t} for n, t in tokens.items()]
    return Request(op=f"release lockset {','.join(tokens)}", method="DELETE", path=LOCKSETS, body=lambda: {"lease_id": lease_id, "locks": locks}, secrets=[lease_id])


def create_lease_request(ttl: float) -> Request:
    check_ttl(ttl)
    return Request(op="create lease", method="POST", path="/v1/leases", body=lambda: {"ttl_ms": ms(ttl)})


def keepalive_request(lease_id: str) -> Request:
    return Request(op="keepalive", method="POST", path="/v1/leases/keepalive", body=lambda: {"lease_id": lease_id}, secrets=[lease_id])


def keepalive_many_request(ids: list[str], attempt_timeout: float = 0.0, max_backoff: float = 0.0) -> Request:
    return Request(
        op="batch keepalive", method="POST", path="/v1/leases/keepalive", body=lambda: {"lease_ids": ids},
        attempt_timeout=attempt_timeout, max_backoff=max_backoff, secrets=list(ids),
    )


def revoke_request(lease_id: str) -> Request:
    return Request(op="revoke", method="POST", path="/v1/leases/revoke", body=lambda: {"lease_id": lease_id}, secrets=[lease_id])


def proclaim_request(name: str, lease_id: str, token: int, value: str) -> Request:
    body = {"value": value, "lease_id": lease_id, "token": token}
    return Request(op=f"proclaim {name!r}", method="PUT", path=name_path(ELECTIONS, name), body=lambda: body, secrets=[lease_id])


def read_request(route: str, name: str, wait_index: int = 0, wait: float = 0.0, stale: bool = False) -> Request:
    q: dict[str, str] = {}
    if stale:
        q["stale"] = "true"
    if wait > 0:
        q["wait_index"], q["wait_ms"] = str(wait_index), str(ms(wait))
    return Request(op=f"status {name!r}", method="GET", path=name_path(route, name), query=q, wait=(lambda: wait) if wait > 0 else None)


def events_request(prefix: str, from_index: int, last_event_id: int | None) -> Request:
    """GET /v1/events: from ``from_index`` (0: from now on), or, on a reconnection, after
    ``last_event_id`` (the Last-Event-ID header, which wins)."""
    q: dict[str, str] = {}
    if prefix:
        q["prefix"] = prefix
    h = {"Accept": "text/event-stream"}
    if last_event_id is not None:
        h["Last-Event-ID"] = str(last_event_id)
    elif from_index > 0:
        q["from_index"] = str(from_index)
    return Request(op=f"watch {prefix!r}", method="GET", path="/v1/events", query=q, headers=h)


# --- HTTP/1.1 -----------------------------------------------------------------------------------


def encode(req: Request, ep: Endpoint, auth: str | None) -> bytes:
    """The bytes of req on endpoint ep: request line, headers (keep-alive), JSON body."""
    body = b""
    if req.body is not None:
        body = json.dumps(req.body(), separators=(",", ":")).encode()
    target = ep.prefix + req.path
    if req.query:
        target += "?" + urllib.parse.urlencode(req.query)
    h = {"Host": ep.hostport, "Accept": "application/json", "Content-Length": str(len(body))}
    if req.body is not None:
        h["Content-Type"] = "application/json"
    if auth:
        h["Authorization"] = auth
    h.update(req.headers)
    head = f"{req.method} {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
    return head.encode("latin-1") + body


class BrokenAnswer(Exception):
    """The answer is not HTTP/1.1 as the parser accepts it (malformed, too large, cut off).
    Transports turn it into Unavailable (the request may have been applied)."""


class ResponseParser:
    """An incremental HTTP/1.1 response parser for both clients: ``feed`` it bytes as they
    come; it returns the body bytes decoded so far (Content-Length, chunked, or until the
    connection closes), and ``done`` says when the answer is complete. Bounded: a head over
    MAX_HEAD_BYTES, or (unless ``stream``) a body over MAX_BODY_BYTES, raises BrokenAnswer.
    1xx answers are skipped."""

    def __init__(self, stream: bool = False, head_only: bool = False) -> None:
        self._buf = bytearray()
        self._stream = stream
        self._head_only = head_only  # the answer to a HEAD has no body
        self._state = "head"
        self._left = 0  # bytes of the current body or chunk still due
        self._body_len = 0
        self.status = 0
        self.headers: dict[str, str] = {}
        self.keep_alive = True

    @property
    def head_done(self) -> bool:
        return self._state != "head"

    @property
    def done(self) -> bool:
        return self._state == "done"

    def _count(self, n: int) -> None:
        self._body_len += n
        if not self._stream and self._body_len > MAX_BODY_BYTES:
            raise BrokenAnswer(f"an answer body over {MAX_BODY_BYTES} bytes")

    def feed(self, data: bytes) -> list[bytes]:
        """Take data (more of the answer); return the body pieces it completed."""
        self._buf += data
        out: list[bytes] = []
        while True:
            st = self._state
            if st == "head":
                end = self._buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(self._buf) > MAX_HEAD_BYTES:
                        raise BrokenAnswer(f"an answer head over {MAX_HEAD_BYTES} bytes")
                    return out
                head = bytes(self._buf[:end]).decode("latin-1")
                del self._buf[: end + 4]
                self._start(head)
                continue
            if st == "length":
                if not self._buf:
                    return out
                take = bytes(self._buf[: self._left])
                del self._buf[: len(take)]
                self._left -= len(take)
                self._count(len(take))
                out.append(take)
                if self._left == 0:
                    self._state = "done"
                continue
            if st == "size":
                end = self._buf.find(b"\r\n")
                if end < 0:
                    if len(self._buf) > 1024:
                        raise BrokenAnswer("a chunk size line over 1 KiB")
                    return out
                line = bytes(self._buf[:end]).split(b";", 1)[0].strip()
                del self._buf[: end + 2]
                try:
                    self._left = int(line, 16)
                except ValueError:
                    raise BrokenAnswer(f"a chunk size that is not hexadecimal: {line[:20]!r}") from None
                if self._left < 0:
                    raise BrokenAnswer("a negative chunk size")
                self._state = "chunk" if self._left > 0 else "trailer"
                continue
            if st == "chunk":
                if not self._buf:
                    return out
                take = bytes(self._buf[: self._left])
                del self._buf[: len(take)]
                self._left -= len(take)
                self._count(len(take))
                out.append(take)
                if self._left == 0:
                    self._state = "crlf"
                continue
            if st == "crlf":
                if len(self._buf) < 2:
                    return out
                if self._buf[:2] != b"\r\n":
                    raise BrokenAnswer("a chunk not followed by CRLF")
                del self._buf[:2]
                self._state = "size"
                continue
            if st == "trailer":
                end = self._buf.find(b"\r\n")
                if end < 0:
                    if len(self._buf) > MAX_HEAD_BYTES:
                        raise BrokenAnswer("trailers over 64 KiB")
                    return out
                line = self._buf[:end]
                del self._buf[: end + 2]
                if not line:
                    self._state = "done"
                continue
            if st == "close":
                if self._buf:
                    take = bytes(self._buf)
                    self._buf.clear()
                    self._count(len(take))
                    out.append(take)
                return out
            return out  # done: anything more is the next answer's, which we never pipeline

    def _start(self, head: str) -> None:
        lines = head.split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
            raise BrokenAnswer(f"not an HTTP/1.1 status line: {lines[0][:60]!r}")
        try:
            status = int(parts[1])
        except ValueError:
            raise BrokenAnswer(f"a status that is not a number: {parts[1][:10]!r}") from None
        headers: dict[str, str] = {}
        for ln in lines[1:]:
            k, sep, v = ln.partition(":")
            if not sep:
                raise BrokenAnswer(f"a header line without a colon: {ln[:60]!r}")
            k = k.strip().lower()
            headers[k] = (headers[k] + ", " + v.strip()) if k in headers else v.strip()
        if 100 <= status < 200:
            return  # an interim answer: the real head follows
        self.status, self.headers = status, headers
        conn = headers.get("connection", "").lower()
        self.keep_alive = parts[0] == "HTTP/1.1" and "close" not in conn
        te = headers.get("transfer-encoding", "").lower()
        if self._head_only or status in (204, 304):
            self._state = "done"
        elif te:
            if te.split(",")[-1].strip() != "chunked":
                raise BrokenAnswer(f"a transfer coding this client does not read: {te!r}")
            self._state = "size"
        elif "content-length" in headers:
            try:
                n = int(headers["content-length"])
            except ValueError:
                raise BrokenAnswer("a Content-Length that is not a number") from None
            if n < 0:
                raise BrokenAnswer("a negative Content-Length")
            if not self._stream and n > MAX_BODY_BYTES:
                raise BrokenAnswer(f"an answer body over {MAX_BODY_BYTES} bytes")
            self._left = n
            self._state = "length" if n > 0 else "done"
        else:
            self._state = "close"
            self.keep_alive = False

    def eof(self) -> None:
        """The connection closed: completes an answer read until the close, else raises
        BrokenAnswer (the answer broke off)."""
        if self._state == "close":
            self._state = "done"
            return
        if self._state != "done":
            raise BrokenAnswer("the connection closed before the answer was complete")


def leader_of(headers: dict[str, str]) -> str:
    return headers.get(LEADER_HEADER.lower(), "")


def interpret(req: Request, ep: Endpoint, status: int, headers: dict[str, str], body: bytes) -> Any:
    """The value of a complete answer: its JSON for a 2xx, else the library error it means
    (one per API code; Unavailable for a 502-504 without the API's body)."""
    if 200 <= status < 300:
        if not body:
            return {}
        try:
            return json.loads(body)
        except ValueError:
            raise ServerError(f"{req.op}: {ep.base} answered {status} with a body that is not the API's JSON") from None
    code, message = "", ""
    try:
        eb = json.loads(body)
        code, message = eb["error"]["code"], eb["error"].get("message", "")
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    if not isinstance(code, str):
        code = ""  # not the API's body: judged by the status
    if not code:
        if status in (502, 503, 504):
            return_err: RaftlockError = Unavailable(f"{req.op}: {ep.base} answered {status}")
        elif status == 401:
            return_err = Unauthenticated(f"{req.op}: {ep.base} answered 401")
        elif status == 403:
            return_err = PermissionDenied(f"{req.op}: {ep.base} answered 403")
        else:
            return_err = ServerError(f"{req.op}: {ep.base} answered {status}: {redact(req, body[:200].decode(errors='replace'))}")
        raise return_err
    raise error_for(code, f"{req.op}: {redact(req, str(message))}", parse_retry_after(headers.get("retry-after")))


def unavailable(req: Request, ep: Endpoint, what: str, sent: float, dialed: bool) -> Unavailable:
    """The error of an attempt that got no answer: ``dialed`` when the connection could not
    be made (the request certainly was not applied)."""
    err = Unavailable(f"{req.op}: {ep.base}: {redact(req, what)}")
    err.sent = sent  # type: ignore[attr-defined]
    err.dialed = dialed  # type: ignore[attr-defined]
    return err


def tls_error(req: Request, ep: Endpoint, what: str, sent: float) -> TLSError:
    err = TLSError(f"{req.op}: {ep.base}: {redact(req, what)}")
    err.sent = sent  # type: ignore[attr-defined]
    return err


# --- the retry policy ---------------------------------------------------------------------------


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
    """Whether another endpoint, or a later attempt, may answer differently: the error's
    retry class (the API's for its code) is not "never"."""
    return err.retry_class != "never"


def may_have_applied(err: RaftlockError) -> bool:
    """Whether a retryable failure may hide an applied request: an answer of retry class
    "ambiguous" (unknown_outcome), or a connection that failed after the request could have
    been sent."""
    if err.retry_class == "ambiguous":
        return True
    return isinstance(err, Unavailable) and not getattr(err, "dialed", False)


class Endpoints:
    """The endpoints of a client and the one it prefers (the one that answered last, or the
    leader a follower named): shared by a client's calls."""

    def __init__(self, eps: list[Endpoint]) -> None:
        self.eps = eps
        self._mu = threading.Lock()
        self._preferred = 0

    def preferred(self) -> int:
        with self._mu:
            return self._preferred

    def set_preferred(self, i: int) -> None:
        with self._mu:
            self._preferred = i

    def note_answer(self, i: int, status: int, headers: dict[str, str]) -> None:
        """After an answer of endpoint i: prefer the leader it names, else i (unless it
        answered a 5xx)."""
        leader = leader_of(headers)
        if leader:
            for j, e in enumerate(self.eps):
                if e.hostport == leader or f"{e.host}:{e.port}" == leader:
                    self.set_preferred(j)
                    return
        elif status < 500:
            self.set_preferred(i)


#: What the retry policy asks its driver to do next.
Attempt = tuple  # ("attempt", endpoint index, attempt timeout)
Sleep = tuple  # ("sleep", seconds)
Action = Union[Attempt, Sleep]
#: What the driver tells it: ("ok", send time, value) or ("err", RaftlockError).
Outcome = tuple


def attempt_timeout(req: Request, default: float, deadline: float) -> float:
    """One attempt's timeout: the request's (or the client's) plus its server-side wait,
    within the deadline."""
    t = (req.attempt_timeout or default) + (req.wait() if req.wait is not None else 0.0)
    return max(min(t, deadline - time.monotonic()), 0.001)


def retry_policy(
    eps: Endpoints, req: Request, deadline: float, *, timeout: float, min_backoff: float, max_backoff: float,
    cancelled: Callable[[], RaftlockError | None] = lambda: None,
) -> Generator[Action, Outcome, tuple[Any, Result]]:
    """The retry loop of every call, as a generator each client drives (with its own I/O
    and sleep): it yields ("attempt", endpoint, timeout) and is sent ("ok", sent, value)
    or ("err", error); it yields ("sleep", seconds) between rounds; it returns (value,
    Result) or raises.

    On a failure the next endpoint is tried at once; after a whole round, a pause of
    exponential backoff with jitter. A too_many_requests answer pauses for its Retry-After
    (or the backoff, if longer), and when the deadline falls before that pause would end,
    its error is raised at once. When the deadline passes with no endpoint answering, the
    error is Unreachable naming every endpoint's last error; otherwise the last error
    (UnknownOutcome, NoLeader...). Every error raised carries ``result``."""
    res = Result()
    n = len(eps.eps)
    idx = eps.preferred()
    backoff = min_backoff
    max_b = max(max_backoff, min_backoff)
    if req.max_backoff > 0:
        max_b = req.max_backoff
        backoff = min(backoff, max_b)
    last: RaftlockError | None = None
    seen: dict[str, str] = {}

    def fail(err: RaftlockError) -> RaftlockError:
        err.result = res  # type: ignore[attr-defined]
        return err

    def unreachable(err: RaftlockError) -> RaftlockError:
        if not isinstance(err, Unavailable):
            return fail(err)
        parts = "; ".join(f"{e.base}: {seen.get(e.base, 'not tried before the deadline')}" for e in eps.eps)
        u = Unreachable(f"{req.op}: no endpoint answered before the deadline ({parts})", errors=dict(seen))
        u.sent = getattr(err, "sent", 0.0)  # type: ignore[attr-defined]
        u.dialed = getattr(err, "dialed", False)  # type: ignore[attr-defined]
        return fail(u)

    while True:
        throttled = 0.0
        tls_fails = 0
        for i in range(n):
            c = cancelled()
            if c is not None:
                raise fail(c)
            ep = (idx + i) % n
            res.attempts += 1
            outcome = yield ("attempt", ep, attempt_timeout(req, timeout, deadline))
            if outcome[0] == "ok":
                _, sent, value = outcome
                if res.attempts == 1:
                    res.first = sent
                res.sent = sent
                return value, res
            err: RaftlockError = outcome[1]
            if res.attempts == 1:
                res.first = getattr(err, "sent", time.monotonic())
            c = cancelled()
            if c is not None:
                raise fail(c)
            if isinstance(err, LeaseLost) or not retryable(err):
                raise fail(err)
            last = err
            base = eps.eps[ep].base
            seen[base] = err.message.split(f"{base}: ", 1)[-1]
            if time.monotonic() >= deadline:
                raise unreachable(err)
            if isinstance(err, TLSError):
                tls_fails += 1
            if err.retry_class == "after_delay":
                throttled = max(err.retry_after or 0.0, 0.001)
                break
            eps.set_preferred((ep + 1) % n)
        assert last is not None
        if tls_fails == n:
            raise fail(last)
        idx = eps.preferred()
        pause = upper_half(backoff)
        if throttled > 0:
            pause = max(pause, throttled)
        if time.monotonic() + pause >= deadline:
            if throttled > 0:
                raise fail(last)  # it cannot be served before the caller gives up
            yield ("sleep", max(deadline - time.monotonic(), 0.0))
            raise unreachable(last)
        yield ("sleep", pause)
        backoff = min(2 * backoff, max_b)


# --- decoding reads ------------------------------------------------------------------------------


@dataclass
class Grant:
    """The answer to a plain acquire: the fencing token and the lease that holds the grant."""

    name: str
    token: int
    lease_id: str = field(repr=False)  # a secret: not in repr()
    ttl_ms: int
    owner: str = ""
    mode: str = ""


@dataclass
class LockStatus:
    """A lock's state (GET /v1/locks/{name}). A free lock has held False and token 0;
    ``lock_delay_remaining_ms`` is how long a lock delay still keeps it from everyone."""

    name: str
    held: bool
    token: int
    owner: str
    mode: str
    holders: list[dict[str, Any]]
    holder_count: int
    waiters: int
    modify_index: int
    lock_delay_remaining_ms: int = 0


@dataclass
class SemaphoreStatus:
    """A semaphore's state: its limit (0 when not in use), the permits held, the waiters."""

    name: str
    limit: int
    permits: list[dict[str, Any]]
    waiters: int
    modify_index: int


@dataclass
class ElectionStatus:
    """An election's state: whether someone leads, with which value and token."""

    name: str
    elected: bool
    owner: str
    value: str
    token: int
    modify_index: int
    candidates: int


@dataclass
class History:
    """A lock's recent events, oldest first (grants, releases, expiries...)."""

    name: str
    events: list[dict[str, Any]]
    cluster_time_ms: int


@dataclass
class Event:
    """One lock event of a watch (GET /v1/events): ``kind`` is granted, released, expired,
    revoked, wait_abandoned, wait_timed_out, wait_lease_ended, deadlock_refused...;
    ``index`` the log index of its entry (the stream's event ID); ``token`` the grant
    concerned (0 when none)."""

    name: str
    kind: str
    index: int
    token: int = 0
    owner: str = ""
    time_ms: int = 0


def grant_of(o: dict[str, Any]) -> Grant:
    return Grant(name=o["name"], token=int(o["token"]), lease_id=o["lease_id"], ttl_ms=int(o["ttl_ms"]), owner=o.get("owner", ""), mode=o.get("mode", ""))


def lock_status_of(o: dict[str, Any]) -> LockStatus:
    return LockStatus(
        name=o["name"], held=bool(o.get("held")), token=int(o.get("token", 0)), owner=o.get("owner", ""), mode=o.get("mode", ""),
        holders=list(o.get("holders") or []), holder_count=int(o.get("holder_count", 0)), waiters=int(o.get("waiters", 0)),
        modify_index=int(o.get("modify_index", 0)), lock_delay_remaining_ms=int(o.get("lock_delay_remaining_ms", 0)),
    )


def semaphore_status_of(o: dict[str, Any]) -> SemaphoreStatus:
    return SemaphoreStatus(name=o["name"], limit=int(o.get("limit", 0)), permits=list(o.get("permits") or []), waiters=int(o.get("waiters", 0)), modify_index=int(o.get("modify_index", 0)))


def election_status_of(o: dict[str, Any]) -> ElectionStatus:
    return ElectionStatus(
        name=o["name"], elected=bool(o.get("elected")), owner=o.get("owner", ""), value=o.get("value", ""), token=int(o.get("token", 0)),
        modify_index=int(o.get("modify_index", 0)), candidates=int(o.get("candidates", 0)),
    )


def history_of(o: dict[str, Any]) -> History:
    return History(name=o["name"], events=list(o.get("events") or []), cluster_time_ms=int(o.get("cluster_time_ms", 0)))


def lockset_tokens_of(o: dict[str, Any]) -> dict[str, int]:
    return {x["name"]: int(x["token"]) for x in o.get("locks") or []}


# --- Server-Sent Events ---------------------------------------------------------------------------


class EventStream:
    """Reads the event stream's body (Server-Sent Events) fed in pieces: ``feed`` returns the
    lock events of every complete message, and ``last`` is the last entry index received
    (each message's id, the first one an id-only message just before the stream's start).
    An ``error`` message raises the library error it carries (IndexCompacted when the node
    no longer holds the events asked for). Bounded: a message over MAX_EVENT_BYTES raises
    ServerError."""

    def __init__(self, last: int | None = None) -> None:
        self._buf = bytearray()
        self._event = ""
        self._data: list[str] = []
        self._size = 0
        self._id: str | None = None
        self.last = last

    def feed(self, data: bytes) -> list[Event]:
        self._buf += data
        out: list[Event] = []
        while True:
            end = self._buf.find(b"\n")
            if end < 0:
                if len(self._buf) > MAX_EVENT_BYTES:
                    raise ServerError(f"watch: an event line over {MAX_EVENT_BYTES} bytes")
                return out
            line = bytes(self._buf[:end]).rstrip(b"\r").decode("utf-8", errors="replace")
            del self._buf[: end + 1]
            if line:
                if line.startswith(":"):
                    continue  # a comment: the stream's ping
                name, _, value = line.partition(":")
                if value.startswith(" "):
                    value = value[1:]
                if name == "id":
                    self._id = value
                elif name == "event":
                    self._event = value
                elif name == "data":
                    self._size += len(value)
                    if self._size > MAX_EVENT_BYTES:
                        raise ServerError(f"watch: an event over {MAX_EVENT_BYTES} bytes")
                    self._data.append(value)
                continue
            out.extend(self._dispatch())

    def _dispatch(self) -> list[Event]:
        event, data, mid = self._event, "\n".join(self._data), self._id
        self._event, self._data, self._size, self._id = "", [], 0, None
        evs: list[Event] = []
        if event == "entry" and data:
            try:
                e = json.loads(data)
                idx = int(e.get("index", 0))
                for x in e.get("events") or []:
                    evs.append(Event(name=x.get("name", ""), kind=x.get("kind", ""), index=int(x.get("index", idx)), token=int(x.get("token", 0)),
                                     owner=x.get("owner", ""), time_ms=int(x.get("time_ms", 0))))
            except (ValueError, TypeError, AttributeError):
                raise ServerError("watch: an event that is not the API's JSON") from None
        elif event == "error" and data:
            try:
                eb = json.loads(data)["error"]
                code, message = eb["code"], eb.get("message", "")
            except (ValueError, KeyError, TypeError):
                raise ServerError("watch: an error event that is not the API's JSON") from None
            raise error_for(code, f"watch: {message}")
        if mid is not None:
            try:
                n = int(mid)
                self.last = n if self.last is None else max(self.last, n)
            except ValueError:
                pass
        return evs


# --- prefix routing -------------------------------------------------------------------------------


class RouteTable:
    """The routing rules of a router across clusters (the Go client.Router's): each name
    goes to the cluster routed its longest prefix ("" is the default route); a lease lives
    on one cluster, and one known to live elsewhere is refused for a name (CrossCluster)
    before anything is sent; NoRoute when no prefix owns the name."""

    def __init__(self, routes: list[tuple[str, list[str]]]) -> None:
        if not routes:
            raise ValueError("router: no routes given")
        self.names: list[str] = []
        owner: dict[str, str] = {}
        self._prefixes: list[tuple[str, int]] = []
        for i, (name, prefixes) in enumerate(routes):
            label = name or f"cluster {i + 1}"
            if not prefixes:
                raise ValueError(f"router: route {label} has no prefixes (give \"\" for the default route)")
            for p in prefixes:
                if p in owner:
                    raise ValueError(f"router: prefix {p!r} is routed to both {owner[p]} and {label}")
                owner[p] = label
                self._prefixes.append((p, i))
            self.names.append(label)
        self._prefixes.sort(key=lambda x: -len(x[0]))
        self._mu = threading.Lock()
        self._leases: dict[str, tuple[int, float | None]] = {}  # lease ID -> (cluster, until or None)
        self._sweep_at = 64

    def route(self, verb: str, name: str) -> int:
        for p, i in self._prefixes:
            if name.startswith(p):
                return i
        raise NoRoute(f"{verb} {name!r}: no route owns the name (no routed prefix matches it, and there is no default route \"\")")

    def remember(self, lease_id: str, cluster: int, until: float | None) -> None:
        """Record that lease_id lives on cluster, until ``until`` (monotonic; None: until forget)."""
        with self._mu:
            self._leases[lease_id] = (cluster, until)
            if len(self._leases) < self._sweep_at:
                return
            now = time.monotonic()
            for k, (_, u) in list(self._leases.items()):
                if u is not None and now > u:
                    del self._leases[k]
            self._sweep_at = 2 * len(self._leases) + 64

    def forget(self, lease_id: str) -> None:
        with self._mu:
            self._leases.pop(lease_id, None)

    def check_lease_id(self, verb: str, name: str, cluster: int, lease_id: str) -> None:
        with self._mu:
            home = self._leases.get(lease_id)
            if home is not None and home[1] is not None and time.monotonic() > home[1]:
                del self._leases[lease_id]
                home = None
        if home is not None and home[0] != cluster:
            raise CrossCluster(f"{verb} {name!r}: the name is {self.names[cluster]}'s, the lease {self.names[home[0]]}'s; take a lease on {self.names[cluster]}")

    def cross(self, verb: str, name: str, cluster: int, lease_cluster: int | None) -> CrossCluster:
        other = self.names[lease_cluster] if lease_cluster is not None else "a client outside this router"
        return CrossCluster(f"{verb} {name!r}: the name is {self.names[cluster]}'s, the lease {other}'s; take a lease on {self.names[cluster]}")
