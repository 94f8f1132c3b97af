// Package cpuprof reads Go CPU profiles (the gzipped protocol buffers of runtime/pprof and
// /debug/pprof/profile) and takes a server's CPU apart by component: the consensus library,
// its message encoding, the log store, the state machine, HTTP and JSON, TLS, the runtime's
// collector, allocator and scheduler, and system calls by kind. It reads raftlock's and
// etcd's profiles alike, so that the two breakdowns stand side by side in one table
// (`raftlock-bench cpu`, docs/PERFORMANCE.md).
//
// It decodes the profile itself (protowire only) rather than through google/pprof, so that
// the benchmark needs nothing beyond the modules the server already builds with.
package cpuprof

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Sample is one stack of a CPU profile and the CPU time charged to it.
type Sample struct {
	// Stack holds function names, the leaf (where the CPU was) first; inlined calls are
	// frames of their own, as pprof shows them.
	Stack []string
	// CPU is the time charged to the stack, in nanoseconds.
	CPU int64
}

// Profile is a CPU profile reduced to what a breakdown needs.
type Profile struct {
	Samples []Sample
	// Duration is how long the profile ran (the wall time, not the CPU).
	Duration time.Duration
}

// Total is the CPU time of every sample.
func (p *Profile) Total() time.Duration {
	var t int64
	for _, s := range p.Samples {
		t += s.CPU
	}
	return time.Duration(t)
}

// Merge returns one profile of several processes' profiles taken over the same window
// (a cluster's members): their samples together, and the longest duration.
func Merge(ps ...*Profile) *Profile {
	out := &Profile{}
	for _, p := range ps {
		out.Samples = append(out.Samples, p.Samples...)
		out.Duration = max(out.Duration, p.Duration)
	}
	return out
}

// Field numbers of profile.proto (github.com/google/pprof/proto/profile.proto) that a
// breakdown reads; every other field is skipped.
const (
	fProfileSampleType    = 1
	fProfileSample        = 2
	fProfileLocation      = 4
	fProfileFunction      = 5
	fProfileStringTable   = 6
	fProfileDurationNanos = 10

	fValueTypeType = 1

	fSampleLocationID = 1
	fSampleValue      = 2

	fLocationID   = 1
	fLocationLine = 4

	fLineFunctionID = 1

	fFunctionID   = 1
	fFunctionName = 2
)

// Parse reads a CPU profile, gzipped (as Go writes them) or not. The CPU time is the
// sample value whose type is "cpu" (nanoseconds); a profile without one is refused.
func Parse(data []byte) (*Profile, error) {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("cpuprof: %w", err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("cpuprof: %w", err)
		}
	}
	var (
		strs      []string
		types     []int64 // string index of each sample type
		rawSample [][]byte
		locs      = map[uint64][]uint64{} // location id -> function ids, innermost first
		funcs     = map[uint64]int64{}    // function id -> string index of its name
		duration  int64
	)
	err := fields(data, func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error {
		switch num {
		case fProfileSampleType:
			var t int64
			err := fields(b, func(n protowire.Number, _ protowire.Type, v uint64, _ []byte) error {
				if n == fValueTypeType {
					t = int64(v)
				}
				return nil
			})
			types = append(types, t)
			return err
		case fProfileSample:
			rawSample = append(rawSample, b)
		case fProfileLocation:
			var id uint64
			var fns []uint64
			err := fields(b, func(n protowire.Number, _ protowire.Type, v uint64, lb []byte) error {
				switch n {
				case fLocationID:
					id = v
				case fLocationLine:
					return fields(lb, func(n protowire.Number, _ protowire.Type, v uint64, _ []byte) error {
						if n == fLineFunctionID {
							fns = append(fns, v)
						}
						return nil
					})
				}
				return nil
			})
			locs[id] = fns
			return err
		case fProfileFunction:
			var id uint64
			var name int64
			err := fields(b, func(n protowire.Number, _ protowire.Type, v uint64, _ []byte) error {
				switch n {
				case fFunctionID:
					id = v
				case fFunctionName:
					name = int64(v)
				}
				return nil
			})
			funcs[id] = name
			return err
		case fProfileStringTable:
			strs = append(strs, string(b))
		case fProfileDurationNanos:
			duration = int64(v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	cpu := -1
	for i, t := range types {
		if t >= 0 && t < int64(len(strs)) && strs[t] == "cpu" {
			cpu = i
		}
	}
	if cpu < 0 {
		return nil, errors.New("cpuprof: not a CPU profile (no sample type \"cpu\")")
	}
	name := func(fn uint64) string {
		if i, ok := funcs[fn]; ok && i >= 0 && i < int64(len(strs)) {
			return strs[i]
		}
		return "?"
	}
	p := &Profile{Duration: time.Duration(duration)}
	for _, raw := range rawSample {
		var ids []uint64
		var vals []int64
		err := fields(raw, func(n protowire.Number, typ protowire.Type, v uint64, b []byte) error {
			switch n {
			case fSampleLocationID:
				return repeated(typ, v, b, func(x uint64) { ids = append(ids, x) })
			case fSampleValue:
				return repeated(typ, v, b, func(x uint64) { vals = append(vals, int64(x)) })
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if cpu >= len(vals) || vals[cpu] == 0 {
			continue
		}
		s := Sample{CPU: vals[cpu]}
		for _, id := range ids {
			for _, fn := range locs[id] {
				s.Stack = append(s.Stack, name(fn))
			}
		}
		p.Samples = append(p.Samples, s)
	}
	return p, nil
}

// fields calls f for each field of the message b: v is a varint's (or fixed number's)
// value, and for a length-delimited field b is its bytes.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("cpuprof: %w", protowire.ParseError(n))
		}
		b = b[n:]
		var v uint64
		var sub []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			v, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var v32 uint32
			v32, n = protowire.ConsumeFixed32(b)
			v = uint64(v32)
		case protowire.BytesType:
			sub, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("cpuprof: field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := f(num, typ, v, sub); err != nil {
			return err
		}
	}
	return nil
}

// repeated reads a repeated integer field, packed (one length-delimited run of varints)
// or not (one varint per occurrence); profile.proto allows both.
func repeated(typ protowire.Type, v uint64, b []byte, add func(uint64)) error {
	if typ != protowire.BytesType {
		add(v)
		return nil
	}
	for len(b) > 0 {
		x, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return fmt.Errorf("cpuprof: packed field: %w", protowire.ParseError(n))
		}
		add(x)
		b = b[n:]
	}
	return nil
}
