package raft

// raftlock: tests of candidacy.go; not part of hashicorp/raft v1.7.3. See RAFTLOCK.md.

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// A follower whose CandidacyCheck says no never becomes a candidate, however often its
// heartbeat timeout passes, and stands as soon as the check lets it.
func TestCandidacyCheck_AFollowerThatMayNotStandStaysAFollower(t *testing.T) {
	var blocked [3]atomic.Bool
	var asked [3]atomic.Int64
	for i := range blocked {
		blocked[i].Store(true)
	}
	errBlocked := errors.New("this node's log store cannot write")
	c := makePendingCluster(t, func(i int, conf *Config) {
		conf.CandidacyCheck = func() error {
			asked[i].Add(1)
			if blocked[i].Load() {
				return errBlocked
			}
			return nil
		}
	})
	var mu sync.Mutex
	var stood []string
	for i, r := range c.rafts {
		ch := make(chan Observation, 64)
		r.RegisterObserver(NewObserver(ch, false, func(o *Observation) bool {
			s, ok := o.Data.(RaftState)
			return ok && s != Follower
		}))
		go func(i int) {
			for o := range ch {
				mu.Lock()
				stood = append(stood, fmt.Sprintf("node %d became %v", i, o.Data))
				mu.Unlock()
			}
		}(i)
	}

	// Every node's heartbeat timeout passes several times; none stands.
	c.waitFor(t, "every node to be asked three times", func() bool {
		for i := range asked {
			if asked[i].Load() < 3 {
				return false
			}
		}
		return true
	})
	for i, r := range c.rafts {
		if s := r.State(); s != Follower {
			t.Fatalf("node %d is %v although it may not stand", i, s)
		}
	}
	mu.Lock()
	if len(stood) > 0 {
		t.Fatalf("a node stood although none may: %v", stood)
	}
	mu.Unlock()

	// Node 1 may stand: it is the only one that can lead.
	blocked[1].Store(false)
	if li, _ := c.leader(t); li != 1 {
		t.Fatalf("node %d leads; only node 1 may stand", li)
	}
}

// A node that may not stand refuses a leadership transfer: the transfer fails and the
// node never becomes a candidate.
func TestCandidacyCheck_ANodeThatMayNotStandRefusesALeadershipTransfer(t *testing.T) {
	var blocked atomic.Bool
	blocked.Store(true)
	const target = 2
	c := makePendingCluster(t, func(i int, conf *Config) {
		if i == target {
			conf.CandidacyCheck = func() error {
				if blocked.Load() {
					return errors.New("this node's log store cannot write")
				}
				return nil
			}
		}
	})
	var stood atomic.Bool
	ch := make(chan Observation, 64)
	c.rafts[target].RegisterObserver(NewObserver(ch, false, func(o *Observation) bool {
		s, ok := o.Data.(RaftState)
		return ok && s != Follower
	}))
	go func() {
		for range ch {
			stood.Store(true)
		}
	}()
	li, leader := c.leader(t)
	if li == target {
		t.Fatalf("node %d leads although it may not stand", li)
	}
	targetID := ServerID(fmt.Sprintf("node-%d", target))
	err := c.answer(t, leader.LeadershipTransferToServer(targetID, c.trans[target].LocalAddr()))
	if err == nil {
		t.Fatal("a leadership transfer to a node that may not stand succeeded")
	}
	t.Logf("transfer: %v", err)
	if stood.Load() || c.rafts[target].State() != Follower {
		t.Fatalf("node %d stood (now %v) although it may not", target, c.rafts[target].State())
	}
	// It may again: the transfer succeeds.
	blocked.Store(false)
	if err := c.answer(t, leader.LeadershipTransferToServer(targetID, c.trans[target].LocalAddr())); err != nil {
		t.Fatalf("transfer once the node may stand: %v", err)
	}
	c.waitFor(t, "the target to lead", func() bool { return c.rafts[target].State() == Leader })
}
