package leases

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestTable_CountUntilMatchesReference checks the heap walk of CountUntil against a count
// over the reference map, at deadlines before, inside and after the table's range.
func TestTable_CountUntilMatchesReference(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var tab Table
		ref := refTable{}
		for step := 0; step < 2000; step++ {
			key := fmt.Sprintf("k%03d", rng.Intn(200))
			if rng.Intn(4) == 0 {
				tab.Delete(key)
				delete(ref, key)
			} else {
				d := int64(rng.Intn(100))
				tab.Set(key, d)
				ref[key] = d
			}
			at := int64(rng.Intn(120)) - 10
			want := 0
			for _, d := range ref {
				if d <= at {
					want++
				}
			}
			if got := tab.CountUntil(at); got != want {
				t.Fatalf("seed %d step %d: CountUntil(%d) = %d, want %d", seed, step, at, got, want)
			}
		}
	}
}
