package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/fsm"
)

// backupFileMode keeps backup files private: they hold every lease ID (bearer secrets)
// and any ACL token hashes.
const backupFileMode os.FileMode = 0o600

// progressStep is how many bytes pass between two progress lines of `backup save`; a
// backup smaller than that prints none.
const progressStep = 8 << 20

func backupCommand() *cli.Command {
	return &cli.Command{
		Name:    "backup",
		Aliases: []string{"snapshot"},
		Usage:   "save, inspect and restore backups of the cluster's state",
		Description: `A backup is the state machine's state at a linearizable point, with a header (index,
cluster time, protocol version, size, SHA-256). It holds lease IDs and any ACL token
hashes: keep backup files private. See docs/OPERATIONS.md, "Backup and restore".
"raftlock snapshot" is another name for this command.`,
		Subcommands: []*cli.Command{backupSaveCommand(), backupInspectCommand(), backupRestoreCommand()},
	}
}

func backupSaveCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "save",
		Usage:     "download a backup of the cluster's state into FILE",
		ArgsUsage: "FILE",
		Description: `Asks the cluster for a backup (GET /v1/backup; the leader reads its state at a
linearizable point) and writes it to a new temporary file beside FILE (created
exclusively, mode 0600), fsyncs it, verifies the checksum of what is on disk, renames it
over FILE and fsyncs the directory. Progress goes to stderr for large backups.`,
		Flags: clientFlags(
			&cli.DurationFlag{Name: "transfer-timeout", Usage: "how long the download itself may take, on top of --timeout", Value: 10 * time.Minute},
		),
	}, runBackupSave)
}

func runBackupSave(c *cli.Context, a parsedArgs) error {
	if len(a.args) != 1 || a.dash {
		return usageErrorf(c, "backup save takes one FILE")
	}
	path := a.args[0]
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	ctx, cancel := callContext(c, c.Duration("transfer-timeout"))
	defer cancel()

	// The temporary file is created exclusively under a random name beside FILE (so the
	// rename stays in one file system): a file or symlink someone planted at a guessable
	// name like FILE.tmp is never opened, truncated or followed, and the file is private
	// (0600) from its first byte.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return cli.Exit(fmt.Sprintf("raftlock: backup save: %v", err), 1)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(backupFileMode); err != nil { // CreateTemp makes 0600 already; say so whatever the platform
		return cli.Exit(fmt.Sprintf("raftlock: backup save: %v", err), 1)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	pw := &progressWriter{w: bw, out: c.App.ErrWriter}
	if _, err := cl.Backup(ctx, pw); err != nil {
		return commandError(err)
	}
	if err := bw.Flush(); err != nil {
		return cli.Exit(fmt.Sprintf("raftlock: backup save: writing %s: %v", tmp, err), 1)
	}
	pw.done()
	if err := f.Sync(); err != nil {
		return cli.Exit(fmt.Sprintf("raftlock: backup save: fsync %s: %v", tmp, err), 1)
	}
	if err := f.Close(); err != nil {
		return cli.Exit(fmt.Sprintf("raftlock: backup save: closing %s: %v", tmp, err), 1)
	}
	// Verify what reached the disk, not what passed through memory.
	h, sum, err := readBackupFile(tmp)
	if err != nil {
		return cli.Exit(fmt.Sprintf("raftlock: backup save: the file written does not verify: %v", err), 1)
	}
	if err := os.Rename(tmp, path); err != nil {
		return cli.Exit(fmt.Sprintf("raftlock: backup save: %v", err), 1)
	}
	ok = true
	syncDir(filepath.Dir(path))
	if c.Bool("json") {
		return printJSON(c.App.Writer, inspectJSON(path, h, sum))
	}
	fmt.Fprintf(c.App.Writer, "saved %s: index %d, %d leases, %d locks, %d waiters, %d nodes, %d bytes\n",
		path, h.Index, sum.Leases, sum.Locks, sum.Waiters, sum.Nodes, pw.n)
	return nil
}

