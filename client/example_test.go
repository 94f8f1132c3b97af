package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/raftlock/raftlock/client"
)

// The payment flow: take the lock for an order, pass its fencing token to the storage
// with the write, and unlock. The ledger (any storage that checks tokens) refuses a write
// whose token is lower than one it has already accepted for the order, so a worker that
// paused while a newer holder took over cannot charge twice.
func Example_payment() {
	ctx := context.Background()
	c, err := client.New(exampleEndpoints()) // e.g. []string{"http://127.0.0.1:7001", ...}
	if err != nil {
		panic(err)
	}
	lease, err := c.NewLease(ctx, 10*time.Second)
	if err != nil {
		panic(err)
	}
	defer lease.Close(ctx)

	m := client.NewMutex(lease, "payments/order-1001", client.WithOwner("worker-7"))
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	token := m.Token()

	// The write carries the token; the ledger checks it atomically with the write.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://ledger.internal/v1/accounts/A/debit",
		strings.NewReader(`{"amount_cents": 4200}`))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Fencing-Token", strconv.FormatUint(token, 10))
	req.Header.Set("Idempotency-Key", "order-1001") // fencing does not stop a second holder redoing the work
	// Here the worker would send req (http.DefaultClient.Do(req)), but only while the lock
	// is not known lost:
	select {
	case <-m.Lost():
		fmt.Println("lock lost; not charging")
		return
	default:
	}
	fmt.Println("locked", m.Name())
	fmt.Println("token sent:", req.Header.Get("Fencing-Token") == strconv.FormatUint(token, 10), token > 0)

	if err := m.Unlock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("unlocked; token now", m.Token())
	// Output:
	// locked payments/order-1001
	// token sent: true true
	// unlocked; token now 0
}

// TryLock fails at once with ErrLockHeld when another lease holds the lock.
func ExampleMutex_TryLock() {
	ctx := context.Background()
	c, err := client.New(exampleEndpoints())
	if err != nil {
		panic(err)
	}
	a := c.NewMutex("reports/nightly", client.WithLeaseTTL(5*time.Second))
	if err := a.Lock(ctx); err != nil {
		panic(err)
	}
	defer a.Unlock(ctx)

	b := c.NewMutex("reports/nightly", client.WithLeaseTTL(5*time.Second))
	err = b.TryLock(ctx)
	fmt.Println(errors.Is(err, client.ErrLockHeld))
	// Output: true
}

// A long job checks Lost between steps and stops writing once the lease is gone. Lock
// waits on the server for as long as the context allows.
func ExampleMutex_Lost() {
	ctx := context.Background()
	c, err := client.New(exampleEndpoints())
	if err != nil {
		panic(err)
	}
	m := c.NewMutex("migrations/schema", client.WithLeaseTTL(5*time.Second))
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := m.Lock(wctx); err != nil {
		fmt.Println("could not take the lock:", err)
		return
	}
	defer m.Unlock(ctx)
	for step := 1; step <= 3; step++ {
		select {
		case <-m.Lost():
			fmt.Println("lease lost; stopping before step", step)
			return
		default:
		}
		fmt.Println("step", step, "with token", m.Token() > 0)
	}
	// Output:
	// step 1 with token true
	// step 2 with token true
	// step 3 with token true
}

// SafeUntil tells how long the holder may still assume its lease is alive, on its own
// monotonic clock.
func ExampleLease_SafeUntil() {
	ctx := context.Background()
	c, err := client.New(exampleEndpoints())
	if err != nil {
		panic(err)
	}
	lease, err := c.NewLease(ctx, 5*time.Second)
	if err != nil {
		panic(err)
	}
	defer lease.Close(ctx)
	left := time.Until(lease.SafeUntil())
	// At most TTL minus the drift margin (0.5 s for a 5 s TTL), counted from the send time.
	fmt.Println(left > 0 && left <= 5*time.Second-lease.DriftMargin(), lease.DriftMargin())
	// Output: true 500ms
}

