package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"strings"
	"testing"
)

// updatePins rewrites the pinned bytes below from the code under test. Run it only when a
// change of bytes is meant (a new command type, a new snapshot version), never to make a
// failing pin pass: old bytes must never move, since old logs and snapshots hold them.
var updatePins = flag.Bool("update-pins", false, "rewrite testdata/commands.golden and the snapshot pins from the code under test")

const commandPinsPath = "testdata/commands.golden"

// pinnedCommands is one command of every type, with every field the type encodes set, and
// the variants whose bytes differ (a lease created in the same entry, a creator, shared
// mode, options). Each is pinned by name in commandPinsPath. Add a row for a new type;
// never change a row (add one instead).
func pinnedCommands() []struct {
	name string
	c    Command
} {
	id := LeaseID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}
	id2 := LeaseID{0xa0, 15: 0x0b}
	var hash [32]byte
	for i := range hash {
		hash[i] = byte(i * 7)
	}
	acq := func(t Type) Command {
		return Command{Type: t, Now: 123456, Lease: id, Name: "accounts/A", Wait: 30000, Owner: "worker-1"}
	}
	withLease := func(c Command, creator string) Command {
		c.NewLease, c.TTL, c.Creator = true, 10000, creator
		return c
	}
	type row = struct {
		name string
		c    Command
	}
	rows := []row{
		{"create_lease", Command{Type: TypeCreateLease, Now: 1, Lease: id, TTL: 10000}},
		{"create_lease_creator", Command{Type: TypeCreateLease, Now: 1, Lease: id, TTL: 10000, Creator: "acc-1"}},
		{"renew", Command{Type: TypeRenew, Now: 2, Leases: []LeaseID{id, id2}}},
		{"renew_none", Command{Type: TypeRenew, Now: 2}},
		{"revoke", Command{Type: TypeRevoke, Now: 3, Lease: id}},
		{"acquire", acq(TypeAcquire)},
		{"acquire_new_lease", withLease(acq(TypeAcquire), "")},
		{"acquire_new_lease_creator", withLease(acq(TypeAcquire), "acc-1")},
		{"release", Command{Type: TypeRelease, Now: 5, Lease: id, Name: "accounts/A", Token: 987654321}},
		{"tick", Command{Type: TypeTick, Now: 1 << 40}},
		{"register_node", Command{Type: TypeRegisterNode, Now: 7, Node: NodeInfo{ID: "n1", RaftAddr: "127.0.0.1:8001", HTTPAddr: "127.0.0.1:7001"}}},
		{"dequeue", Command{Type: TypeDequeue, Now: 8, Lease: id, Name: "z/\u00e9"}},
		{"remove_node", Command{Type: TypeRemoveNode, Now: 9, Node: NodeInfo{ID: "n3"}}},
		{"set_version", Command{Type: TypeSetVersion, Now: 10, Version: 3}},
		{"node_version", Command{Type: TypeNodeVersion, Now: 11, Node: NodeInfo{ID: "n2"}, Version: 3}},
		{"set_limits", Command{Type: TypeSetLimits, Now: 12, Limits: Limits{MaxLeases: 100000, MaxLocksPerLease: 64, MaxWaitersPerLock: 1000}}},
		{"acl_bootstrap", Command{Type: TypeACLBootstrap, Now: 13, ACL: ACLCommand{Accessor: "acc-mgmt", SecretHash: hash}}},
		{"acl_set_policy", Command{Type: TypeACLSetPolicy, Now: 14, ACL: ACLCommand{Policy: "jobs", Description: "the jobs team",
			Rules: []ACLRule{{Prefix: "jobs/", Access: AccessLock}, {Prefix: "jobs/secret/", Access: AccessDeny}, {Prefix: "", Access: AccessRead}}}}},
		{"acl_delete_policy", Command{Type: TypeACLDeletePolicy, Now: 15, ACL: ACLCommand{Policy: "jobs"}}},
		{"acl_set_token", Command{Type: TypeACLSetToken, Now: 16, ACL: ACLCommand{Accessor: "acc-1", SecretHash: hash, Description: "ci", Policies: []string{"jobs", "read"}}}},
		{"acl_delete_token", Command{Type: TypeACLDeleteToken, Now: 17, ACL: ACLCommand{Accessor: "acc-1"}}},
		{"acquire_shared", acq(TypeAcquireShared)},
		{"acquire_shared_new_lease_creator", withLease(acq(TypeAcquireShared), "acc-1")},
		{"sem_acquire", func() Command { c := acq(TypeSemAcquire); c.Limit = 3; return c }()},
		{"sem_acquire_new_lease_creator", func() Command { c := withLease(acq(TypeSemAcquire), "acc-1"); c.Limit = 3; return c }()},
		{"sem_release", Command{Type: TypeSemRelease, Now: 20, Lease: id, Name: "pool", Token: 44}},
		{"sem_dequeue", Command{Type: TypeSemDequeue, Now: 21, Lease: id, Name: "pool"}},
		{"campaign", func() Command { c := acq(TypeCampaign); c.Value = "http://10.0.0.1:80"; return c }()},
		{"campaign_proclaim", func() Command { c := acq(TypeCampaign); c.Value = "v2"; c.Token = 77; return c }()},
		{"campaign_new_lease_creator", func() Command { c := withLease(acq(TypeCampaign), "acc-1"); c.Value = "v"; return c }()},
		{"resign", Command{Type: TypeResign, Now: 23, Lease: id, Name: "leader", Token: 78}},
		{"election_dequeue", Command{Type: TypeElectionDequeue, Now: 24, Lease: id, Name: "leader"}},
		{"acquire_ex", func() Command { c := acq(TypeAcquireEx); c.MaxHold, c.LockDelay = 60000, 5000; return c }()},
		{"acquire_ex_shared", func() Command { c := acq(TypeAcquireEx); c.Shared, c.MaxHold = true, 1500; return c }()},
		{"acquire_ex_new_lease_creator", func() Command { c := withLease(acq(TypeAcquireEx), "acc-1"); c.LockDelay = 900; return c }()},
		{"lockset", func() Command {
			c := acq(TypeLockSet)
			c.Name, c.Names, c.MaxHold = "", []string{"a", "accounts/A", "b"}, 30000
			return c
		}()},
		{"lockset_shared_new_lease_creator", func() Command {
			c := withLease(acq(TypeLockSet), "acc-1")
			c.Name, c.Names, c.Shared = "", []string{"x", "y"}, true
			return c
		}()},
		{"lockset_release", Command{Type: TypeLockSetRelease, Now: 27, Lease: id, Names: []string{"a", "b"}, Tokens: []uint64{100, 1 << 33}}},
		{"sem_acquire_ex", func() Command { c := acq(TypeSemAcquireEx); c.Limit, c.MaxHold = 2, 2500; return c }()},
		{"sem_acquire_ex_new_lease_creator", func() Command {
			c := withLease(acq(TypeSemAcquireEx), "acc-1")
			c.Limit = 2
			return c
		}()},
		// Protocol version 4: every command that uses a lease carries its caller.
		{"v4_renew_callers", Command{Type: TypeRenew, Now: 2, Leases: []LeaseID{id, id2, id}, Callers: []string{"acc-1", "anonymous", "acc-1"}}},
		{"v4_acquire_caller", func() Command { c := acq(TypeAcquire); c.Creator = "acc-1"; return c }()},
		{"v4_release_caller", Command{Type: TypeRelease, Now: 5, Lease: id, Name: "accounts/A", Token: 9, Creator: "acc-1"}},
		{"v4_revoke_caller", Command{Type: TypeRevoke, Now: 3, Lease: id, Creator: "anonymous"}},
		{"v4_dequeue_caller", Command{Type: TypeDequeue, Now: 8, Lease: id, Name: "a", Creator: "acc-1"}},
		{"v4_lockset_release_caller", Command{Type: TypeLockSetRelease, Now: 27, Lease: id, Names: []string{"a"}, Tokens: []uint64{4}, Creator: "acc-1"}},
		{"v4_sem_release_caller", Command{Type: TypeSemRelease, Now: 20, Lease: id, Name: "pool", Token: 44, Creator: "acc-1"}},
		{"v4_resign_caller", Command{Type: TypeResign, Now: 23, Lease: id, Name: "leader", Token: 78, Creator: "acc-1"}},
		// Protocol version 5: the limits of version 5, and quotas on policies and tokens.
		{"v5_set_limits", Command{Type: TypeSetLimits, Now: 12, Limits: Limits{MaxLeases: 100000, MaxLocksPerLease: 64, MaxWaitersPerLock: 1000,
			MaxLocks: 2000000, MaxWaiters: 1000000, PerIdentity: Quotas{MaxLeases: 10000, MaxLocks: 50000, MaxWaiters: 10000}}}},
		{"v5_set_limits_identity_only", Command{Type: TypeSetLimits, Now: 12, Limits: Limits{PerIdentity: Quotas{MaxLocks: 5}}}},
		{"v5_acl_set_policy_quotas", Command{Type: TypeACLSetPolicy, Now: 14, ACL: ACLCommand{Policy: "jobs", Rules: []ACLRule{{Prefix: "jobs/", Access: AccessLock}},
			Quotas: Quotas{MaxLeases: 100, MaxLocks: 1000, MaxWaiters: 50}}}},
		{"v5_acl_set_token_quotas", Command{Type: TypeACLSetToken, Now: 16, ACL: ACLCommand{Accessor: "acc-1", SecretHash: hash, Policies: []string{"jobs"},
			Quotas: Quotas{MaxLocks: 7}}}},
	}
	return rows
}

