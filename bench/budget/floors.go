package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/internal/budget"
	"github.com/raftlock/raftlock/test/testkit"
)

// floors are the physical lower bounds of the stages on this machine, each measured on
// its own, with nothing else of raftlock running.
type floors struct {
	// Fsync: pwrite of 4 KiB into an existing file in the data directory's file system,
	// then fdatasync: the least a durable log write costs.
	Fsync budget.Summary
	// Append: a 128-byte write at the end of a file, then fdatasync: the file grows, so
	// the sync also commits its new size to the file system's journal.
	Append budget.Summary
	// RTT: a 64-byte message to a loopback TCP echo server and back.
	RTT budget.Summary
	// Handoff: one goroutine waking another through a channel (half a ping-pong).
	Handoff budget.Summary
	// Decode: JSON-decoding an acquire request body as the handler does.
	Decode budget.Summary
	// Encode: JSON-encoding a grant answer as the handler does.
	Encode budget.Summary
	// Apply: the state machine decoding and applying one acquire or release entry,
	// called directly.
	Apply budget.Summary
}

// floorOf returns the floor of a stage and what it is made of.
func (f *floors) floorOf(s budget.Stage) (time.Duration, string) {
	switch s {
	case budget.HTTPIn:
		return f.Decode.P50, "JSON decode of the request"
	case budget.Forward:
		return f.RTT.P50, "1 loopback TCP round trip"
	case budget.QuorumWait:
		return f.RTT.P50, "1 loopback TCP round trip (the follower writes beside the leader)"
	case budget.Propose, budget.Commit:
		return f.Handoff.P50, "1 goroutine hand-off"
	case budget.LeaderWrite:
		return f.Fsync.P50, "1 pwrite + fdatasync (4 KiB)"
	case budget.Apply:
		return f.Apply.P50, "state machine apply, called directly"
	case budget.Answer:
		return f.Encode.P50 + f.Handoff.P50, "1 hand-off + JSON encode of the answer"
	}
	return 0, ""
}

// measureFloors measures every floor; dir is on the data directories' file system.
func measureFloors(dir string, samples int) (*floors, error) {
	f := &floors{}
	var err error
	if f.Fsync, f.Append, err = measureDisk(dir, samples); err != nil {
		return nil, err
	}
	if f.RTT, err = measureRTT(samples * 10); err != nil {
		return nil, err
	}
	f.Handoff = measureHandoff(samples * 10)
	if f.Decode, f.Encode, err = measureJSON(samples * 10); err != nil {
		return nil, err
	}
	if f.Apply, err = measureApply(samples * 10); err != nil {
		return nil, err
	}
	return f, nil
}

// measureDisk times both disk floors, one sample of each in turn, so that other load on
// the disk falls on both alike.
func measureDisk(dir string, samples int) (inPlace, appended budget.Summary, err error) {
	open := func(name string, flag int) (*os.File, func(), error) {
		p := filepath.Join(dir, name)
		fh, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR|os.O_TRUNC|flag, 0o600)
		if err != nil {
			return nil, nil, err
		}
		return fh, func() { fh.Close(); os.Remove(p) }, nil
	}
	fp, closeP, err := open("fsync-floor", 0)
	if err != nil {
		return inPlace, appended, err
	}
	defer closeP()
	fa, closeA, err := open("append-floor", os.O_APPEND)
	if err != nil {
		return inPlace, appended, err
	}
	defer closeA()
	block := bytes.Repeat([]byte{'x'}, 4096)
	const blocks = 64
	for i := 0; i < blocks; i++ { // the file exists and is synced: only data is written below
		if _, err := fp.Write(block); err != nil {
			return inPlace, appended, err
		}
	}
	if err := fp.Sync(); err != nil {
		return inPlace, appended, err
	}
	if err := fa.Sync(); err != nil {
		return inPlace, appended, err
	}
	rec := block[:128]
	p, a := make([]time.Duration, 0, samples), make([]time.Duration, 0, samples)
	for i := 0; i < samples; i++ {
		start := time.Now()
		if _, err := fp.WriteAt(block, int64(i%blocks)*4096); err != nil {
			return inPlace, appended, err
		}
		if err := fdatasync(fp); err != nil {
			return inPlace, appended, err
		}
		p = append(p, time.Since(start))
		start = time.Now()
		if _, err := fa.Write(rec); err != nil {
			return inPlace, appended, err
		}
		if err := fdatasync(fa); err != nil {
			return inPlace, appended, err
		}
		a = append(a, time.Since(start))
	}
	return budget.Summarize(p), budget.Summarize(a), nil
}

