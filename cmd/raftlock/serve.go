package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/tlsconf"
	"github.com/raftlock/raftlock/transport"
)

// serveFlags are serve's flags. Each can also be set by a RAFTLOCK_* environment variable
// and by a key of the same name in the --config file; a flag on the command line wins over
// the environment, which wins over the file.
func serveFlags() []cli.Flag {
	env := func(name string) []string {
		return []string{"RAFTLOCK_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))}
	}
	str := func(name, usage, value string) cli.Flag {
		return altsrc.NewStringFlag(&cli.StringFlag{Name: name, Usage: usage, Value: value, EnvVars: env(name)})
	}
	dur := func(name, usage string, value time.Duration) cli.Flag {
		return altsrc.NewDurationFlag(&cli.DurationFlag{Name: name, Usage: usage, Value: value, EnvVars: env(name)})
	}
	u64 := func(name, usage string, value uint64) cli.Flag {
		return altsrc.NewUint64Flag(&cli.Uint64Flag{Name: name, Usage: usage, Value: value, EnvVars: env(name)})
	}
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "read settings from this TOML file (keys are the flag names: id = \"n1\")", EnvVars: env("config")},
		&cli.BoolFlag{Name: "print-config", Usage: "print the effective settings (flags, environment and file merged) as TOML, then exit"},
		str("id", "this node's Raft server ID (required)", ""),
		str("http-addr", "HTTP API listen address (host:port; [::1]:7001 for IPv6)", "127.0.0.1:7001"),
		str("http-advertise", "HTTP address other nodes forward to (default: --http-addr; required when --http-addr listens on 0.0.0.0 or [::])", ""),
		str("raft-addr", "Raft listen address", "127.0.0.1:8001"),
		str("raft-advertise", "Raft address other nodes dial (default: --raft-addr; required when --raft-addr listens on 0.0.0.0 or [::])", ""),
		str("data-dir", "directory for the Raft log, stable store and snapshots (required)", ""),
		str("raft-log-store", "store for the Raft log and term/vote: auto (what the data dir holds; wal for a new one), wal (hashicorp/raft-wal under wal/, one fsync per commit) or boltdb (raft.db, two); an explicit store that differs from the data dir's is refused (`raftlock log-store convert` converts; docs/OPERATIONS.md)", "auto"),
		dur("raft-log-verify-interval", "how often the leader writes a log verification checkpoint, after which every node reads the entries since the previous one back from its log store and compares checksums with the leader's (hashicorp/raft-wal's verifier; 0 turns it off)", cluster.DefaultVerifyInterval),
		str("bootstrap", "bootstrap a new cluster: id=raftaddr,id=raftaddr,... (ignored when the data dir has state)", ""),
		str("join", "join a running cluster through this member's HTTP URL, e.g. http://127.0.0.1:7001", ""),
		str("log-level", "trace, debug, info, warn or error", "info"),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "log-json", Usage: "log JSON lines", EnvVars: env("log-json")}),
		dur("election-timeout", "raft election and heartbeat timeout", 500*time.Millisecond),
		u64("snapshot-threshold", "log entries between snapshots", 8192),
		u64("trailing-logs", "log entries kept after a snapshot", 10240),
		dur("snapshot-interval", "how often raft checks whether a snapshot is due", 10*time.Second),
		u64("max-leases", "quota: live leases in the cluster (0: unlimited)", 1_000_000),
		u64("max-locks-per-lease", "quota: locks one lease may hold or wait for (0: unlimited)", 10_000),
		u64("max-waiters-per-lock", "quota: leases queued for one lock (0: unlimited)", 10_000),
		u64("max-locks", "quota: grants held in the cluster: locks (each holder of a shared lock), semaphore permits, leaderships (0: unlimited; protocol version 5)", fsm.DefaultMaxLocks),
		u64("max-waiters", "quota: waits in the cluster, for locks, permits and leaderships (0: unlimited; protocol version 5)", fsm.DefaultMaxWaiters),
		u64("max-leases-per-identity", "quota: live leases of one identity (an ACL token, or every caller without one) unless its token or a policy sets its own (0: unlimited; ACLs on, protocol version 5)", fsm.DefaultPerIdentity.MaxLeases),
		u64("max-locks-per-identity", "quota: grants one identity holds (see --max-locks) unless its token or a policy sets its own (0: unlimited; ACLs on, protocol version 5)", fsm.DefaultPerIdentity.MaxLocks),
		u64("max-waiters-per-identity", "quota: waits of one identity unless its token or a policy sets its own (0: unlimited; ACLs on, protocol version 5)", fsm.DefaultPerIdentity.MaxWaiters),
		str("tls-cert", "this node's certificate (PEM), issued by `raftlock tls cert --node ID`; turns on TLS for the API and mutual TLS between nodes", ""),
		str("tls-key", "the certificate's private key (PEM, mode 0600)", ""),
		str("tls-ca", "the cluster CA certificate (PEM) that every node and client certificate is checked against", ""),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "acl", Usage: "enforce ACL tokens: every API request needs a bearer token whose policies grant it (bootstrap the first with `raftlock acl bootstrap`)", EnvVars: env("acl")}),
		str("acl-node-token-file", "file holding the ACL token this node uses to register itself with the leader when ACLs are on and TLS is off (with TLS the node certificate is used); also RAFTLOCK_ACL_NODE_TOKEN", ""),
		str("tls-client-auth", "client certificates on the HTTPS API: none (not needed; verified when offered) or require", "none"),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "max-held-requests", Usage: "waiting acquires, blocking queries and requests held for a leader that this node holds open at once", Value: 10_000, EnvVars: env("max-held-requests")}),
		&cli.StringFlag{Name: "raft-wal-segment-size", Hidden: true, Usage: "for tests: raft-wal's segment file size (1MiB; 0: raft-wal's 64 MiB)", Value: "0", EnvVars: env("raft-wal-segment-size")},
		&cli.Uint64Flag{Name: "max-protocol-version", Hidden: true, Usage: "for upgrade tests: speak at most this protocol version, as a node of an older release would (0: this release's)", EnvVars: env("max-protocol-version")},
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "max-hold-ceiling", Usage: "cap on the max_hold_ms a request may ask for (protocol version 3); 0: no cap. Applied by the leader: give every node the same value", EnvVars: env("max-hold-ceiling")}),
		str("allowed-hosts", "further names clients may send in Host, comma-separated (a load balancer's, a Kubernetes Service's); IP addresses, localhost, the --http-advertise host and the certificate's DNS names are always allowed, any other name is refused with 421 (DNS rebinding)", ""),
		str("allowed-origins", "web origins (scheme://host[:port]), comma-separated, whose pages may call the API and the pprof listener besides the node's own dashboard; a request with any other Origin is refused with 403", ""),
		str("pprof-addr", "serve Go's /debug/pprof profiles on this loopback address (127.0.0.1:6060), apart from the API and without its ACLs; off when empty", ""),
		str("gc-headroom", "let the Go heap grow at least this much over the live state between collections (0: GOGC alone): a node holding little state otherwise collects several times a second under load; from a live state of headroom*100/percent up (128 MiB at the defaults: serve's percent is 50 unless GOGC is set) the percent alone rules", "64MiB"),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "http2-cleartext", Usage: "also serve HTTP/2 without TLS (prior knowledge, h2c) on the API, for clients that hold many requests open on one connection", EnvVars: env("http2-cleartext")}),
		str("memory-limit", "soft limit on this process's Go heap (900MiB, 2GiB; 0: none beyond GOMEMLIMIT): the collector runs sooner near it instead of letting the heap grow by the GC percent over the live state; give about 90% of the memory the node may use (docs/OPERATIONS.md, sizing)", "0"),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "hold-timeout", Usage: "how long a request that finds no leader is held, waiting for one, before it answers 503 (0 answers at once)", Value: transport.DefaultHoldTimeout, EnvVars: env("hold-timeout")}),
	}
}

