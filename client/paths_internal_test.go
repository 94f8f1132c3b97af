package client

import (
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
)

// TestNamePath_FastPathSameAsEscaping: for names drawn from every byte that matters to a
// path (letters, the characters PathEscape keeps, and ones it escapes), namePath gives the
// path that escaping each segment gives, with or without its shortcut for names that need
// no escaping.
func TestNamePath_FastPathSameAsEscaping(t *testing.T) {
	escaped := func(name string) string {
		segs := strings.Split(name, "/")
		for i, s := range segs {
			segs[i] = url.PathEscape(s)
		}
		return locksRoute + strings.Join(segs, "/")
	}
	const alphabet = "aZ09-._~!$&'()*+,;=:@/ ?#%\"<>\\^`{|}[]\x00\x7f\xc3\xa9"
	rng := rand.New(rand.NewPCG(24, 2))
	fast := 0
	for i := 0; i < 50_000; i++ {
		b := make([]byte, rng.IntN(12))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		name := string(b)
		if got, want := namePath(locksRoute, name), escaped(name); got != want {
			t.Fatalf("namePath(%q) = %q, want %q", name, got, want)
		}
		if !needsEscape(name) {
			fast++
		}
	}
	if fast < 1000 {
		t.Fatalf("only %d names took the shortcut", fast)
	}
}
