package nemesis

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echo starts a line echo server and returns its address.
func echo(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return l.Addr().String()
}

// roundTrip sends a line through addr and reports whether it came back within d.
func roundTrip(t *testing.T, addr string, d time.Duration) (time.Duration, bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetDeadline(start.Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return time.Since(start), err == nil && line == "ping\n"
}

func TestNet_BlockDelayHeal(t *testing.T) {
	nt := NewNet(2, func(net.Conn) int { return 0 }) // every connection comes from node 0
	t.Cleanup(nt.Close)
	addr, err := nt.Listen(1, echo(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := roundTrip(t, addr, 2*time.Second); !ok {
		t.Fatal("no echo through a healthy proxy")
	}
	nt.Block(1, 0) // answers from 1 to 0 are lost
	if _, ok := roundTrip(t, addr, 300*time.Millisecond); ok {
		t.Fatal("echo came back through a blocked direction")
	}
	nt.Heal()
	nt.Block(0, 1) // requests from 0 to 1 are lost
	if _, ok := roundTrip(t, addr, 300*time.Millisecond); ok {
		t.Fatal("echo came back through a blocked direction")
	}
	nt.Heal()
	nt.Delay(0, 1, 150*time.Millisecond)
	if took, ok := roundTrip(t, addr, 2*time.Second); !ok || took < 150*time.Millisecond {
		t.Fatalf("delayed echo: ok=%v after %v, want >= 150ms", ok, took)
	}
	nt.Heal()
	if took, ok := roundTrip(t, addr, 2*time.Second); !ok || took > 100*time.Millisecond {
		t.Fatalf("healed echo: ok=%v after %v", ok, took)
	}
	if st := nt.Stats(); st.ClosedRule == 0 && st.Discarded == 0 {
		t.Fatalf("stats show no rule at work: %+v", st)
	}
}

func TestNet_RuleChangeClosesConnections(t *testing.T) {
	nt := NewNet(2, func(net.Conn) int { return 0 })
	t.Cleanup(nt.Close)
	addr, err := nt.Listen(1, echo(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	nt.Block(0, 1)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(buf); err == nil {
		t.Fatal("a connection survived a rule change; its stream could lose bytes mid-way")
	}
}

func TestPlan_Deterministic(t *testing.T) {
	a := Plan(42, 30, AllKinds(), time.Second, 3*time.Second, 25*time.Second)
	b := Plan(42, 30, AllKinds(), time.Second, 3*time.Second, 25*time.Second)
	seen := map[Kind]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("plan differs at %d: %v vs %v", i, a[i], b[i])
		}
		seen[a[i].Kind] = true
	}
	if len(seen) != len(AllKinds()) {
		t.Fatalf("30 rounds covered %d kinds, want all %d", len(seen), len(AllKinds()))
	}
}
