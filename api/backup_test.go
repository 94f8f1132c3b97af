package api

import (
	"bytes"
	"errors"
	"testing"
)

func TestReadBackup_RoundTripAndCorruption(t *testing.T) {
	state := []byte("RLKS\x02 some state bytes")
	h := NewBackupHeader(42, 1234, 2, "2025-01-02T03:04:05Z", state)
	file := append(h.Encode(), state...)
	got, st, err := ReadBackup(bytes.NewReader(file))
	if err != nil || got != h || !bytes.Equal(st, state) {
		t.Fatalf("round trip: %+v %q %v", got, st, err)
	}

	corrupt := func(name string, f []byte) {
		t.Helper()
		if _, _, err := ReadBackup(bytes.NewReader(f)); !errors.Is(err, ErrBadBackup) {
			t.Errorf("%s: %v, want ErrBadBackup", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	flipped := append([]byte(nil), file...)
	flipped[len(flipped)-1] ^= 1
	corrupt("checksum", flipped)
	badMagic := append([]byte(nil), file...)
	badMagic[0] = 'X'
	corrupt("magic", badMagic)
	corrupt("truncated", file[:len(file)-1])
	corrupt("extended", append(append([]byte(nil), file...), 'x'))
	corrupt("no header", []byte(BackupMagic))
	corrupt("unknown field", append([]byte(BackupMagic+`{"format":1,"size":0,"sha256":"`+h.SHA256+`","x":1}`+"\n"), state...))
	corrupt("format", append([]byte(BackupMagic+`{"format":2,"size":0,"sha256":"`+h.SHA256+`"}`+"\n"), state...))
	corrupt("long header", append([]byte(BackupMagic), bytes.Repeat([]byte("a"), 10000)...))
}
