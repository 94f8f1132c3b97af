package transport

import (
	"errors"
	"strings"
	"testing"

	"github.com/raftlock/raftlock/api"
)

func codeOf(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

func TestDecodeAcquire(t *testing.T) {
	lease := strings.Repeat("ab", 16)
	cases := []struct {
		name, body, code string
	}{
		{"x", ``, ""},
		{"x", `{}`, ""},
		{"accounts/A", `{"ttl_ms":500,"wait_ms":300000,"owner":"w"}`, ""},
		{"x", `{"lease_id":"` + lease + `"}`, ""},
		{"", `{}`, api.CodeInvalidName},
		{"a\x01b", `{}`, api.CodeInvalidName},
		{strings.Repeat("n", api.MaxNameLen+1), `{}`, api.CodeInvalidName},
		{"x", `{"ttl_ms":499}`, api.CodeInvalidTTL},
		{"x", `{"ttl_ms":86400001}`, api.CodeInvalidTTL},
		{"x", `{"wait_ms":-1}`, api.CodeInvalidArgument},
		{"x", `{"wait_ms":300001}`, api.CodeInvalidArgument},
		{"x", `{"lease_id":"` + lease + `","ttl_ms":1000}`, api.CodeInvalidArgument},
		{"x", `{"lease_id":"nothex"}`, api.CodeInvalidArgument},
		{"x", `{"owner":"` + strings.Repeat("o", api.MaxOwnerLen+1) + `"}`, api.CodeInvalidArgument},
		{"x", `{"bogus":1}`, api.CodeInvalidJSON},
		{"x", `{"ttl_ms":"1000"}`, api.CodeInvalidJSON},
		{"x", `{} {}`, api.CodeInvalidJSON},
		{"x", `{"ttl_ms":1000`, api.CodeInvalidJSON},
		{"x", `[]`, api.CodeInvalidJSON},
		{"x", `{"ttl_ms":1e3}`, api.CodeInvalidJSON},
	}
	for _, c := range cases {
		_, err := decodeAcquire(c.name, []byte(c.body))
		if got := codeOf(err); got != c.code {
			t.Errorf("decodeAcquire(%q, %s) code %q (%v), want %q", c.name, c.body, got, err, c.code)
		}
	}
}

func TestDecodeRelease(t *testing.T) {
	lease := strings.Repeat("0f", 16)
	cases := []struct{ body, code string }{
		{`{"lease_id":"` + lease + `","token":7}`, ""},
		{``, api.CodeInvalidJSON},
		{`{"lease_id":"` + lease + `"}`, api.CodeInvalidArgument},
		{`{"token":7}`, api.CodeInvalidArgument},
		{`{"lease_id":"` + lease + `","token":-1}`, api.CodeInvalidJSON},
	}
	for _, c := range cases {
		_, _, err := decodeRelease("x", []byte(c.body))
		if got := codeOf(err); got != c.code {
			t.Errorf("decodeRelease(%s) code %q (%v), want %q", c.body, got, err, c.code)
		}
	}
}

// FuzzDecodeAcquire: any name and body give either a valid request or an API error with a
// 4xx code, never a panic.
func FuzzDecodeAcquire(f *testing.F) {
	f.Add("x", []byte(`{"ttl_ms":1000,"wait_ms":5,"owner":"o"}`))
	f.Add("a/b", []byte(`{"lease_id":"abababababababababababababababab"}`))
	f.Add("", []byte(`{} x`))
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		req, err := decodeAcquire(name, body)
		if err != nil {
			if s := api.Status(codeOf(err)); s < 400 || s >= 500 {
				t.Fatalf("error %v maps to status %d", err, s)
			}
			return
		}
		if api.ValidateName(req.Name) != nil || req.Wait < 0 || (req.NewLease && (req.TTL < api.MinTTLMs || req.TTL > api.MaxTTLMs)) {
			t.Fatalf("accepted an invalid request %+v", req)
		}
	})
}

// FuzzDecodeRelease: as FuzzDecodeAcquire, for releases.
func FuzzDecodeRelease(f *testing.F) {
	f.Add([]byte(`{"lease_id":"abababababababababababababababab","token":3}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, token, err := decodeRelease("x", body)
		if err != nil {
			if s := api.Status(codeOf(err)); s < 400 || s >= 500 {
				t.Fatalf("error %v maps to status %d", err, s)
			}
			return
		}
		if token == 0 {
			t.Fatal("accepted a release without a token")
		}
	})
}