func serveCommand() *cli.Command {
	flags := serveFlags()
	return &cli.Command{
		Name:  "serve",
		Usage: "run a raftlock node",
		Description: `Runs one node of a raftlock cluster: the Raft member and the HTTP API.

Start a new three-node cluster by giving every node the same --bootstrap list, or add a
node to a running cluster with --join pointing at any member's HTTP address.

Every flag can also come from the environment (RAFTLOCK_ and the flag's name in capitals,
dashes as underscores: RAFTLOCK_HTTP_ADVERTISE) or from a TOML file given with --config, whose
keys are the flag names. The command line wins over the environment, which wins over the file.`,
		Flags:  flags,
		Before: altsrc.InitInputSourceWithContext(flags, configSource),
		Action: func(c *cli.Context) error {
			if c.Bool("print-config") {
				return printConfig(c, flags)
			}
			logger := hclog.New(&hclog.LoggerOptions{
				Name:       c.String("id"),
				Level:      hclog.LevelFromString(c.String("log-level")),
				JSONFormat: c.Bool("log-json"),
				Output:     os.Stderr,
			})
			cfg, opts, err := serveConfig(c, logger)
			if err != nil {
				return cli.Exit("raftlock serve: "+err.Error(), 2)
			}
			// Everything this process writes holds lease IDs or keys: private to its user.
			restrictUmask()
			return runServe(c.Context, cfg, opts, logger)
		},
	}
}

