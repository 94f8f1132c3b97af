package fsm

import (
	"encoding/binary"

	"github.com/google/btree"

	"github.com/raftlock/raftlock/internal/mutant"
	"github.com/raftlock/raftlock/leases"
)

// The election's command types (since version 2). Values are part of the log format:
// never renumber them.
const (
	// TypeCampaign campaigns for an election's leadership, or proclaims a new Value from
	// the leader's lease.
	TypeCampaign Type = 22
	// TypeResign gives leadership up (Lease, Token).
	TypeResign Type = 23
	// TypeElectionDequeue takes a candidate out of an election's queue.
	TypeElectionDequeue Type = 24
)

// electionCommands are the election's rows of the command registry (its row in
// primitives).
var electionCommands = []command{
	{typ: TypeCampaign, name: "campaign", since: 2, apply: (*state).campaign, body: []field{fieldAcquire, fieldValue, fieldToken}, lease: leaseCreatesIfNew, exact: true},
	{typ: TypeResign, name: "resign", since: 2, apply: (*state).resign, body: bodyRelease, lease: leaseUses, exact: true},
	{typ: TypeElectionDequeue, name: "election_dequeue", since: 2, apply: (*state).electionDequeue, body: bodyDequeue, lease: leaseUses, exact: true},
}

// election is an election with a leader. A leader that resigns (or whose lease ends)
// hands leadership to the head candidate in the same entry; with no candidate the
// election is deleted. From version 6 an election whose head candidate's lease ended has
// nobody leading (leader is the zero lease) until the sweep ends that candidacy (sweep.go).
type election struct {
	leader LeaseID
	token  uint64
	owner  string
	value  string
	modify uint64
	queue  waitQueue // candidates, each with its own value
}

// electionState is the replicated state of elections. It is empty at version 1 (the
// commands are refused there), so a version 1 snapshot needs no place for it.
type electionState struct {
	elections   map[string]*election
	elecWaitExp leases.Table // keyed by waitKey(name, lease)
	// elecFreed is the index of the last entry that deleted an election: what a status
	// read reports as the modify index of one not in use.
	elecFreed uint64
	// elecNames are the keys of elections in order (Elections). Derived state: never
	// encoded, rebuilt on restore.
	elecNames *btree.BTreeG[string]
}

// The election's hooks (its row in primitives).

func (s *state) startElections() {
	s.elections = make(map[string]*election)
	s.elecNames = btree.NewOrderedG[string](nameIndexDegree)
}

func campaignTable(s *state) *leases.Table { return &s.elecWaitExp }

// dropLeadOf ends lease l's leadership of election name, whose lease ended (expired or
// revoked: endCause), electing the head candidate.
func (s *state) dropLeadOf(index uint64, name string, l *lease) {
	if el := s.elections[name]; el != nil && el.leader == l.id {
		s.dropLeader(index, name, el, l, s.hist.endCause)
	}
}

// leaveCampaignOf takes lease l, which ended, out of the candidates of election name.
func (s *state) leaveCampaignOf(index uint64, name string, l *lease) {
	if l.prims != nil && l.prims.campaigns[name] != nil {
		s.hist.waitCause = HistoryWaitLeaseEnded
		s.leaveCampaign(index, name, l)
	}
}

// campaignTimedOut takes candidate l out of election name's queue because its wait
// deadline passed (advance).
func (s *state) campaignTimedOut(index uint64, name string, l *lease) {
	s.hist.waitCause = HistoryWaitTimedOut
	s.leaveCampaign(index, name, l)
}

func electionCount(_ *state, l *lease) int {
	if l.prims == nil {
		return 0
	}
	return len(l.prims.leads) + len(l.prims.campaigns)
}

func electionDeadlines(s *state) []*leases.Table { return []*leases.Table{&s.elecWaitExp} }