func measureRTT(samples int) (budget.Summary, error) {
	l, err := testkit.ListenLoopback()
	if err != nil {
		return budget.Summary{}, err
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return budget.Summary{}, err
	}
	defer c.Close()
	msg, back := make([]byte, 64), make([]byte, 64)
	out := make([]time.Duration, 0, samples)
	for i := 0; i < samples; i++ {
		start := time.Now()
		if _, err := c.Write(msg); err != nil {
			return budget.Summary{}, err
		}
		if _, err := io.ReadFull(c, back); err != nil {
			return budget.Summary{}, err
		}
		out = append(out, time.Since(start))
	}
	return budget.Summarize(out), nil
}

func measureHandoff(samples int) budget.Summary {
	ping, pong := make(chan time.Time), make(chan time.Duration)
	go func() {
		for t := range ping {
			pong <- time.Since(t)
		}
	}()
	out := make([]time.Duration, 0, samples)
	for i := 0; i < samples; i++ {
		ping <- time.Now()
		out = append(out, <-pong)
	}
	close(ping)
	return budget.Summarize(out)
}

func measureJSON(samples int) (dec, enc budget.Summary, err error) {
	body := []byte(`{"lease_id":"0123456789abcdef0123456789abcdef","wait_ms":30000}`)
	grant := api.Grant{Name: "budget/boltdb", Token: 123456, LeaseID: "0123456789abcdef0123456789abcdef", TTLMs: 86_400_000}
	var d, e []time.Duration
	var buf bytes.Buffer
	for i := 0; i < samples; i++ {
		start := time.Now()
		var req api.AcquireRequest
		jd := json.NewDecoder(bytes.NewReader(body))
		jd.DisallowUnknownFields()
		if err := jd.Decode(&req); err != nil {
			return dec, enc, err
		}
		d = append(d, time.Since(start))
		buf.Reset()
		start = time.Now()
		if err := json.NewEncoder(&buf).Encode(grant); err != nil {
			return dec, enc, err
		}
		e = append(e, time.Since(start))
	}
	return budget.Summarize(d), budget.Summarize(e), nil
}

func measureApply(samples int) (budget.Summary, error) {
	f := fsm.New(func(fsm.Event) {})
	var id fsm.LeaseID
	id[0] = 1
	index := uint64(1)
	apply := func(c *fsm.Command) (*fsm.Result, time.Duration) {
		l := &raft.Log{Index: index, Type: raft.LogCommand, Data: c.Encode(nil)}
		start := time.Now()
		r := f.ApplyBatch([]*raft.Log{l})[0].(*fsm.Result)
		took := time.Since(start)
		index++
		return r, took
	}
	if r, _ := apply(&fsm.Command{Type: fsm.TypeCreateLease, Now: 1, Lease: id, TTL: 86_400_000}); r.Status != fsm.StatusOK {
		return budget.Summary{}, fmt.Errorf("apply floor: create lease: %s", r.Status)
	}
	out := make([]time.Duration, 0, samples)
	for i := 0; i < samples/2; i++ {
		r, took := apply(&fsm.Command{Type: fsm.TypeAcquire, Now: int64(index), Lease: id, Name: "budget/floor"})
		if r.Status != fsm.StatusOK {
			return budget.Summary{}, fmt.Errorf("apply floor: acquire: %s", r.Status)
		}
		out = append(out, took)
		r, took = apply(&fsm.Command{Type: fsm.TypeRelease, Now: int64(index), Lease: id, Name: "budget/floor", Token: r.Token})
		if r.Status != fsm.StatusOK {
			return budget.Summary{}, fmt.Errorf("apply floor: release: %s", r.Status)
		}
		out = append(out, took)
	}
	return budget.Summarize(out), nil
}
