package benchkit

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Latency summarizes a set of durations, in milliseconds.
type Latency struct {
	// Count is the number of samples.
	Count int `json:"count"`
	// P50, P90 and P99 are percentiles (nearest rank); Max is the largest sample.
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
	// Mean is the arithmetic mean.
	Mean float64 `json:"mean"`
}

// Summarize computes percentiles of samples; it sorts samples in place. It returns nil for
// no samples.
func Summarize(samples []time.Duration) *Latency {
	if len(samples) == 0 {
		return nil
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	return &Latency{
		Count: len(samples),
		P50:   ms(rank(samples, 0.50)),
		P90:   ms(rank(samples, 0.90)),
		P99:   ms(rank(samples, 0.99)),
		Max:   ms(samples[len(samples)-1]),
		Mean:  ms(sum / time.Duration(len(samples))),
	}
}

// rank returns the nearest-rank percentile q of sorted samples.
func rank(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MaxSamples is how many messages of a kind (errors, violations) a Result keeps.
const MaxSamples = 5

// Samples keeps the first MaxSamples messages of one kind for a Result's ErrSamples. It
// is safe for concurrent use; the zero value keeps none yet.
type Samples struct {
	mu   sync.Mutex
	msgs []string
}

// Add keeps msg unless MaxSamples messages are kept already.
func (s *Samples) Add(msg string) {
	s.mu.Lock()
	if len(s.msgs) < MaxSamples {
		s.msgs = append(s.msgs, msg)
	}
	s.mu.Unlock()
}

// List returns the messages kept, oldest first; nil when there are none.
func (s *Samples) List() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}
