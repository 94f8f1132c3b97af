package api_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/raftlock/raftlock/api"
)

// These benchmarks measure the HTTP side of the codec: the JSON bodies of the hot path
// (acquire, release, grant) and the validation every request goes through. `make test`
// runs each once (-benchtime=1x) so they cannot rot.

var (
	acquireBody = []byte(`{"lease_id":"0123456789abcdef0123456789abcdef","wait_ms":30000,"owner":"worker-17"}`)
	releaseBody = []byte(`{"lease_id":"0123456789abcdef0123456789abcdef","token":123456789}`)
	grant       = api.Grant{Name: "accounts/A", Token: 123456789, LeaseID: "0123456789abcdef0123456789abcdef", TTLMs: 10000, Owner: "worker-17"}
)

// decodeStrict decodes the way the server does: unknown fields refused, one object only.
func decodeStrict(b *testing.B, body []byte, v any) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkDecodeAcquireRequest(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var req api.AcquireRequest
		decodeStrict(b, acquireBody, &req)
		if e := api.ValidateWait(req.WaitMs); e != nil {
			b.Fatal(e)
		}
		if e := api.ValidateOwner(req.Owner); e != nil {
			b.Fatal(e)
		}
		if e := api.ValidateLeaseID(req.LeaseID); e != nil {
			b.Fatal(e)
		}
	}
}

func BenchmarkDecodeReleaseRequest(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var req api.ReleaseRequest
		decodeStrict(b, releaseBody, &req)
	}
}

func BenchmarkEncodeGrant(b *testing.B) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := enc.Encode(&grant); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateName(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if e := api.ValidateName("accounts/eu-west/customer-1234567/card"); e != nil {
			b.Fatal(e)
		}
	}
}