// configSource reads the --config file, when one is given, as TOML.
func configSource(c *cli.Context) (altsrc.InputSourceContext, error) {
	if !c.IsSet("config") {
		return &altsrc.MapInputSource{}, nil
	}
	path := c.String("config")
	if _, err := toml.DecodeFile(path, &map[string]any{}); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	return altsrc.NewTomlSourceFromFile(path)
}

// serveConfig turns the merged settings into the node's Config and serve's own options.
func serveConfig(c *cli.Context, logger hclog.Logger) (cluster.Config, serveOptions, error) {
	peers, err := parseBootstrap(c.String("bootstrap"))
	if err != nil {
		return cluster.Config{}, serveOptions{}, err
	}
	if c.String("id") == "" {
		return cluster.Config{}, serveOptions{}, errors.New("--id is required (or RAFTLOCK_ID, or id in the --config file)")
	}
	if c.String("data-dir") == "" {
		return cluster.Config{}, serveOptions{}, errors.New("--data-dir is required (or RAFTLOCK_DATA_DIR, or data-dir in the --config file)")
	}
	httpAdv, err := advertiseAddr("http", c.String("http-addr"), c.String("http-advertise"))
	if err != nil {
		return cluster.Config{}, serveOptions{}, err
	}
	raftAdv, err := advertiseAddr("raft", c.String("raft-addr"), c.String("raft-advertise"))
	if err != nil {
		return cluster.Config{}, serveOptions{}, err
	}
	files := tlsconf.Files{Cert: c.String("tls-cert"), Key: c.String("tls-key"), CA: c.String("tls-ca"), ClientAuth: c.String("tls-client-auth")}
	if err := files.Validate(); err != nil {
		return cluster.Config{}, serveOptions{}, err
	}
	var reloader *tlsconf.Reloader
	if files.Enabled() {
		if reloader, err = tlsconf.NewReloader(files, logger); err != nil {
			return cluster.Config{}, serveOptions{}, err
		}
	}
	logStore, err := cluster.ParseLogStoreKind(c.String("raft-log-store"))
	if err != nil {
		return cluster.Config{}, serveOptions{}, fmt.Errorf("--raft-log-store: %w", err)
	}
	et := c.Duration("election-timeout")
	cfg := cluster.Config{
		LogStore:           logStore,
		VerifyInterval:     verifyInterval(c.Duration("raft-log-verify-interval")),
		TLS:                reloader,
		ID:                 c.String("id"),
		RaftBind:           c.String("raft-addr"),
		RaftAdvertise:      raftAdv,
		HTTPAddr:           httpAdv,
		DataDir:            c.String("data-dir"),
		Bootstrap:          peers,
		Logger:             logger,
		HeartbeatTimeout:   et,
		ElectionTimeout:    et,
		LeaderLeaseTimeout: et / 2,
		SnapshotThreshold:  c.Uint64("snapshot-threshold"),
		TrailingLogs:       c.Uint64("trailing-logs"),
		SnapshotInterval:   c.Duration("snapshot-interval"),
		FreshVersionWait:   cluster.DefaultFreshVersionWait,
		MaxVersion:         c.Uint64("max-protocol-version"),
		MaxHoldCeiling:     c.Duration("max-hold-ceiling"),
		Limits: fsm.Limits{
			MaxLeases:         c.Uint64("max-leases"),
			MaxLocksPerLease:  c.Uint64("max-locks-per-lease"),
			MaxWaitersPerLock: c.Uint64("max-waiters-per-lock"),
			MaxLocks:          c.Uint64("max-locks"),
			MaxWaiters:        c.Uint64("max-waiters"),
			PerIdentity: fsm.Quotas{
				MaxLeases:  identityQuota(c, "max-leases-per-identity", c.Uint64("max-leases")),
				MaxLocks:   identityQuota(c, "max-locks-per-identity", c.Uint64("max-locks")),
				MaxWaiters: identityQuota(c, "max-waiters-per-identity", c.Uint64("max-waiters")),
			},
		},
	}
	segment, err := parseMemoryLimit(c.String("raft-wal-segment-size"))
	if err != nil || segment < 0 || segment > 1<<30 {
		return cluster.Config{}, serveOptions{}, fmt.Errorf("--raft-wal-segment-size %q: give a size up to 1GiB (1MiB, 64MiB) or 0 for raft-wal's default", c.String("raft-wal-segment-size"))
	}
	cfg.WALSegmentSize = int(segment)
	memLimit, err := parseMemoryLimit(c.String("memory-limit"))
	if err != nil {
		return cluster.Config{}, serveOptions{}, err
	}
	headroom, err := parseMemoryLimit(c.String("gc-headroom"))
	if err != nil {
		return cluster.Config{}, serveOptions{}, fmt.Errorf("--gc-headroom %q is not a size: give a whole number with B, KiB, MiB or GiB (for example 64MiB), or 0 for none", c.String("gc-headroom"))
	}
	nodeToken := os.Getenv("RAFTLOCK_ACL_NODE_TOKEN")
	if f := c.String("acl-node-token-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return cluster.Config{}, serveOptions{}, fmt.Errorf("--acl-node-token-file: %w", err)
		}
		nodeToken = strings.TrimSpace(string(b))
	}
	warnExposed(logger, exposure{httpListen: c.String("http-addr"), raftListen: c.String("raft-addr"), tls: reloader != nil, clientAuth: files.ClientAuth, acl: c.Bool("acl")})
	if c.Bool("acl") && reloader == nil && nodeToken == "" {
		logger.Warn("ACLs are on and TLS is off: this node registers its HTTP address only when it leads (no node certificate or --acl-node-token-file proves who it is), so right after it first takes office other nodes answer 503 for a moment; use TLS")
	}
	return cfg, serveOptions{join: c.String("join"), maxHeld: c.Int("max-held-requests"), holdTimeout: c.Duration("hold-timeout"), httpListen: c.String("http-addr"), acl: c.Bool("acl"), nodeToken: nodeToken, memoryLimit: memLimit, gcHeadroom: uint64(headroom), http2Cleartext: c.Bool("http2-cleartext"), pprofAddr: c.String("pprof-addr"), allowedHosts: commaList(c.String("allowed-hosts")), allowedOrigins: commaList(c.String("allowed-origins"))}, nil
}

