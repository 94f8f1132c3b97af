package fsm

// entryStrings are the strings of an entry's command that the state keeps (the lock name,
// which keys the lock table, the name index, the holder's set and the history, and the
// owner label), as the live state decoded them. The shadow applies the same entry later;
// taking these instead of its own decoding's copies, it shares their bytes with the live
// state rather than holding a second copy of every name (docs/PERFORMANCE.md, round
// three). Strings are immutable, so sharing them across the two goroutines is safe, and
// equal strings are the same value: the state reached is the same.
type entryStrings struct {
	name, owner string
	// fill: record the strings of this decoding (the live state's apply); otherwise use
	// the recorded ones (the shadow's).
	fill bool
}

// share records c's strings into e when e.fill is set, and otherwise makes c use the
// strings e recorded from the live state's decoding of the same entry.
func (e *entryStrings) share(c *Command) {
	if e.fill {
		e.name, e.owner, e.fill = c.Name, c.Owner, false
		return
	}
	if c.Name == e.name {
		c.Name = e.name
	}
	if c.Owner == e.owner {
		c.Owner = e.owner
	}
}

// liveStrings returns the live state's copies of a lock's name and owner when it holds the
// lock with that owner, else the strings given: a shadow decoded from a snapshot (after a
// restart) then shares them too. It takes the read lock per lock, briefly, so that the
// decode never holds up Apply for long.
func (f *FSM) liveStrings(name, owner string) (string, string) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if n, ok := f.s.names.Get(name); ok {
		name = n
		if lk := f.s.locks[n]; lk != nil && lk.owner == owner {
			owner = lk.owner
		}
	}
	return name, owner
}
