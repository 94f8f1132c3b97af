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

// refused reports whether a decoder refused its input, failing t unless the refusal is an
// API error with a 4xx status: no input a client sends may look like the server's fault.
func refused(t *testing.T, err error) bool {
	t.Helper()
	if err == nil {
		return false
	}
	if s := api.Status(codeOf(err)); s < 400 || s >= 500 {
		t.Fatalf("error %v maps to status %d", err, s)
	}
	return true
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
		if refused(t, err) {
			return
		}
		if api.ValidateName(req.Name) != nil || req.Wait < 0 || (req.NewLease && (ms(req.TTL) < api.MinTTLMs || ms(req.TTL) > api.MaxTTLMs)) {
			t.Fatalf("accepted an invalid request %+v", req)
		}
	})
}

// FuzzDecodeRelease: as FuzzDecodeAcquire, for releases.
func FuzzDecodeRelease(f *testing.F) {
	f.Add([]byte(`{"lease_id":"abababababababababababababababab","token":3}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, token, err := decodeRelease("x", body)
		if refused(t, err) {
			return
		}
		if token == 0 {
			t.Fatal("accepted a release without a token")
		}
	})
}

func TestDecodeSemaphoreAcquire(t *testing.T) {
	lease := strings.Repeat("ab", 16)
	cases := []struct{ name, body, code string }{
		{"s", `{"limit":1}`, ""},
		{"pool/db", `{"limit":10000,"ttl_ms":500,"wait_ms":300000,"owner":"w","request_id":"0123456789abcdef"}`, ""},
		{"s", `{"limit":3,"lease_id":"` + lease + `"}`, ""},
		{"s", ``, api.CodeInvalidJSON},
		{"s", `{}`, api.CodeInvalidArgument},
		{"s", `{"limit":0}`, api.CodeInvalidArgument},
		{"s", `{"limit":-2}`, api.CodeInvalidArgument},
		{"s", `{"limit":10001}`, api.CodeInvalidArgument},
		{"s", `{"limit":1.5}`, api.CodeInvalidJSON},
		{"", `{"limit":1}`, api.CodeInvalidName},
		{"a\x01", `{"limit":1}`, api.CodeInvalidName},
		{"s", `{"limit":1,"wait_ms":300001}`, api.CodeInvalidArgument},
		{"s", `{"limit":1,"ttl_ms":100}`, api.CodeInvalidTTL},
		{"s", `{"limit":1,"lease_id":"` + lease + `","ttl_ms":1000}`, api.CodeInvalidArgument},
		{"s", `{"limit":1,"lease_id":"` + lease + `","request_id":"0123456789abcdef"}`, api.CodeInvalidArgument},
		{"s", `{"limit":1,"mode":"shared"}`, api.CodeInvalidJSON},
	}
	for _, c := range cases {
		_, err := decodeSemaphoreAcquire(c.name, []byte(c.body))
		if got := codeOf(err); got != c.code {
			t.Errorf("decodeSemaphoreAcquire(%q, %s) code %q (%v), want %q", c.name, c.body, got, err, c.code)
		}
	}
}

func TestDecodeCampaign(t *testing.T) {
	lease := strings.Repeat("cd", 16)
	cases := []struct{ body, code string }{
		{`{"value":"10.0.0.1:80"}`, ""},
		{`{}`, ""},
		{`{"value":"` + strings.Repeat("v", api.MaxElectionValueLen) + `"}`, ""},
		{`{"value":"` + strings.Repeat("v", api.MaxElectionValueLen+1) + `"}`, api.CodeInvalidArgument},
		{`{"value":"v","lease_id":"` + lease + `","token":7}`, ""},
		{`{"value":"v","token":7}`, api.CodeInvalidArgument},
		{`{"value":"v","lease_id":"` + lease + `","token":7,"wait_ms":5}`, api.CodeInvalidArgument},
		{`{"value":7}`, api.CodeInvalidJSON},
		{``, api.CodeInvalidJSON},
		{`{"value":"v","limit":2}`, api.CodeInvalidJSON},
	}
	for _, c := range cases {
		_, err := decodeCampaign("e", []byte(c.body))
		if got := codeOf(err); got != c.code {
			t.Errorf("decodeCampaign(%s) code %q (%v), want %q", c.body, got, err, c.code)
		}
	}
	if _, err := decodeAcquire("x", []byte(`{"mode":"write"}`)); codeOf(err) != api.CodeInvalidArgument {
		t.Errorf("bad mode: %v", err)
	}
	if r, err := decodeAcquire("x", []byte(`{"mode":"shared"}`)); err != nil || !r.Shared {
		t.Errorf("shared mode: %+v %v", r, err)
	}
}

// FuzzDecodeSemaphoreAcquire: any name and body give either a valid request or a 4xx
// API error, never a panic.
func FuzzDecodeSemaphoreAcquire(f *testing.F) {
	f.Add("s", []byte(`{"limit":2,"ttl_ms":1000,"wait_ms":5,"owner":"o"}`))
	f.Add("a/b", []byte(`{"limit":1,"lease_id":"abababababababababababababababab"}`))
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		req, err := decodeSemaphoreAcquire(name, body)
		if refused(t, err) {
			return
		}
		if api.ValidateName(req.Name) != nil || req.Limit < 1 || req.Limit > api.MaxSemaphoreLimit || req.Wait < 0 || (req.NewLease && (ms(req.TTL) < api.MinTTLMs || ms(req.TTL) > api.MaxTTLMs)) {
			t.Fatalf("accepted an invalid request %+v", req)
		}
	})
}

// FuzzDecodeCampaign: as FuzzDecodeSemaphoreAcquire, for campaigns and proclaims.
func FuzzDecodeCampaign(f *testing.F) {
	f.Add("e", []byte(`{"value":"v","ttl_ms":1000,"wait_ms":5,"owner":"o"}`))
	f.Add("e", []byte(`{"value":"v","lease_id":"abababababababababababababababab","token":3}`))
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		req, err := decodeCampaign(name, body)
		if refused(t, err) {
			return
		}
		if api.ValidateName(req.Name) != nil || len(req.Value) > api.MaxElectionValueLen || req.Wait < 0 || req.Token != 0 && (req.NewLease || req.Wait > 0) {
			t.Fatalf("accepted an invalid request %+v", req)
		}
	})
}