// Readers share the lock; a writer waits until the last reader leaves, and its token,
// higher than every reader's, is the one that fences its writes.
func ExampleRWMutex() {
	ctx := context.Background()
	c, err := client.New(exampleEndpoints())
	if err != nil {
		panic(err)
	}
	r1 := c.NewRWMutex("catalog/prices", client.WithLeaseTTL(5*time.Second))
	r2 := c.NewRWMutex("catalog/prices", client.WithLeaseTTL(5*time.Second))
	if err := r1.RLock(ctx); err != nil {
		panic(err)
	}
	if err := r2.RLock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("two readers:", r1.Mode(), r2.Mode())

	w := c.NewRWMutex("catalog/prices", client.WithLeaseTTL(5*time.Second))
	fmt.Println("writer beside readers:", errors.Is(w.TryLock(ctx), client.ErrLockHeld))
	r1.RUnlock(ctx)
	r2.RUnlock(ctx)
	if err := w.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("writer:", w.Mode(), w.Token() > r2.Token())
	w.Unlock(ctx)
	// Output:
	// two readers: shared shared
	// writer beside readers: true
	// writer: exclusive true
}

// A semaphore of limit 2 lets two workers in; a third is refused (or waits, with
// Acquire) until a permit is released. Each permit has its own fencing token.
func ExampleSemaphore() {
	ctx := context.Background()
	c, err := client.New(exampleEndpoints())
	if err != nil {
		panic(err)
	}
	var workers []*client.Semaphore
	for i := 0; i < 3; i++ {
		workers = append(workers, c.NewSemaphore("exports/slots", 2, client.WithOwner(fmt.Sprint("worker-", i)), client.WithLeaseTTL(5*time.Second)))
	}
	fmt.Println(workers[0].TryAcquire(ctx), workers[1].TryAcquire(ctx))
	fmt.Println("third:", errors.Is(workers[2].TryAcquire(ctx), client.ErrSemaphoreFull))

	st, err := c.SemaphoreStatus(ctx, "exports/slots", client.StatusOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("limit", st.Limit, "in use", len(st.Permits), "by", st.Permits[0].Owner, st.Permits[1].Owner)

	workers[0].Release(ctx)
	fmt.Println("third, after a release:", workers[2].Acquire(ctx))
	workers[1].Release(ctx)
	workers[2].Release(ctx)
	// Output:
	// <nil> <nil>
	// third: true
	// limit 2 in use 2 by worker-0 worker-1
	// third, after a release: <nil>
}

// One process leads and publishes its address; others observe who leads. When the leader
// resigns, the next candidate leads, in the same commit, with its own value.
func ExampleElection() {
	ctx := context.Background()
	c, err := client.New(exampleEndpoints())
	if err != nil {
		panic(err)
	}
	a := c.NewElection("services/scheduler", client.WithOwner("host-a"), client.WithLeaseTTL(5*time.Second))
	if err := a.Campaign(ctx, "10.0.0.1:9000"); err != nil {
		panic(err)
	}
	octx, stop := context.WithCancel(ctx)
	defer stop()
	changes := a.Observe(octx)
	l := <-changes
	fmt.Println("leader:", l.Owner, l.Value, l.Token == a.Token())

	b := c.NewElection("services/scheduler", client.WithOwner("host-b"), client.WithLeaseTTL(5*time.Second))
	elected := make(chan error, 1)
	go func() { elected <- b.Campaign(ctx, "10.0.0.2:9000") }() // waits as a candidate

	if err := a.Proclaim(ctx, "10.0.0.1:9001"); err != nil {
		panic(err)
	}
	for l.Value != "10.0.0.1:9001" {
		l = <-changes
	}
	fmt.Println("proclaimed:", l.Value, "same token:", l.Token == a.Token())

	a.Resign(ctx)
	if err := <-elected; err != nil {
		panic(err)
	}
	for l.Owner != "host-b" {
		l = <-changes
	}
	fmt.Println("next leader:", l.Owner, l.Value)
	b.Resign(ctx)
	// Output:
	// leader: host-a 10.0.0.1:9000 true
	// proclaimed: 10.0.0.1:9001 same token: true
	// next leader: host-b 10.0.0.2:9000
}