// progressWriter counts the bytes written and prints a line every progressStep.
type progressWriter struct {
	w       io.Writer
	out     io.Writer
	n       int64
	printed bool
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	before := p.n
	p.n += int64(n)
	if p.n/progressStep > before/progressStep {
		fmt.Fprintf(p.out, "backup: %d bytes written\n", p.n)
		p.printed = true
	}
	return n, err
}

// done prints the total when progress was shown.
func (p *progressWriter) done() {
	if p.printed {
		fmt.Fprintf(p.out, "backup: %d bytes written, done\n", p.n)
	}
}

// syncDir fsyncs a directory so that a rename in it survives a crash; best effort.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// readBackupFile reads and verifies a backup file: magic, header, size, checksum, and that
// its state decodes and agrees with the header.
func readBackupFile(path string) (api.BackupHeader, fsm.SnapshotSummary, error) {
	st, _, err := readBackupState(path)
	return st.h, st.sum, err
}

type backupFile struct {
	h   api.BackupHeader
	sum fsm.SnapshotSummary
}

func readBackupState(path string) (backupFile, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return backupFile{}, nil, err
	}
	defer f.Close()
	h, state, err := api.ReadBackup(f)
	if err != nil {
		return backupFile{h: h}, nil, fmt.Errorf("%s: %w", path, err)
	}
	sum, err := fsm.InspectSnapshot(state)
	if err != nil {
		return backupFile{h: h}, nil, fmt.Errorf("%s: the state does not decode: %w", path, err)
	}
	if sum.Index != h.Index || sum.ClusterTimeMs != h.ClusterTimeMs || sum.ProtocolVersion != h.ProtocolVersion {
		return backupFile{h: h, sum: sum}, nil, fmt.Errorf("%s: %w: the header (index %d, time %d, version %d) does not match the state (index %d, time %d, version %d)",
			path, api.ErrBadBackup, h.Index, h.ClusterTimeMs, h.ProtocolVersion, sum.Index, sum.ClusterTimeMs, sum.ProtocolVersion)
	}
	return backupFile{h: h, sum: sum}, state, nil
}

func backupInspectCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "inspect",
		Usage:     "verify a backup file and describe what it holds",
		ArgsUsage: "FILE",
		Description: `Checks the magic line, the header and the checksum, decodes the state, and prints its
index, cluster time, protocol version, counts and limits. Lease IDs are never printed.
Exits 1 when the file does not verify.`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print machine-readable JSON"}},
	}, runBackupInspect)
}

// inspectOutput is `backup inspect --json`'s answer (and `backup save --json`'s).
type inspectOutput struct {
	File            string     `json:"file"`
	Index           uint64     `json:"index"`
	ClusterTimeMs   int64      `json:"cluster_time_ms"`
	ProtocolVersion uint64     `json:"protocol_version"`
	SnapshotFormat  uint64     `json:"snapshot_format"`
	Size            int64      `json:"size"`
	SHA256          string     `json:"sha256"`
	Created         string     `json:"created"`
	FreedIndex      uint64     `json:"freed_index"`
	Leases          int        `json:"leases"`
	Locks           int        `json:"locks"`
	Waiters         int        `json:"waiters"`
	Nodes           int        `json:"nodes"`
	NodeVersions    int        `json:"node_versions"`
	Limits          api.Limits `json:"limits"`
}

func inspectJSON(path string, h api.BackupHeader, s fsm.SnapshotSummary) inspectOutput {
	return inspectOutput{File: path, Index: h.Index, ClusterTimeMs: h.ClusterTimeMs, ProtocolVersion: h.ProtocolVersion,
		SnapshotFormat: s.Format, Size: h.Size, SHA256: h.SHA256, Created: h.Created, FreedIndex: s.FreedIndex,
		Leases: s.Leases, Locks: s.Locks, Waiters: s.Waiters, Nodes: s.Nodes, NodeVersions: s.NodeVersions,
		Limits: api.LimitsOf(s.Limits.MaxLeases, s.Limits.MaxLocksPerLease, s.Limits.MaxWaitersPerLock, s.Limits.MaxLocks, s.Limits.MaxWaiters,
			api.Quotas{MaxLeases: s.Limits.PerIdentity.MaxLeases, MaxLocks: s.Limits.PerIdentity.MaxLocks, MaxWaiters: s.Limits.PerIdentity.MaxWaiters})}
}

