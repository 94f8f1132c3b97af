package transport

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics holds the server's Prometheus collectors, in a registry of its own (not the
// process-wide default), so that several servers in one test process do not collide.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	forwarded prometheus.Counter
}

func newMetrics(node Node) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "raftlock_http_requests_total",
			Help: "HTTP requests answered by this node, by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "raftlock_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by route (waiting acquires and blocking queries include their wait).",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30, 300},
		}, []string{"route"}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "raftlock_forwarded_requests_total",
			Help: "Requests this node forwarded to the leader.",
		}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.forwarded,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		nodeCollector{node})
	if on, ok := node.(OverviewNode); ok {
		m.reg.MustRegister(counterCollector{on})
	}
	return m
}

// nodeCollector reports the node's state at scrape time.
type nodeCollector struct{ node Node }

var nodeGaugeHelp = map[string]string{
	"raftlock_is_leader":            "1 if this node is the ready leader.",
	"raftlock_raft_term":            "Current Raft term.",
	"raftlock_raft_commit_index":    "Raft commit index seen by this node.",
	"raftlock_applied_index":        "Index of the last entry applied to the lock state machine.",
	"raftlock_cluster_time_ms":      "The state machine's cluster time.",
	"raftlock_leases":               "Live leases.",
	"raftlock_locks_held":           "Held locks.",
	"raftlock_semaphores_in_use":    "Semaphores with at least one permit held.",
	"raftlock_semaphore_permits":    "Semaphore permits held, over all semaphores.",
	"raftlock_elections_led":        "Elections with a leader.",
	"raftlock_snapshot_lag_entries": "Entries applied since the last snapshot's Persist: what the next one replays into the snapshot shadow before it encodes.",
}

func (c nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for name, help := range nodeGaugeHelp {
		ch <- prometheus.NewDesc(name, help, nil, nil)
	}
}

func (c nodeCollector) Collect(ch chan<- prometheus.Metric) {
	vals := c.node.MetricsSnapshot()
	for name, help := range nodeGaugeHelp {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, vals[name])
	}
}

// instrument counts and times every request by its route pattern.
func (m *metrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		route := r.Pattern // set by ServeMux on this request
		if route == "" {
			route = "unmatched"
		}
		m.requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
		m.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (the event stream lifts its
// write deadline).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes flushes through, for streaming responses.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
