package leases

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
)

// refTable is the reference model: a plain map, sorted on demand.
type refTable map[string]int64

func (r refTable) sorted() []string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if r[keys[i]] != r[keys[j]] {
			return r[keys[i]] < r[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

func TestTable_MatchesReference(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			var tab Table
			ref := refTable{}
			now := int64(0)
			for step := 0; step < 3000; step++ {
				key := fmt.Sprintf("k%02d", rng.Intn(40))
				switch op := rng.Intn(10); {
				case op < 4:
					d := now + int64(rng.Intn(50))
					tab.Set(key, d)
					ref[key] = d
				case op < 6:
					tab.Delete(key)
					delete(ref, key)
				case op < 8:
					now += int64(rng.Intn(10))
					got := tab.PopExpired(now)
					var want []string
					for _, k := range ref.sorted() {
						if ref[k] <= now {
							want = append(want, k)
							delete(ref, k)
						}
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("step %d: PopExpired(%d) = %v, want %v", step, now, got, want)
					}
				default:
					d, ok := tab.Deadline(key)
					rd, rok := ref[key]
					if ok != rok || d != rd {
						t.Fatalf("step %d: Deadline(%s) = %d,%v want %d,%v", step, key, d, ok, rd, rok)
					}
				}
				if tab.Len() != len(ref) {
					t.Fatalf("step %d: Len = %d, want %d", step, tab.Len(), len(ref))
				}
				k, d, ok := tab.Next()
				if s := ref.sorted(); ok != (len(s) > 0) || (ok && (k != s[0] || d != ref[s[0]])) {
					t.Fatalf("step %d: Next = %s,%d,%v; reference order %v", step, k, d, ok, s)
				}
			}
			var got []string
			tab.Ascend(func(k string, _ int64) bool { got = append(got, k); return true })
			if fmt.Sprint(got) != fmt.Sprint(ref.sorted()) {
				t.Fatalf("Ascend = %v, want %v", got, ref.sorted())
			}
		})
	}
}

func TestTable_ExpiresAtDeadline(t *testing.T) {
	var tab Table
	tab.Set("a", 100)
	if got := tab.PopExpired(99); len(got) != 0 {
		t.Fatalf("expired before its deadline: %v", got)
	}
	if got := tab.PopExpired(100); len(got) != 1 || got[0] != "a" {
		t.Fatalf("PopExpired(100) = %v, want [a]", got)
	}
}

// TestTable_PopNextExpiredPopsInOrder: popping one expired key at a time returns what
// PopExpired returns, in the same order, and stops at the first key not expired.
func TestTable_PopNextExpiredPopsInOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	var a, b Table
	for i := 0; i < 500; i++ {
		k, d := fmt.Sprintf("k%03d", rng.Intn(300)), int64(rng.Intn(100))
		a.Set(k, d)
		b.Set(k, d)
	}
	for _, now := range []int64{-1, 10, 10, 55, 99, 200} {
		want := a.PopExpired(now)
		var got []string
		for {
			k, ok := b.PopNextExpired(now)
			if !ok {
				break
			}
			got = append(got, k)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || a.Len() != b.Len() {
			t.Fatalf("at %d: popped %v one by one, %v at once", now, got, want)
		}
	}
}
