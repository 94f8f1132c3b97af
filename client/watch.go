package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/raftlock/raftlock/api"
)

// ErrIndexCompacted: a Watch was asked to start (or had to resume) at an index older than
// the events the nodes still hold; events were missed. Start a new Watch without
// FromIndex, and re-read the state you derive from events (List, Status, History).
var ErrIndexCompacted = errors.New("client: events before the index asked for are no longer retained")

// History returns the newest recorded events of lock name, oldest first. It is a
// linearizable read unless stale is true. HistoryOf reads a semaphore's or an election's.
func (c *Client) History(ctx context.Context, name string, stale bool) (api.History, error) {
	return c.HistoryOf(ctx, api.PrimitiveLock, name, stale)
}

// HistoryOf returns the newest recorded events of the primitive of that kind
// (api.PrimitiveLock, api.PrimitiveSemaphore or api.PrimitiveElection) called name, oldest
// first, like History. A cluster keeps the history of semaphores and elections from
// protocol version 7; an older one answers a lock's history of that name, or refuses the
// parameter.
func (c *Client) HistoryOf(ctx context.Context, kind, name string, stale bool) (api.History, error) {
	op := fmt.Sprintf("history of %s %q", kind, name)
	if err := checkKind(op, kind); err != nil {
		return api.History{}, err
	}
	if err := checkNameOf(op, kind, name); err != nil {
		return api.History{}, err
	}
	q := url.Values{}
	if kind != api.PrimitiveLock {
		// Sent only when it is not the default, so that a lock's history is asked for
		// exactly as before the parameter existed.
		q.Set("kind", kind)
	}
	if stale {
		q.Set("stale", "true")
	}
	return call[api.History](ctx, c, &request{op: op, method: http.MethodGet, path: namePath(historyRoute, name), query: q})
}

// primitiveKinds are the kinds of primitive, as the event stream and histories name them.
var primitiveKinds = []string{api.PrimitiveLock, api.PrimitiveSemaphore, api.PrimitiveElection}

// checkKind refuses a kind of primitive the server does not know, before anything is sent.
func checkKind(op, kind string) error {
	if !slices.Contains(primitiveKinds, kind) {
		return wrap(ErrInvalid, nil, "%s: kind %q is none of %s", op, kind, strings.Join(primitiveKinds, ", "))
	}
	return nil
}

// WatchOptions configure Watch. The zero value follows new events from now on.
type WatchOptions struct {
	// FromIndex, when non-zero, starts at the first entry at or after this index that a
	// node still holds; older than that fails with ErrIndexCompacted.
	FromIndex uint64
	// Kinds are the primitives whose events to follow: api.PrimitiveLock,
	// api.PrimitiveSemaphore, api.PrimitiveElection (the stream's ?kinds=). Empty follows
	// locks only, as before semaphores and elections had events. An event of a semaphore or
	// an election has its Primitive set; a lock's has it empty.
	Kinds []string
}

// Watcher follows the events of a prefix over GET /v1/events (of locks, or of the kinds of
// primitive WatchOptions.Kinds names). It reconnects by itself (to any endpoint, resuming
// after the last entry index it received), so that no
// event is lost or repeated across a disconnect or a node's restart, as long as some
// node still holds the events since.
type Watcher struct {
	ch     chan api.HistoryEvent
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error
	last   uint64
	known  bool // last is set: a reconnection sends it as Last-Event-ID
}

// Events returns the channel of events, in log order, each with its primitive's Name (and
// Primitive, unless a lock) and its entry Index. It is closed when the watch ends: Err
// then says why.
func (w *Watcher) Events() <-chan api.HistoryEvent { return w.ch }

// Err returns why the watch ended (nil while it runs, the context's error after Stop or
// cancellation, ErrIndexCompacted or an API error otherwise).
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// LastIndex returns the index of the last entry whose events were all delivered (or that
// the stream started after).
func (w *Watcher) LastIndex() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// Stop ends the watch and waits for it to finish.
func (w *Watcher) Stop() {
	w.cancel()
	<-w.done
}

