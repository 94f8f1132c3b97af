package client

import (
	"errors"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
)

// Every code of the API's catalogue of outcomes (api/outcomes.go) has its error value here,
// every code here is the catalogue's, and the client retries an answer as the code's retry
// class says: a code added to the catalogue without its sentinel, or a sentinel for a code
// the catalogue lacks, fails.
func TestSentinels_EveryCatalogueCode(t *testing.T) {
	for _, o := range api.Outcomes() {
		s, ok := sentinels[o.Code]
		if !ok {
			t.Errorf("catalogued code %s has no client error (sentinels in client/errors.go)", o.Code)
			continue
		}
		err := fromAPI("op", &api.Error{Code: o.Code, Message: "m"}, time.Second)
		if !errors.Is(err, s) || !errors.Is(err, &api.Error{Code: o.Code}) {
			t.Errorf("%s: %v matches neither its sentinel nor its code", o.Code, err)
		}
		if retryClass(err) != o.Retry || retryable(err) != (o.Retry != api.RetryNever) || mayHaveApplied(err) != (o.Retry == api.RetryAmbiguous) {
			t.Errorf("%s (retry class %s): retryable %v, may have applied %v", o.Code, o.Retry, retryable(err), mayHaveApplied(err))
		}
		if s == ErrServer && o.Code != api.CodeInternal {
			t.Errorf("%s: answered as the client's generic error", o.Code)
		}
	}
	for code := range sentinels {
		if _, ok := api.Lookup(code); !ok {
			t.Errorf("client/errors.go maps %s, which is not in the catalogue", code)
		}
	}
	// A code the client does not know: its generic error, never retried, code kept.
	err := fromAPI("op", &api.Error{Code: "a_code_of_a_newer_server", Message: "m"}, time.Second)
	var ae *api.Error
	if !errors.Is(err, ErrServer) || retryable(err) || mayHaveApplied(err) || !errors.As(err, &ae) || ae.Code != "a_code_of_a_newer_server" {
		t.Errorf("an unknown code: %v (retryable %v)", err, retryable(err))
	}
}
