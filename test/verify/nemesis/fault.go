package nemesis

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"time"
)

// Kind is a kind of fault.
type Kind int

// The faults. Each is injected at the start of a round and healed after Fault.Hold.
const (
	// Calm injects nothing: a round of the workload alone.
	Calm Kind = iota
	// KillLeader kills the leader with SIGKILL and restarts it at heal.
	KillLeader
	// KillFollower kills a follower with SIGKILL and restarts it at heal.
	KillFollower
	// PauseLeader stops the leader with SIGSTOP (a server GC pause longer than the election
	// timeout) and continues it at heal.
	PauseLeader
	// PauseFollower stops a follower with SIGSTOP and continues it at heal.
	PauseFollower
	// PartitionLeader cuts the leader off from every other node, both ways.
	PartitionLeader
	// PartitionFollower cuts one follower off from every other node, both ways.
	PartitionFollower
	// PartitionSplit splits the cluster in two with the leader on the minority side: 2/1 on
	// three nodes (the leader and nobody, i.e. PartitionLeader), 3/2 on five (the leader and
	// one follower against three).
	PartitionSplit
	// OneWayLeaderDeaf blocks everything the followers send to the leader (votes, answers),
	// while the leader's own messages still arrive.
	OneWayLeaderDeaf
	// OneWayLeaderMute blocks everything the leader sends to the followers.
	OneWayLeaderMute
	// DelayLinks delays every Raft message by a fraction of the election timeout.
	DelayLinks
	// RestartAll kills every node with SIGKILL and restarts them all at heal.
	RestartAll
	// TransferLoop moves leadership again and again by stopping the leader gracefully
	// (SIGTERM: the node hands leadership to another voter before it exits) and restarting it.
	TransferLoop
	// SnapshotInstall cuts a follower off for long enough that the leader snapshots and
	// compacts its log past the follower (run the cluster with a small --snapshot-threshold
	// and --trailing-logs), so that at heal the follower must install a snapshot.
	SnapshotInstall
	// RemoveAdd removes a follower from the configuration and adds it back at heal.
	RemoveAdd
	numKinds
)

var kindNames = [...]string{"calm", "kill-leader", "kill-follower", "pause-leader", "pause-follower",
	"partition-leader", "partition-follower", "partition-split", "oneway-leader-deaf", "oneway-leader-mute",
	"delay-links", "restart-all", "transfer-loop", "snapshot-install", "remove-add"}

// String returns the kind's name as shown in the campaign table.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// AllKinds lists every fault kind except Calm, in table order.
func AllKinds() []Kind {
	var out []Kind
	for k := Calm + 1; k < numKinds; k++ {
		out = append(out, k)
	}
	return out
}

