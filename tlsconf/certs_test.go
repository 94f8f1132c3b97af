package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustParseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	certs, err := parseCerts(certPEM, "test certificate")
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

func TestGenerateCA_Properties(t *testing.T) {
	certPEM, keyPEM, err := GenerateCA(CAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ca := mustParseCert(t, certPEM)
	if ca.Subject.CommonName != DefaultCAName {
		t.Errorf("CommonName = %q, want %q", ca.Subject.CommonName, DefaultCAName)
	}
	if !ca.IsCA || !ca.BasicConstraintsValid || ca.MaxPathLen != 0 || !ca.MaxPathLenZero {
		t.Errorf("IsCA=%v BasicConstraintsValid=%v MaxPathLen=%d MaxPathLenZero=%v, want a CA limited to leaves",
			ca.IsCA, ca.BasicConstraintsValid, ca.MaxPathLen, ca.MaxPathLenZero)
	}
	if ca.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageCRLSign {
		t.Errorf("KeyUsage = %v, want CertSign|CRLSign", ca.KeyUsage)
	}
	pub, ok := ca.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("public key %T, want ECDSA P-256", ca.PublicKey)
	}
	if got := ca.NotAfter.Sub(time.Now()); got < DefaultCAValidity-time.Hour || got > DefaultCAValidity {
		t.Errorf("CA valid for another %v, want about %v", got, DefaultCAValidity)
	}
	if err := ca.CheckSignatureFrom(ca); err != nil {
		t.Errorf("CA is not self-signed: %v", err)
	}
	key, err := parseKey(keyPEM, "CA key")
	if err != nil {
		t.Fatal(err)
	}
	if !publicKeysEqual(ca.PublicKey, key.Public()) {
		t.Error("CA key does not match CA certificate")
	}
}

func TestIssueNode_Properties(t *testing.T) {
	p := mustNewPKI(t, "")
	certPEM, _, err := IssueNode(p.caCert, p.caKey, NodeCertOptions{
		ID:       "n1",
		IPs:      []net.IP{net.ParseIP("10.0.0.1")},
		DNSNames: []string{"n1.raftlock.internal"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := mustParseCert(t, certPEM)
	if c.Subject.CommonName != "n1" {
		t.Errorf("CommonName = %q, want n1", c.Subject.CommonName)
	}
	if !slices.Equal(c.DNSNames, []string{"n1.raftlock.internal", "localhost"}) {
		t.Errorf("DNSNames = %v", c.DNSNames)
	}
	if len(c.IPAddresses) != 2 || !c.IPAddresses[0].Equal(net.ParseIP("10.0.0.1")) || !c.IPAddresses[1].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("IPAddresses = %v, want 10.0.0.1 and 127.0.0.1", c.IPAddresses)
	}
	if !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
		t.Errorf("ExtKeyUsage = %v, want ServerAuth and ClientAuth", c.ExtKeyUsage)
	}
	if c.IsCA {
		t.Error("node certificate is a CA")
	}
	if id, ok := NodeIDFromCert(c); !ok || id != "n1" {
		t.Errorf("NodeIDFromCert = %q, %v; want n1, true", id, ok)
	}
	if _, ok := ClientNameFromCert(c); ok {
		t.Error("ClientNameFromCert accepted a node certificate")
	}
	if got := c.NotAfter.Sub(time.Now()); got < DefaultNodeValidity-time.Hour || got > DefaultNodeValidity {
		t.Errorf("node certificate valid for another %v, want about %v", got, DefaultNodeValidity)
	}
	roots := x509.NewCertPool()
	roots.AddCert(mustParseCert(t, p.caCert))
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: "127.0.0.1"}); err != nil {
			t.Errorf("verify for %v at 127.0.0.1: %v", usage, err)
		}
	}

	certPEM, _, err = IssueNode(p.caCert, p.caKey, NodeCertOptions{ID: "n2", NoLocalhost: true, IPs: []net.IP{net.ParseIP("10.0.0.2")}})
	if err != nil {
		t.Fatal(err)
	}
	c = mustParseCert(t, certPEM)
	if len(c.DNSNames) != 0 || len(c.IPAddresses) != 1 {
		t.Errorf("NoLocalhost: DNSNames=%v IPAddresses=%v, want no localhost names", c.DNSNames, c.IPAddresses)
	}
}

func TestIssueClient_Properties(t *testing.T) {
	p := mustNewPKI(t, "")
	certPEM, _, err := IssueClient(p.caCert, p.caKey, "worker-1", ClientCertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := mustParseCert(t, certPEM)
	if !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("ExtKeyUsage = %v, want ClientAuth only", c.ExtKeyUsage)
	}
	if len(c.URIs) != 1 || c.URIs[0].String() != "raftlock://client/worker-1" {
		t.Errorf("URIs = %v, want raftlock://client/worker-1", c.URIs)
	}
	if _, ok := NodeIDFromCert(c); ok {
		t.Error("NodeIDFromCert accepted a client certificate")
	}
	if name, ok := ClientNameFromCert(c); !ok || name != "worker-1" {
		t.Errorf("ClientNameFromCert = %q, %v", name, ok)
	}
	if nodeIDOK(nil) {
		t.Error("NodeIDFromCert(nil) ok")
	}
}

