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
)

// eventRoutes serves what this node applied: GET /v1/history/{name...} and the event
// stream GET /v1/events. Without an EventSource both answer 404.
type eventRoutes struct {
	events EventSource
	auth   *guard
	done   <-chan struct{} // closed when the server shuts down
	// slot takes one of the caller's event-stream slots (Server.streamSlot).
	slot func(r *http.Request) (release func(), err error)
}

// streamPing is how often an idle event stream sends a comment, so that proxies keep it
// open and a dead client is noticed.
var streamPing = 15 * time.Second // a variable only so that tests can shorten it (export_test.go)

// streamWriteTimeout bounds one write of an event stream.
const streamWriteTimeout = 30 * time.Second

// historyEvent is e as the API shows it to a caller that may read the names may accepts
// (nil: every name): a refused wait's cycle names only those (cycleText).
func historyEvent(name string, e cluster.HistoryEvent, may func(string) bool) api.HistoryEvent {
	return api.HistoryEvent{
		Name: name, Kind: e.Kind.String(), Index: e.Index, TimeMs: e.Time, Token: e.Token, Owner: e.Owner,
		Lease: e.Lease.String(), FromQueue: e.FromQueue, WaitedMs: e.Waited, DeadlineMs: e.Deadline, RenewedMs: e.Renewed,
		Detail: cycleText(e.Cycle, may),
	}
}

// primitives are the namespaces by the names the API gives them (?kinds=, the events'
// primitive field).
var primitives = []struct {
	name  string
	space cluster.Space
}{{api.PrimitiveLock, cluster.SpaceLock}, {api.PrimitiveSemaphore, cluster.SpaceSemaphore}, {api.PrimitiveElection, cluster.SpaceElection}}

// primitiveName is the name of space in the events' primitive field: empty for a lock,
// so that a lock's event is what it was.
func primitiveName(space cluster.Space) string {
	for _, p := range primitives[1:] {
		if p.space == space {
			return p.name
		}
	}
	return ""
}

// parseKinds reads ?kinds=lock,semaphore,election: the namespaces an event stream
// carries (absent: locks only, what a consumer of before expects).
func parseKinds(v string) ([]cluster.Space, error) {
	if v == "" {
		return nil, nil
	}
	var out []cluster.Space
next:
	for _, k := range strings.Split(v, ",") {
		for _, p := range primitives {
			if p.name == k {
				out = append(out, p.space)
				continue next
			}
		}
		return nil, api.Errorf(api.CodeInvalidArgument, "query parameter kinds=%q: %q is none of lock, semaphore, election", v, k)
	}
	return out, nil
}

// history answers GET /v1/history/{name...}?kind=K: the newest events of the lock (or,
// with kind, the semaphore or election) name, read like its status (linearizable unless
// ?stale). A semaphore's or election's history is kept from protocol version 7.
func (h eventRoutes) history(w http.ResponseWriter, r *http.Request) (call, error) {
	name := r.PathValue("name")
	q := r.URL.Query()
	err := knownQuery(q, "stale", "kind")
	var stale bool
	space := cluster.SpaceLock
	if err == nil && q.Has("kind") {
		var spaces []cluster.Space
		if spaces, err = parseKinds(q.Get("kind")); err == nil && len(spaces) != 1 {
			err = api.Errorf(api.CodeInvalidArgument, "query parameter kind=%q must be one of lock, semaphore, election", q.Get("kind"))
		}
		if err == nil {
			space = spaces[0]
		}
	}
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
		evs, now, err := h.events.HistoryOf(ctx, space, name, stale)
		if err != nil {
			return nil, err
		}
		out := api.History{Name: name, Events: make([]api.HistoryEvent, 0, len(evs)), ClusterTimeMs: now.Milliseconds()}
		may := h.auth.mayRead(r)
		for _, e := range evs {
			out.Events = append(out.Events, historyEvent("", e, may))
		}
		return out, nil
	}}, nil
}

