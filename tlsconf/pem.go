package tlsconf

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// parseCerts returns every CERTIFICATE block of data, in order. what names the
// input in errors ("--tls-cert file /etc/x.pem").
func parseCerts(data []byte, what string) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %s holds a certificate that does not parse: %v", ErrBadPEM, what, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%w: %s holds no PEM CERTIFICATE block", ErrBadPEM, what)
	}
	return certs, nil
}

// parseKey returns the first private key in data. Its errors never quote the
// input nor the parser's detail, so no fragment of a key can reach a log.
func parseKey(data []byte, what string) (crypto.Signer, error) {
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		var key any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s holds a %s block that does not parse", ErrBadPEM, what, block.Type)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("%w: %s holds a key of a type that cannot sign", ErrBadPEM, what)
		}
		return signer, nil
	}
	return nil, fmt.Errorf("%w: %s holds no PEM private key (PRIVATE KEY, EC PRIVATE KEY or RSA PRIVATE KEY)", ErrBadPEM, what)
}

// publicKeysEqual compares two public keys of the standard library's types,
// all of which have an Equal method.
func publicKeysEqual(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}
