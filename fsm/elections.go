package fsm

import "github.com/raftlock/raftlock/internal/mutant"

// election is an election with a leader. A leader that resigns (or whose lease ends)
// hands leadership to the head candidate in the same entry; with no candidate the
// election is deleted.
type election struct {
	leader LeaseID
	token  uint64
	owner  string
	value  string
	modify uint64
	queue  waitQueue // candidates, each with its own value
}

// campaign applies Campaign: leadership when the election has no leader, a place among
// the candidates otherwise (with a wait); from the leader with its token, a proclaim of a
// new value.
func (s *state) campaign(index uint64, c *Command, r *Result) {
	if !validName(c.Name) {
		invalid(r, "bad election name")
		return
	}
	l := s.leases[c.Lease]
	if l == nil && (!c.NewLease || c.Token != 0) {
		r.Status = StatusLeaseNotFound
		return
	}
	el := s.elections[c.Name]
	leads := el != nil && l != nil && el.leader == l.id
	if c.Token != 0 && (!leads || el.token != c.Token) {
		r.Status = StatusNotHolder // a proclaim only: never campaigns
		return
	}
	// The mutant lets a campaign take office beside the sitting leader.
	usurp := el != nil && !leads && c.Wait <= 0 && mutant.Is("election-two-leaders")
	if el != nil && !leads && c.Wait <= 0 && !usurp {
		r.Status = StatusElectionHeld
		return
	}
	var waiting bool
	if l != nil && l.prims != nil {
		_, waiting = l.prims.campaigns[c.Name]
	}
	queueLen := 0
	if el != nil {
		queueLen = el.queue.len
	}
	if s.primQuota(c, l, leads || waiting, queueLen, r) {
		return
	}
	l = s.leaseFor(c, l)
	r.TTL = l.ttl
	switch {
	case el == nil || usurp:
		if el == nil {
			el = &election{}
			s.elections[c.Name] = el
		}
		el.leader, el.token, el.owner, el.value, el.modify = l.id, index, c.Owner, c.Value, index
		addName(&l.usePrims().leads, c.Name)
		s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: c.Name, Index: index})
	case leads:
		// Proclaim: the value changes, the leadership (and its token) does not.
		if el.value != c.Value {
			el.value, el.modify = c.Value, index
			s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: c.Name, Index: index})
		}
	default:
		p := l.usePrims()
		w, added := s.enqueue(&el.queue, &p.campaigns, &s.elecWaitExp, c.Name, l, c)
		w.value = c.Value // a re-issued campaign brings its latest value
		if added {
			el.modify = index
			s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: c.Name, Index: index})
		}
		r.Status = StatusQueued
		return
	}
	r.Token, r.Owner, r.Value, r.Modify = el.token, el.owner, el.value, el.modify
}

// resign applies Resign: the leader, with its token, gives leadership up.
func (s *state) resign(index uint64, c *Command, r *Result) {
	if s.leases[c.Lease] == nil {
		r.Status = StatusLeaseNotFound
		return
	}
	el := s.elections[c.Name]
	if el == nil || el.leader != c.Lease || el.token != c.Token {
		r.Status = StatusNotHolder
		return
	}
	s.dropLeader(index, c.Name, el)
}

// dropLeader ends el's leadership and elects the head candidate at index.
func (s *state) dropLeader(index uint64, name string, el *election) {
	if old := s.leases[el.leader]; old != nil && old.prims != nil {
		delete(old.prims.leads, name)
	}
	if el.queue.head == nil {
		delete(s.elections, name)
		s.elecFreed = index
		s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: name, Index: index, Freed: true})
		return
	}
	w := el.queue.head
	el.queue.remove(w)
	next := s.leases[w.lease]
	delete(next.prims.campaigns, name)
	s.elecWaitExp.Delete(waitKey(name, w.lease))
	addName(&next.usePrims().leads, name)
	el.leader, el.token, el.owner, el.value, el.modify = w.lease, index, w.owner, w.value, index
	s.notify(Event{Kind: EventGranted, Space: SpaceElection, Name: name, Lease: w.lease, Token: index, Owner: w.owner, Value: w.value, Index: index})
	s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: name, Index: index})
}

// electionDequeue applies ElectionDequeue: a waiting candidate gave up. A lease that leads
// by now is told its leadership instead.
func (s *state) electionDequeue(index uint64, c *Command, r *Result) {
	el := s.elections[c.Name]
	if el != nil && el.leader == c.Lease {
		r.Token, r.Owner, r.Value, r.Modify = el.token, el.owner, el.value, el.modify
		return
	}
	r.Status = StatusNotHolder
	if l := s.leases[c.Lease]; l != nil && l.prims != nil && el != nil {
		if _, queued := l.prims.campaigns[c.Name]; queued {
			s.leaveCampaign(index, c.Name, l)
		}
	}
}

// leaveCampaign takes candidate l out of election name's queue.
func (s *state) leaveCampaign(index uint64, name string, l *lease) {
	w := l.prims.campaigns[name]
	delete(l.prims.campaigns, name)
	s.elecWaitExp.Delete(waitKey(name, l.id))
	el := s.elections[name]
	el.queue.remove(w)
	el.modify = index
	s.notify(Event{Kind: EventWaitEnded, Space: SpaceElection, Name: name, Lease: l.id, Index: index})
	s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: name, Index: index})
}

// ElectionView is a read-only copy of an election's state. With nobody leading, Elected
// is false and ModifyIndex is the index of the last entry that deleted any election.
type ElectionView struct {
	Name        string
	Elected     bool
	Leader      LeaseID
	Token       uint64
	Owner       string
	Value       string
	Candidates  []LeaseID
	ModifyIndex uint64
}

// Election returns the state of election name.
func (f *FSM) Election(name string) ElectionView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	el := f.s.elections[name]
	if el == nil {
		return ElectionView{Name: name, ModifyIndex: f.s.elecFreed}
	}
	v := ElectionView{Name: name, Elected: true, Leader: el.leader, Token: el.token, Owner: el.owner, Value: el.value, ModifyIndex: el.modify}
	for w := el.queue.head; w != nil; w = w.next {
		v.Candidates = append(v.Candidates, w.lease)
	}
	return v
}
