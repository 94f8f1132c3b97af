package api

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// A raftlock backup file (what GET /v1/backup answers and `raftlock backup save`
// writes) is:
//
//	RAFTLOCK-BACKUP\n
//	{"format":1,"index":...,"cluster_time_ms":...,"protocol_version":...,"size":...,"sha256":"...","created":"..."}\n
//	<size bytes of state: the state machine's canonical snapshot encoding>
//
// The header is one line of JSON so that `head -2 FILE` shows it. The state holds lease
// IDs (bearer secrets) and any ACL token hashes: keep backup files private (mode 0600).
const (
	// BackupMagic is the first line of every backup file.
	BackupMagic = "RAFTLOCK-BACKUP\n"
	// BackupFormat is the version of the backup file layout this code writes and reads.
	BackupFormat = 1
	// BackupContentType is the media type of GET /v1/backup's answer.
	BackupContentType = "application/vnd.raftlock.backup"
	// maxBackupHeader bounds the header line, so that a file that is not a backup cannot
	// make a reader buffer without bound.
	maxBackupHeader = 4096
)

// ErrBadBackup means a file or stream is not a valid raftlock backup: wrong magic line, an
// unreadable header, a size or checksum that does not match the state.
var ErrBadBackup = errors.New("api: not a valid raftlock backup")

// BackupHeader is the header line of a backup file.
type BackupHeader struct {
	// Format is the backup file format (BackupFormat).
	Format int `json:"format"`
	// Index is the state machine's applied index at the linearizable read the backup was
	// taken at: every token issued before the backup started is at most Index.
	Index uint64 `json:"index"`
	// ClusterTimeMs is the state's cluster time.
	ClusterTimeMs int64 `json:"cluster_time_ms"`
	// ProtocolVersion is the cluster's active protocol version in the state.
	ProtocolVersion uint64 `json:"protocol_version"`
	// Size is the length of the state bytes that follow the header.
	Size int64 `json:"size"`
	// SHA256 is the hex SHA-256 of the state bytes.
	SHA256 string `json:"sha256"`
	// Created is the leader's wall-clock time (RFC 3339) when the backup was taken, for
	// people only: nothing orders or expires by it.
	Created string `json:"created"`
}

// NewBackupHeader returns the header for state, filling in its size and checksum.
func NewBackupHeader(index uint64, clusterTimeMs int64, protocolVersion uint64, created string, state []byte) BackupHeader {
	sum := sha256.Sum256(state)
	return BackupHeader{Format: BackupFormat, Index: index, ClusterTimeMs: clusterTimeMs, ProtocolVersion: protocolVersion,
		Size: int64(len(state)), SHA256: hex.EncodeToString(sum[:]), Created: created}
}

// Encode returns the magic line and the header line.
func (h BackupHeader) Encode() []byte {
	line, _ := json.Marshal(h) // plain fields: cannot fail
	return append(append([]byte(BackupMagic), line...), '\n')
}

// ReadBackupHeader reads the magic line and the header line from r, leaving r at the first
// byte of the state.
func ReadBackupHeader(r *bufio.Reader) (BackupHeader, error) {
	var h BackupHeader
	magic := make([]byte, len(BackupMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != BackupMagic {
		return h, fmt.Errorf("%w: the file does not start with %q", ErrBadBackup, BackupMagic[:len(BackupMagic)-1])
	}
	var line []byte
	for {
		part, isPrefix, err := r.ReadLine()
		if err != nil {
			return h, fmt.Errorf("%w: header line: %v", ErrBadBackup, err)
		}
		line = append(line, part...)
		if len(line) > maxBackupHeader {
			return h, fmt.Errorf("%w: header line longer than %d bytes", ErrBadBackup, maxBackupHeader)
		}
		if !isPrefix {
			break
		}
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, fmt.Errorf("%w: header: %v", ErrBadBackup, err)
	}
	switch {
	case h.Format != BackupFormat:
		return h, fmt.Errorf("%w: backup format %d, this release reads format %d", ErrBadBackup, h.Format, BackupFormat)
	case h.Size < 0:
		return h, fmt.Errorf("%w: negative size %d", ErrBadBackup, h.Size)
	case len(h.SHA256) != 2*sha256.Size:
		return h, fmt.Errorf("%w: sha256 %q is not 64 hex characters", ErrBadBackup, h.SHA256)
	}
	return h, nil
}

// Verify checks that state is exactly the state the header describes (size and SHA-256).
func (h BackupHeader) Verify(state []byte) error {
	if int64(len(state)) != h.Size {
		return fmt.Errorf("%w: %d bytes of state, the header says %d (truncated or extended file)", ErrBadBackup, len(state), h.Size)
	}
	sum := sha256.Sum256(state)
	if got := hex.EncodeToString(sum[:]); got != h.SHA256 {
		return fmt.Errorf("%w: checksum mismatch: the state hashes to %s, the header says %s (corrupted file)", ErrBadBackup, got, h.SHA256)
	}
	return nil
}

// ReadBackup reads a whole backup from r and verifies it: the magic line, the header, and
// the state's size and checksum. Nothing may follow the state.
func ReadBackup(r io.Reader) (BackupHeader, []byte, error) {
	br := bufio.NewReader(r)
	h, err := ReadBackupHeader(br)
	if err != nil {
		return h, nil, err
	}
	// Read one byte past the declared size, so that a longer file is caught, without
	// trusting the size for an allocation up front.
	state, err := io.ReadAll(io.LimitReader(br, h.Size+1))
	if err != nil {
		return h, nil, fmt.Errorf("%w: reading the state: %v", ErrBadBackup, err)
	}
	if err := h.Verify(state); err != nil {
		return h, nil, err
	}
	return h, state, nil
}