// identityQuota is the per-identity quota of flag name: as given, or, when it was left at
// its default, the smaller of that default and half of the cluster-wide limit it counts
// toward (clusterCap, 0: none), so that with any cluster-wide limit an operator sets, one
// identity cannot take all of it unless a quota was set to allow it.
func identityQuota(c *cli.Context, name string, clusterCap uint64) uint64 {
	v := c.Uint64(name)
	if c.IsSet(name) || clusterCap == 0 || v == 0 {
		return v
	}
	return max(min(v, clusterCap/2), 1)
}

// advertiseAddr returns the address other nodes use for this node: adv when given, else
// the listen address, which must then name one host (not 0.0.0.0 or [::]).
func advertiseAddr(kind, listen, adv string) (string, error) {
	check := func(flag, addr string) (string, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil || port == "" || port == "0" {
			return "", fmt.Errorf("--%s %q is not host:port with a fixed port", flag, addr)
		}
		return host, nil
	}
	if _, err := check(kind+"-addr", listen); err != nil {
		return "", err
	}
	if adv == "" {
		adv = listen
		host, _ := check(kind+"-addr", listen)
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			return "", fmt.Errorf("--%s-addr %s listens on every interface, so other nodes need to be told which address reaches this one: set --%s-advertise host:port", kind, listen, kind)
		}
		return adv, nil
	}
	host, err := check(kind+"-advertise", adv)
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return "", fmt.Errorf("--%s-advertise %s is not an address other nodes can reach; give this node's own IP or DNS name", kind, adv)
	}
	return adv, nil
}

