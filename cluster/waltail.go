package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
)

// scrubWALTail zeroes what follows the last complete commit frame of the WAL's tail
// segment in walPath, before raft-wal opens it, and returns how many bytes it zeroed.
//
// What it zeroes is a batch that was being written when the process stopped or the write
// failed: its commit frame is missing or fails its checksum, so its fsync never returned
// and raft never acknowledged it; raft-wal's own recovery (README, "Crash Safety") drops
// the same bytes. It is zeroed because raft-wal v0.4.0's recovery keeps one thing from
// such a torn batch: an index frame, which the batch that fills a segment ends with, marks
// the tail sealed although the seal was never committed, and every later append then
// fails with "segment is sealed" (segment/writer.go, recoverTail). Zeroed, the tail
// recovers exactly as raft-wal documents. The format is raft-wal's (README, "Segment
// Files"): a 32-byte file header, then 8-byte-aligned frames whose 8-byte header holds the
// type (1 entry, 2 index, 3 commit) and a length, or for a commit frame the CRC-32C of
// everything written since the previous commit frame (the first one: since the file's
// start).
func scrubWALTail(walPath string) (int64, error) {
	meta := &metadb.BoltMetaDB{}
	st, err := meta.Load(walPath)
	if cerr := meta.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: reading the WAL's meta database in %s: %w", walPath, err)
	}
	if len(st.Segments) == 0 {
		return 0, nil
	}
	tail := st.Segments[len(st.Segments)-1]
	if !tail.SealTime.IsZero() {
		return 0, nil
	}
	name := filepath.Join(walPath, segment.FileName(tail))
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil // raft-wal creates it
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: opening the WAL's tail %s: %w", name, err)
	}
	defer f.Close()

	const fileHeader, frameHeader = 32, 8
	const frameEntry, frameIndex, frameCommit = 1, 2, 3
	type commit struct{ offset, crcStart int64 }
	var prev, final *commit
	offset := int64(fileHeader)
	var hdr [frameHeader]byte
	for {
		n, err := f.ReadAt(hdr[:], offset)
		if n < frameHeader {
			if err != nil && err != io.EOF {
				return 0, fmt.Errorf("cluster: reading the WAL's tail %s: %w", name, err)
			}
			break
		}
		typ, length := hdr[0], binary.LittleEndian.Uint32(hdr[4:8])
		if typ == 0 || typ > frameCommit || (typ != frameCommit && hdr[1]|hdr[2]|hdr[3] != 0) {
			break // zeros (the end), or a torn header: raft-wal stops here too
		}
		size := int64(frameHeader)
		if typ == frameEntry || typ == frameIndex {
			size += int64(length) + int64((frameHeader-length%frameHeader)%frameHeader)
		}
		if typ == frameCommit {
			c := &commit{offset: offset}
			if final != nil {
				c.crcStart = final.offset + frameHeader
			}
			prev, final = final, c
		}
		offset += size
	}
	end := offset // where raft-wal's reading stops
	good := int64(fileHeader)
	if final != nil {
		ok, err := commitValid(f, final.crcStart, final.offset)
		if err != nil {
			return 0, fmt.Errorf("cluster: checking the WAL's tail %s: %w", name, err)
		}
		switch {
		case ok:
			good = final.offset + frameHeader
		case prev != nil:
			good = prev.offset + frameHeader
		}
	}
	if end <= good {
		return 0, nil
	}
	if _, err := f.WriteAt(make([]byte, end-good), good); err != nil {
		return 0, fmt.Errorf("cluster: zeroing the uncommitted end of the WAL's tail %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("cluster: syncing the WAL's tail %s: %w", name, err)
	}
	return end - good, nil
}

// commitValid reports whether the commit frame at offset holds the CRC-32C of the bytes
// from start to offset.
func commitValid(f *os.File, start, offset int64) (bool, error) {
	var hdr [8]byte
	if _, err := f.ReadAt(hdr[:], offset); err != nil {
		return false, err
	}
	buf := make([]byte, offset-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return false, err
	}
	return crc32.Checksum(buf, crc32.MakeTable(crc32.Castagnoli)) == binary.LittleEndian.Uint32(hdr[4:8]), nil
}