func runBackupInspect(c *cli.Context, a parsedArgs) error {
	if len(a.args) != 1 || a.dash {
		return usageErrorf(c, "backup inspect takes one FILE")
	}
	h, sum, err := readBackupFile(a.args[0])
	if err != nil {
		return cli.Exit("raftlock: backup inspect: "+err.Error(), 1)
	}
	out := inspectJSON(a.args[0], h, sum)
	if c.Bool("json") {
		return printJSON(c.App.Writer, out)
	}
	limit := func(v uint64) string {
		if v == 0 {
			return "unlimited"
		}
		return fmt.Sprint(v)
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "file\t%s\n", out.File)
	fmt.Fprintf(w, "checksum\tok (sha256 %s)\n", out.SHA256)
	fmt.Fprintf(w, "size\t%d bytes\n", out.Size)
	fmt.Fprintf(w, "created\t%s (leader's wall clock, informational)\n", out.Created)
	fmt.Fprintf(w, "index\t%d\n", out.Index)
	fmt.Fprintf(w, "cluster time\t%s (%d ms)\n", fmtMs(out.ClusterTimeMs), out.ClusterTimeMs)
	fmt.Fprintf(w, "protocol version\t%d (snapshot format %d)\n", out.ProtocolVersion, out.SnapshotFormat)
	fmt.Fprintf(w, "leases\t%d\n", out.Leases)
	fmt.Fprintf(w, "locks\t%d\n", out.Locks)
	fmt.Fprintf(w, "waiters\t%d\n", out.Waiters)
	fmt.Fprintf(w, "nodes\t%d\n", out.Nodes)
	fmt.Fprintf(w, "limits\tmax_leases %s, max_locks_per_lease %s, max_waiters_per_lock %s\n",
		limit(out.Limits.MaxLeases), limit(out.Limits.MaxLocksPerLease), limit(out.Limits.MaxWaitersPerLock))
	if q := out.Limits.PerIdentity; out.Limits.MaxLocks != 0 || out.Limits.MaxWaiters != 0 || q != nil {
		if q == nil {
			q = &api.Quotas{}
		}
		fmt.Fprintf(w, "limits (version 5)	max_locks %s, max_waiters %s; per identity: max_leases %s, max_locks %s, max_waiters %s\n",
			limit(out.Limits.MaxLocks), limit(out.Limits.MaxWaiters), limit(q.MaxLeases), limit(q.MaxLocks), limit(q.MaxWaiters))
	}
	return w.Flush()
}

func backupRestoreCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "restore",
		Usage:     "prepare an empty data directory for a node of a cluster rebuilt from FILE (offline)",
		ArgsUsage: "FILE",
		Description: `Run on every node of the new cluster, with the same FILE, --bootstrap list and token
options, before ` + "`raftlock serve`" + ` starts any of them. It writes into --data-dir a Raft
snapshot at index R = max(backup index + --token-gap, --token-floor), term 1, with the
--bootstrap list as voters; serve then starts from it and the log continues at R+1.

Fencing tokens are Raft log indexes. The lost cluster may have issued tokens up to its last
log index L, after the backup was taken; every storage fenced by those tokens refuses any
token at or below the highest one it accepted. So R must exceed L: the gap (default one
billion) must exceed the number of entries the old cluster wrote after the backup, or
--token-floor must be above the highest token any storage accepted.

Every lease, lock and waiter in the backup is dropped: all locks start free, and their
old holders must take them again (with new tokens). Node registrations are dropped too
(the new nodes register themselves). Cluster time, protocol version and limits are kept.
A data directory that already holds Raft state is refused.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data-dir", Usage: "the new node's data directory (empty or absent)"},
			&cli.StringFlag{Name: "id", Usage: "this node's ID; must be in --bootstrap"},
			&cli.StringFlag{Name: "bootstrap", Usage: "the new cluster's voters: id=raftaddr,id=raftaddr,... (the same on every node)"},
			&cli.Uint64Flag{Name: "token-gap", Usage: "how far above the backup's index the new log starts; must exceed the entries the lost cluster wrote after the backup", Value: cluster.DefaultTokenGap},
			&cli.Uint64Flag{Name: "token-floor", Usage: "start the new log at least here: above the highest token any storage accepted"},
			&cli.BoolFlag{Name: "json", Usage: "print machine-readable JSON"},
		},
	}, runBackupRestore)
}

// restoreOutput is `backup restore --json`'s answer.
type restoreOutput struct {
	DataDir      string `json:"data_dir"`
	ID           string `json:"id"`
	BackupIndex  uint64 `json:"backup_index"`
	RestoreIndex uint64 `json:"restore_index"`
	TokenGap     uint64 `json:"token_gap"`
	TokenFloor   uint64 `json:"token_floor"`
	Voters       int    `json:"voters"`
	// Dropped counts what the backup held that the new cluster does not.
	DroppedLeases  int `json:"dropped_leases"`
	DroppedLocks   int `json:"dropped_locks"`
	DroppedWaiters int `json:"dropped_waiters"`
	DroppedNodes   int `json:"dropped_nodes"`
}

func runBackupRestore(c *cli.Context, a parsedArgs) error {
	if len(a.args) != 1 || a.dash {
		return usageErrorf(c, "backup restore takes one FILE")
	}
	dir, id := c.String("data-dir"), c.String("id")
	if dir == "" || id == "" || c.String("bootstrap") == "" {
		return usageErrorf(c, "--data-dir, --id and --bootstrap are required")
	}
	peers, err := parseBootstrap(c.String("bootstrap"))
	if err != nil {
		return usageErrorf(c, "%v", err)
	}
	if !slices.ContainsFunc(peers, func(p cluster.Peer) bool { return p.ID == id }) {
		return usageErrorf(c, "--id %q is not in the --bootstrap list", id)
	}
	st, state, err := readBackupState(a.args[0])
	if err != nil {
		return cli.Exit("raftlock: backup restore: "+err.Error(), 1)
	}
	gap, floor := c.Uint64("token-gap"), c.Uint64("token-floor")
	r, err := cluster.RestoreIndex(st.h.Index, gap, floor)
	if err != nil {
		return usageErrorf(c, "%v", err)
	}
	prepared, err := fsm.PrepareRestore(state, r)
	if err != nil {
		return cli.Exit("raftlock: backup restore: "+err.Error(), 1)
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "raftlock", Level: hclog.Warn, Output: c.App.ErrWriter})
	if err := cluster.RestoreDataDir(dir, prepared, r, peers, logger); err != nil {
		if errors.Is(err, cluster.ErrInvalidMember) {
			return usageErrorf(c, "--bootstrap: %v", err)
		}
		return cli.Exit("raftlock: backup restore: "+err.Error(), 1)
	}
	out := restoreOutput{DataDir: dir, ID: id, BackupIndex: st.h.Index, RestoreIndex: r, TokenGap: gap, TokenFloor: floor, Voters: len(peers),
		DroppedLeases: st.sum.Leases, DroppedLocks: st.sum.Locks, DroppedWaiters: st.sum.Waiters, DroppedNodes: st.sum.Nodes}
	if c.Bool("json") {
		return printJSON(c.App.Writer, out)
	}
	fmt.Fprintf(c.App.Writer, "restored %s for %s: backup index %d, new log starts after index %d (gap %d, floor %d); every token from now on is above %d\n",
		dir, id, st.h.Index, r, gap, floor, r)
	fmt.Fprintf(c.App.Writer, "dropped %d leases, %d locks, %d waiters, %d node registrations; kept cluster time, protocol version %d and limits\n",
		st.sum.Leases, st.sum.Locks, st.sum.Waiters, st.sum.Nodes, st.h.ProtocolVersion)
	fmt.Fprintf(c.App.Writer, "next: restore the other nodes the same way, then start each with raftlock serve --id %s --data-dir %s ...\n", id, dir)
	return nil
}