// stream serves GET /v1/events?prefix=P&from_index=N&kinds=K as Server-Sent Events: one
// message per applied entry that changed a name under P of the kinds K (lock, semaphore,
// election; locks only by default), with the entry index as its id.
// A Last-Event-ID header (the last id received) resumes after it and wins over
// from_index. The stream is this node's own (it is never forwarded: Subscribe does not
// answer ErrNotLeader): every node applies the same entries.
func (h eventRoutes) stream(w http.ResponseWriter, r *http.Request) (call, error) {
	q := r.URL.Query()
	err := knownQuery(q, "prefix", "from_index", "kinds")
	prefix := q.Get("prefix")
	var from uint64
	var spaces []cluster.Space
	if err == nil {
		spaces, err = parseKinds(q.Get("kinds"))
	}
	if err == nil && prefix != "" {
		if e := api.ValidatePrefix(prefix); e != nil {
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
		check := h.streamCheck(r, prefix)
		id, err := check()
		if err != nil {
			return nil, err
		}
		release, err := h.slot(r)
		if err != nil {
			return nil, err
		}
		sub, err := h.events.Subscribe(prefix, from, spaces...)
		if err != nil {
			release()
			return nil, err
		}
		return rawAnswer(func(w http.ResponseWriter) {
			defer release()
			h.send(w, r, sub, id, check)
		}), nil
	}}, nil
}

// streamCheck returns the check an event stream makes before each event and each ping:
// the request's token (or the anonymous identity) must still be known and still grant
// read on the stream's prefix. It returns the identity as it is now, whose rules then
// filter the event's names (a deny added on a name under the prefix hides that name from
// then on). The check resolves the token again each time (a hash and a map lookup under
// the state's read lock: see BenchmarkStreamCheck), so a revocation or a narrower policy
// takes effect at the next event or ping, within streamPing.
func (h eventRoutes) streamCheck(r *http.Request, prefix string) func() (cluster.ACLIdentity, error) {
	return func() (cluster.ACLIdentity, error) { return h.auth.authorized(r, accessRead, prefix) }
}

// send writes the subscription's entries to w until the client, the subscription or the
// server ends, or check refuses: then a last "error" event (the API error body:
// unauthenticated for a revoked token, permission_denied for rights that no longer cover
// the prefix) says why.
// id, the identity of the last check, filters the events its rules deny.
func (h eventRoutes) send(w http.ResponseWriter, r *http.Request, sub *cluster.Subscription, id cluster.ACLIdentity, check func() (cluster.ACLIdentity, error)) {
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
	// The token's deletion ends the wait for the next event at once, so that the check
	// below answers it then rather than at the next ping.
	var gone <-chan struct{}
	stopGone := func() {}
	if h.auth.on {
		gone, stopGone = h.auth.ids.Revoked(id.Accessor)
	}
	defer func() { stopGone() }()
	for {
		nctx, ncancel := context.WithTimeout(ctx, streamPing)
		if gone != nil {
			go func() {
				select {
				case <-gone:
					ncancel()
				case <-nctx.Done():
				}
			}()
		}
		e, err := sub.Next(nctx)
		ncancel()
		buf.Reset()
		if err == nil || (ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled))) {
			// Before each event and each ping: the token must still grant what the
			// stream was opened with.
			var cerr error
			if id, cerr = check(); cerr != nil {
				err = cerr
			}
		}
		switch {
		case err == nil:
			out := api.EventEntry{Index: e.Index}
			for _, ev := range e.Events {
				if h.auth.on && (id.Access(ev.Name) < cluster.AccessRead || id.Access(ev.Name) == cluster.AccessDeny) {
					continue // under the prefix, but a rule denies this name
				}
				he := historyEvent(ev.Name, ev.HistoryEvent, streamReader(h.auth.on, id))
				he.Primitive = primitiveName(ev.Space)
				out.Events = append(out.Events, he)
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

// streamReader is the names identity id may read, for a stream's events; nil with ACLs
// off.
func streamReader(on bool, id cluster.ACLIdentity) func(string) bool {
	if !on {
		return nil
	}
	return func(name string) bool {
		a := id.Access(name)
		return a >= cluster.AccessRead && a != cluster.AccessDeny
	}
}
