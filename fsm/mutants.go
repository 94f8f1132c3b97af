package fsm

// mutantDropWaiters empties every lock's queue, as the restore-drops-waiters mutant of
// internal/mutant does after a restore. Only that hook calls it, so a build without the
// mutants tag drops it.
func (s *state) mutantDropWaiters() {
	for name, lk := range s.locks {
		for w := lk.ro().queue.head; w != nil; w = lk.ro().queue.head {
			lk.rw().queue.remove(w)
			if l := s.leases[w.lease]; l != nil {
				delete(l.waiting, name)
			}
			s.waitExp.Delete(waitKey(name, w.lease))
		}
	}
}
