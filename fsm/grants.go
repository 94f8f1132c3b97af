package fsm

import "encoding/binary"

// Holding is one grant of a lock or one permit of a semaphore.
type Holding struct {
	Lease LeaseID
	Token uint64
	Owner string
}

// grant is one holder of a shared lock or one permit of a semaphore, linked in grant
// order.
type grant struct {
	lease      LeaseID
	token      uint64
	owner      string
	prev, next *grant
}

// grantSet is a set of grants in grant order, with O(1) lookup and removal by lease: a
// lease leaving (release, expiry) costs the same whatever the number of holders.
type grantSet struct {
	head, tail *grant
	byLease    map[LeaseID]*grant
}

func (g *grantSet) len() int { return len(g.byLease) }

func (g *grantSet) get(id LeaseID) *grant { return g.byLease[id] }

// add appends x, whose lease holds nothing in g yet.
func (g *grantSet) add(x *grant) {
	if g.byLease == nil {
		g.byLease = make(map[LeaseID]*grant, 1)
	}
	g.byLease[x.lease] = x
	x.prev, x.next = g.tail, nil
	if g.tail == nil {
		g.head = x
	} else {
		g.tail.next = x
	}
	g.tail = x
}

// remove takes lease id's grant out of g, if it has one.
func (g *grantSet) remove(id LeaseID) *grant {
	x := g.byLease[id]
	if x == nil {
		return nil
	}
	delete(g.byLease, id)
	if x.prev == nil {
		g.head = x.next
	} else {
		x.prev.next = x.next
	}
	if x.next == nil {
		g.tail = x.prev
	} else {
		x.next.prev = x.prev
	}
	x.prev, x.next = nil, nil
	return x
}

// holdings lists the grants in grant order.
func (g *grantSet) holdings() []Holding {
	out := make([]Holding, 0, g.len())
	for x := g.head; x != nil; x = x.next {
		out = append(out, Holding{Lease: x.lease, Token: x.token, Owner: x.owner})
	}
	return out
}

// appendGrant appends a grant of a shared lock or a semaphore as a snapshot holds it:
// lease, token, owner.
func appendGrant(buf []byte, g *grant) []byte {
	buf = append(buf, g.lease[:]...)
	buf = binary.AppendUvarint(buf, g.token)
	return appendString(buf, g.owner)
}

// grant reads what appendGrant wrote.
func (d *decoder) grant() *grant {
	return &grant{lease: d.leaseID(), token: d.uvarint(), owner: d.string()}
}
