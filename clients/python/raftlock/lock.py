"""A reusable lock object over the threaded client's public API, in the manner of
threading.Lock and redis-py's Lock: ``raftlock.Lock(client, name)``."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any, Protocol

from ._core import DEFAULT_TTL, check_mode, check_name, check_ttl, check_wait
from .errors import InvalidRequest, LeaseLost, LeaseNotFound, LockHeld, NotLocked, WaitTimeout
from .lease import Lease


class Locker(Protocol):
    """What a Lock uses of its client (raftlock.Client's public API)."""

    def lock(self, name: str, ttl: float = ..., wait: float = ..., **kw: Any) -> Any: ...

    def keepalive(self, lease_id: str, timeout: float | None = None) -> float: ...

#: What acquire waits for when blocking without a timeout (the client re-issues it in chunks).
_FOREVER = 1e9


class Lock:
    """A reusable lock: ``acquire(blocking=True, timeout=None)`` returns True once held
    (False when not blocking and held elsewhere, or when ``timeout`` seconds passed),
    ``release()`` gives it back, ``locked()`` says whether this object holds it now (its
    lease not lost), and ``extend()`` renews the lease at once. Each acquire takes the lock
    with ``client.lock`` (a lease of its own, kept alive), or on ``lease`` when given (the
    lease stays open after release). Usable as ``with lock:``, which raises LeaseLost on
    exit when the lock was lost inside the block.

    Attributes:
        name: the lock's name.
        token: the fencing token of the current grant (0 when not held).
    """

    def __init__(self, client: Locker, name: str, ttl: float = DEFAULT_TTL, *, mode: str = "exclusive", owner: str = "", lease: Lease | None = None) -> None:
        check_name("lock", name)
        check_ttl(ttl)
        check_mode(mode)
        self._client = client
        self.name = name
        self._ttl = ttl
        self._mode = mode
        self._owner = owner
        self._lease = lease
        self._held: Any = None  # the Held of the current grant
        self._mu = threading.Lock()

    @property
    def token(self) -> int:
        h = self._held
        return h.token if h is not None else 0

    @property
    def lost(self) -> threading.Event | None:
        """The current grant's loss signal (None when not held)."""
        h = self._held
        return h.lost if h is not None else None

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lock: at once or not at all when ``blocking`` is False; else waiting in
        the server's queue up to ``timeout`` seconds (forever when None). Returns whether
        it is held. Raises InvalidRequest when this object already holds it."""
        with self._mu:
            if self._held is not None and not self._held.lost.is_set():
                raise InvalidRequest(f"acquire {self.name!r}: this Lock already holds it; release it first")
            if not blocking:
                if timeout is not None and timeout != -1:
                    raise ValueError("a timeout applies only to a blocking acquire")
                wait = 0.0
            elif timeout is None or timeout == -1:
                wait = _FOREVER
            else:
                check_wait(timeout)
                wait = float(timeout)
            try:
                self._held = self._client.lock(self.name, self._ttl, wait, mode=self._mode, owner=self._owner, lease=self._lease)
            except (LockHeld, WaitTimeout):
                return False
            return True

    def release(self) -> None:
        """Give the lock back (see Held.release). NotLocked when this object holds nothing."""
        with self._mu:
            h, self._held = self._held, None
        if h is None:
            raise NotLocked(f"release {self.name!r}: this Lock holds nothing")
        h.release()

    def locked(self) -> bool:
        """Whether this object holds the lock now: acquired, not released, lease not lost
        (safe-until not passed). Unlike threading.Lock, it says nothing of other holders:
        read Client.status for that."""
        h = self._held
        return h is not None and not h.lost.is_set()

    def extend(self, timeout: float | None = None) -> float:
        """Renew the lock's lease now (besides the background keepalives); returns the new
        safe-until (time.monotonic()). Raises LeaseLost when the lease is already lost."""
        h = self._held
        if h is None:
            raise NotLocked(f"extend {self.name!r}: this Lock holds nothing")
        if h.lost.is_set():
            raise LeaseLost(f"extend {self.name!r}: the lease is lost")
        sent = time.monotonic()
        try:
            self._client.keepalive(h.lease.id, timeout=timeout)
        except LeaseNotFound:
            h.lease.lose(LeaseLost("the cluster no longer knows the lease (it expired or was revoked)"))
            raise LeaseLost(f"extend {self.name!r}: the lease is gone") from None
        if not h.lease.observe(sent):
            raise LeaseLost(f"extend {self.name!r}: the lease was lost before the renewal was answered")
        return h.lease.safe_until()

    def __enter__(self) -> Lock:
        self.acquire()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        with self._mu:
            h, self._held = self._held, None
        if h is not None:
            h.__exit__(et, ev, tb)

    def __repr__(self) -> str:
        return f"<raftlock.Lock {self.name!r} locked={self.locked()} token={self.token}>"
