// Package testkit holds the two smallest test fixtures, for every package's tests (cluster's
// own white-box tests included, which cannot import cluster/clustertest) and for the
// benchmark programs: the loopback port picker and the wait on a condition with a deadline.
//
// It imports only the standard library, and not even testing: its t-failing helpers take
// the TB interface below, which *testing.T and *testing.B satisfy.
package testkit

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// TB is the part of testing.TB that the helpers use to fail a test.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// The ports the picker chooses from: 20000-32767, below Linux's ephemeral range
// (32768-60999). A port from "127.0.0.1:0" lies in that range, and between the moment a
// test closes its listener and the moment a server binds the port, the local end of any
// outgoing connection on the machine may take it ("address already in use"). No local
// end is ever chosen below the range.
const (
	firstPort = 20000
	ports     = 32768 - firstPort
)

// handedOut holds the ports this process has picked already. A port FreeAddr returns is
// free again once it returns, and until its server binds it a second pick may choose it:
// two nodes of one test cluster were once given the same Raft address ("found duplicate
// address in configuration") on a loaded machine. Picking each port once per process
// rules that out. Other processes are kept off them too (reserve): go test runs several
// packages' test binaries at once, and a node a test stops and starts again on its port
// once found that port taken by another package's server meanwhile ("bind: address
// already in use").
var handedOut = struct {
	sync.Mutex
	ports map[int]io.Closer // a port's reservation; nil when none could be made
}{ports: map[int]io.Closer{}}

// pick chooses a port not handed out before, here or by another process still running,
// forgetting (and releasing) them all once half the range has been (a process that starts
// that many servers has closed most of them).
func pick() int {
	handedOut.Lock()
	defer handedOut.Unlock()
	if len(handedOut.ports) >= ports/2 {
		forgetLocked()
	}
	for {
		p := firstPort + rand.IntN(ports)
		if _, taken := handedOut.ports[p]; taken {
			continue
		}
		r, ok := reserve(p)
		if !ok {
			continue // another process has it
		}
		handedOut.ports[p] = r
		return p
	}
}

// forgetLocked forgets and releases every port handed out; handedOut is locked.
func forgetLocked() {
	for _, r := range handedOut.ports {
		if r != nil {
			r.Close()
		}
	}
	clear(handedOut.ports)
}

// ListenLoopback opens a listener on 127.0.0.1 at a random port in 20000-32767 that this
// process has not picked before.
func ListenLoopback() (net.Listener, error) {
	var err error
	for i := 0; i < 1000; i++ {
		var l net.Listener
		if l, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", pick())); err == nil {
			return l, nil
		}
	}
	return nil, fmt.Errorf("testkit: no free loopback port in 20000-32767 after 1000 tries: %w", err)
}

// FreeAddr returns a loopback address whose port (in 20000-32767) was free a moment ago,
// for a server that binds it itself.
func FreeAddr() (string, error) {
	l, err := ListenLoopback()
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Listen is ListenLoopback that fails the test.
func Listen(t TB) net.Listener {
	t.Helper()
	l, err := ListenLoopback()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return l
}

// FreePort is FreeAddr that fails the test.
func FreePort(t TB) string {
	t.Helper()
	addr, err := FreeAddr()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return addr
}

// Poll calls cond every interval until it holds or timeout has passed, and reports
// whether it held. cond is always called at least once.
func Poll(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
	return true
}

// WaitInterval is how often WaitFor calls its condition.
const WaitInterval = 5 * time.Millisecond

// WaitFor polls cond every WaitInterval until it holds, or fails the test once timeout
// has passed, naming what it waited for.
func WaitFor(t TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(timeout, WaitInterval, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}
