package cluster

import (
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

func storeRange(t *testing.T, s *walStore, from, to uint64) {
	t.Helper()
	var ls []*raft.Log
	for i := from; i <= to; i++ {
		ls = append(ls, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d", i))})
	}
	if err := s.StoreLogs(ls); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, s *walStore, from, to uint64) {
	t.Helper()
	for i := from; i <= to; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil || string(l.Data) != fmt.Sprintf("entry %d", i) {
			t.Fatalf("entry %d: %q, %v", i, l.Data, err)
		}
	}
}

// A WAL whose end was truncated (raft deletes a follower's conflicting suffix) opens again
// and reads and appends: raft-wal v0.4.0 sealed the truncated tail without an index frame,
// and once reopened could not read it ("sealed segment has no index block", on which raft
// panics at start); the node adds the index before raft-wal opens (sealWithIndex).
func TestWALStore_ReopensAfterTailTruncation(t *testing.T) {
	dir := t.TempDir()
	open := func() *walStore {
		s, err := openWAL(dir, 0, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	storeRange(t, s, 1, 10)
	if err := s.DeleteRange(8, 10); err != nil { // a conflicting suffix
		t.Fatal(err)
	}
	storeRange(t, s, 8, 12) // the new leader's entries
	s.Close()
	for round := 0; round < 2; round++ {
		s = open()
		mustRead(t, s, 1, 12)
		if last, err := s.LastIndex(); err != nil || last != 12+uint64(round)*3 {
			t.Fatalf("round %d: last index %d, %v", round, last, err)
		}
		storeRange(t, s, 13+uint64(round)*3, 15+uint64(round)*3)
		s.Close()
	}
}
