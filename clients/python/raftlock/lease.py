"""Leases kept alive in the background, and the timing contract of the loss signal.

A lease's **safe-until** time is, on this process's monotonic clock, the send time of the
last answered keepalive (or of the create or acquire that made the lease) plus the TTL
minus a drift margin. The cluster cannot have expired the lease before then: it starts the
TTL only after it received that request, on its own monotonic clock, and cluster time stands
still without a leader. When safe-until passes without a newer answered keepalive, or the
cluster says the lease is gone, the lease is **lost**: its ``lost`` event is set, and
anything done under its grants must stop. The fencing token makes a late write harmless;
the loss signal makes it rare.

One thread per Client (the keepaliver) renews every lease of that client with batched
``POST /v1/leases/keepalive {"lease_ids": [...]}`` requests, and is also every lease's
watchdog: it sets ``lost`` when safe-until passes.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import Any, Callable, Protocol

from .errors import LeaseLost, LeaseNotFound, RaftlockError, ServerError

log = logging.getLogger("raftlock")

#: The smallest default drift margin, in seconds.
MIN_DRIFT_MARGIN = 0.1
#: A failing keepalive is retried no faster than this (seconds).
KEEPALIVE_RETRY_MIN = 0.01
#: The most leases one batch keepalive carries (the server's limit).
MAX_KEEPALIVE_BATCH = 10000


def default_drift_margin(ttl: float) -> float:
    """A tenth of the TTL, and at least MIN_DRIFT_MARGIN (seconds)."""
    return max(ttl / 10, MIN_DRIFT_MARGIN)


def _jittered(d: float) -> float:
    """d shortened by up to a tenth at random, so that clients do not renew in lockstep."""
    return d - random.uniform(0, d / 10)


class LostSignal(threading.Event):
    """A lease's loss signal: a threading.Event that also reads as set once the lease's
    safe-until time has passed, even before the keepalive thread (which may itself be
    paused, as the whole process can be) has noticed. So ``held.lost.is_set()`` cannot say
    "not lost" after a pause longer than the lease's safe time, and ``lost.wait(t)``
    returns by safe-until at the latest."""

    def __init__(self, lease: Lease) -> None:
        super().__init__()
        self._lease = lease

    def is_set(self) -> bool:  # noqa: D102 - documented on the class
        if super().is_set():
            return True
        if time.monotonic() >= self._lease.safe_until():
            self._lease.lose(LeaseLost("its safe time passed without an answered keepalive"))
            return True
        return False

    isSet = is_set

    def wait(self, timeout: float | None = None) -> bool:  # noqa: D102
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.is_set():
                return True
            now = time.monotonic()
            step = self._lease.safe_until() - now
            if end is not None:
                if now >= end:
                    return False
                step = min(step, end - now)
            super().wait(max(step, 0.0) + 0.001)


class LeaseOwner(Protocol):
    """What a Lease needs of the client that made it (its public API): ``timeout``, a
    revoke, and a lock taken with a given lease."""

    timeout: float

    def revoke(self, lease_id: str, timeout: float | None = None) -> Any: ...

    def lock(self, name: str, ttl: float = ..., wait: float = ..., **kw: Any) -> Any: ...


class Lease:
    """A lease kept alive in the background by its client's keepalive thread.

    Attributes:
        id: the lease ID, a secret: it authorizes keepalive, release and revoke.
        ttl: the lease's TTL in seconds.
        drift: the margin (seconds) between safe-until and send time + TTL.
        interval: the pause between keepalives (seconds; default TTL/3).
        lost: a LostSignal (a threading.Event) that is set when the lease is lost or
            closed, and reads as set once safe-until has passed.
    """

    def __init__(self, owner: LeaseOwner, keepaliver: Keepaliver, lease_id: str, ttl: float, sent: float, drift: float | None, interval: float | None) -> None:
        self._owner = owner
        self._keepaliver = keepaliver
        self.id = lease_id
        self.ttl = ttl
        self.drift = default_drift_margin(ttl) if drift is None else drift
        self.interval = ttl / 3 if interval is None else interval
        if not 0 < self.drift < ttl:
            raise ValueError(f"drift margin {self.drift}s must be positive and shorter than the TTL {ttl}s")
        if not 0 < self.interval < ttl - self.drift:
            raise ValueError(f"keepalive interval {self.interval}s must be positive and shorter than TTL - drift margin")
        self._mu = threading.Lock()
        self.lost: threading.Event = LostSignal(self)
        self._last_sent = sent
        self._safe_until = sent + ttl - self.drift
        self._error: RaftlockError | None = None
        self._callbacks: list[Callable[[], None]] = []
        self._closed = False

    @property
    def client(self) -> LeaseOwner:
        """The client that made the lease (its cluster is the lease's)."""
        return self._owner

    @property
    def last_sent(self) -> float:
        """The send time (time.monotonic()) of the last request that renewed the lease."""
        with self._mu:
            return self._last_sent

    def safe_until(self) -> float:
        """The latest moment, on time.monotonic()'s clock, at which the holder may still
        assume the lease is alive. Only moves forward while the lease is live; once it is
        lost, it is at most the moment of the loss. Compare it with time.monotonic()."""
        with self._mu:
            return self._safe_until

    @property
    def error(self) -> RaftlockError | None:
        """None while the lease is live; why it was lost (LeaseLost) once ``lost`` is set."""
        with self._mu:
            return self._error

    def is_lost(self) -> bool:
        """Whether the lease is lost: its loss signal is set, or safe-until has passed
        (the same as ``lost.is_set()``)."""
        return self.lost.is_set()

    def __repr__(self) -> str:
        # The ID is a secret: it authorizes keepalive, release and revoke.
        return f"<raftlock.Lease ttl={self.ttl}s lost={self.lost.is_set()}>"

    def on_lost(self, fn: Callable[[], None]) -> None:
        """Call fn (from the thread that notices) when the lease is lost; at once if it is."""
        with self._mu:
            if self._error is None:
                self._callbacks.append(fn)
                return
        fn()

    def close(self, timeout: float | None = None) -> None:
        """Stop renewing the lease and revoke it, which frees its grants at once (each to its
        next waiter). A lease the cluster no longer knows counts as revoked; when the revoke
        fails (the cluster is unreachable) the lease expires by itself a TTL after its last
        keepalive. Idempotent."""
        with self._mu:
            if self._closed:
                return
            self._closed = True
        self.lose(LeaseLost("the lease was closed", code="lease_closed"))
        self._keepaliver.remove(self)
        try:
            self._owner.revoke(self.id, timeout=timeout if timeout is not None else self._owner.timeout)
        except LeaseNotFound:
            pass

    def lock(self, name: str, wait: float = 0.0, *, mode: str = "exclusive", owner: str = "", max_hold: float = 0.0, lock_delay: float = 0.0) -> Any:
        """Take lock ``name`` with this lease, which then holds it beside its other grants
        (several locks on one kept-alive lease): ``client.lock(name, wait=..., lease=this)``.
        Releasing the returned hold gives back this lock only; closing the lease gives back
        every one."""
        return self._owner.lock(name, wait=wait, mode=mode, owner=owner, lease=self, max_hold=max_hold, lock_delay=lock_delay)

    # --- used by the keepaliver and the holds ------------------------------------------

    def observe(self, sent: float) -> bool:
        """Record that a request sent at ``sent`` renewed the lease. False when the lease was
        already lost or its safe time has passed: a late answer does not revive a lease
        whose holder may already have been told it is lost."""
        with self._mu:
            if self._error is not None:
                return False
            expired = time.monotonic() >= self._safe_until
        if expired:
            self.lose(LeaseLost("its safe time passed without an answered keepalive"))
            return False
        with self._mu:
            su = sent + self.ttl - self.drift
            if su > self._safe_until:
                self._last_sent, self._safe_until = sent, su
        return True

    def lose(self, err: RaftlockError) -> None:
        """Set the loss signal with why (the first loss wins); runs the on_lost callbacks."""
        with self._mu:
            if self._error is not None:
                return
            self._error = err
            now = time.monotonic()
            if self._safe_until > now:
                self._safe_until = now
            callbacks, self._callbacks = self._callbacks, []
        self.lost.set()
        for fn in callbacks:
            try:
                fn()
            except Exception:  # noqa: BLE001 - a callback must not stop the others
                pass

    def timing(self, client_timeout: float) -> tuple[float, float]:
        """(attempt timeout, retry pause) of this lease's keepalives: attempts are short,
        so that a hung node costs a fraction of the TTL, and failures are retried within the
        interval."""
        attempt = min(client_timeout, max(self.interval / 2, 0.25))
        retry = max(min(self.interval / 4, 1.0), KEEPALIVE_RETRY_MIN)
        return attempt, retry


class _State:
    __slots__ = ("due", "inflight")

    def __init__(self, due: float) -> None:
        self.due = due
        self.inflight = False


class Keepaliver:
    """The one keepalive thread of a Client: it wakes when the earliest lease is due (or
    its safe-until passes) and sends one batch keepalive for every lease due within half
    its interval from then, so that a client with many leases sends about one request per
    interval. The batch itself is sent from a short-lived thread, so that a hung node
    delays no lease's watchdog."""

    def __init__(self, renew: Callable[[list[str], float, float, float], tuple[Any, Any]], timeout: float) -> None:
        """renew(ids, deadline, attempt timeout, maximum backoff) sends one batch keepalive
        (retried until the deadline) and returns (answer, Result); timeout bounds one attempt."""
        self._renew = renew
        self._timeout = timeout
        self._cond = threading.Condition()
        self._leases: dict[Lease, _State] = {}
        self._thread: threading.Thread | None = None
        self._stopped = False

    def add(self, lease: Lease) -> None:
        """Schedule lease's first keepalive and start the thread when needed."""
        with self._cond:
            self._leases[lease] = _State(lease.last_sent + _jittered(lease.interval))
            if self._thread is None or not self._thread.is_alive():
                self._stopped = False
                self._thread = threading.Thread(target=self._loop, name="raftlock-keepalive", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def remove(self, lease: Lease) -> None:
        """Take lease out of the schedule (lost or closed)."""
        with self._cond:
            self._leases.pop(lease, None)
            self._cond.notify_all()

    def leases(self) -> list[Lease]:
        """The leases scheduled now."""
        with self._cond:
            return list(self._leases)

    def stop(self) -> None:
        """Lose every lease (without revoking) and end the thread."""
        with self._cond:
            leases = list(self._leases)
            self._leases.clear()
            self._stopped = True
            self._cond.notify_all()
        for lease in leases:
            lease.lose(LeaseLost("the client was closed", code="lease_closed"))

    def _reschedule(self, lease: Lease, due: float) -> None:
        with self._cond:
            st = self._leases.get(lease)
            if st is not None:
                st.due, st.inflight = due, False
            self._cond.notify_all()

    def _loop(self) -> None:
        while True:
            expired: list[Lease] = []
            batch: list[Lease] = []
            with self._cond:
                if self._stopped or not self._leases:
                    self._thread = None
                    return
                now = time.monotonic()
                wake = now + 3600.0
                for lease, st in list(self._leases.items()):
                    su = lease.safe_until()
                    if now >= su or lease.lost.is_set():
                        expired.append(lease)
                        del self._leases[lease]
                        continue
                    wake = min(wake, su)
                    if not st.inflight:
                        wake = min(wake, st.due)
                due_now = [l for l, st in self._leases.items() if not st.inflight and st.due <= now]
                if due_now:
                    for lease, st in self._leases.items():
                        if not st.inflight and st.due <= now + lease.interval / 2:
                            st.inflight = True
                            batch.append(lease)
                elif not expired:
                    self._cond.wait(max(wake - now, 0.0))
            for lease in expired:
                if not lease.lost.is_set():
                    log.warning("lease lost: no keepalive answered before its safe time passed")
                lease.lose(LeaseLost("its safe time passed without an answered keepalive"))
            while batch:
                part, batch = batch[:MAX_KEEPALIVE_BATCH], batch[MAX_KEEPALIVE_BATCH:]
                threading.Thread(target=self._send, args=(part,), name="raftlock-keepalive-batch", daemon=True).start()

    def _send(self, batch: list[Lease]) -> None:
        """Renew batch with one request, retried across endpoints until it is answered or
        the latest safe-until among them passes."""
        deadline = 0.0
        attempt, retry = self._timeout, 1.0
        by_id: dict[str, list[Lease]] = {}
        for lease in batch:
            if lease.lost.is_set():
                self.remove(lease)
                continue
            deadline = max(deadline, lease.safe_until())
            a, r = lease.timing(self._timeout)
            attempt, retry = min(attempt, a), min(retry, r)
            by_id.setdefault(lease.id, []).append(lease)
        if not by_id:
            return
        try:
            out, res = self._renew(list(by_id), deadline, attempt, retry)
        except RaftlockError as err:
            for leases in by_id.values():
                for lease in leases:
                    self._settle(lease, 0.0, err)
            return
        for item in out.get("leases") or []:
            for lease in by_id.pop(item.get("lease_id", ""), []):
                self._settle(lease, res.sent, None)
        for lid in out.get("not_found") or []:
            for lease in by_id.pop(lid, []):
                self._settle(lease, res.sent, LeaseNotFound("the cluster no longer knows the lease"))
        for leases in by_id.values():
            for lease in leases:
                self._settle(lease, res.sent, ServerError("batch keepalive: the answer does not mention the lease"))

    def _settle(self, lease: Lease, sent: float, err: RaftlockError | None) -> None:
        if err is None:
            if not lease.observe(sent):
                self.remove(lease)
                return
            self._reschedule(lease, sent + _jittered(lease.interval))
        elif isinstance(err, LeaseNotFound):
            if not lease.lost.is_set():  # not a lease closed while its keepalive was on its way
                log.warning("lease lost: the cluster no longer knows it")
            lease.lose(LeaseLost("the cluster no longer knows the lease (it expired or was revoked)"))
            self.remove(lease)
        elif lease.lost.is_set():
            self.remove(lease)
        else:
            _, retry = lease.timing(self._timeout)
            self._reschedule(lease, time.monotonic() + _jittered(retry))


class GrantLostSignal(threading.Event):
    """The loss signal of one grant: its lease's, or the end of its maximum hold (the
    grant's max_hold), whichever comes first. Like LostSignal it reads as set once either
    time has passed, before any thread noticed."""

    def __init__(self, lease: Lease, end: float | None) -> None:
        super().__init__()
        self._lease = lease
        self.end = end  # time.monotonic() at which the maximum hold ends, None for none
        lease.on_lost(self.set)
        if end is not None:
            t = threading.Timer(max(end - time.monotonic(), 0.0), self.set)
            t.daemon = True
            t.start()

    def is_set(self) -> bool:  # noqa: D102 - documented on the class
        if super().is_set():
            return True
        if self._lease.lost.is_set() or (self.end is not None and time.monotonic() >= self.end):
            self.set()
            return True
        return False

    isSet = is_set

    def safe_until(self) -> float:
        su = self._lease.safe_until()
        return su if self.end is None else min(su, self.end)

    def wait(self, timeout: float | None = None) -> bool:  # noqa: D102
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.is_set():
                return True
            now = time.monotonic()
            step = self.safe_until() - now
            if end is not None:
                if now >= end:
                    return False
                step = min(step, end - now)
            super().wait(max(step, 0.0) + 0.001)

