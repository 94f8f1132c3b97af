package main

import (
	"sync/atomic"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"

	"github.com/raftlock/raftlock/internal/budget"
)

// raftSink receives hashicorp/raft's go-metrics and passes the leader's AppendEntries
// round trips (raft.replication.appendEntries.rpc, labelled with the follower's ID) to
// the current recorder; everything else is dropped. raft times each round trip from the
// request's send to the moment its answer is processed, and calls the sink right then, so
// the answer's arrival is the time of the call.
type raftSink struct {
	rec atomic.Pointer[budget.Recorder]
}

// installRaftSink makes s the process's go-metrics sink, with nanosecond timers and no
// runtime metrics goroutine.
func installRaftSink() (*raftSink, error) {
	s := &raftSink{}
	cfg := metrics.DefaultConfig("")
	cfg.EnableHostname = false
	cfg.EnableHostnameLabel = false
	cfg.EnableRuntimeMetrics = false
	cfg.TimerGranularity = time.Nanosecond
	if _, err := metrics.NewGlobal(cfg, s); err != nil {
		return nil, err
	}
	return s, nil
}

func isAppendRPC(key []string) bool {
	return len(key) == 4 && key[0] == "raft" && key[1] == "replication" && key[2] == "appendEntries" && key[3] == "rpc"
}

// AddSampleWithLabels implements metrics.MetricSink.
func (s *raftSink) AddSampleWithLabels(key []string, val float32, labels []metrics.Label) {
	if !isAppendRPC(key) {
		return
	}
	rec := s.rec.Load()
	if rec == nil {
		return
	}
	end := time.Now()
	for _, l := range labels {
		if l.Name == "peer_id" {
			rec.Replicated(l.Value, end.Add(-time.Duration(val)), end)
			return
		}
	}
}

// SetGauge implements metrics.MetricSink.
func (s *raftSink) SetGauge([]string, float32) {}

// SetGaugeWithLabels implements metrics.MetricSink.
func (s *raftSink) SetGaugeWithLabels([]string, float32, []metrics.Label) {}

// EmitKey implements metrics.MetricSink.
func (s *raftSink) EmitKey([]string, float32) {}

// IncrCounter implements metrics.MetricSink.
func (s *raftSink) IncrCounter([]string, float32) {}

// IncrCounterWithLabels implements metrics.MetricSink.
func (s *raftSink) IncrCounterWithLabels([]string, float32, []metrics.Label) {}

// AddSample implements metrics.MetricSink.
func (s *raftSink) AddSample([]string, float32) {}
