package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft-wal/migrate"
)

// convertMarker records a conversion in progress in the data directory: "FROM TO".
const convertMarker = "log-store-convert"

// ConvertLogStore converts the Raft log store of a stopped node's data directory dir to
// kind to (LogStoreWAL or LogStoreBoltDB), in place: it copies every log entry and the
// term and vote into a new store beside the old one (hashicorp/raft-wal/migrate), puts
// the new store in place and moves the old one aside as raft.db.before-wal-TIME or
// wal.before-boltdb-TIME, which the operator deletes once the node runs. Snapshots stay
// as they are. It takes the data directory's lock, so a running node is never converted,
// and an interrupted conversion leaves the old store whole: running it again finishes or
// redoes it (a node refuses a directory that holds both stores meanwhile). progress is
// told each step.
func ConvertLogStore(ctx context.Context, dir string, to LogStoreKind, logger hclog.Logger, progress func(string)) error {
	if to != LogStoreWAL && to != LogStoreBoltDB {
		return fmt.Errorf("cluster: convert: the target store must be wal or boltdb, not %q", to)
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if progress == nil {
		progress = func(string) {}
	}
	unlock, err := openDataDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	marker := filepath.Join(dir, convertMarker)
	final, temp := storePaths(dir, to)
	if b, err := os.ReadFile(marker); err == nil {
		// An interrupted conversion: if the new store was put in place, only the old
		// one's move aside remains; otherwise start again.
		from, want, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
		if LogStoreKind(want) != to {
			return fmt.Errorf("cluster: convert: %s records an interrupted conversion from %s to %s; run it again with --to %s", marker, from, want, want)
		}
		if _, err := os.Stat(final); err == nil {
			progress("finishing an interrupted conversion: moving the " + from + " store aside")
			return finishConvert(dir, LogStoreKind(from), marker, progress)
		}
		if err := os.RemoveAll(temp); err != nil {
			return fmt.Errorf("cluster: convert: removing the partial %s: %w", temp, err)
		}
	}
	from, found, err := DetectLogStore(dir)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("cluster: convert: %s holds no Raft log store (neither raft.db nor wal/); a new node needs no conversion", dir)
	}
	if from == to {
		return fmt.Errorf("cluster: convert: %s already uses %s", dir, to)
	}
	if err := os.WriteFile(marker, []byte(string(from)+" "+string(to)+"\n"), dataFileMode); err != nil {
		return fmt.Errorf("cluster: convert: %w", err)
	}
	src, err := openLogStore(dir, from, 0, logger)
	if err != nil {
		return err
	}
	err = copyStore(ctx, src, dir, to, temp, logger, progress)
	if cerr := src.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("cluster: convert: closing the %s store: %w", from, cerr)
	}
	if err != nil {
		return err
	}
	if err := os.Rename(temp, final); err != nil {
		return fmt.Errorf("cluster: convert: putting the new store in place: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return finishConvert(dir, from, marker, progress)
}

// storePaths returns where a store of kind lives in dir, and where a conversion builds it.
func storePaths(dir string, kind LogStoreKind) (final, temp string) {
	if kind == LogStoreWAL {
		return filepath.Join(dir, walDir), filepath.Join(dir, walDir+".converting")
	}
	return filepath.Join(dir, boltFile), filepath.Join(dir, boltFile+".converting")
}

// copyStore copies src's log and stable values into a new store of kind to at temp.
func copyStore(ctx context.Context, src logStore, dir string, to LogStoreKind, temp string, logger hclog.Logger, progress func(string)) error {
	// A store of kind to is opened in a scratch data directory, then its file (or
	// directory) is what moves to temp.
	scratch, err := os.MkdirTemp(dir, ".convert-")
	if err != nil {
		return fmt.Errorf("cluster: convert: %w", err)
	}
	defer os.RemoveAll(scratch)
	dst, err := openLogStore(scratch, to, 0, logger)
	if err != nil {
		return err
	}
	first, _ := src.FirstIndex()
	last, _ := src.LastIndex()
	progress(fmt.Sprintf("copying log entries %d to %d into a new %s store", first, last, to))
	ch := make(chan string, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range ch {
			progress(m)
		}
	}()
	if last > 0 {
		err = migrate.CopyLogs(ctx, dst, src, 4<<20, ch)
	} else {
		close(ch)
	}
	<-done
	if err == nil {
		ch = make(chan string, 16)
		done = make(chan struct{})
		go func() {
			defer close(done)
			for m := range ch {
				progress(m)
			}
		}()
		err = migrate.CopyStable(ctx, dst, src, nil, nil, ch)
		<-done
	}
	if err == nil {
		err = checkCopy(src, dst)
	}
	if cerr := dst.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cluster: convert: %w (the old store is unchanged)", err)
	}
	made, _ := storePaths(scratch, to)
	return os.Rename(made, temp)
}

// checkCopy compares the two stores' bounds and term.
func checkCopy(src, dst logStore) error {
	for _, f := range []func(logStore) (uint64, error){logStore.FirstIndex, logStore.LastIndex} {
		a, err := f(src)
		if err != nil {
			return err
		}
		b, err := f(dst)
		if err != nil {
			return err
		}
		if a != b && !(a == 0 && b == 0) {
			return fmt.Errorf("the copy's log bounds differ from the original's (%d, %d)", a, b)
		}
	}
	a, _ := src.GetUint64(keyCurrentTerm)
	b, _ := dst.GetUint64(keyCurrentTerm)
	if a != b {
		return fmt.Errorf("the copy's term %d differs from the original's %d", b, a)
	}
	return nil
}

// finishConvert moves the old store aside and removes the marker.
func finishConvert(dir string, from LogStoreKind, marker string, progress func(string)) error {
	old, _ := storePaths(dir, from)
	aside := fmt.Sprintf("%s.before-%s-%s", old, otherKind(from), time.Now().UTC().Format("20060102T150405Z"))
	if _, err := os.Stat(old); err == nil {
		if err := os.Rename(old, aside); err != nil {
			return fmt.Errorf("cluster: convert: moving the old store aside: %w", err)
		}
		progress("the old " + string(from) + " store is at " + aside + "; delete it once the node runs")
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Remove(marker); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return syncDir(dir)
}

func otherKind(k LogStoreKind) LogStoreKind {
	if k == LogStoreWAL {
		return LogStoreBoltDB
	}
	return LogStoreWAL
}

// syncDir fsyncs a directory, so that renames in it last.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cluster: syncing %s: %w", dir, err)
	}
	return nil
}
