package fencing_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/raftlock/raftlock/fencing"
)

func TestParseToken(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    fencing.Token
		wantErr bool
	}{
		{"1", 1, false},
		{"0", 0, false}, // syntactically fine; Validate refuses it
		{"4711", 4711, false},
		{"9223372036854775807", fencing.MaxToken, false},
		{"18446744073709551615", 1<<64 - 1, false},
		{"18446744073709551616", 0, true},
		{"99999999999999999999", 0, true},
		{"100000000000000000000", 0, true},
		{"", 0, true},
		{" 1", 0, true},
		{"1 ", 0, true},
		{"+1", 0, true},
		{"-1", 0, true},
		{"01", 0, true},
		{"00", 0, true},
		{"0x10", 0, true},
		{"1e3", 0, true},
		{"1_000", 0, true},
		{"１", 0, true}, // fullwidth digit one
		{"12a", 0, true},
	} {
		got, err := fencing.ParseToken(tc.in)
		if tc.wantErr {
			if !errors.Is(err, fencing.ErrInvalidToken) {
				t.Errorf("ParseToken(%q) = %d, %v; want ErrInvalidToken", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseToken(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestToken_StringRoundTrip(t *testing.T) {
	for _, tok := range []fencing.Token{0, 1, 10, 4711, fencing.MaxToken, fencing.MaxToken + 1, 1<<64 - 1} {
		got, err := fencing.ParseToken(tok.String())
		if err != nil || got != tok {
			t.Errorf("ParseToken(%q) = %d, %v", tok.String(), got, err)
		}
	}
}

func TestToken_Validate(t *testing.T) {
	if err := fencing.Token(0).Validate(); !errors.Is(err, fencing.ErrInvalidToken) {
		t.Errorf("Validate(0) = %v", err)
	}
	if err := (fencing.MaxToken + 1).Validate(); !errors.Is(err, fencing.ErrTokenTooLarge) {
		t.Errorf("Validate(MaxToken+1) = %v", err)
	}
	if !strings.Contains((fencing.MaxToken + 1).Validate().Error(), "9223372036854775808") {
		t.Errorf("the error should name the token: %v", (fencing.MaxToken + 1).Validate())
	}
	for _, tok := range []fencing.Token{1, 2, fencing.MaxToken} {
		if err := tok.Validate(); err != nil {
			t.Errorf("Validate(%d) = %v", tok, err)
		}
	}
}

// FuzzParseToken: ParseToken never panics, accepts exactly the canonical decimal form of a
// uint64 (so String gives the input back), and every error wraps ErrInvalidToken with a
// bounded message. TokenFromHeader agrees with ParseToken plus Validate.
func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"", "0", "1", "01", "-1", "+1", " 1", "4711", "9223372036854775807",
		"9223372036854775808", "18446744073709551615", "18446744073709551616", "1e3", "0x1", "１", "\x00", "1\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := fencing.ParseToken(s)
		canonical := false
		if u, perr := strconv.ParseUint(s, 10, 64); perr == nil && strconv.FormatUint(u, 10) == s {
			canonical = true
		}
		if err != nil {
			if !errors.Is(err, fencing.ErrInvalidToken) {
				t.Fatalf("ParseToken(%q): error %v does not wrap ErrInvalidToken", s, err)
			}
			if canonical {
				t.Fatalf("ParseToken(%q) refused a canonical token: %v", s, err)
			}
			if len(err.Error()) > 200 {
				t.Fatalf("ParseToken(%q): message of %d bytes", s, len(err.Error()))
			}
		} else {
			if !canonical || tok.String() != s {
				t.Fatalf("ParseToken(%q) = %d, accepted a non-canonical form", s, tok)
			}
		}

		h := make(map[string][]string)
		h[fencing.HeaderName] = []string{s}
		htok, herr := fencing.TokenFromHeader(h)
		wantOK := err == nil && tok.Validate() == nil
		if (herr == nil) != wantOK || (herr == nil && htok != tok) {
			t.Fatalf("TokenFromHeader(%q) = %d, %v; ParseToken = %d, %v", s, htok, herr, tok, err)
		}
	})
}