// printConfig writes the effective settings as TOML. Settings that are secrets are shown
// as "<redacted>"; serve has none yet besides what later flags add to secretFlags.
func printConfig(c *cli.Context, flags []cli.Flag) error {
	out := map[string]any{}
	for _, f := range flags {
		name := f.Names()[0]
		if name == "config" || name == "print-config" {
			continue
		}
		v := c.Value(name)
		if d, ok := v.(time.Duration); ok {
			v = d.String()
		}
		if secretFlags[name] && fmt.Sprint(v) != "" {
			v = "<redacted>"
		}
		out[name] = v
	}
	enc := toml.NewEncoder(c.App.Writer)
	return enc.Encode(out)
}

// secretFlags are the serve settings print-config never shows.
var secretFlags = map[string]bool{}

// runServe runs a node until ctx ends (SIGINT or SIGTERM), then shuts down gracefully:
// the HTTP server drains, then the node hands off leadership and stops.
func runServe(ctx context.Context, cfg cluster.Config, opts serveOptions, logger hclog.Logger) error {
	join := opts.join
	// Before the node restores its state: the restore is where the heap first grows.
	if p, fromEnv := applyGCPercent(os.LookupEnv); fromEnv {
		logger.Info("GC percent from GOGC", "percent", p)
	} else {
		logger.Debug("GC percent", "percent", p, "why", "GOGC is not set")
	}
	if limit := applyMemoryLimit(opts.memoryLimit); limit != math.MaxInt64 {
		logger.Info("soft memory limit", "limit", formatBytes(limit))
	}
	if opts.gcHeadroom > 0 {
		stopGC := make(chan struct{})
		defer close(stopGC)
		go gcHeadroom(opts.gcHeadroom, stopGC)
		logger.Info("GC headroom", "headroom", formatBytes(int64(opts.gcHeadroom)))
	}
	stopPprof, err := startPprof(opts.pprofAddr, &transport.BrowserPolicy{AllowedHosts: opts.allowedHosts, AllowedOrigins: opts.allowedOrigins}, logger)
	if err != nil {
		return err
	}
	defer stopPprof()
	l, err := net.Listen("tcp", opts.httpListen)
	if err != nil {
		return fmt.Errorf("listening for HTTP on %s: %w (is another node using the port?)", opts.httpListen, err)
	}
	node, err := cluster.New(cfg)
	if err != nil {
		l.Close()
		return err
	}
	srv, err := transport.NewServer(transport.Config{Services: transport.NodeServices(node), Logger: logger, MaxHeldRequests: opts.maxHeld, HoldTimeout: holdTimeout(opts.holdTimeout), TLS: cfg.TLS, ACL: opts.acl, NodeToken: opts.nodeToken,
		Addr: opts.httpListen, AllowedHosts: opts.allowedHosts, AllowedOrigins: opts.allowedOrigins, HTTP2Cleartext: opts.http2Cleartext})
	if err != nil {
		l.Close()
		node.Shutdown()
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	logger.Info("node started", "version", version, "protocol", node.Members().MaxVersion(), "http", opts.httpListen, "http_advertise", cfg.HTTPAddr, "raft", node.RaftAddr(), "data_dir", cfg.DataDir)

	if join != "" && !node.Members().Has(cfg.ID) {
		info := node.Members().Self()
		var tlsCfg *tls.Config
		if cfg.TLS != nil {
			tlsCfg = cfg.TLS.PeerClientConfig()
		}
		if err := transport.Join(ctx, join, api.AddNodeRequest{ID: info.ID, RaftAddr: info.RaftAddr, HTTPAddr: info.HTTPAddr}, tlsCfg, opts.nodeToken, logger); err != nil {
			logger.Error("could not join the cluster", "error", err)
		}
	}

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			if cfg.TLS == nil {
				logger.Info("SIGHUP: nothing to reload (TLS is off)")
				continue
			}
			if err := cfg.TLS.Reload(); err != nil {
				logger.Error("SIGHUP: reloading the TLS files failed; still serving the previous certificate", "error", err)
				continue
			}
			logger.Info("SIGHUP: TLS certificate, key and CA reloaded", "serial", cfg.TLS.Certificate().SerialNumber.String())
		}
	}()
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case err = <-errc:
		logger.Error("HTTP server stopped", "error", err)
	case <-node.StorageFailed():
		// The node logged why. Exiting lets the supervisor start it again on what the disk
		// holds (the systemd unit restarts on this status); serving on would only refuse.
		err = cli.Exit(fmt.Sprintf("raftlock: this node stopped: %v", node.StorageErr()), 4)
	case <-node.Halted():
		// The node logged why; exiting (rather than serving errors) makes the failure
		// visible to the supervisor and the operator.
		err = cli.Exit(fmt.Sprintf("raftlock: this node stopped: %v; upgrade it to the release the rest of the cluster runs", node.HaltErr()), 3)
	}
	// Leadership first: while the HTTP server drains (waiting acquires may take seconds),
	// another node already serves writes.
	node.StepDown()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		logger.Warn("HTTP shutdown", "error", serr)
	}
	if nerr := node.Shutdown(); nerr != nil {
		logger.Warn("node shutdown", "error", nerr)
	}
	logger.Info("stopped")
	return err
}