// campaign applies Campaign: leadership when the election has no leader, a place among
// the candidates otherwise (with a wait); from the leader with its token, a proclaim of a
// new value.
func (s *state) campaign(index uint64, c *Command, r *Result) {
	if !validName(c.Name) {
		invalid(r, "bad election name")
		return
	}
	l := s.live(c.Lease)
	if l == nil && (!c.NewLease || c.Token != 0 || s.ended(c.Lease)) {
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
	if s.primQuota(c, l, leads || waiting, el == nil || usurp, queueLen, r) {
		return
	}
	l = s.leaseFor(c, l)
	r.TTL = l.ttl
	switch {
	case el == nil || usurp:
		if el == nil {
			el = &election{}
			s.elections[c.Name] = el
			s.elecNames.ReplaceOrInsert(c.Name)
		}
		el.leader, el.token, el.owner, el.value, el.modify = l.id, index, c.Owner, c.Value, index
		s.took(l, &l.usePrims().leads, c.Name)
		s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: c.Name, Index: index})
		s.recordGrantIn(SpaceElection, c.Name, l, index, c.Owner, nil)
	case leads:
		// Proclaim: the value changes, the leadership (and its token) does not.
		if el.value != c.Value {
			el.value, el.modify = c.Value, index
			s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: c.Name, Index: index})
			if s.recorded(SpaceElection) {
				s.recordIn(SpaceElection, c.Name, l, HistoryEvent{Kind: HistoryProclaimed, Lease: l.fingerprint(), Token: el.token, Owner: el.owner})
			}
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
	if s.live(c.Lease) == nil {
		r.Status = StatusLeaseNotFound
		return
	}
	el := s.elections[c.Name]
	if el == nil || el.leader != c.Lease || el.token != c.Token {
		r.Status = StatusNotHolder
		return
	}
	s.dropLeader(index, c.Name, el, nil, HistoryReleased)
}

// dropLeader ends el's leadership, for cause (a lock kind: released, expired, revoked; who
// is the leader's lease when the caller has it), and elects the head candidate at index.
func (s *state) dropLeader(index uint64, name string, el *election, who *lease, cause HistoryKind) {
	s.recordEndIn(SpaceElection, name, el.leader, who, el.token, el.owner, cause)
	if old := s.leases[el.leader]; old != nil && old.prims != nil {
		s.gave(old, old.prims.leads, name)
	}
	el.leader = LeaseID{}
	s.electHead(index, name, el)
}

// electHead elects the head candidate of election name, which nobody leads, at index; with
// no candidate the election is deleted. From version 6 a head candidate whose lease ended
// is not elected: the election stays with nobody leading until the sweep ends that
// candidacy and elects the next (leaveCampaign).
func (s *state) electHead(index uint64, name string, el *election) {
	if el.queue.head == nil {
		delete(s.elections, name)
		s.elecNames.Delete(name)
		s.elecFreed = index
		s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: name, Index: index, Freed: true})
		return
	}
	w := el.queue.head
	if s.waitsForEnded(w) {
		if el.token != 0 {
			el.token, el.owner, el.value, el.modify = 0, "", "", index
			s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: name, Index: index})
		}
		return
	}
	el.queue.remove(w)
	next := s.leases[w.lease]
	s.unqueued(next, next.prims.campaigns, name)
	s.elecWaitExp.Delete(waitKey(name, w.lease))
	s.took(next, &next.usePrims().leads, name)
	el.leader, el.token, el.owner, el.value, el.modify = w.lease, index, w.owner, w.value, index
	s.notify(Event{Kind: EventGranted, Space: SpaceElection, Name: name, Lease: w.lease, Token: index, Owner: w.owner, Value: w.value, Index: index})
	s.recordGrantIn(SpaceElection, name, next, index, w.owner, w)
	s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: name, Index: index})
}

// electionDequeue applies ElectionDequeue: a waiting candidate gave up. A lease that leads
// by now is told its leadership instead.
func (s *state) electionDequeue(index uint64, c *Command, r *Result) {
	if s.ended(c.Lease) {
		r.Status = StatusNotHolder // the sweep ends what it holds and waits for
		return
	}
	if el := s.elections[c.Name]; el != nil {
		if el.leader == c.Lease {
			r.Token, r.Owner, r.Value, r.Modify = el.token, el.owner, el.value, el.modify
			return
		}
		s.hist.waitCause = HistoryWaitAbandoned
		s.giveUp(index, c.Name, c.Lease, campaigns, (*state).leaveCampaign)
	}
	r.Status = StatusNotHolder
}

// leaveCampaign takes candidate l out of election name's queue, for the current
// waitCause.
func (s *state) leaveCampaign(index uint64, name string, l *lease) {
	el := s.elections[name]
	s.recordWaitEndIn(SpaceElection, name, l.prims.campaigns[name], l)
	s.unqueue(l.prims.campaigns, &s.elecWaitExp, &el.queue, name, l)
	el.modify = index
	s.notify(Event{Kind: EventWaitEnded, Space: SpaceElection, Name: name, Lease: l.id, Index: index})
	s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: name, Index: index})
	if el.leader == (LeaseID{}) {
		s.electHead(index, name, el) // version 6: it was held for this candidate, which ended
	}
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
	// Queue is the first candidates in queue order with their owners and times, when the
	// read asked for them (ElectionQueue); nil otherwise.
	Queue []Waiting
}

