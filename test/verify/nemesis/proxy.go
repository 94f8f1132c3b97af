package nemesis

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Unknown is the source index of a connection whose opener could not be identified.
const Unknown = -1

// IdentifyFunc tells which node (0-based) opened the accepted connection c, or Unknown.
type IdentifyFunc func(c net.Conn) int

// NetStats counts what the proxies did.
type NetStats struct {
	Accepted   int64 // connections accepted
	Unknown    int64 // connections whose source could not be identified
	Discarded  int64 // bytes discarded by blocked directions
	Delayed    int64 // chunks delivered late
	ClosedRule int64 // connections closed because a rule between their nodes changed
}

type pair struct{ from, to int }

// Net is one proxy per node plus the link rules between ordered node pairs. It is safe for
// concurrent use.
type Net struct {
	identify IdentifyFunc

	mu        sync.Mutex
	n         int
	listeners []net.Listener
	backends  []string
	blocked   map[pair]bool
	delay     map[pair]time.Duration
	conns     map[*pconn]struct{}
	closed    bool
	wg        sync.WaitGroup

	accepted, unknown, discarded, delayed, closedRule atomic.Int64
}

// NewNet returns proxies for n nodes. identify names the source node of a connection; nil
// treats every source as Unknown (rules then apply to a destination's unknown sources as
// described at Block).
func NewNet(n int, identify IdentifyFunc) *Net {
	if identify == nil {
		identify = func(net.Conn) int { return Unknown }
	}
	return &Net{
		identify:  identify,
		n:         n,
		listeners: make([]net.Listener, n),
		backends:  make([]string, n),
		blocked:   map[pair]bool{},
		delay:     map[pair]time.Duration{},
		conns:     map[*pconn]struct{}{},
	}
}

// Listen starts the proxy for node j on a free loopback port and returns its address: give
// it to node j as its advertised Raft address. backend is where node j's Raft listens.
func (nt *Net) Listen(j int, backend string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("nemesis: proxy for node %d: %w", j, err)
	}
	nt.mu.Lock()
	nt.listeners[j] = l
	nt.backends[j] = backend
	nt.mu.Unlock()
	nt.wg.Add(1)
	go nt.accept(j, l)
	return l.Addr().String(), nil
}

// Close stops every proxy and closes every connection.
func (nt *Net) Close() {
	nt.mu.Lock()
	nt.closed = true
	for _, l := range nt.listeners {
		if l != nil {
			l.Close()
		}
	}
	for c := range nt.conns {
		c.close()
	}
	nt.mu.Unlock()
	nt.wg.Wait()
}

// Stats returns the counters so far.
func (nt *Net) Stats() NetStats {
	return NetStats{Accepted: nt.accepted.Load(), Unknown: nt.unknown.Load(), Discarded: nt.discarded.Load(),
		Delayed: nt.delayed.Load(), ClosedRule: nt.closedRule.Load()}
}

// Block stops delivery of everything node from sends to node to (requests on connections
// from opens, answers on connections to opens). Existing connections between the two are
// closed. A connection whose source is Unknown is treated as blocked towards to when any
// direction into or out of to is blocked, so a rule is never weaker than asked.
//
// It fails, and changes nothing, when either node has no proxy or the proxies are closed:
// a partition that was not made must not be counted as one.
func (nt *Net) Block(from, to int) error {
	return nt.addRule(from, to, func(p pair) { nt.blocked[p] = true })
}

// addRule lets set record a rule for the direction from -> to once checkLocked finds it
// enforceable, then closes the existing connections between the two so that none
// escapes it.
func (nt *Net) addRule(from, to int, set func(pair)) error {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	if err := nt.checkLocked(from, to); err != nil {
		return err
	}
	set(pair{from, to})
	nt.resetLocked(from, to)
	return nil
}

// checkLocked reports why a rule between nodes a and b cannot be enforced, if it cannot.
func (nt *Net) checkLocked(a, b int) error {
	if nt.closed {
		return errors.New("nemesis: the proxies are closed")
	}
	for _, i := range []int{a, b} {
		if i < 0 || i >= nt.n {
			return fmt.Errorf("nemesis: node %d is not one of the %d nodes", i, nt.n)
		}
	}
	if nt.listeners[a] == nil && nt.listeners[b] == nil {
		return fmt.Errorf("nemesis: no proxy for node %d or node %d", a, b)
	}
	return nil
}

// Isolate blocks both directions between every two nodes in different groups: a symmetric
// partition. Nodes in no group are left alone. On an error the rules made so far are
// removed.
func (nt *Net) Isolate(groups ...[]int) error {
	for a, ga := range groups {
		for b, gb := range groups {
			if a == b {
				continue
			}
			for _, i := range ga {
				for _, j := range gb {
					if err := nt.Block(i, j); err != nil {
						nt.Heal()
						return err
					}
				}
			}
		}
	}
	return nil
}