// ParseKinds parses a comma-separated list of kind names ("" or "all" means AllKinds).
func ParseKinds(s string) ([]Kind, error) {
	if s == "" || s == "all" {
		return AllKinds(), nil
	}
	var out []Kind
	for _, name := range strings.Split(s, ",") {
		found := false
		for k, n := range kindNames {
			if n == strings.TrimSpace(name) {
				out = append(out, Kind(k))
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("nemesis: unknown fault kind %q (known: %s)", name, strings.Join(kindNames[:], ", "))
		}
	}
	return out, nil
}

// Fault is one scheduled fault.
type Fault struct {
	Kind Kind
	// Hold is how long the fault lasts before it is healed.
	Hold time.Duration
	// Pick chooses among candidates (which follower) deterministically.
	Pick int
}

func (f Fault) String() string { return fmt.Sprintf("%s for %v (pick %d)", f.Kind, f.Hold, f.Pick) }

// Plan returns rounds faults drawn from kinds with rng seeded by seed: every kind in turn
// (shuffled), so that a short plan still covers each kind once. Holds are drawn between
// minHold and maxHold, except SnapshotInstall, which holds at least snapshotHold.
func Plan(seed int64, rounds int, kinds []Kind, minHold, maxHold, snapshotHold time.Duration) []Fault {
	rng := rand.New(rand.NewSource(seed))
	var out []Fault
	var deck []Kind
	for len(out) < rounds {
		if len(deck) == 0 {
			deck = append(deck, kinds...)
			rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		k := deck[0]
		deck = deck[1:]
		hold := minHold
		if maxHold > minHold {
			hold += time.Duration(rng.Int63n(int64(maxHold - minHold)))
		}
		if k == SnapshotInstall && hold < snapshotHold {
			hold = snapshotHold
		}
		out = append(out, Fault{Kind: k, Hold: hold, Pick: rng.Intn(1 << 20)})
	}
	return out
}

// Target is the cluster the nemesis acts on. Node indexes are 0-based.
type Target interface {
	// N is the number of nodes.
	N() int
	// Leader returns the index of the node that leads, or -1.
	Leader() int
	// Kill kills node i with SIGKILL and waits until it is gone. Like every method here
	// that acts on a node, it returns an error when it could not (the node was not
	// running, the signal failed): a fault that did not happen must not be counted.
	Kill(i int) error
	// Start starts node i again from its data directory.
	Start(i int) error
	// Pause stops node i with SIGSTOP; Resume continues it with SIGCONT.
	Pause(i int) error
	Resume(i int) error
	// Terminate stops node i with SIGTERM and waits until it has exited.
	Terminate(i int) error
	// RemoveNode removes node i from the Raft configuration; AddNode adds it back.
	RemoveNode(i int) error
	AddNode(i int) error
	// ElectionTimeout is the nodes' election timeout.
	ElectionTimeout() time.Duration
}

// Injected is a fault in force.
type Injected struct {
	Fault Fault
	// Nodes are the nodes the fault acts on (the leader or follower it chose).
	Nodes []int
	heal  func() error
}

// Heal ends the fault (restarts, continues, reconnects) and returns the first error.
func (in *Injected) Heal() error {
	if in.heal == nil {
		return nil
	}
	h := in.heal
	in.heal = nil
	return h()
}

// Inject starts fault f on t, using nt for the network faults.
func Inject(t Target, nt *Net, f Fault) (*Injected, error) {
	n := t.N()
	leader := t.Leader()
	if leader < 0 && f.Kind != Calm && f.Kind != RestartAll && f.Kind != DelayLinks {
		return nil, fmt.Errorf("nemesis: %s needs a leader and none is known", f.Kind)
	}
	var followers []int
	for i := 0; i < n; i++ {
		if i != leader {
			followers = append(followers, i)
		}
	}
	follower := -1
	if len(followers) > 0 {
		follower = followers[f.Pick%len(followers)]
	}
	in := &Injected{Fault: f}
	switch f.Kind {
	case Calm:
	case KillLeader, KillFollower:
		v := leader
		if f.Kind == KillFollower {
			v = follower
		}
		in.Nodes = []int{v}
		if err := t.Kill(v); err != nil {
			return nil, err
		}
		in.heal = func() error { return t.Start(v) }
	case PauseLeader, PauseFollower:
		v := leader
		if f.Kind == PauseFollower {
			v = follower
		}
		in.Nodes = []int{v}
		if err := t.Pause(v); err != nil {
			return nil, err
		}
		in.heal = func() error { return t.Resume(v) }
	case PartitionLeader, PartitionFollower, SnapshotInstall:
		v := leader
		if f.Kind != PartitionLeader {
			v = follower
		}
		in.Nodes = []int{v}
		if err := nt.Isolate([]int{v}, others(n, v)); err != nil {
			return nil, err
		}
		in.heal = func() error { nt.Heal(); return nil }
	case PartitionSplit:
		minority := []int{leader}
		if n >= 5 {
			minority = append(minority, follower)
		}
		in.Nodes = minority
		var majority []int
		for i := 0; i < n; i++ {
			if !contains(minority, i) {
				majority = append(majority, i)
			}
		}
		if err := nt.Isolate(minority, majority); err != nil {
			return nil, err
		}
		in.heal = func() error { nt.Heal(); return nil }
	case OneWayLeaderDeaf, OneWayLeaderMute:
		in.Nodes = []int{leader}
		for _, j := range followers {
			from, to := j, leader
			if f.Kind == OneWayLeaderMute {
				from, to = leader, j
			}
			if err := nt.Block(from, to); err != nil {
				nt.Heal()
				return nil, err
			}
		}
		in.heal = func() error { nt.Heal(); return nil }
	case DelayLinks:
		d := t.ElectionTimeout() / 5
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if i != j {
					if err := nt.Delay(i, j, d); err != nil {
						nt.Heal()
						return nil, err
					}
				}
			}
		}
		in.heal = func() error { nt.Heal(); return nil }
	case RestartAll:
		for i := 0; i < n; i++ {
			in.Nodes = append(in.Nodes, i)
			if err := t.Kill(i); err != nil {
				for j := 0; j < i; j++ {
					_ = t.Start(j)
				}
				return nil, err
			}
		}
		in.heal = func() error {
			var first error
			for i := 0; i < n; i++ {
				if err := t.Start(i); err != nil && first == nil {
					first = err
				}
			}
			return first
		}
	case TransferLoop:
		// The loop runs during the hold; the caller heals at once afterwards.
		deadline := time.Now().Add(f.Hold)
		for k := 0; k < 10 && time.Now().Before(deadline); k++ {
			l := -1
			for wait := time.Now().Add(5 * t.ElectionTimeout()); l < 0 && time.Now().Before(wait); l = t.Leader() {
				time.Sleep(20 * time.Millisecond)
			}
			if l < 0 && k == 0 {
				return in, fmt.Errorf("nemesis: %s: no leader to stop within %v", f.Kind, 5*t.ElectionTimeout())
			}
			if l < 0 {
				break // at least one transfer happened
			}
			in.Nodes = append(in.Nodes, l)
			if err := t.Terminate(l); err != nil {
				return in, err
			}
			if err := t.Start(l); err != nil {
				return in, err
			}
			time.Sleep(2 * t.ElectionTimeout())
		}
	case RemoveAdd:
		in.Nodes = []int{follower}
		if err := t.RemoveNode(follower); err != nil {
			return in, err
		}
		in.heal = func() error { return t.AddNode(follower) }
	default:
		return nil, fmt.Errorf("nemesis: unknown fault %v", f.Kind)
	}
	sort.Ints(in.Nodes)
	return in, nil
}

func others(n, v int) []int {
	var out []int
	for i := 0; i < n; i++ {
		if i != v {
			out = append(out, i)
		}
	}
	return out
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
