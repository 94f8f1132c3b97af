package fencing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/raftlock/raftlock/internal/mutant"
)

// HeaderName is the request header that carries a fencing token, in decimal:
//
//	Fencing-Token: 4711
const HeaderName = "Fencing-Token"

// Error codes of the JSON errors this package writes. The body has the shape of every
// raftlock API error: {"error": {"code": "...", "message": "..."}}.
const (
	// CodeMissingToken (400): the request has no Fencing-Token header.
	CodeMissingToken = "missing_token"
	// CodeInvalidToken (400): the header is malformed, repeated, 0 or above MaxToken.
	CodeInvalidToken = "invalid_token"
	// CodeStaleToken (409): the write was refused because the resource has accepted a
	// higher token; nothing was written.
	CodeStaleToken = "stale_token"
)

// TokenFromHeader reads the Fencing-Token header. It returns ErrMissingToken when the header
// is absent, and an error wrapping ErrInvalidToken or ErrTokenTooLarge when it is repeated,
// malformed (see ParseToken), 0 or above MaxToken.
func TokenFromHeader(h http.Header) (Token, error) {
	vals := h.Values(HeaderName)
	switch len(vals) {
	case 0:
		return 0, ErrMissingToken
	case 1:
	default:
		return 0, fmt.Errorf("%w: %d %s headers", ErrInvalidToken, len(vals), HeaderName)
	}
	t, err := ParseToken(vals[0])
	if err != nil {
		return 0, err
	}
	if err := t.Validate(); err != nil {
		return 0, err
	}
	return t, nil
}

// SetTokenHeader sets the Fencing-Token header of an outgoing request.
func SetTokenHeader(h http.Header, t Token) { h.Set(HeaderName, t.String()) }

// tokenKey is the context key of the request's token.
type tokenKey struct{}

// ContextWithToken returns a copy of ctx that carries t (see TokenFromContext).
func ContextWithToken(ctx context.Context, t Token) context.Context {
	return context.WithValue(ctx, tokenKey{}, t)
}

// TokenFromContext returns the token RequireToken (or ContextWithToken) put in ctx.
func TokenFromContext(ctx context.Context) (Token, bool) {
	t, ok := ctx.Value(tokenKey{}).(Token)
	return t, ok
}

// RequireToken is middleware for handlers of fenced writes. It reads the Fencing-Token
// header; when it is missing or invalid, it answers 400 with code missing_token or
// invalid_token and does not call next. Otherwise it calls next with the token in the
// request's context (TokenFromContext).
//
// It only reads the token: the handler must still pass it to a guard, which refuses it if
// it is stale.
func RequireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := TokenFromHeader(r.Header)
		if err != nil && !(mutant.Is("header-accepts-missing") && errors.Is(err, ErrMissingToken)) {
			WriteTokenError(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(ContextWithToken(r.Context(), t)))
	})
}

// WriteTokenError answers 400 for an error from TokenFromHeader or Token.Validate: code
// missing_token for ErrMissingToken, invalid_token otherwise.
func WriteTokenError(w http.ResponseWriter, err error) {
	code := CodeInvalidToken
	if errors.Is(err, ErrMissingToken) {
		code = CodeMissingToken
	}
	WriteError(w, http.StatusBadRequest, code, err.Error())
}

// WriteStaleToken answers 409 stale_token for a refused write. err is normally the
// *StaleTokenError a guard returned, whose message names both tokens.
func WriteStaleToken(w http.ResponseWriter, err error) {
	WriteError(w, http.StatusConflict, CodeStaleToken, err.Error())
}

// ErrorBody is the JSON body of an error answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of ErrorBody.
type ErrorDetail struct {
	// Code is a snake_case error code, such as stale_token.
	Code string `json:"code"`
	// Message is a human sentence.
	Message string `json:"message"`
}

// WriteError answers status with the JSON body {"error": {"code": code, "message": message}}.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	b, err := json.Marshal(ErrorBody{Error: ErrorDetail{Code: code, Message: message}})
	if err != nil { // cannot happen for two strings
		b = []byte(`{"error":{"code":"internal","message":"cannot encode error"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