// Delay delivers everything node from sends to node to d late (in order). Existing
// connections between the two are closed. It fails as Block does.
func (nt *Net) Delay(from, to int, d time.Duration) error {
	return nt.addRule(from, to, func(p pair) { nt.delay[p] = d })
}

// Heal removes every rule and closes the connections that were affected.
func (nt *Net) Heal() {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	touched := map[pair]bool{}
	for p := range nt.blocked {
		touched[p] = true
	}
	for p := range nt.delay {
		touched[p] = true
	}
	nt.blocked = map[pair]bool{}
	nt.delay = map[pair]time.Duration{}
	for p := range touched {
		nt.resetLocked(p.from, p.to)
	}
}

// Faulty reports whether any rule is in force.
func (nt *Net) Faulty() bool {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	return len(nt.blocked)+len(nt.delay) > 0
}

// resetLocked closes the connections between a and b (either way), and those of unknown
// source to either.
func (nt *Net) resetLocked(a, b int) {
	for c := range nt.conns {
		if (c.src == a && c.dst == b) || (c.src == b && c.dst == a) || (c.src == Unknown && (c.dst == a || c.dst == b)) {
			c.close()
			delete(nt.conns, c)
			nt.closedRule.Add(1)
		}
	}
}

// ruleLocked returns the rule for bytes flowing from -> to.
func (nt *Net) ruleLocked(from, to int) (blocked bool, delay time.Duration) {
	if from == Unknown || to == Unknown {
		other := to
		if from != Unknown {
			other = from
		}
		for p, b := range nt.blocked {
			if b && (p.to == other || p.from == other) {
				return true, 0
			}
		}
		return false, 0
	}
	return nt.blocked[pair{from, to}], nt.delay[pair{from, to}]
}

func (nt *Net) accept(j int, l net.Listener) {
	defer nt.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		nt.accepted.Add(1)
		nt.wg.Add(1)
		go func() {
			defer nt.wg.Done()
			nt.serve(j, c)
		}()
	}
}

func (nt *Net) serve(j int, c net.Conn) {
	src := nt.identify(c)
	if src == Unknown {
		nt.unknown.Add(1)
	}
	nt.mu.Lock()
	backend := nt.backends[j]
	closed := nt.closed
	nt.mu.Unlock()
	if closed {
		c.Close()
		return
	}
	b, err := net.DialTimeout("tcp", backend, 2*time.Second)
	if err != nil {
		c.Close() // node j is down: the dialer sees a refused/closed connection
		return
	}
	pc := &pconn{client: c, backend: b, src: src, dst: j}
	nt.mu.Lock()
	if nt.closed {
		nt.mu.Unlock()
		pc.close()
		return
	}
	nt.conns[pc] = struct{}{}
	upBlocked, upDelay := nt.ruleLocked(src, j)
	downBlocked, downDelay := nt.ruleLocked(j, src)
	nt.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); nt.pump(pc, c, b, upBlocked, upDelay) }()
	go func() { defer wg.Done(); nt.pump(pc, b, c, downBlocked, downDelay) }()
	wg.Wait()
	pc.close()
	nt.mu.Lock()
	delete(nt.conns, pc)
	nt.mu.Unlock()
}

// pump copies one direction of a connection under the rule that held when it was opened
// (a rule change closes the connection, so the rule never changes mid-stream).
func (nt *Net) pump(pc *pconn, from, to net.Conn, blocked bool, delay time.Duration) {
	defer pc.close()
	if blocked {
		n, _ := io.Copy(io.Discard, from)
		nt.discarded.Add(n)
		return
	}
	if delay <= 0 {
		_, _ = io.Copy(to, from)
		return
	}
	type chunk struct {
		data []byte
		due  time.Time
	}
	q := make(chan chunk, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ch := range q {
			if d := time.Until(ch.due); d > 0 {
				time.Sleep(d)
			}
			if _, err := to.Write(ch.data); err != nil {
				pc.close()
				for range q {
				}
				return
			}
			nt.delayed.Add(1)
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			q <- chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(delay)}
		}
		if err != nil {
			break
		}
	}
	close(q)
	<-done
}

// pconn is one proxied connection.
type pconn struct {
	client, backend net.Conn
	src, dst        int
	once            sync.Once
}

func (p *pconn) close() {
	p.once.Do(func() {
		p.client.Close()
		p.backend.Close()
	})
}

// ErrNoProcess means no registered process holds the socket.
var ErrNoProcess = errors.New("nemesis: no registered process holds the socket")
