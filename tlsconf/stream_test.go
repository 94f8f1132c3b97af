package tlsconf

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func mustNewStream(t *testing.T, r *Reloader) *StreamLayer {
	t.Helper()
	s, err := NewStreamLayer("127.0.0.1:0", nil, r)
	if err != nil {
		t.Fatalf("NewStreamLayer: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// served is what the echo server saw on one accepted connection.
type served struct {
	remote string
	err    error
	took   time.Duration
}

// serve accepts connections until s closes; each must send "ping" and is
// answered "pong". Every connection's outcome is reported on the channel.
func serve(s *StreamLayer) <-chan served {
	out := make(chan served, 16)
	go func() {
		for {
			c, err := s.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				start := time.Now()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				buf := make([]byte, 4)
				_, err := io.ReadFull(c, buf)
				if err == nil && string(buf) != "ping" {
					err = errors.New("got " + string(buf))
				}
				if err == nil {
					_, err = c.Write([]byte("pong"))
				}
				out <- served{remote: c.RemoteAddr().String(), err: err, took: time.Since(start)}
			}()
		}
	}()
	return out
}

// ping sends "ping" over c and reads the answer.
func ping(c net.Conn) (string, error) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		return "", err
	}
	buf := make([]byte, 4)
	n, err := io.ReadFull(c, buf)
	return string(buf[:n]), err
}

func waitServed(t *testing.T, ch <-chan served, remote string) served {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case s := <-ch:
			if s.remote == remote {
				return s
			}
		case <-deadline:
			t.Fatalf("no outcome for the connection from %s", remote)
		}
	}
}

func TestStreamLayer_Exchange(t *testing.T) {
	p := mustNewPKI(t, "")
	s1 := mustNewStream(t, mustNewReloader(t, p.node(t, "n1"), nil))
	s2 := mustNewStream(t, mustNewReloader(t, p.node(t, "n2"), nil))
	got := serve(s2)

	c, err := s1.Dial(raft.ServerAddress(s2.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer c.Close()
	if id, ok := NodeIDFromCert(c.(*tls.Conn).ConnectionState().PeerCertificates[0]); !ok || id != "n2" {
		t.Errorf("dialed peer is %q, %v; want n2", id, ok)
	}
	if answer, err := ping(c); err != nil || answer != "pong" {
		t.Fatalf("exchange: %q, %v", answer, err)
	}
	if s := waitServed(t, got, c.LocalAddr().String()); s.err != nil {
		t.Fatalf("server side: %v", s.err)
	}
}

func TestStreamLayer_RefusesStrangers(t *testing.T) {
	p := mustNewPKI(t, "")
	other := mustNewPKI(t, "other CA")
	sink := &logSink{}
	s2 := mustNewStream(t, mustNewReloader(t, p.node(t, "n2"), testLogger(t, sink)))
	got := serve(s2)
	addr := s2.Addr().String()

	// The foreign node trusts any server, so that the refusal tested is the
	// server's.
	foreignNode := mustNewReloader(t, other.node(t, "n9"), nil).PeerClientConfig()
	foreignNode.VerifyConnection = nil
	worker := mustClientConfig(t, p.client(t, "worker"))

	for _, tc := range []struct {
		name string
		dial func() (net.Conn, error)
		want error // server-side error to match, if any
	}{
		{"plain TCP", func() (net.Conn, error) {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				// Five bytes or more make a record header that is not TLS.
				_, err = c.Write([]byte("plain text\n"))
			}
			return c, err
		}, nil},
		{"node of another CA", func() (net.Conn, error) { return tls.Dial("tcp", addr, foreignNode) }, nil},
		{"client certificate of the cluster CA", func() (net.Conn, error) { return tls.Dial("tcp", addr, worker) }, ErrNotNodeCert},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.dial()
			if err != nil {
				return // refused during the handshake already
			}
			defer c.Close()
			if answer, err := ping(c); err == nil || answer == "pong" {
				t.Fatalf("exchange succeeded (%q, %v), want refused", answer, err)
			}
			s := waitServed(t, got, c.LocalAddr().String())
			if s.err == nil {
				t.Fatal("server accepted the connection")
			}
			if tc.want != nil && !errors.Is(s.err, tc.want) {
				t.Errorf("server error %v, want %v", s.err, tc.want)
			}
			if !strings.Contains(sink.String(), c.LocalAddr().String()) {
				t.Errorf("refused peer %s not logged", c.LocalAddr())
			}
		})
	}
	if !strings.Contains(sink.String(), "[WARN]") {
		t.Error("no refusal logged at Warn")
	}
	assertNoKeyMaterial(t, sink.String(), mustRead(t, p.node(t, "n3").Key))
}

