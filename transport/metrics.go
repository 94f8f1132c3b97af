package transport

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/raftlock/raftlock/cluster"
)

// metrics holds the server's Prometheus collectors, in a registry of its own (not the
// process-wide default), so that several servers in one test process do not collide.
type metrics struct {
	reg *prometheus.Registry
	// open is reg without the counts of the cluster's usage: what /metrics shows, with
	// ACLs on, to a caller without admin on the empty prefix. It leaves out the usage
	// gauges and counters of the state machine (nodeMetric.usage), the requests answered
	// by route and status (a route's 200s are its grants, its token creations, ...) and
	// the requests forwarded.
	open *prometheus.Registry
	// requests counts answers by route and status code; only in reg.
	requests *prometheus.CounterVec
	// latency times answers by route; in both registries (the dashboard's p99 chart
	// reads the acquire route's buckets, with any token).
	latency *prometheus.HistogramVec
	// forwarded counts the requests this node forwarded to the leader; only in reg.
	forwarded prometheus.Counter
}

func newMetrics(status StatusReporter) *metrics {
	m := &metrics{
		reg:  prometheus.NewRegistry(),
		open: prometheus.NewRegistry(),
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
	for _, reg := range []*prometheus.Registry{m.reg, m.open} {
		reg.MustRegister(m.latency, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m.reg.MustRegister(m.requests, m.forwarded)
	m.reg.MustRegister(nodeCollector{status: status})
	m.open.MustRegister(nodeCollector{status: status, withoutUsage: true})
	return m
}

// nodeMetric is one of the node's metrics: its Prometheus name, help, type, and how it
// is read from cluster.Metrics.
type nodeMetric struct {
	name, help string
	kind       prometheus.ValueType
	value      func(cluster.Metrics) float64
	// usage marks a count of the whole cluster's leases, locks, semaphores, elections or
	// grants: with ACLs on, only a token with admin on the empty prefix reads it, as the
	// overview's lease counts (docs/SECURITY.md, "/metrics").
	usage bool
}

// nodeMetrics are the node's state (gauges) and apply counters at scrape time.
var nodeMetrics = []nodeMetric{
	{"raftlock_is_leader", "1 if this node is the ready leader.", prometheus.GaugeValue, func(m cluster.Metrics) float64 {
		if m.IsLeader {
			return 1
		}
		return 0
	}, false},
	{"raftlock_raft_term", "Current Raft term.", prometheus.GaugeValue, func(m cluster.Metrics) float64 { return float64(m.Term) }, false},
	{"raftlock_raft_commit_index", "Raft commit index seen by this node.", prometheus.GaugeValue, func(m cluster.Metrics) float64 { return float64(m.CommitIndex) }, false},
	{"raftlock_applied_index", "Index of the last entry applied to the lock state machine.", prometheus.GaugeValue, func(m cluster.Metrics) float64 { return float64(m.AppliedIndex) }, false},
	{"raftlock_cluster_time_ms", "The state machine's cluster time.", prometheus.GaugeValue, func(m cluster.Metrics) float64 { return float64(m.ClusterTime.Milliseconds()) }, false},
	{"raftlock_leases", "Live leases.", prometheus.GaugeValue, func(m cluster.Metrics) float64 { return float64(m.Leases) }, true},
	{"raftlock_locks_held", "Held locks.", prometheus.GaugeValue, func(m cluster.Metrics) float64 { return float64(m.LocksHeld) }, true},
	{"raftlock_semaphores_in_use", "Semaphores with at least one permit held.", prometheus.GaugeValue, func(m cluster.Metrics) float64 { return float64(m.SemaphoresInUse) }, true},
	{"raftlock_semaphore_permits", "Semaphore permits held, over all semaphores.", prometheus.GaugeValue, func(m cluster.Metrics) float64 { return float64(m.SemaphorePermits) }, true},
	{"raftlock_elections_led", "Elections with a leader.", prometheus.GaugeValue, func(m cluster.Metrics) float64 { return float64(m.ElectionsLed) }, true},
	{"raftlock_snapshot_lag_entries", "Entries applied since the last snapshot's Persist: what the next one replays into the snapshot shadow before it encodes.", prometheus.GaugeValue, func(m cluster.Metrics) float64 { return float64(m.SnapshotLagEntries) }, false},
	{"raftlock_grants_total", "Locks granted by the entries this node applied (every node applies every entry, so any node's rate is the cluster's).", prometheus.CounterValue, func(m cluster.Metrics) float64 { return float64(m.GrantsTotal) }, true},
	{"raftlock_handovers_total", "Grants to a waiter, made by the release, revoke or expiry that freed the lock, in the same entry, as applied by this node.", prometheus.CounterValue, func(m cluster.Metrics) float64 { return float64(m.HandoversTotal) }, true},
	{"raftlock_raft_peers_refused_total", "Connections to the Raft port refused at or after the TLS handshake (not a node of the cluster CA, not a member, or no handshake in time).", prometheus.CounterValue, func(m cluster.Metrics) float64 { return float64(m.RaftPeersRefused) }, false},
	{"raftlock_raft_peers_dropped_total", "Connections to the Raft port closed unread because too many handshakes were pending.", prometheus.CounterValue, func(m cluster.Metrics) float64 { return float64(m.RaftPeersDropped) }, false},
	{"raftlock_raft_log_verified_total", "Raft log ranges (between two verification checkpoints) this node read back from its log store and found identical to what the leader wrote.", prometheus.CounterValue, func(m cluster.Metrics) float64 { return float64(m.LogVerifyRanges) }, false},
	{"raftlock_raft_log_verify_failures_total", "Raft log ranges whose checksum on this node differed from the leader's: disk or in-flight corruption (alert on any).", prometheus.CounterValue, func(m cluster.Metrics) float64 { return float64(m.LogVerifyFailures) }, false},
	{"raftlock_renew_entries_total", "Renew entries (one per batch of keepalives) applied by this node.", prometheus.CounterValue, func(m cluster.Metrics) float64 { return float64(m.RenewEntriesTotal) }, true},
}

// nodeCollector reports the node's metrics at scrape time.
type nodeCollector struct {
	status       StatusReporter
	withoutUsage bool // leave out the usage counts (nodeMetric.usage)
}

func (c nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, nm := range nodeMetrics {
		if !(nm.usage && c.withoutUsage) {
			ch <- prometheus.NewDesc(nm.name, nm.help, nil, nil)
		}
	}
}

func (c nodeCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.status.Metrics()
	for _, nm := range nodeMetrics {
		if nm.usage && c.withoutUsage {
			continue
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(nm.name, nm.help, nil, nil), nm.kind, nm.value(m))
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

// handler serves /metrics: everything to whoever may read the cluster's usage (anyone
// with ACLs off; a token with admin on the empty prefix with ACLs on), the node's health
// without the usage counts (metrics.open) to everyone else, the rule by which the
// overview withholds its lease counts. /metrics itself needs no token.
func (m *metrics) handler(auth *guard) http.HandlerFunc {
	full := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	open := promhttp.HandlerFor(m.open, promhttp.HandlerOpts{})
	return func(w http.ResponseWriter, r *http.Request) {
		if auth.on && auth.authorize(r, accessAdmin, "") != nil {
			open.ServeHTTP(w, r)
			return
		}
		full.ServeHTTP(w, r)
	}
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
