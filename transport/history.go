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

// HistoryNode is what the history and event stream routes need of a node, beside Node.
// It is found at run time, so that test doubles of Node need not implement it; a node
// without it answers those routes with 404.
type HistoryNode interface {
	// History returns lock name's recorded events and the cluster time of the read;
	// linearizable unless stale (it returns cluster.ErrNotLeader on a follower then).
	History(ctx context.Context, name string, stale bool) ([]fsm.HistoryEvent, int64, error)
	// Subscribe starts this node's stream of lock events under prefix at index from.
	Subscribe(prefix string, from uint64) (*cluster.Subscription, error)
}

// streamPing is how often an idle event stream sends a comment, so that proxies keep it
// open and a dead client is noticed.
const streamPing = 15 * time.Second

// streamWriteTimeout bounds one write of an event stream.
const streamWriteTimeout = 30 * time.Second

func (s *Server) historyNode(w http.ResponseWriter) (HistoryNode, bool) {
	hn, ok := s.node.(HistoryNode)
	if !ok {
		writeError(w, api.Errorf(api.CodeNotFound, "this node does not keep lock histories"))
	}
	return hn, ok
}

func historyEvent(name string, e fsm.HistoryEvent) api.HistoryEvent {
	return api.HistoryEvent{
		Name: name, Kind: e.Kind.String(), Index: e.Index, TimeMs: e.Time, Token: e.Token, Owner: e.Owner,
		Lease: e.Lease.String(), FromQueue: e.FromQueue, WaitedMs: e.Waited, DeadlineMs: e.Deadline, RenewedMs: e.Renewed,
	}
}

// handleHistory answers GET /v1/history/{name...}: the lock's newest events, read like a
// lock's status (linearizable unless ?stale).
func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	hn, ok := s.historyNode(w)
	if !ok {
		return
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
	if err == nil {
		err = s.authorize(r, accessRead, name)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	evs, now, err := hn.History(r.Context(), name, stale)
	if s.forwarded(w, r, nil, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	out := api.History{Name: name, Events: make([]api.HistoryEvent, 0, len(evs)), ClusterTimeMs: now}
	for _, e := range evs {
		out.Events = append(out.Events, historyEvent("", e))
	}
	writeJSON(w, http.StatusOK, out)
}

// streamError maps the event stream's errors to API errors.
func streamError(err error) error {
	var ce *cluster.IndexCompactedError
	switch {
	case errors.As(err, &ce):
		return api.Errorf(api.CodeIndexCompacted, "this node no longer holds the events before index %d; start from from_index=%d or later, or without from_index to follow new events", ce.Oldest, ce.Oldest)
	case errors.Is(err, cluster.ErrTooManySubscribers):
		return api.Errorf(api.CodeTooManyRequests, "%v; retry later or on another node", err)
	case errors.Is(err, cluster.ErrSubscriberLagging):
		return api.Errorf(api.CodeTooManyRequests, "the stream was read too slowly and was dropped; resume with Last-Event-ID")
	case errors.Is(err, cluster.ErrStreamReset):
		return api.Errorf(api.CodeIndexCompacted, "this node restored a snapshot; the events before it are unknown here")
	}
	return err
}

// handleEvents serves GET /v1/events?prefix=P&from_index=N as Server-Sent Events: one
// message per applied entry that changed a lock under P, with the entry index as its id.
// A Last-Event-ID header (the last id received) resumes after it and wins over
// from_index. The stream is this node's own (it is not forwarded): every node applies
// the same entries.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	hn, ok := s.historyNode(w)
	if !ok {
		return
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
	if err == nil {
		err = s.authorize(r, accessRead, prefix)
	}
	var id fsm.ACLIdentity
	if err == nil && s.aclOn() {
		id, _, err = s.identity(r)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	sub, err := hn.Subscribe(prefix, from)
	if err != nil {
		writeError(w, streamError(err))
		return
	}
	defer sub.Close()
	rc := http.NewResponseController(w)
	// A stream lives longer than the server's write timeout: each write gets its own
	// deadline instead, so that a client that stops reading is cut off and cannot hold
	// the handler (and the server's shutdown) forever.
	_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
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
		case <-s.done: // the server is shutting down
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
				if s.aclOn() && (id.Access(ev.Name) < fsm.AccessRead || id.Access(ev.Name) == fsm.AccessDeny) {
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
			data, _ := json.Marshal(errorFor(streamError(err)).Body())
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
