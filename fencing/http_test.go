package fencing_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/raftlock/raftlock/fencing"
)

// decodeError reads a JSON error answer.
func decodeError(t *testing.T, rec *httptest.ResponseRecorder) fencing.ErrorDetail {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	var body fencing.ErrorBody
	dec := json.NewDecoder(rec.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("decode error body: %v", err)
	}
	return body.Error
}

func TestRequireToken(t *testing.T) {
	var seen fencing.Token
	h := fencing.RequireToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := fencing.TokenFromContext(r.Context())
		if !ok {
			t.Error("no token in the context")
		}
		seen = tok
		w.WriteHeader(http.StatusNoContent)
	}))

	for _, tc := range []struct {
		name       string
		values     []string
		wantStatus int
		wantCode   string
	}{
		{"ok", []string{"42"}, http.StatusNoContent, ""},
		{"max", []string{"9223372036854775807"}, http.StatusNoContent, ""},
		{"missing", nil, http.StatusBadRequest, fencing.CodeMissingToken},
		{"empty", []string{""}, http.StatusBadRequest, fencing.CodeInvalidToken},
		{"garbage", []string{"abc"}, http.StatusBadRequest, fencing.CodeInvalidToken},
		{"negative", []string{"-5"}, http.StatusBadRequest, fencing.CodeInvalidToken},
		{"zero", []string{"0"}, http.StatusBadRequest, fencing.CodeInvalidToken},
		{"leading zero", []string{"042"}, http.StatusBadRequest, fencing.CodeInvalidToken},
		{"too large for BIGINT", []string{"9223372036854775808"}, http.StatusBadRequest, fencing.CodeInvalidToken},
		{"overflow", []string{"18446744073709551616"}, http.StatusBadRequest, fencing.CodeInvalidToken},
		{"repeated", []string{"1", "2"}, http.StatusBadRequest, fencing.CodeInvalidToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = 0
			req := httptest.NewRequest(http.MethodPost, "/write", nil)
			for _, v := range tc.values {
				req.Header.Add(fencing.HeaderName, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tc.wantStatus, rec.Body)
			}
			if tc.wantCode == "" {
				if want, _ := fencing.ParseToken(tc.values[0]); seen != want {
					t.Fatalf("handler saw token %d, want %d", seen, want)
				}
				return
			}
			if seen != 0 {
				t.Fatal("the handler ran for a bad token")
			}
			if got := decodeError(t, rec); got.Code != tc.wantCode || got.Message == "" {
				t.Fatalf("error = %+v, want code %s", got, tc.wantCode)
			}
		})
	}
}

func TestTokenFromHeader_CanonicalHeaderName(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	req.Header.Set("fencing-token", "7") // any case on the wire
	tok, err := fencing.TokenFromHeader(req.Header)
	if err != nil || tok != 7 {
		t.Fatalf("TokenFromHeader = %d, %v", tok, err)
	}
	if _, err := fencing.TokenFromHeader(http.Header{}); !errors.Is(err, fencing.ErrMissingToken) {
		t.Fatalf("missing header: %v", err)
	}
	h := http.Header{}
	fencing.SetTokenHeader(h, 4711)
	if got := h.Get("Fencing-Token"); got != "4711" {
		t.Fatalf("SetTokenHeader wrote %q", got)
	}
}

func TestWriteStaleToken(t *testing.T) {
	rec := httptest.NewRecorder()
	err := error(&fencing.StaleTokenError{Resource: "accounts/A", Offered: 5, Current: 7})
	fencing.WriteStaleToken(rec, err)
	if rec.Code != http.StatusConflict {
		t.Fatalf("status = %d", rec.Code)
	}
	got := decodeError(t, rec)
	if got.Code != fencing.CodeStaleToken || !strings.Contains(got.Message, "5") || !strings.Contains(got.Message, "7") ||
		!strings.Contains(got.Message, "accounts/A") {
		t.Fatalf("error = %+v", got)
	}
}

func TestContextWithToken(t *testing.T) {
	ctx := t.Context()
	if _, ok := fencing.TokenFromContext(ctx); ok {
		t.Fatal("token in an empty context")
	}
	tok, ok := fencing.TokenFromContext(fencing.ContextWithToken(ctx, 9))
	if !ok || tok != 9 {
		t.Fatalf("TokenFromContext = %d, %v", tok, ok)
	}
}
