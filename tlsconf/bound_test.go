package tlsconf

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/test/testkit"
)

// silentConns opens n TCP connections to addr from the loopback address ip that never
// send a byte, and watches each: closed reports how many the server has closed (a read
// ended with anything but the watch's own deadline).
type silentConns struct {
	mu     sync.Mutex
	conns  []net.Conn
	closed int
}

func (sc *silentConns) open(t *testing.T, addr, ip string, n int) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial from %s: %v", ip, err)
		}
		t.Cleanup(func() { c.Close() })
		sc.mu.Lock()
		sc.conns = append(sc.conns, c)
		sc.mu.Unlock()
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(time.Minute))
			_, err := c.Read(make([]byte, 1))
			if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, net.ErrClosed) {
				sc.mu.Lock()
				sc.closed++
				sc.mu.Unlock()
			}
		}()
	}
}

func (sc *silentConns) closedByServer() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.closed
}

func (sc *silentConns) closeAll() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, c := range sc.conns {
		c.Close()
	}
}

// TestStreamLayer_BoundsPendingHandshakes floods the Raft port with connections that
// never speak. Per remote address at most perIPMax handshakes are pending and the rest
// are closed at once, so a real peer from another address still connects; in all at most
// max are pending, and over that everyone (the peer included) is closed at once until
// slots free up; the refusals are counted, and logged only refusalLogBurst times.
func TestStreamLayer_BoundsPendingHandshakes(t *testing.T) {
	start := time.Now()
	p := mustNewPKI(t, "")
	sink := &logSink{}
	s1 := mustNewStream(t, mustNewReloader(t, p.node(t, "n1"), nil))
	s2 := mustNewStream(t, mustNewReloader(t, p.node(t, "n2"), testLogger(t, sink)))
	s2.handshakeTimeout = time.Minute // the silent ones stay pending for the whole test
	s2.slots.max, s2.slots.perIPMax = 6, 3
	got := serve(s2)
	addr := s2.Addr().String()
	peer := func() error {
		c, err := s1.Dial(raft.ServerAddress(addr), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		answer, err := ping(c)
		if err == nil && answer != "pong" {
			err = errors.New("answer " + answer)
		}
		if err == nil {
			waitServed(t, got, c.LocalAddr().String())
		}
		return err
	}
	pending := func(want int) {
		t.Helper()
		testkit.WaitFor(t, 10*time.Second, "pending handshakes to settle", func() bool { return s2.Stats().PendingHandshakes == want })
	}

	// One address's flood: 3 pending, the other 7 closed at once.
	var a, b, c silentConns
	a.open(t, addr, "127.0.0.2", 10)
	testkit.WaitFor(t, 10*time.Second, "7 of 127.0.0.2's connections closed", func() bool { return a.closedByServer() == 7 })
	pending(3)
	if st := s2.Stats(); st.Dropped != 7 {
		t.Fatalf("after 10 silent connections from one address: %+v, want 7 dropped", st)
	}
	if err := peer(); err != nil {
		t.Fatalf("a real peer during one address's flood: %v", err)
	}
	pending(3)

	// Two more addresses fill every slot: then anyone is closed at once, the peer too.
	b.open(t, addr, "127.0.0.3", 3)
	pending(6)
	c.open(t, addr, "127.0.0.4", 2)
	testkit.WaitFor(t, 10*time.Second, "127.0.0.4's connections closed", func() bool { return c.closedByServer() == 2 })
	if err := peer(); err == nil {
		t.Fatal("a peer connected while every handshake slot was taken")
	}
	if st := s2.Stats(); st.PendingHandshakes != 6 || st.Dropped != 10 || b.closedByServer() != 0 {
		t.Fatalf("with every slot taken: %+v, %d of 127.0.0.3's closed; want 6 pending, 10 dropped, none closed", st, b.closedByServer())
	}

	// The flood ends: its slots free up and the peer connects again.
	a.closeAll()
	pending(3)
	if err := peer(); err != nil {
		t.Fatalf("a real peer once slots are free: %v", err)
	}
	st := s2.Stats()
	if st.Refused < 3 {
		t.Errorf("the 3 silent connections that closed mid-handshake were not counted: %+v", st)
	}

	lines := strings.Count(sink.String(), "dropped raft connection") + strings.Count(sink.String(), "refused raft peer")
	windows := 1 + int(time.Since(start)/refusalLogInterval)
	if lines == 0 || lines > refusalLogBurst*windows {
		t.Fatalf("%d refusal lines logged for %d refusals in %d log windows; want 1 to %d", lines, int(st.Dropped+st.Refused), windows, refusalLogBurst*windows)
	}
}

// TestLogLimiter_Burst lets refusalLogBurst lines through per window and reports the
// lines left out on the first line of the next.
func TestLogLimiter_Burst(t *testing.T) {
	var l logLimiter
	t0 := time.Unix(1_000, 0)
	for i := range refusalLogBurst + 3 {
		ok, left := l.allow(t0.Add(time.Duration(i) * time.Millisecond))
		if ok != (i < refusalLogBurst) || left != 0 {
			t.Fatalf("line %d: allowed %t, suppressed %d", i, ok, left)
		}
	}
	if ok, left := l.allow(t0.Add(refusalLogInterval)); !ok || left != 3 {
		t.Fatalf("first line of the next window: allowed %t, suppressed %d; want true, 3", ok, left)
	}
	if ok, left := l.allow(t0.Add(refusalLogInterval + time.Millisecond)); !ok || left != 0 {
		t.Fatalf("second line of the next window: allowed %t, suppressed %d; want true, 0", ok, left)
	}
}

// TestStreamLayer_OpenConnectionHoldsNoSlot: a slot is held only while a handshake is
// pending, so raft's long-lived connections never count against the bound. With one slot,
// a second peer connects while the first one's connection stays open.
func TestStreamLayer_OpenConnectionHoldsNoSlot(t *testing.T) {
	p := mustNewPKI(t, "")
	s1 := mustNewStream(t, mustNewReloader(t, p.node(t, "n1"), nil))
	s2 := mustNewStream(t, mustNewReloader(t, p.node(t, "n2"), nil))
	s2.slots.max, s2.slots.perIPMax = 1, 1
	// The server side reads "ping" (which runs its handshake) and keeps the connection open.
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := s2.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadFull(c, make([]byte, 4)); err != nil {
				c.Close()
				continue
			}
			accepted <- c
		}
	}()
	for i := range 2 {
		c, err := s1.Dial(raft.ServerAddress(s2.Addr().String()), 5*time.Second)
		if err != nil {
			t.Fatalf("peer %d: %v", i, err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatalf("peer %d: %v", i, err)
		}
		select {
		case srv := <-accepted:
			defer srv.Close()
		case <-time.After(10 * time.Second):
			t.Fatalf("peer %d was not served", i)
		}
		if st := s2.Stats(); st.PendingHandshakes != 0 {
			t.Fatalf("peer %d's connection is open and past its handshake, yet %d handshakes pending", i, st.PendingHandshakes)
		}
	}
}
