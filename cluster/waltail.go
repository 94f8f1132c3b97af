package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// scrubWALTail zeroes what follows the last complete commit frame of the WAL's tail
// segment in walPath, before raft-wal opens it, and returns how many bytes it zeroed.
//
// What it zeroes is a batch that was being written when the process stopped or the write
// failed: its commit frame is missing or fails its checksum, so its fsync never returned
// and raft never acknowledged it; raft-wal's own recovery (README, "Crash Safety") drops
// the same bytes. It is zeroed because raft-wal's recovery (segment/writer.go, recoverTail,
// unchanged from v0.4.0 to v0.4.2) keeps one thing from such a torn batch: an index frame,
// which the batch that fills a segment ends with, marks the tail sealed although the seal
// was never committed, and every later append then fails with "segment is sealed"
// (TestWALTail_TornSealingBatchIsDropped). Zeroed, the tail recovers exactly as raft-wal
// documents. The format is raft-wal's (README, "Segment Files"): a 32-byte file header,
// then 8-byte-aligned frames whose 8-byte header holds the type (1 entry, 2 index, 3
// commit) and a length, or for a commit frame the CRC-32C of everything written since the
// previous commit frame (the first one: since the file's start).
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
	entries, good, end, index, err := segmentFrames(f)
	if err != nil {
		return 0, fmt.Errorf("cluster: reading the WAL's tail %s: %w", name, err)
	}
	var zeroed int64
	if end > good {
		if _, err := f.WriteAt(make([]byte, end-good), good); err != nil {
			return 0, fmt.Errorf("cluster: zeroing the uncommitted end of the WAL's tail %s: %w", name, err)
		}
		if err := f.Sync(); err != nil {
			return 0, fmt.Errorf("cluster: syncing the WAL's tail %s: %w", name, err)
		}
		zeroed = end - good
	}
	if index > 0 {
		// The tail was sealed and the seal committed, but the process stopped (or the
		// meta database's write failed) before raft-wal recorded the rotation in
		// wal-meta.db. raft-wal would reopen the sealed file as its tail and refuse every
		// append ("segment is sealed"): its runRotate says recovery must handle this case,
		// and through v0.4.2 it does not (TestWALStore_ReopensAfterAnInterruptedRotation).
		// Record the rotation it was doing: the tail sealed at its last entry, an empty
		// next segment after it.
		if err := finishRotation(walPath, tail, uint64(entries), uint64(index)); err != nil {
			return zeroed, err
		}
	}
	return zeroed, nil
}

// finishRotation records in wal-meta.db a rotation raft-wal had begun: the tail sealed
// with n entries and its index at indexStart, and a new empty tail after it, whose file
// raft-wal creates when it opens.
func finishRotation(walPath string, tail types.SegmentInfo, n, indexStart uint64) error {
	meta := &metadb.BoltMetaDB{}
	st, err := meta.Load(walPath)
	if err == nil {
		last := &st.Segments[len(st.Segments)-1]
		last.SealTime = time.Now()
		last.IndexStart = indexStart
		last.MaxIndex = tail.BaseIndex + n - 1
		next := types.SegmentInfo{ID: st.NextSegmentID, BaseIndex: last.MaxIndex + 1, MinIndex: last.MaxIndex + 1,
			Codec: tail.Codec, SizeLimit: tail.SizeLimit, CreateTime: time.Now()}
		st.NextSegmentID++
		st.Segments = append(st.Segments, next)
		err = meta.CommitState(st)
	}
	if cerr := meta.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cluster: recording the WAL's interrupted segment rotation in %s: %w", walPath, err)
	}
	return nil
}

// Frame types and sizes of raft-wal's segment format.
const (
	segFileHeader  = 32
	segFrameHeader = 8
	segFrameEntry  = 1
	segFrameIndex  = 2
	segFrameCommit = 3
)

// segmentFrames reads a segment file's frames as raft-wal's recovery does: how many entry
// frames it holds up to its last commit frame whose checksum holds, where that commit
// frame ends (good; the file header's end when there is none), where reading stopped
// (end: zeros, a torn header, or the end of the file), and where the payload of an index
// frame covered by that commit frame starts (index; 0: none, the segment is not sealed).
func segmentFrames(f *os.File) (entries int, good, end, index int64, err error) {
	type commit struct {
		offset, crcStart int64
		entries          int
		index            int64
	}
	var lastIndex int64
	var prev, final *commit
	all := 0
	offset := int64(segFileHeader)
	var hdr [segFrameHeader]byte
	for {
		n, err := f.ReadAt(hdr[:], offset)
		if n < segFrameHeader {
			if err != nil && err != io.EOF {
				return 0, 0, 0, 0, err
			}
			break
		}
		typ, length := hdr[0], binary.LittleEndian.Uint32(hdr[4:8])
		if typ == 0 || typ > segFrameCommit || (typ != segFrameCommit && hdr[1]|hdr[2]|hdr[3] != 0) {
			break // zeros (the end), or a torn header: raft-wal stops here too
		}
		size := int64(segFrameHeader)
		switch typ {
		case segFrameEntry, segFrameIndex:
			size += int64(length) + int64((segFrameHeader-length%segFrameHeader)%segFrameHeader)
			if typ == segFrameEntry {
				all++
			} else {
				lastIndex = offset + segFrameHeader
			}
		case segFrameCommit:
			c := &commit{offset: offset, entries: all, index: lastIndex}
			if final != nil {
				c.crcStart = final.offset + segFrameHeader
			}
			prev, final = final, c
		}
		offset += size
	}
	good = segFileHeader
	if final != nil {
		ok, err := commitValid(f, final.crcStart, final.offset)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		switch {
		case ok:
			good, entries, index = final.offset+segFrameHeader, final.entries, final.index
		case prev != nil:
			good, entries, index = prev.offset+segFrameHeader, prev.entries, prev.index
		}
	}
	return entries, good, offset, index, nil
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
