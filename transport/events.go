package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/fsm"
)

// eventRoutes serves what this node applied: GET /v1/history/{name...} and the event
// stream GET /v1/events. Without an EventSource both answer 404.
type eventRoutes struct {
	events EventSource
	auth   *guard
	done   <-chan struct{} // closed when the server shuts down
}

// streamPing is how often an idle event stream sends a comment, so that proxies keep it
// open and a dead client is noticed.
const streamPing = 15 * time.Second

// streamWriteTimeout bounds one write of an event stream.
const streamWriteTimeout = 30 * time.Second

func historyEvent(name string, e cluster.HistoryEvent) api.HistoryEvent {
	return api.HistoryEvent{
		Name: name, Kind: e.Kind.String(), Index: e.Index, TimeMs: e.Time, Token: e.Token, Owner: e.Owner,
		Lease: e.Lease.String(), FromQueue: e.FromQueue, WaitedMs: e.Waited, DeadlineMs: e.Deadline, RenewedMs: e.Renewed, Detail: e.Detail,
	}
}

// history answers GET /v1/history/{name...}: the lock's newest events, read like a
// lock's status (linearizable unless ?stale).
func (h eventRoutes) history(w http.ResponseWriter, r *http.Request) (call, error) {
	if h.events == nil {
		return call{}, errNoHistories
	}
	name := r.PathValue("name")
	q := r.URL.Query()
	err := knownQuery(q, "stale")
	var stale bool
	if e := api.ValidateName(name); err == nil && e != nil {
		err = e // (a nil *api.Error must not become a non-nil error)
	}
	if err == nil {
		stale, err = queryBool(q, "stale")
	}
	if err != nil {
		return call{}, err
	}
	return call{need: accessRead, name: name, do: func(ctx context.Context) (any, error) {
		evs, now, err := h.events.History(ctx, name, stale)
		if err != nil {
			return nil, err
		}
		out := api.History{Name: name, Events: make([]api.HistoryEvent, 0, len(evs)), ClusterTimeMs: now.Milliseconds()}
		for _, e := range evs {
			out.Events = append(out.Events, historyEvent("", e))
		}
		return out, nil
	}}, nil
}

// stream serves GET /v1/events?prefix=P&from_index=N as Server-Sent Events: one
// message per applied entry that changed a lock under P, with the entry index as its id.
// A Last-Event-ID header (the last id received) resumes after it and wins over
// from_index. The stream is this node's own (it is never forwarded: Subscribe does not
// answer ErrNotLeader): every node applies the same entries.
func (h eventRoutes) stream(w http.ResponseWriter, r *http.Request) (call, error) {
	if h.events == nil {
		return call{}, errNoHistories
	}
	q := r.URL.Query()
	err := knownQuery(q, "prefix", "from_index")
	prefix := q.Get("prefix")
	var from uint64
	if err == nil && prefix != "" {
		if e := api.ValidateName(prefix); e != nil {
			err = e
		}
	}
	if err == nil {
		from, err = queryUint(q, "from_index", 1<<63-1)
	}
	if last := r.Header.Get("Last-Event-ID"); err == nil && last != "" {
		var n uint64
		n, err = strconv.ParseUint(last, 10, 63)
		if err != nil {
			err = api.Errorf(api.CodeInvalidArgument, "Last-Event-ID must be an entry index, got %q", last)
		}
		from = n + 1
	}
	if err != nil {
		return call{}, err
	}
	return call{need: accessRead, name: prefix, do: func(context.Context) (any, error) {
		var id cluster.ACLIdentity
		if h.auth.on {
			var err error
			if id, _, err = h.auth.identity(r); err != nil {
				return nil, err
			}
		}
		sub, err := h.events.Subscribe(prefix, from)
		if err != nil {
			return nil, err
		}
		return rawAnswer(func(w http.ResponseWriter) { h.send(w, r, sub, id) }), nil
	}}, nil
}

// send writes the subscription's entries to w until the client, the subscription or the
// server ends; id filters the events a rule denies.
func (h eventRoutes) send(w http.ResponseWriter, r *http.Request, sub *cluster.Subscription, id cluster.ACLIdentity) {
	defer sub.Close()
	rc := http.NewResponseController(w)
	// A stream lives longer than the server's write timeout: each write gets its own
	// deadline instead, so that a client that stops reading is cut off and cannot hold
	// the handler (and the server's shutdown) forever.
	_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// An id without data moves the client's Last-Event-ID to just before the stream's
	// start without an event, so that a reconnection before the first event is exact.
	fmt.Fprintf(w, "retry: 1000\nid: %d\n\n", sub.Start()-1)
	if rc.Flush() != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-h.done: // the server is shutting down
			cancel()
		case <-ctx.Done():
		}
	}()
	var buf strings.Builder
	for {
		nctx, ncancel := context.WithTimeout(ctx, streamPing)
		e, err := sub.Next(nctx)
		ncancel()
		buf.Reset()
		switch {
		case err == nil:
			out := api.EventEntry{Index: e.Index}
			for _, ev := range e.Events {
				if h.auth.on && (id.Access(ev.Name) < fsm.AccessRead || id.Access(ev.Name) == fsm.AccessDeny) {
					continue // under the prefix, but a rule denies this name
				}
				out.Events = append(out.Events, historyEvent(ev.Name, ev.HistoryEvent))
			}
			if len(out.Events) == 0 {
				continue
			}
			data, _ := json.Marshal(out)
			fmt.Fprintf(&buf, "id: %d\nevent: entry\ndata: %s\n\n", e.Index, data)
		case ctx.Err() != nil:
			return
		case errors.Is(err, context.DeadlineExceeded):
			buf.WriteString(": ping\n\n")
		default:
			data, _ := json.Marshal(errorFor(err).err.Body())
			fmt.Fprintf(&buf, "event: error\ndata: %s\n\n", data)
			_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			_, _ = w.Write([]byte(buf.String()))
			_ = rc.Flush()
			return
		}
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.Write([]byte(buf.String())); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}
