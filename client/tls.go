package client

import (
	"crypto/tls"
	"crypto/x509"
	"os"
)

// TLSFromFiles builds the TLS config of a client from PEM files: ca, the cluster's CA
// certificate that servers are verified against (empty means the system's roots), and
// optionally cert and key, a client certificate and its private key (both or neither),
// offered when the cluster asks for client certificates (issue one with
// `raftlock tls cert --client NAME`). The files are read once. Errors name the file and
// what is wrong with it, never its contents.
//
// It uses the standard library only, so that the client does not depend on the server's
// TLS package (which pulls in raft).
func TLSFromFiles(ca, cert, key string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pemData, err := os.ReadFile(ca)
		if err != nil {
			return nil, wrap(ErrInvalid, err, "TLS: reading the CA file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemData) {
			return nil, wrap(ErrInvalid, nil, "TLS: the CA file %s holds no PEM certificate", ca)
		}
		cfg.RootCAs = pool
	}
	switch {
	case cert == "" && key == "":
	case cert == "" || key == "":
		return nil, wrap(ErrInvalid, nil, "TLS: a client certificate needs both its certificate file and its key file")
	default:
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			// The standard library's messages name the problem, never the key's bytes.
			return nil, wrap(ErrInvalid, err, "TLS: loading the client certificate %s and key %s: %v", cert, key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
