package cluster_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
)

// tailSegment returns the path of node dir's newest WAL segment and how many bytes of it
// were written (segments are preallocated with zeros).
func tailSegment(t *testing.T, dir string) (string, int64) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
	if len(segs) == 0 {
		t.Fatalf("no WAL segment in %s", dir)
	}
	sort.Strings(segs) // named by base index, zero-padded
	b, err := os.ReadFile(segs[len(segs)-1])
	if err != nil {
		t.Fatal(err)
	}
	end := int64(len(bytes.TrimRight(b, "\x00")))
	return segs[len(segs)-1], (end + 7) &^ 7
}

// A torn last batch, as a crash leaves it while the batch that fills a segment is being
// written (entries, then the segment's index frame, and no commit frame yet), is dropped
// at the next start: it was never acknowledged. The node keeps every acknowledged grant
// and appends again, with tokens above them. raft-wal alone (v0.4.0 to v0.4.2) keeps the
// torn index frame and refuses every append after it ("segment is sealed"); the node
// zeroes the uncommitted end before raft-wal opens (cluster/waltail.go).
func TestWALTail_TornSealingBatchIsDropped(t *testing.T) {
	c := clustertest.Start(t, 1, withStore(cluster.LogStoreWAL))
	gs := acquireMany(t, leaderNode(c), "torn", 10)
	c.Stop(0)
	seg, end := tailSegment(t, c.Config(0).DataDir)
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var torn []byte
	entry := []byte{1, 0, 0, 0, 16, 0, 0, 0} // an entry frame of 16 bytes...
	torn = append(append(torn, entry...), bytes.Repeat([]byte{0xab}, 16)...)
	index := []byte{2, 0, 0, 0, 8, 0, 0, 0} // ...then the segment's index frame, no commit
	torn = append(torn, index...)
	torn = binary.LittleEndian.AppendUint64(torn, 0x2a)
	if _, err := f.WriteAt(torn, end); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c.Restart(0)
	l := leaderNode(c)
	mustHold(t, l, gs)
	g := acquireMany(t, l, "after", 1)[0]
	if g.Token <= gs[len(gs)-1].Token {
		t.Fatalf("token %d after the torn batch is not above %d", g.Token, gs[len(gs)-1].Token)
	}
}

// A follower whose last segment lost acknowledged entries (truncated: a file system that
// lost the end of the file, which raft-wal cannot tell from a torn write) starts with the
// shorter log and catches up from the leader; no token regresses, since a majority holds
// every committed entry and a node with a shorter log cannot win an election. The whole
// cluster restarted with one node truncated does the same.
func TestWALTail_TruncatedSegmentCatchesUp(t *testing.T) {
	c := clustertest.Start(t, 3, withStore(cluster.LogStoreWAL))
	gs := acquireMany(t, leaderNode(c), "trunc", 30)
	waitSameState(t, c)
	truncate := func(i int) {
		seg, end := tailSegment(t, c.Config(i).DataDir)
		if err := os.Truncate(seg, end*2/3); err != nil {
			t.Fatal(err)
		}
	}
	f := c.Follower()
	c.Stop(f)
	truncate(f)
	c.Restart(f)
	gs = append(gs, acquireMany(t, leaderNode(c), "trunc2", 5)...)
	waitSameState(t, c)
	mustHold(t, leaderNode(c), gs)

	for i := range c.Nodes {
		c.Stop(i)
	}
	truncate(0)
	for i := range c.Nodes {
		c.Restart(i)
	}
	c.Leader(15 * time.Second)
	g := acquireMany(t, leaderNode(c), "trunc3", 1)[0]
	if g.Token <= gs[len(gs)-1].Token {
		t.Fatalf("token %d after the restart with n1 truncated is not above %d", g.Token, gs[len(gs)-1].Token)
	}
	waitSameState(t, c)
	mustHold(t, leaderNode(c), gs)
}

// A tail segment whose file header is damaged is refused at start (raft-wal validates it
// once it has found a commit frame), rather than read as an empty log: the node does not
// start, and says why.
func TestWALTail_DamagedHeaderIsRefused(t *testing.T) {
	c := clustertest.Start(t, 1, withStore(cluster.LogStoreWAL))
	acquireMany(t, leaderNode(c), "hdr", 3)
	c.Stop(0)
	seg, _ := tailSegment(t, c.Config(0).DataDir)
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff, 0xff, 0xff, 0xff}, 8); err != nil { // the base index
		t.Fatal(err)
	}
	f.Close()
	n, err := cluster.New(c.Config(0))
	if err == nil {
		n.Shutdown()
		t.Fatal("a node whose tail segment has a damaged header started")
	}
	t.Logf("refused: %v", err)
}