// Watch starts following the events of the locks (or of the kinds opts.Kinds names) whose
// names start with prefix (every name when prefix is ""). The first connection is made before Watch returns, so an
// unknown index, a refused token or a node at its subscriber limit is reported here.
//
// Each node streams the entries it has applied itself; requests are not forwarded. With
// ACLs on, a token created a moment ago may be unknown to a follower for a moment (401):
// retry, or use the leader's endpoint.
func (c *Client) Watch(ctx context.Context, prefix string, opts WatchOptions) (*Watcher, error) {
	op := fmt.Sprintf("watch %q", prefix)
	for _, k := range opts.Kinds {
		if err := checkKind(op, k); err != nil {
			return nil, err
		}
	}
	kinds := strings.Join(opts.Kinds, ",")
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{ch: make(chan api.HistoryEvent, 64), cancel: cancel, done: make(chan struct{})}
	if opts.FromIndex > 0 {
		w.last, w.known = opts.FromIndex-1, true
	}
	ep := c.getPreferred()
	body, err := c.openStream(ctx, op, ep, prefix, kinds, opts.FromIndex, 0, false)
	if err != nil {
		cancel()
		return nil, err
	}
	go func() {
		defer close(w.done)
		defer close(w.ch)
		backoff := c.minBackoff
		for {
			got, err := w.read(ctx, body)
			body.Close()
			if got {
				backoff = c.minBackoff
			}
			if ctx.Err() != nil {
				w.finish(ctx.Err())
				return
			}
			if err != nil && !retryable(err) {
				w.finish(err)
				return
			}
			w.mu.Lock()
			resume, known := w.last, w.known
			w.mu.Unlock()
			for {
				if !sleep(ctx, backoff) {
					w.finish(ctx.Err())
					return
				}
				backoff = min(2*backoff, c.maxBackoff)
				ep = (ep + 1) % len(c.endpoints)
				body, err = c.openStream(ctx, op, ep, prefix, kinds, 0, resume, known)
				if err == nil {
					break
				}
				if !retryable(err) {
					w.finish(err)
					return
				}
			}
		}
	}()
	return w, nil
}

func (w *Watcher) finish(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}

// openStream connects to endpoint ep for the events of kinds (comma-separated, "" for
// locks); resume, when known, is sent as Last-Event-ID.
func (c *Client) openStream(ctx context.Context, op string, ep int, prefix, kinds string, from, resume uint64, known bool) (io.ReadCloser, error) {
	base := c.endpoints[ep]
	q := url.Values{}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if kinds != "" {
		q.Set("kinds", kinds)
	}
	if from > 0 {
		q.Set("from_index", strconv.FormatUint(from, 10))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpointURL(base, "/v1/events", q), nil)
	if err != nil {
		return nil, wrap(ErrInvalid, err, "%s: building the request", op)
	}
	req.Header.Set("Accept", "text/event-stream")
	if known {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(resume, 10))
	}
	c.authorize(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		err = transportCause(err)
		return nil, wrap(ErrUnavailable, err, "%s: %s: %v", op, base, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	ae, ok := apiError(data)
	if !ok {
		if resp.StatusCode >= 500 {
			return nil, wrap(ErrUnavailable, nil, "%s: %s answered %s", op, base, resp.Status)
		}
		return nil, wrap(ErrServer, nil, "%s: %s answered %s", op, base, resp.Status)
	}
	if ae.Code == api.CodeIndexCompacted {
		return nil, compacted(op, ae)
	}
	return nil, answerError(op, ae, resp)
}

// compacted is the error of a watch whose events since the index asked for are gone.
func compacted(op string, ae *api.Error) error {
	return wrap(ErrIndexCompacted, nil, "%s: %s", op, ae.Message)
}

// read delivers the stream's events until it ends. It reports whether any entry came, and
// the error event the server ended the stream with (nil for a plain disconnect).
func (w *Watcher) read(ctx context.Context, body io.Reader) (bool, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var id, event, data string
	hasID := false
	got := false
	for sc.Scan() {
		line := sc.Text()
		if line != "" {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				id, hasID = value, true
			case "event":
				event = value
			case "data":
				data += value
			}
			continue
		}
		// A blank line ends a message.
		switch {
		case event == "entry" && data != "":
			var e api.EventEntry
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				return got, wrap(ErrServer, err, "watch: an event that is not the API's JSON")
			}
			for _, ev := range e.Events {
				select {
				case w.ch <- ev:
				case <-ctx.Done():
					return got, ctx.Err()
				}
			}
			got = true
		case event == "error" && data != "":
			if ae, ok := apiError([]byte(data)); ok {
				if ae.Code == api.CodeIndexCompacted {
					return got, compacted("watch", ae)
				}
				return got, fromAPI("watch", ae, 0)
			}
		}
		if hasID {
			if n, err := strconv.ParseUint(id, 10, 64); err == nil {
				w.mu.Lock()
				w.last, w.known = max(w.last, n), true
				w.mu.Unlock()
			}
		}
		id, event, data, hasID = "", "", "", false
	}
	return got, nil
}
