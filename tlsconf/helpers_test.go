package tlsconf

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// testPKI is a cluster CA with its files in a temporary directory.
type testPKI struct {
	dir           string
	caCert, caKey []byte
	caFile        string
}

func mustNewPKI(t *testing.T, name string) *testPKI {
	t.Helper()
	certPEM, keyPEM, err := GenerateCA(CAOptions{Name: name})
	if err != nil {
		t.Fatalf("GenerateCA: %v", err)
	}
	dir := t.TempDir()
	caFile, _, err := WriteFiles(dir, "ca", certPEM, keyPEM)
	if err != nil {
		t.Fatalf("WriteFiles(ca): %v", err)
	}
	return &testPKI{dir: dir, caCert: certPEM, caKey: keyPEM, caFile: caFile}
}

// node issues a node certificate and returns the Files a node would be given.
func (p *testPKI) node(t *testing.T, id string) Files {
	t.Helper()
	certPEM, keyPEM, err := IssueNode(p.caCert, p.caKey, NodeCertOptions{ID: id})
	if err != nil {
		t.Fatalf("IssueNode(%s): %v", id, err)
	}
	return p.write(t, id, certPEM, keyPEM)
}

// client issues a client certificate and returns its Files (no ClientAuth).
func (p *testPKI) client(t *testing.T, name string) Files {
	t.Helper()
	certPEM, keyPEM, err := IssueClient(p.caCert, p.caKey, name, ClientCertOptions{})
	if err != nil {
		t.Fatalf("IssueClient(%s): %v", name, err)
	}
	return p.write(t, name, certPEM, keyPEM)
}

// write writes a certificate and its key as base.pem and base-key.pem, and returns them
// with the CA as Files.
func (p *testPKI) write(t *testing.T, base string, certPEM, keyPEM []byte) Files {
	t.Helper()
	certFile, keyFile, err := WriteFiles(p.dir, base, certPEM, keyPEM)
	if err != nil {
		t.Fatalf("WriteFiles(%s): %v", base, err)
	}
	return Files{Cert: certFile, Key: keyFile, CA: p.caFile}
}

func mustNewReloader(t *testing.T, f Files, logger hclog.Logger) *Reloader {
	t.Helper()
	if logger == nil {
		logger = testLogger(t, nil)
	}
	r, err := NewReloader(f, logger)
	if err != nil {
		t.Fatalf("NewReloader: %v", err)
	}
	return r
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replaceFile overwrites path the way an operator rotating a file would:
// write a temporary file and rename it over the old one.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// logSink collects log output for assertions and forwards it to t.Log until
// the test ends (raft's goroutines may log after that).
type logSink struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
	buf  bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	if !s.done {
		s.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// testLogger returns a logger writing to t.Log; if sink is non-nil it also
// keeps the lines for assertions.
func testLogger(t *testing.T, sink *logSink) hclog.Logger {
	if sink == nil {
		sink = &logSink{}
	}
	sink.t = t
	t.Cleanup(func() {
		sink.mu.Lock()
		sink.done = true
		sink.mu.Unlock()
	})
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Output: sink, Level: hclog.Debug})
}

// assertNoKeyMaterial fails if text holds any line of a PEM private key's body.
func assertNoKeyMaterial(t *testing.T, text string, keyPEMs ...[]byte) {
	t.Helper()
	if strings.Contains(text, "-----BEGIN") {
		t.Errorf("text quotes PEM data:\n%s", text)
	}
	for _, k := range keyPEMs {
		for _, line := range strings.Split(string(k), "\n") {
			if len(line) >= 16 && !strings.HasPrefix(line, "-----") && strings.Contains(text, line) {
				t.Errorf("text holds key material %q", line)
			}
		}
	}
}
