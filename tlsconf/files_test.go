package tlsconf

import (
	"errors"
	"strings"
	"testing"
)

func TestFiles_Validate(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Files
		want string // "" means valid
	}{
		{"off", Files{}, ""},
		{"all three", Files{Cert: "c", Key: "k", CA: "a"}, ""},
		{"all three require", Files{Cert: "c", Key: "k", CA: "a", ClientAuth: "require"}, ""},
		// request did what none does; an operator who picks it is told so, not given none silently.
		{"request is refused", Files{Cert: "c", Key: "k", CA: "a", ClientAuth: "request"}, "--tls-client-auth=request is no longer accepted: it did what none does"},
		{"all three none", Files{Cert: "c", Key: "k", CA: "a", ClientAuth: "none"}, ""},
		{"cert only", Files{Cert: "c"}, "--tls-cert is set but --tls-key is not: give both, or neither to run without TLS"},
		{"cert and CA", Files{Cert: "c", CA: "a"}, "--tls-cert is set but --tls-key is not"},
		{"key only", Files{Key: "k"}, "--tls-key is set but --tls-cert is not: give both, or neither to run without TLS"},
		{"key and CA", Files{Key: "k", CA: "a"}, "--tls-key is set but --tls-cert is not"},
		{"cert and key", Files{Cert: "c", Key: "k"}, "--tls-cert and --tls-key are set but --tls-ca is not"},
		{"CA only", Files{CA: "a"}, "--tls-ca is set but --tls-cert and --tls-key are not"},
		{"client auth without TLS", Files{ClientAuth: "require"}, "--tls-client-auth=require needs --tls-ca"},
		{"client auth without CA", Files{Cert: "c", Key: "k", ClientAuth: "require"}, "--tls-ca is not"},
		{"none without TLS", Files{ClientAuth: "none"}, ""},
		{"unknown client auth", Files{Cert: "c", Key: "k", CA: "a", ClientAuth: "always"}, `--tls-client-auth must be none or require, not "always"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidFiles) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "tlsconf: ") {
				t.Fatalf("Validate: %v, want ErrInvalidFiles saying %q", err, tc.want)
			}
		})
	}
}

func TestLoadClientConfig_Validate(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Files
		want string
	}{
		{"no CA", Files{}, "--tls-ca is not set"},
		{"cert without key", Files{CA: "a", Cert: "c"}, "--tls-cert is set but --tls-key is not"},
		{"key without cert", Files{CA: "a", Key: "k"}, "--tls-key is set but --tls-cert is not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadClientConfig(tc.f)
			if !errors.Is(err, ErrInvalidFiles) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadClientConfig: %v, want ErrInvalidFiles saying %q", err, tc.want)
			}
		})
	}
}

func TestNewReloader_NoTLS(t *testing.T) {
	if _, err := NewReloader(Files{}, nil); !errors.Is(err, ErrNoTLS) {
		t.Fatalf("NewReloader(Files{}): %v, want ErrNoTLS", err)
	}
	if _, err := NewReloader(Files{Cert: "c"}, nil); !errors.Is(err, ErrInvalidFiles) {
		t.Fatalf("NewReloader(cert only): %v, want ErrInvalidFiles", err)
	}
}
