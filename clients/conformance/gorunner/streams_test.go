package gorunner_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

// stream is a watch or an observe the runner keeps reading (FORMAT.md, "streams").
type stream struct {
	mu      sync.Mutex
	observe bool
	events  []api.HistoryEvent
	states  []client.ElectionLeader
	code    string // the code the watch ended with
	cancel  context.CancelFunc
	done    chan struct{}
}

func (s *stream) stop() {
	s.cancel()
	<-s.done
}

// summary is wait_seen's result.
func (s *stream) summary() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.observe {
		out := map[string]any{"states": len(s.states), "elected": false, "owner": "", "value": "", "token": uint64(0)}
		if n := len(s.states); n > 0 {
			l := s.states[n-1]
			out["elected"], out["owner"], out["value"], out["token"] = l.Elected, l.Owner, l.Value, l.Token
		}
		return out
	}
	type key struct {
		index      uint64
		name, kind string
	}
	seen := map[key]bool{}
	grants, repeated, inOrder := 0, 0, true
	var first, last uint64
	lastKind, lastName := "", ""
	for i, e := range s.events {
		k := key{e.Index, e.Name, e.Kind}
		if seen[k] {
			repeated++
		}
		seen[k] = true
		if e.Kind == "granted" {
			grants++
		}
		if i == 0 {
			first = e.Index
		} else if e.Index < last {
			inOrder = false
		}
		last, lastKind, lastName = e.Index, e.Kind, e.Name
	}
	return map[string]any{"events": len(s.events), "grants": grants, "repeated": repeated, "in_order": inOrder,
		"first_index": first, "last_index": last, "last_kind": lastKind, "last_name": lastName, "error": s.code}
}

func (r *run) streamOp(st map[string]any, c *client.Client) (map[string]any, error) {
	switch str(st, "op") {
	case "watch":
		from, err := r.ref(st["from_index"])
		if err != nil {
			return nil, failure{err}
		}
		f, _ := num(from)
		ctx, cancel := context.WithCancel(context.Background())
		w, err := c.Watch(ctx, str(st, "prefix"), client.WatchOptions{FromIndex: uint64(f)})
		if err != nil {
			cancel()
			return nil, err
		}
		s := &stream{cancel: func() { cancel(); w.Stop() }, done: make(chan struct{})}
		go func() {
			defer close(s.done)
			for e := range w.Events() {
				s.mu.Lock()
				s.events = append(s.events, e)
				s.mu.Unlock()
			}
			if err := w.Err(); err != nil && ctx.Err() == nil {
				s.mu.Lock()
				s.code = code(err)
				s.mu.Unlock()
			}
		}()
		r.setStream(st, s)
		return nil, nil
	case "observe":
		ctx, cancel := context.WithCancel(context.Background())
		ch := c.NewElection(str(st, "name")).Observe(ctx)
		s := &stream{observe: true, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(s.done)
			for l := range ch {
				s.mu.Lock()
				s.states = append(s.states, l)
				s.mu.Unlock()
			}
		}()
		r.setStream(st, s)
		return nil, nil
	case "wait_seen":
		s, err := r.stream(st)
		if err != nil {
			return nil, err
		}
		until, _ := st["until"].(map[string]any)
		timeout := msOf(st, "timeout_ms", 10000)
		deadline := time.Now().Add(timeout)
		for {
			sum := s.summary()
			if r.match(sum, until) == nil {
				return sum, nil
			}
			if time.Now().After(deadline) {
				return nil, failure{fmt.Errorf("the stream never matched %v within %v; last %v", until, timeout, sum)}
			}
			time.Sleep(20 * time.Millisecond)
		}
	default: // stop_stream
		s, err := r.stream(st)
		if err != nil {
			return nil, err
		}
		s.stop()
		return nil, nil
	}
}

func (r *run) setStream(st map[string]any, s *stream) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.streams[str(st, "as")] = s
}

func (r *run) stream(st map[string]any) (*stream, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.streams[str(st, "stream")]
	if !ok {
		return nil, failure{fmt.Errorf("no stream %q", str(st, "stream"))}
	}
	return s, nil
}
