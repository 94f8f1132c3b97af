package fsm

import (
	"bytes"
	"testing"
)

// chunkSink is a memSink that notes the size of each write.
type chunkSink struct {
	memSink
	writes, largest int
}

func (s *chunkSink) Write(p []byte) (int, error) {
	s.writes++
	s.largest = max(s.largest, len(p))
	return s.memSink.Write(p)
}

// TestPersist_Streams checks that Persist writes a large state in buffer-sized pieces
// rather than as one image, and that the pieces are exactly the state's encoding.
func TestPersist_Streams(t *testing.T) {
	f := New(nil)
	f.ApplyCommand(1, &Command{Type: TypeSetVersion, Version: 3, Now: 1})
	id := LeaseID{7}
	f.ApplyCommand(2, &Command{Type: TypeCreateLease, Now: 1, Lease: id, TTL: 3_600_000})
	for i := 0; i < 20_000; i++ {
		f.ApplyCommand(uint64(i+3), &Command{Type: TypeAcquire, Now: 2, Lease: id, Name: "streams/" + itoa(i), Owner: "o"})
	}
	want := f.SnapshotBytes()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink chunkSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sink.Bytes(), want) {
		t.Fatalf("streamed %d bytes that differ from the %d-byte encoding", sink.Len(), len(want))
	}
	// A record is far smaller than the slack above spillSize, so no write exceeds it.
	if sink.writes < len(want)/(spillSize+spillSize/4) || sink.largest > spillSize+spillSize/4 {
		t.Fatalf("%d writes, largest %d bytes, for %d bytes: not streamed in %d-byte pieces", sink.writes, sink.largest, len(want), spillSize)
	}
}