func TestStreamLayer_DialRefusesServerOfAnotherCA(t *testing.T) {
	p := mustNewPKI(t, "")
	other := mustNewPKI(t, "other CA")
	s1 := mustNewStream(t, mustNewReloader(t, p.node(t, "n1"), nil))
	foreign := mustNewStream(t, mustNewReloader(t, other.node(t, "n2"), nil))
	serve(foreign)
	_, err := s1.Dial(raft.ServerAddress(foreign.Addr().String()), 5*time.Second)
	if !errors.Is(err, ErrNotSignedByCA) {
		t.Fatalf("Dial to a node of another CA: %v, want ErrNotSignedByCA", err)
	}
}

func TestStreamLayer_SilentPeerDoesNotBlockAccept(t *testing.T) {
	p := mustNewPKI(t, "")
	s1 := mustNewStream(t, mustNewReloader(t, p.node(t, "n1"), nil))
	s2 := mustNewStream(t, mustNewReloader(t, p.node(t, "n2"), nil))
	s2.handshakeTimeout = 300 * time.Millisecond
	got := serve(s2)

	silent, err := net.Dial("tcp", s2.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	c, err := s1.Dial(raft.ServerAddress(s2.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatalf("Dial while a silent peer is connected: %v", err)
	}
	defer c.Close()
	if answer, err := ping(c); err != nil || answer != "pong" {
		t.Fatalf("exchange while a silent peer is connected: %q, %v", answer, err)
	}

	s := waitServed(t, got, silent.LocalAddr().String())
	if s.err == nil || s.took > 5*time.Second {
		t.Fatalf("silent peer: error %v after %v, want a handshake timeout after about 300ms", s.err, s.took)
	}
}

func TestStreamLayer_ReloadApplies(t *testing.T) {
	p := mustNewPKI(t, "")
	n2files := p.node(t, "n2")
	r2 := mustNewReloader(t, n2files, nil)
	s1 := mustNewStream(t, mustNewReloader(t, p.node(t, "n1"), nil))
	s2 := mustNewStream(t, r2)
	serve(s2)

	dialSerial := func() string {
		t.Helper()
		c, err := s1.Dial(raft.ServerAddress(s2.Addr().String()), 5*time.Second)
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		defer c.Close()
		return c.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.Text(16)
	}
	before := dialSerial()

	certPEM, keyPEM, err := IssueNode(p.caCert, p.caKey, NodeCertOptions{ID: "n2"})
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, n2files.Cert, certPEM)
	replaceFile(t, n2files.Key, keyPEM)
	if err := r2.Reload(); err != nil {
		t.Fatal(err)
	}
	want := mustParseCert(t, certPEM).SerialNumber.Text(16)
	if after := dialSerial(); after != want || after == before {
		t.Fatalf("after Reload the peer presents %s, want %s (was %s)", after, want, before)
	}
}

func TestStreamLayer_Addr(t *testing.T) {
	p := mustNewPKI(t, "")
	r := mustNewReloader(t, p.node(t, "n1"), nil)
	adv := &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 8001}
	s, err := NewStreamLayer("127.0.0.1:0", adv, r)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Addr() != adv {
		t.Errorf("Addr = %v, want the advertise address %v", s.Addr(), adv)
	}
	if _, err := NewStreamLayer("0.0.0.0:0", nil, r); err == nil || !strings.Contains(err.Error(), "advertise") {
		t.Errorf("unspecified bind without advertise: %v, want an error asking for one", err)
	}
	s, err = NewStreamLayer("0.0.0.0:0", adv, r)
	if err != nil {
		t.Fatalf("unspecified bind with advertise: %v", err)
	}
	_ = s.Close()
	if _, err := NewStreamLayer("127.0.0.1:0", nil, nil); !errors.Is(err, ErrNoTLS) {
		t.Errorf("nil Reloader: %v, want ErrNoTLS", err)
	}
}

