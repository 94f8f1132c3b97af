package fault_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
)

// Crashes in the middle of appends, on the default log store (raft-wal): writers take
// locks through every node without pause while nodes are killed with SIGKILL, the leader
// alone or all three at once, five times, and started again. Every grant a writer was
// answered must still be held with its token afterwards, no token may be answered twice,
// and a grant after the crashes must have a token above every one answered before: the
// tokens, Raft log indexes, never regress across a crash of the log store.
func TestFault_KillNineMidAppendTokensNeverRegress(t *testing.T) {
	p := testcluster.StartProcesses(t, 3)
	p.WaitLeader(20 * time.Second)

	var (
		mu      sync.Mutex
		granted = map[string]uint64{}
		byToken = map[uint64]string{}
		next    atomic.Int64
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("crash/%d", next.Add(1))
				e := p.Endpoints()[rand.IntN(3)]
				var g api.Grant
				if a := fc.Do("PUT", e+"/v1/locks/"+name, rawhttp.JSON(api.AcquireRequest{TTLMs: 600_000})); a.Status == 200 && a.Decode(&g) == nil {
					mu.Lock()
					if other, dup := byToken[g.Token]; dup {
						t.Errorf("token %d answered for %s and for %s", g.Token, other, name)
					}
					granted[name], byToken[g.Token] = g.Token, name
					mu.Unlock()
				} else if a.Status == 0 || a.Status >= 500 {
					time.Sleep(20 * time.Millisecond) // a node down or electing: try another
				}
			}
		}()
	}
	for round := 0; round < 5; round++ {
		time.Sleep(time.Duration(300+rand.IntN(500)) * time.Millisecond) // appends in flight
		if round%2 == 0 {
			l := p.WaitLeader(30 * time.Second)
			p.Kill(l)
			t.Logf("round %d: killed the leader n%d", round+1, l+1)
			p.Start(l)
		} else {
			for i := 0; i < 3; i++ {
				p.Kill(i)
			}
			t.Logf("round %d: killed every node", round+1)
			p.StartAll()
		}
		p.WaitLeader(30 * time.Second)
	}
	time.Sleep(500 * time.Millisecond) // a last stretch of writes after the crashes
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	var highest uint64
	for name, token := range granted {
		if s := status(t, p, name); !s.Held || s.Token != token {
			t.Fatalf("%s was granted with token %d, and after the crashes it is %+v", name, token, s)
		}
		highest = max(highest, token)
	}
	g := acquire(t, p, "crash/after", 10_000)
	if g.Token <= highest {
		t.Fatalf("a grant after the crashes has token %d, not above %d", g.Token, highest)
	}
	t.Logf("%d grants answered across 5 crashes, all held; the next token %d is above the highest answered, %d", len(granted), g.Token, highest)
}