// readPins reads a pin file of "name hex" lines.
func readPins(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (write it with -update-pins)", err)
	}
	defer f.Close()
	pins := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, hx, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s: malformed line %q", path, line)
		}
		pins[name] = hx
	}
	return pins
}

// TestPins_EveryCommandEncodesAsPinned: every command type's bytes are those pinned in
// testdata/commands.golden, and decode back to the same command. A change that moves one
// byte of an existing command fails here.
func TestPins_EveryCommandEncodesAsPinned(t *testing.T) {
	rows := pinnedCommands()
	if *updatePins {
		var b strings.Builder
		b.WriteString("# One command of every type, as Command.Encode writes it (fsm/golden_pins_test.go).\n# Old bytes never change: add lines, never edit one.\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "%s %s\n", r.name, hex.EncodeToString(r.c.Encode(nil)))
		}
		if err := os.WriteFile(commandPinsPath, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pins := readPins(t, commandPinsPath)
	for _, r := range rows {
		want, ok := pins[r.name]
		if !ok {
			t.Errorf("%s: no pin in %s", r.name, commandPinsPath)
			continue
		}
		got := r.c.Encode(nil)
		if hex.EncodeToString(got) != want {
			t.Errorf("%s encodes as\n  %x\nthe pin is\n  %s", r.name, got, want)
			continue
		}
		dec, err := DecodeCommand(got)
		if err != nil {
			t.Errorf("%s: decoding its pinned bytes: %v", r.name, err)
			continue
		}
		if !reflect.DeepEqual(normalized(dec), normalized(r.c)) {
			t.Errorf("%s decodes as %+v, was %+v", r.name, dec, r.c)
		}
	}
	if len(pins) != len(rows) {
		t.Errorf("%s has %d pins for %d commands", commandPinsPath, len(pins), len(rows))
	}
}

// normalized makes empty and nil slices alike for comparison.
func normalized(c Command) Command {
	if len(c.Leases) == 0 {
		c.Leases = nil
	}
	if len(c.Names) == 0 {
		c.Names = nil
	}
	if len(c.Tokens) == 0 {
		c.Tokens = nil
	}
	if len(c.Callers) == 0 {
		c.Callers = nil
	}
	if len(c.ACL.Rules) == 0 {
		c.ACL.Rules = nil
	}
	if len(c.ACL.Policies) == 0 {
		c.ACL.Policies = nil
	}
	return c
}

// TestPins_EveryCommandTypeIsPinned: a command type in the registry without a pinned row
// fails, so the next command cannot be added without pinning its bytes.
func TestPins_EveryCommandTypeIsPinned(t *testing.T) {
	pinned := map[Type]bool{}
	for _, r := range pinnedCommands() {
		pinned[r.c.Type&^FlagSkippable] = true
	}
	for i, row := range commands {
		if row.apply != nil && !pinned[Type(i)] {
			t.Errorf("command type %d (%s) has no row in pinnedCommands", i, row.name)
		}
	}
}

// snapshotPinLog is a fixed log for a snapshot pin at a protocol version: the first
// entries bootstrap ACLs, set limits and create leases with a creator (from version 3 on),
// then random commands of the version's generators follow. It is generated once, written
// to testdata with the snapshots it leads to, and read back from there: the pin does not
// depend on the generators staying the same.
func snapshotPinLog(version uint64, steps int) [][]byte {
	var hash [32]byte
	hash[0] = 1
	f := NewWithOptions(Options{sweepBudget: pinSweepBudget})
	var log [][]byte
	index := uint64(0)
	add := func(c Command) {
		index++
		f.ApplyCommand(index, &c)
		log = append(log, c.Encode(nil))
	}
	add(Command{Type: TypeSetVersion, Now: 1, Version: version})
	add(Command{Type: TypeACLBootstrap, Now: 2, ACL: ACLCommand{Accessor: "acc-mgmt", SecretHash: hash}})
	add(Command{Type: TypeACLSetPolicy, Now: 3, ACL: ACLCommand{Policy: "jobs", Rules: []ACLRule{{Prefix: "jobs/", Access: AccessLock}}}})
	add(Command{Type: TypeACLSetToken, Now: 4, ACL: ACLCommand{Accessor: "acc-1", SecretHash: hash, Policies: []string{"jobs"}}})
	add(Command{Type: TypeSetLimits, Now: 5, Limits: Limits{MaxLeases: 1000, MaxLocksPerLease: 16, MaxWaitersPerLock: 8}})
	add(Command{Type: TypeRegisterNode, Now: 6, Node: NodeInfo{ID: "n1", RaftAddr: "127.0.0.1:8001", HTTPAddr: "127.0.0.1:7001"}})
	if version >= 5 {
		// Quotas from every source, each binding in the random commands below: the
		// generators' leases carry no creator, so the cluster-wide limits bind them.
		add(Command{Type: TypeACLSetPolicy, Now: 6, ACL: ACLCommand{Policy: "jobs", Rules: []ACLRule{{Prefix: "jobs/", Access: AccessLock}}, Quotas: Quotas{MaxLocks: 3}}})
		add(Command{Type: TypeACLSetToken, Now: 6, ACL: ACLCommand{Accessor: "acc-1", SecretHash: hash, Policies: []string{"jobs"}, Quotas: Quotas{MaxWaiters: 2}}})
		add(Command{Type: TypeSetLimits, Now: 6, Limits: Limits{MaxLeases: 1000, MaxLocksPerLease: 16, MaxWaitersPerLock: 8, MaxLocks: 9, MaxWaiters: 6,
			PerIdentity: Quotas{MaxLeases: 2, MaxLocks: 2, MaxWaiters: 1}}})
	}
	creator := ""
	if version >= 3 {
		creator = "acc-1"
	}
	add(Command{Type: TypeCreateLease, Now: 7, Lease: LeaseID{0xEE, 15: 1}, TTL: 1 << 30, Creator: creator})
	if version >= 5 {
		// The token's own quotas bind: its fourth lock (its policy's max_locks 3) and its
		// third lease (the default max_leases 2) are refused.
		for _, name := range []string{"q/1", "q/2", "q/3", "q/4"} {
			add(Command{Type: TypeAcquire, Now: 8, Lease: LeaseID{0xEE, 15: 1}, Name: name, Owner: "acc", Creator: "acc-1"})
		}
		add(Command{Type: TypeCreateLease, Now: 8, Lease: LeaseID{0xEE, 15: 2}, TTL: 1 << 30, Creator: "acc-1"})
		add(Command{Type: TypeCreateLease, Now: 8, Lease: LeaseID{0xEE, 15: 3}, TTL: 1 << 30, Creator: "acc-1"})
	}
	if version >= 6 {
		// A revoke and a token's deletion that the budget of 3 carries over entries, just
		// before the first snapshot pin (entry 100), which so holds a revoked lease and a
		// token being revoked in the middle of their sweep.
		add(Command{Type: TypeACLSetToken, Now: 9, ACL: ACLCommand{Accessor: "acc-2", SecretHash: [32]byte{2}, Policies: []string{"jobs"}, Quotas: Quotas{MaxLocks: 100}}})
		for i, id := range []LeaseID{{0xEE, 15: 4}, {0xEE, 15: 5}} {
			add(Command{Type: TypeCreateLease, Now: 9, Lease: id, TTL: 1 << 30, Creator: "acc-2"})
			for j := 0; j < 10; j++ {
				add(Command{Type: TypeAcquire, Now: 9, Lease: id, Name: fmt.Sprintf("r/%d/%d", i, j), Owner: "acc", Creator: "acc-2"})
			}
		}
		for len(log) < 97 {
			add(Command{Type: TypeTick, Now: 9})
		}
		add(Command{Type: TypeRevoke, Now: 10, Lease: LeaseID{0xEE, 15: 4}, Creator: "acc-2"})
		add(Command{Type: TypeACLDeleteToken, Now: 10, ACL: ACLCommand{Accessor: "acc-2"}})
		if f.s.revoking == nil || f.s.leases[LeaseID{0xEE, 15: 4}] == nil {
			panic("the pinned log's sweep is over before its first snapshot")
		}
	}
	pg := newPGen(int64(version)*1000+7, f)
	pg.first = false
	pg.now = 10
	v3 := newV3Gen(int64(version)*1000 + 9)
	rng := rand.New(rand.NewSource(int64(version)))
	for i := 0; i < steps; i++ {
		var c Command
		if version >= 3 && rng.Intn(2) == 0 {
			v3.now = max(v3.now, pg.now)
			c = v3.next(f)
			pg.now = c.Now
		} else {
			c = pg.next()
			v3.now = max(v3.now, c.Now)
		}
		add(c)
	}
	return log
}

// pinSweepBudget is the sweep's budget of the state machines that make and read the pins:
// small, so that version 6's pins hold states in the middle of a sweep (revoked leases,
// tokens being revoked) as well.
const pinSweepBudget = 3

// pinSnapshots applies log to a fresh state machine and returns its snapshots every 100
// entries, each prefixed with its length as a uvarint.
func pinSnapshots(t *testing.T, log [][]byte) []byte {
	t.Helper()
	f := NewWithOptions(Options{sweepBudget: pinSweepBudget})
	var out []byte
	for i, e := range log {
		c, err := DecodeCommand(e)
		if err != nil {
			t.Fatalf("entry %d of the pinned log: %v", i+1, err)
		}
		f.ApplyCommand(uint64(i+1), &c)
		if (i+1)%100 == 0 || i == len(log)-1 {
			snap := f.SnapshotBytes()
			out = binary.AppendUvarint(out, uint64(len(snap)))
			out = append(out, snap...)
		}
	}
	return out
}

// joinEntries and splitEntries store a log as uvarint-length-prefixed entries.
func joinEntries(log [][]byte) []byte {
	var out []byte
	for _, e := range log {
		out = binary.AppendUvarint(out, uint64(len(e)))
		out = append(out, e...)
	}
	return out
}

func splitEntries(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var log [][]byte
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			t.Fatalf("corrupt pinned log")
		}
		log = append(log, b[k:k+int(n)])
		b = b[k+int(n):]
	}
	return log
}

