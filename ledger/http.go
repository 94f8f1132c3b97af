package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/raftlock/raftlock/fencing"
)

// Error codes of the ledger's JSON errors, besides the fencing package's missing_token,
// invalid_token and stale_token.
const (
	CodeInvalidJSON      = "invalid_json"
	CodeInvalidArgument  = "invalid_argument"
	CodeAccountNotFound  = "account_not_found"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeChargeConflict   = "charge_conflict"
	CodeBodyTooLarge     = "body_too_large"
	CodeInternal         = "internal"
	CodeUnavailable      = "unavailable"
)

// SetBalanceRequest is the body of PUT /v1/accounts/{id}.
type SetBalanceRequest struct {
	// BalanceCents is the account's new balance, 0 to MaxBalanceCents.
	BalanceCents int64 `json:"balance_cents"`
}

// Handler returns the ledger's HTTP API.
func (l *Ledger) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", fencing.RequireToken(http.HandlerFunc(l.handleCharge)))
	mux.HandleFunc("PUT /v1/accounts/{id}", l.handleSetBalance)
	mux.HandleFunc("GET /v1/accounts/{id}", l.handleGetAccount)
	mux.HandleFunc("GET /healthz", l.handleHealthz)
	// Known paths with another method, and unknown paths, answer in the API's error shape.
	mux.HandleFunc("/v1/charges", methodNotAllowed("POST"))
	mux.HandleFunc("/v1/accounts/{id}", methodNotAllowed("GET, HEAD, PUT"))
	mux.HandleFunc("/healthz", methodNotAllowed("GET, HEAD"))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fencing.WriteError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path))
	})
	return mux
}

func (l *Ledger) handleCharge(w http.ResponseWriter, r *http.Request) {
	token, _ := fencing.TokenFromContext(r.Context()) // set by RequireToken
	var req ChargeRequest
	if !decodeJSON(w, r, &req) {
		return
	}
	c, err := l.Charge(r.Context(), req, token)
	if err != nil {
		var stale *fencing.StaleTokenError
		if errors.As(err, &stale) {
			l.log.Warn("stale write refused", "charge_id", req.ChargeID, "account", req.Account,
				"token", uint64(stale.Offered), "fence", uint64(stale.Current))
		}
		l.writeErr(w, r, err)
		return
	}
	status := http.StatusCreated
	if c.Replayed {
		status = http.StatusOK
		l.log.Info("charge replayed", "charge_id", c.ChargeID, "account", c.Account, "token", uint64(token))
	} else {
		l.log.Info("charged", "charge_id", c.ChargeID, "account", c.Account, "amount_cents", c.AmountCents,
			"token", uint64(c.Token), "balance_cents", c.BalanceCents, "fenced", l.cfg.Fenced)
	}
	writeJSON(w, status, c)
}

func (l *Ledger) handleSetBalance(w http.ResponseWriter, r *http.Request) {
	var req SetBalanceRequest
	if !decodeJSON(w, r, &req) {
		return
	}
	a, err := l.SetBalance(r.Context(), r.PathValue("id"), req.BalanceCents)
	if err != nil {
		l.writeErr(w, r, err)
		return
	}
	l.log.Info("balance set", "account", a.ID, "balance_cents", a.BalanceCents)
	writeJSON(w, http.StatusOK, a)
}

func (l *Ledger) handleGetAccount(w http.ResponseWriter, r *http.Request) {
	a, err := l.Account(r.Context(), r.PathValue("id"))
	if err != nil {
		l.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (l *Ledger) handleHealthz(w http.ResponseWriter, r *http.Request) {
	if err := l.Ping(r.Context()); err != nil {
		l.log.Error("health check: database unreachable", "error", err)
		fencing.WriteError(w, http.StatusServiceUnavailable, CodeUnavailable, "database unreachable")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "fenced": l.cfg.Fenced})
}

// writeErr maps an error to its HTTP answer. This is the one place that does.
func (l *Ledger) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, fencing.ErrStaleToken):
		fencing.WriteStaleToken(w, err)
	case errors.Is(err, fencing.ErrInvalidToken), errors.Is(err, fencing.ErrTokenTooLarge):
		fencing.WriteTokenError(w, err)
	case errors.Is(err, ErrInvalidArgument):
		fencing.WriteError(w, http.StatusBadRequest, CodeInvalidArgument, err.Error())
	case errors.Is(err, ErrAccountNotFound):
		fencing.WriteError(w, http.StatusNotFound, CodeAccountNotFound, err.Error())
	case errors.Is(err, ErrChargeConflict):
		fencing.WriteError(w, http.StatusConflict, CodeChargeConflict, err.Error())
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads the answer.
		l.log.Debug("request canceled", "method", r.Method, "path", r.URL.Path)
		fencing.WriteError(w, http.StatusServiceUnavailable, CodeUnavailable, "request canceled")
	default:
		l.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		fencing.WriteError(w, http.StatusInternalServerError, CodeInternal, "internal error")
	}
}

// decodeJSON reads the request body into v strictly: at most MaxBodyBytes (413), one JSON
// value of v's shape with no unknown fields and nothing after it (400 invalid_json). It
// answers the request and returns false on failure.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// Exactly one value: anything but whitespace after it is an error.
		if err = dec.Decode(&json.RawMessage{}); err == io.EOF {
			return true
		} else if err == nil {
			err = errors.New("trailing data after the JSON body")
		}
	} else if err == io.EOF {
		err = errors.New("empty body")
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		fencing.WriteError(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
			fmt.Sprintf("request body is larger than %d bytes", tooLarge.Limit))
		return false
	}
	fencing.WriteError(w, http.StatusBadRequest, CodeInvalidJSON, "invalid JSON body: "+err.Error())
	return false
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fencing.WriteError(w, http.StatusInternalServerError, CodeInternal, "cannot encode the answer")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// methodNotAllowed answers 405 for a known path with another method.
func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		fencing.WriteError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow))
	}
}
