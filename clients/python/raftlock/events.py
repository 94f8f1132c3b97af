"""Watching lock events (GET /v1/events, Server-Sent Events) with the threaded client: a
Watch is an iterator of events that reconnects by itself, with the last event ID, to the
next endpoint, so that no event is lost or repeated across a node's failure."""

from __future__ import annotations

import time
from typing import Iterator

from ._core import BrokenAnswer, Event, EventStream, events_request, retryable, upper_half
from ._http import Stream, Transport
from .errors import RaftlockError


class Watch:
    """The lock events of the locks whose names start with a prefix (Client.watch), in log
    order: ``for event in watch:`` (each an Event: name, kind, index, token, owner). After a
    disconnect (a node that stops, restarts, or drops a slow reader) it reconnects to the
    next endpoint with ``Last-Event-ID`` = the last entry index received, so no event is
    lost or repeated while some node still holds the events since.

    When the node reached no longer holds them (it restored a snapshot taken after that
    index), iterating raises IndexCompacted and the watch ends: read the state you derive
    from events (Client.status, Client.history), then watch again from now on. Other errors
    that asking again cannot fix (a refused token) end it the same way. ``close()``, from
    any thread, ends the iteration.
    """

    def __init__(self, transport: Transport, prefix: str, from_index: int = 0) -> None:
        if from_index < 0:
            raise ValueError("from_index must be 0 (from now on) or an entry index")
        self._t = transport
        self.prefix = prefix
        self._parser = EventStream(last=from_index - 1 if from_index > 0 else None)
        self._ep = transport.preferred()
        self._closed = False
        #: Why the watch ended (None while it runs, or after close()).
        self.error: RaftlockError | None = None
        # The first connection is the caller's: its refusal (IndexCompacted...) is raised here.
        self._stream: Stream | None = transport.open_stream(self._ep, events_request(prefix, from_index, None))

    @property
    def last_index(self) -> int:
        """The index of the last entry whose events were all delivered (or that the stream
        started after); 0 before the first."""
        return self._parser.last or 0

    def __iter__(self) -> Iterator[Event]:
        return self._events()

    def _events(self) -> Iterator[Event]:
        backoff = 0.05
        while not self._closed:
            stream = self._stream
            got = False
            if stream is not None:
                try:
                    for piece in stream.pieces():
                        for ev in self._parser.feed(piece):
                            got = True
                            yield ev
                except RaftlockError as err:  # the server ended the stream with an error event
                    if not retryable(err):
                        self._end(err)
                        raise
                except (OSError, BrokenAnswer):
                    pass  # a disconnect: resume elsewhere
                stream.close()
                self._stream = None
            if self._closed:
                return
            if got:
                backoff = 0.05
            time.sleep(upper_half(backoff))
            backoff = min(2 * backoff, 1.0)
            self._ep = (self._ep + 1) % len(self._t.endpoints)
            try:
                self._stream = self._t.open_stream(self._ep, events_request(self.prefix, 0, self._parser.last))
            except RaftlockError as err:
                if self._closed:
                    return
                if not retryable(err):
                    self._end(err)
                    raise
            # A new stream starts with an id-only message just before it: the parser keeps
            # the highest index seen, so that is a no-op for an exact resume.
            self._parser = EventStream(last=self._parser.last)

    def _end(self, err: RaftlockError) -> None:
        self.error = err
        self._closed = True

    def close(self) -> None:
        """End the watch (a blocked iteration returns). Idempotent."""
        self._closed = True
        s = self._stream
        if s is not None:
            s.close()

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<raftlock.Watch prefix={self.prefix!r} last_index={self.last_index}>"