// newTransport wraps a fresh stream layer of files in raft's NetworkTransport
// the way the node will.
func newTransport(t *testing.T, f Files) *raft.NetworkTransport {
	t.Helper()
	logger := testLogger(t, nil)
	s, err := NewStreamLayer("127.0.0.1:0", nil, mustNewReloader(t, f, logger))
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransportWithLogger(s, 5, 10*time.Second, logger.Named("raft-net"))
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

func TestNetworkTransport_AppendEntriesOverTLS(t *testing.T) {
	p := mustNewPKI(t, "")
	other := mustNewPKI(t, "other CA")
	t1 := newTransport(t, p.node(t, "n1"))
	t2 := newTransport(t, p.node(t, "n2"))
	t3 := newTransport(t, other.node(t, "n3"))

	var received atomic.Int32
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case rpc := <-t2.Consumer():
				received.Add(1)
				req, ok := rpc.Command.(*raft.AppendEntriesRequest)
				if !ok || len(req.Entries) != 1 || !bytes.Equal(req.Entries[0].Data, []byte("hello")) {
					rpc.Respond(nil, errors.New("unexpected request"))
					continue
				}
				rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: req.Entries[0].Index, Success: true}, nil)
			case <-done:
				return
			}
		}
	}()

	req := func(from raft.Transport) *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{
			RPCHeader:         raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n1"), Addr: []byte(from.LocalAddr())},
			Term:              7,
			Entries:           []*raft.Log{{Index: 1, Term: 7, Type: raft.LogCommand, Data: []byte("hello")}},
			LeaderCommitIndex: 1,
		}
	}
	var resp raft.AppendEntriesResponse
	if err := t1.AppendEntries("n2", t2.LocalAddr(), req(t1), &resp); err != nil {
		t.Fatalf("AppendEntries n1 -> n2: %v", err)
	}
	if !resp.Success || resp.Term != 7 || resp.LastLog != 1 {
		t.Fatalf("response %+v, want success at term 7, last log 1", resp)
	}

	var resp3 raft.AppendEntriesResponse
	if err := t3.AppendEntries("n2", t2.LocalAddr(), req(t3), &resp3); err == nil {
		t.Fatalf("AppendEntries from a node of another CA succeeded: %+v", resp3)
	}
	if n := received.Load(); n != 1 {
		t.Fatalf("n2 received %d RPCs, want only n1's", n)
	}
}

// With SetAdmit, a peer whose node certificate names a node that is not admitted (a
// removed member) is refused after the handshake; an admitted one still connects.
func TestStreamLayer_AdmitsOnlyMembers(t *testing.T) {
	p := mustNewPKI(t, "")
	s1 := mustNewStream(t, mustNewReloader(t, p.node(t, "n1"), nil))
	removed := mustNewStream(t, mustNewReloader(t, p.node(t, "n9"), nil))
	s2 := mustNewStream(t, mustNewReloader(t, p.node(t, "n2"), nil))
	s2.SetAdmit(func(id string) bool { return id != "n9" })
	got := serve(s2)

	// TLS 1.3: the dialer's handshake completes before the server has judged its
	// certificate, so the refusal shows on the first exchange.
	c, err := removed.Dial(raft.ServerAddress(s2.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if _, err := ping(c); err == nil {
		t.Fatal("a removed node's certificate exchanged data with a member")
	}
	c.Close()
	if s := waitServed(t, got, c.LocalAddr().String()); !errors.Is(s.err, ErrNotMember) {
		t.Fatalf("server side of the removed node's connection: %v, want ErrNotMember", s.err)
	}
	c, err = s1.Dial(raft.ServerAddress(s2.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if answer, err := ping(c); err != nil || answer != "pong" {
		t.Fatalf("a member's exchange: %q, %v", answer, err)
	}
}