func nodeIDOK(c *x509.Certificate) bool { _, ok := NodeIDFromCert(c); return ok }

func TestIssue_RefusesBadInputs(t *testing.T) {
	p := mustNewPKI(t, "")
	other := mustNewPKI(t, "other CA")
	nodePEM, nodeKey, err := IssueNode(p.caCert, p.caKey, NodeCertOptions{ID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		caCert, caKey []byte
		id            string
		want          error
	}{
		{"empty id", p.caCert, p.caKey, "", ErrInvalidName},
		{"slash in id", p.caCert, p.caKey, "a/b", ErrInvalidName},
		{"space in id", p.caCert, p.caKey, "a b", ErrInvalidName},
		{"long id", p.caCert, p.caKey, strings.Repeat("x", maxNameLen+1), ErrInvalidName},
		{"key of another CA", p.caCert, other.caKey, "n1", ErrKeyMismatch},
		{"leaf as issuer", nodePEM, nodeKey, "n2", ErrNotCA},
		{"garbage CA", []byte("not pem"), p.caKey, "n1", ErrBadPEM},
		{"garbage key", p.caCert, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), "n1", ErrBadPEM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := IssueNode(tc.caCert, tc.caKey, NodeCertOptions{ID: tc.id})
			if !errors.Is(err, tc.want) {
				t.Fatalf("IssueNode: %v, want %v", err, tc.want)
			}
			assertNoKeyMaterial(t, err.Error(), p.caKey, other.caKey, nodeKey)
		})
	}
}

func TestIssue_ValidityCappedAtCA(t *testing.T) {
	caPEM, caKey, err := GenerateCA(CAOptions{Validity: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := IssueNode(caPEM, caKey, NodeCertOptions{ID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if c, ca := mustParseCert(t, certPEM), mustParseCert(t, caPEM); c.NotAfter.After(ca.NotAfter) {
		t.Errorf("node NotAfter %v is after CA NotAfter %v", c.NotAfter, ca.NotAfter)
	}
}

func TestIssue_SerialsDiffer(t *testing.T) {
	p := mustNewPKI(t, "")
	a, _, err := IssueNode(p.caCert, p.caKey, NodeCertOptions{ID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := IssueNode(p.caCert, p.caKey, NodeCertOptions{ID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if mustParseCert(t, a).SerialNumber.Cmp(mustParseCert(t, b).SerialNumber) == 0 {
		t.Error("two certificates share a serial number")
	}
}

func TestWriteFiles_ModesAndNoOverwrite(t *testing.T) {
	p := mustNewPKI(t, "")
	certPEM, keyPEM, err := IssueNode(p.caCert, p.caKey, NodeCertOptions{ID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath, err := WriteFiles(dir, "n1", certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if certPath != filepath.Join(dir, "n1.pem") || keyPath != filepath.Join(dir, "n1-key.pem") {
		t.Errorf("paths %s, %s", certPath, keyPath)
	}
	for path, want := range map[string]os.FileMode{certPath: 0o644, keyPath: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
	if string(mustRead(t, keyPath)) != string(keyPEM) || string(mustRead(t, certPath)) != string(certPEM) {
		t.Error("written contents differ")
	}

	// Either file existing stops the write, names that file, and leaves both alone.
	_, _, err = WriteFiles(dir, "n1", []byte("new cert"), []byte("new key"))
	if !errors.Is(err, ErrFileExists) || !strings.Contains(err.Error(), certPath) || !strings.Contains(err.Error(), "remove it or pick another name") {
		t.Errorf("second WriteFiles: %v, want ErrFileExists naming %s", err, certPath)
	}
	if string(mustRead(t, keyPath)) != string(keyPEM) {
		t.Error("key was overwritten")
	}
	if err := os.Remove(certPath); err != nil {
		t.Fatal(err)
	}
	_, _, err = WriteFiles(dir, "n1", certPEM, []byte("new key"))
	if !errors.Is(err, ErrFileExists) || !strings.Contains(err.Error(), keyPath) {
		t.Errorf("WriteFiles with the key left: %v, want ErrFileExists naming %s", err, keyPath)
	}
	if _, err := os.Stat(certPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("certificate written although the key exists: %v", err)
	}
	if string(mustRead(t, keyPath)) != string(keyPEM) {
		t.Error("key was overwritten")
	}

	if _, _, err := WriteFiles(dir, "a/b", certPEM, keyPEM); !errors.Is(err, ErrInvalidName) {
		t.Errorf("base with a separator: %v, want ErrInvalidName", err)
	}
}

// A directory that does not exist yet is made, private to its owner: `raftlock tls ca
// --dir pki` on a fresh machine must not fail for want of pki/.
func TestWriteFiles_MakesThePrivateDirectory(t *testing.T) {
	p := mustNewPKI(t, "")
	certPEM, keyPEM, err := IssueNode(p.caCert, p.caKey, NodeCertOptions{ID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "pki", "nodes")
	if _, _, err := WriteFiles(dir, "n1", certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("made %s: %v, mode %v, want 0700", dir, err, fi.Mode().Perm())
	}
}
