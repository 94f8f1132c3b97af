package client

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestRouter_LongestPrefixWins: for random prefix sets over a small alphabet (so prefixes
// nest often) and random names, the Router picks the cluster of the longest routed prefix of
// the name, as a brute-force search over every prefix does, or ErrNoRoute when none matches.
func TestRouter_LongestPrefixWins(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 3))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab/"[rng.IntN(3)]
		}
		return string(b)
	}
	for round := 0; round < 300; round++ {
		owner := map[string]int{}
		routes := make([]Route, 1+rng.IntN(4))
		for i := range routes {
			routes[i] = Route{Name: fmt.Sprintf("c%d", i), Endpoints: []string{fmt.Sprintf("http://127.0.0.1:%d", i+1)}}
			for k := 0; k < 1+rng.IntN(4); k++ {
				p := word(rng.IntN(5))
				if _, dup := owner[p]; dup {
					continue
				}
				owner[p] = i
				routes[i].Prefixes = append(routes[i].Prefixes, p)
			}
			if len(routes[i].Prefixes) == 0 {
				routes[i].Prefixes = []string{word(6) + "x"} // unique: no generated name has an x
				owner[routes[i].Prefixes[0]] = i
			}
		}
		r, err := NewRouter(routes)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 50; k++ {
			name := word(rng.IntN(7))
			want, best := -1, -1
			for p, i := range owner {
				if strings.HasPrefix(name, p) && len(p) > best {
					want, best = i, len(p)
				}
			}
			got, err := r.route("route", name)
			if want < 0 {
				if err == nil {
					t.Fatalf("round %d: %q routed to c%d; no prefix of %v owns it", round, name, got, owner)
				}
				continue
			}
			if err != nil || got != want {
				t.Fatalf("round %d: %q routed to c%d (%v); the longest owning prefix is c%d's (%v)", round, name, got, err, want, owner)
			}
		}
	}
}