// Election returns the state of election name.
func (f *FSM) Election(name string) ElectionView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.electionView(name, 0)
}

// electionView is the view of election name with its first queue candidates in Queue.
func (s *state) electionView(name string, queue int) ElectionView {
	el := s.elections[name]
	if el == nil {
		return ElectionView{Name: name, ModifyIndex: s.elecFreed}
	}
	v := ElectionView{Name: name, Elected: true, Leader: el.leader, Token: el.token, Owner: el.owner, Value: el.value, ModifyIndex: el.modify}
	if s.deadID(el.leader) && s.version >= 6 { // an ended lease leads nothing (sweep.go)
		v.Elected, v.Leader, v.Token, v.Owner, v.Value = false, LeaseID{}, 0, "", ""
	}
	for w := el.queue.head; w != nil; w = w.next {
		v.Candidates = append(v.Candidates, w.lease)
	}
	v.Queue = s.queueOf(&el.queue, queue)
	return v
}

// Elections returns one page of the elections in use (with a leader, or, from version 6,
// held for a candidate the sweep has yet to end) whose names start with prefix and sort
// after after, in name order, each with its first queue candidates: at most limit of
// them (truncated reports that more follow).
func (f *FSM) Elections(prefix, after string, limit, queue int) (views []ElectionView, truncated bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	truncated = pageNames(f.s.elecNames, prefix, after, limit, func(n string) { views = append(views, f.s.electionView(n, queue)) })
	return views, truncated
}

// The election's parts of snapshot format 2:
//
//	elecFreed, after the semaphores' semFreed
//	elections: count, then in name order: name, leader, token, owner, value, modify,
//	           candidates (count, then lease, owner, value, deadline, since each)

func elecFreed(s *state) *uint64 { return &s.elecFreed }

// encodeElections writes the elections of format 2.
func (s *state) encodeElections(e *snapEncoder) {
	buf := binary.AppendUvarint(e.buf, uint64(len(s.elections)))
	for _, name := range sortedNames(s.elections) {
		el := s.elections[name]
		buf = appendString(buf, name)
		buf = append(buf, el.leader[:]...)
		buf = binary.AppendUvarint(buf, el.token)
		buf = appendString(buf, el.owner)
		buf = appendString(buf, el.value)
		buf = binary.AppendUvarint(buf, el.modify)
		buf = binary.AppendUvarint(buf, uint64(el.queue.len))
		for w := el.queue.head; w != nil; w = w.next {
			buf = append(buf, w.lease[:]...)
			buf = appendString(buf, w.owner)
			buf = appendString(buf, w.value)
			buf = binary.AppendUvarint(buf, uint64(w.deadline))
			buf = binary.AppendUvarint(buf, uint64(w.since))
		}
		buf = e.spillAt(buf)
	}
	e.buf = buf
}

// decodeElections reads what encodeElections wrote, after the leases, and refuses a
// leader or a candidate of a missing lease and a lease twice in one election.
func (s *state) decodeElections(d *decoder) error {
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		name := d.string()
		el := &election{leader: d.leaseID(), token: d.uvarint(), owner: d.string(), value: d.string(), modify: d.uvarint()}
		if d.err != nil {
			break
		}
		leader := s.leases[el.leader]
		// From version 6 an election may have nobody leading while its head candidate's
		// lease ended (electHead): the leader is the zero lease, with no token, owner or value.
		vacant := s.version >= 6 && el.leader == (LeaseID{}) && el.token == 0 && el.owner == "" && el.value == ""
		if !validName(name) || leader == nil && !vacant || s.elections[name] != nil {
			return badSnapshot("election %q: bad name, leader lease missing, or listed twice", name)
		}
		if leader != nil {
			addName(&leader.usePrims().leads, name)
		}
		for j, m := 0, d.count(1); j < m && d.err == nil; j++ {
			w := &waiter{lease: d.leaseID(), owner: d.string(), value: d.string(), deadline: d.int64(), since: d.int64()}
			if d.err != nil {
				break
			}
			l := s.leases[w.lease]
			if l == nil || leader != nil && l == leader || l.usePrims().campaigns[name] != nil {
				return badSnapshot("election %q: candidate lease missing, leading, or twice", name)
			}
			el.queue.push(w)
			addWaiter(&l.prims.campaigns, name, w)
			s.elecWaitExp.Set(waitKey(name, w.lease), w.deadline)
		}
		if d.err == nil && leader == nil && !s.waitsForEnded(el.queue.head) {
			return badSnapshot("election %q: nobody leads, and its head candidate's lease has not ended", name)
		}
		s.elections[name] = el
		s.elecNames.ReplaceOrInsert(name)
	}
	return nil
}
