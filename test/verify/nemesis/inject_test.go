package nemesis

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeTarget is a three-node Target whose node actions fail on demand.
type fakeTarget struct {
	fail   error // returned by Kill, Pause, Resume and Terminate when set
	killed []int
	paused []int
}

func (f *fakeTarget) N() int                         { return 3 }
func (f *fakeTarget) Leader() int                    { return 0 }
func (f *fakeTarget) Start(int) error                { return nil }
func (f *fakeTarget) RemoveNode(int) error           { return f.fail }
func (f *fakeTarget) AddNode(int) error              { return nil }
func (f *fakeTarget) ElectionTimeout() time.Duration { return 10 * time.Millisecond }
func (f *fakeTarget) Resume(int) error               { return f.fail }
func (f *fakeTarget) Terminate(int) error            { return f.fail }
func (f *fakeTarget) Kill(i int) error {
	if f.fail != nil {
		return f.fail
	}
	f.killed = append(f.killed, i)
	return nil
}
func (f *fakeTarget) Pause(i int) error {
	if f.fail != nil {
		return f.fail
	}
	f.paused = append(f.paused, i)
	return nil
}

// A fault that could not be injected is an error, never a fault in force: the campaign
// counts only faults that Inject returned without an error.
func TestInject_FailedInjectionIsAnError(t *testing.T) {
	broken := errors.New("signal refused")
	for _, k := range []Kind{KillLeader, KillFollower, PauseLeader, PauseFollower, RestartAll, TransferLoop, RemoveAdd} {
		in, err := Inject(&fakeTarget{fail: broken}, NewNet(3, nil), Fault{Kind: k, Hold: 50 * time.Millisecond})
		if !errors.Is(err, broken) {
			t.Errorf("%s with failing node actions: Inject = %v, %v; want the action's error", k, in, err)
		}
	}
	// Network faults on a Net without proxies cannot be made.
	for _, k := range []Kind{PartitionLeader, PartitionFollower, PartitionSplit, SnapshotInstall, OneWayLeaderDeaf, OneWayLeaderMute, DelayLinks} {
		nt := NewNet(3, nil)
		_, err := Inject(&fakeTarget{}, nt, Fault{Kind: k})
		if err == nil || !strings.Contains(err.Error(), "no proxy") {
			t.Errorf("%s without proxies: Inject error = %v, want \"no proxy\"", k, err)
		}
		if nt.Faulty() {
			t.Errorf("%s: a failed injection left rules in force", k)
		}
	}
	// And a working target is acted on.
	ft := &fakeTarget{}
	if _, err := Inject(ft, NewNet(3, nil), Fault{Kind: KillLeader}); err != nil || len(ft.killed) != 1 {
		t.Fatalf("kill-leader on a working target: %v, killed %v", err, ft.killed)
	}
}
