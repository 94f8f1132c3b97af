package transport

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/cluster"
)

// stubRoles returns svc with every role it leaves nil set to a stub, so that a handler's
// test fakes only the role it uses (NewServer requires them all). A stub answers the
// calls the server makes outside any one route as a node with nothing to report: no
// member is a node, nothing needs registering, the metrics and the usage counts are zero,
// and every lease exists and is anyone's (the lease gate lets every call through). Any
// other call panics on the stub's nil role and the server recovers it as a 500: a test
// that reaches one calls a role it did not fake.
func stubRoles(svc Services) Services {
	v := reflect.ValueOf(&svc).Elem()
	stubs := reflect.ValueOf(Services{
		Leases: stubLeases{}, Locks: stubLocks{}, Semaphores: stubSemaphores{}, Elections: stubElections{},
		Members: stubMembers{}, Registrar: stubRegistrar{}, Routing: stubRouting{}, Status: stubStatus{},
		ACL: stubACL{}, Identities: stubIdentities{}, Usage: stubUsage{}, Events: stubEvents{}, Backups: stubBackups{}, LockSets: stubLockSets{},
	})
	for i := range v.NumField() {
		if v.Field(i).IsNil() {
			v.Field(i).Set(stubs.Field(i))
		}
	}
	return svc
}

type stubLeases struct{ LeaseService }

func (stubLeases) Creator(cluster.LeaseID) (string, bool)                { return "", true }
func (stubLeases) ReadBarrier(context.Context) error                     { return nil }
func (stubLeases) ImplicitLease(context.Context, string) cluster.LeaseID { return cluster.LeaseID{} }

type stubLocks struct{ LockService }
type stubSemaphores struct{ SemaphoreService }
type stubElections struct{ ElectionService }
type stubLockSets struct{ LockSetService }
type stubRouting struct{ Routing }
type stubEvents struct{ EventSource }
type stubBackups struct{ Backups }

type stubMembers struct{ Membership }

func (stubMembers) Has(string) bool                { return false }
func (stubMembers) RaftAddr(string) (string, bool) { return "", false }

type stubRegistrar struct{ Registrar }

func (stubRegistrar) Self() cluster.NodeInfo         { return cluster.NodeInfo{} }
func (stubRegistrar) NeedsRegistration() bool        { return false }
func (stubRegistrar) NeedsVersionRegistration() bool { return false }
func (stubRegistrar) MaxVersion() uint64             { return 0 }

type stubStatus struct{ StatusReporter }

func (stubStatus) Status() cluster.Status   { return cluster.Status{} }
func (stubStatus) Metrics() cluster.Metrics { return cluster.Metrics{} }

type stubACL struct{ ACLStore }
type stubIdentities struct{ Identities }
type stubUsage struct{ UsageReader }

func (stubUsage) Usages() ([]cluster.UsageView, uint64, uint64, uint64) { return nil, 0, 0, 0 }

// TestNewServer_RefusesAMissingRole: NewServer builds a server over every role, and
// refuses a Services that lacks any one of them (nil, or a nil pointer in the role) with
// ErrMissingRole naming it, before anything is served.
func TestNewServer_RefusesAMissingRole(t *testing.T) {
	full := stubRoles(Services{})
	if _, err := NewServer(Config{Services: full, Logger: hclog.NewNullLogger()}); err != nil {
		t.Fatalf("every role set: %v", err)
	}
	typ := reflect.TypeFor[Services]()
	for i := range typ.NumField() {
		name := "Services." + typ.Field(i).Name
		svc := full
		reflect.ValueOf(&svc).Elem().Field(i).SetZero()
		_, err := NewServer(Config{Services: svc, Logger: hclog.NewNullLogger()})
		if !errors.Is(err, ErrMissingRole) || !strings.Contains(err.Error(), name) {
			t.Errorf("without %s: NewServer answered %v; want ErrMissingRole naming %s", name, err, name)
		}
	}
}

// TestNodeServices_ARoleNeverBuiltIsMissing: a node whose roles were never built (their
// accessors answer nil pointers) is refused, every such role named and no other, so a
// role that NewNode forgets to make stops the start of the server.
func TestNodeServices_ARoleNeverBuiltIsMissing(t *testing.T) {
	_, err := NewServer(Config{Services: NodeServices(&cluster.Node{}), Logger: hclog.NewNullLogger()})
	if !errors.Is(err, ErrMissingRole) {
		t.Fatalf("NewServer over a node without roles: %v; want ErrMissingRole", err)
	}
	// Routing, Status and Backups are the node itself.
	want := "Services.Leases, Services.Locks, Services.Semaphores, Services.Elections, Services.Members, Services.Registrar, Services.ACL, Services.Identities, Services.Usage, Services.Events, Services.LockSets"
	if got := strings.TrimPrefix(strings.SplitN(err.Error(), " (", 2)[0], ErrMissingRole.Error()+": "); got != want {
		t.Errorf("the error names %s; want %s", got, want)
	}
}