// serveOptions are serve's settings that are not the node's Config.
type serveOptions struct {
	join    string
	maxHeld int
	// holdTimeout is --hold-timeout; 0 turns holding off.
	holdTimeout time.Duration
	httpListen  string
	acl         bool
	nodeToken   string // never logged, never in argv: read from a file or the environment
	// memoryLimit is --memory-limit in bytes; 0 leaves the runtime's (GOMEMLIMIT's) alone.
	memoryLimit int64
	// gcHeadroom is --gc-headroom in bytes; 0 leaves the GC percent as it is (GOGC's, or
	// serveGCPercent).
	gcHeadroom uint64
	// http2Cleartext is --http2-cleartext.
	http2Cleartext bool
	// pprofAddr is --pprof-addr: where Go's profiles are served; "" for nowhere.
	pprofAddr string
	// allowedHosts and allowedOrigins are --allowed-hosts and --allowed-origins, for the
	// API and the pprof listener (transport.BrowserPolicy).
	allowedHosts, allowedOrigins []string
}

// commaList splits a comma-separated flag value, dropping empty items.
func commaList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// parseBootstrap parses "n1=127.0.0.1:8001,n2=127.0.0.1:8002".
func parseBootstrap(s string) ([]cluster.Peer, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var peers []cluster.Peer
	for _, part := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("--bootstrap: %q is not id=host:port (example: n1=127.0.0.1:8001,n2=127.0.0.1:8002)", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("--bootstrap: %q: %v", part, err)
		}
		peers = append(peers, cluster.Peer{ID: id, RaftAddr: addr})
	}
	return peers, nil
}

// verifyInterval maps --raft-log-verify-interval to cluster.Config.VerifyInterval, where
// zero means the default: on the command line 0 turns verification off.
func verifyInterval(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// holdTimeout maps --hold-timeout to transport.Config.HoldTimeout, where zero means the
// default: on the command line 0 means no holding.
func holdTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