// TestPins_SnapshotsOfEveryVersion: the pinned log of each protocol version (2 to 7; 1
// is TestSnapshot_V1MatchesOriginalCode's) applied to a fresh state machine gives the
// pinned snapshots, byte for byte, every 100 entries; and each pinned snapshot restores to
// a state whose snapshot is the same bytes. -update-pins writes the pins of a version that
// has none yet, never those that exist.
func TestPins_SnapshotsOfEveryVersion(t *testing.T) {
	for _, v := range []uint64{2, 3, 4, 5, 6, 7} {
		logPath := fmt.Sprintf("testdata/log-v%d.golden", v)
		snapPath := fmt.Sprintf("testdata/snapshots-v%d.golden", v)
		if _, err := os.Stat(logPath); *updatePins && os.IsNotExist(err) {
			log := snapshotPinLog(v, 1500)
			if err := os.WriteFile(logPath, joinEntries(log), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(snapPath, pinSnapshots(t, log), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		raw, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatalf("%v (write it with -update-pins)", err)
		}
		want, err := os.ReadFile(snapPath)
		if err != nil {
			t.Fatal(err)
		}
		got := pinSnapshots(t, splitEntries(t, raw))
		if !bytes.Equal(got, want) {
			t.Fatalf("version %d: the snapshots of the pinned log differ from the pins (%d vs %d bytes)", v, len(got), len(want))
		}
		for rest := want; len(rest) > 0; {
			n, k := binary.Uvarint(rest)
			snap := rest[k : k+int(n)]
			rest = rest[k+int(n):]
			f := NewWithOptions(Options{sweepBudget: pinSweepBudget})
			if err := f.Restore(nopReader(snap)); err != nil {
				t.Fatalf("version %d: restoring a pinned snapshot: %v", v, err)
			}
			if again := f.SnapshotBytes(); !bytes.Equal(again, snap) {
				t.Fatalf("version %d: a restored pinned snapshot snapshots to other bytes", v)
			}
		}
	}
}
