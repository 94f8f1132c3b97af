module github.com/raftlock/raftlock/bench/peers

go 1.26.0

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/raftlock/raftlock v0.0.0-00010101000000-000000000000
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

// benchkit, the shared workload and report code, comes from this checkout.
replace github.com/raftlock/raftlock => ../..
