package api

// ACL rights, from least to most: each includes the ones before it.
const (
	// AccessDeny grants nothing; a longer prefix with deny carves a hole in a shorter one.
	AccessDeny = "deny"
	// AccessRead: lock status, lists, blocking queries, lease lookups.
	AccessRead = "read"
	// AccessLock: acquire and release, and creating, keeping alive and revoking leases.
	AccessLock = "lock"
	// AccessAdmin: everything, and on the empty prefix membership, ACL management and
	// snapshots.
	AccessAdmin = "admin"
)

// AuthorizationHeader carries the ACL token as "Bearer <secret_id>".
const AuthorizationHeader = "Authorization"

// Names of the policies the cluster defines itself.
const (
	// PolicyGlobalManagement grants admin on every name; the bootstrap token holds it.
	PolicyGlobalManagement = "global-management"
	// PolicyAnonymous, when an operator creates it, applies to requests without a token.
	// Without it, ACLs deny every request that carries no token.
	PolicyAnonymous = "anonymous"
)

// ACLRule grants Access on every lock name starting with Prefix. When several rules of a
// token's policies match a name, the longest prefix decides.
type ACLRule struct {
	// Prefix is a lock-name prefix; "" matches every name (and cluster-wide operations).
	Prefix string `json:"prefix"`
	// Access is one of AccessDeny, AccessRead, AccessLock, AccessAdmin.
	Access string `json:"access"`
}

// ACLPolicy is a named set of rules.
type ACLPolicy struct {
	// Name is 1-128 characters of [A-Za-z0-9_-].
	Name string `json:"name"`
	// Description is free text for operators.
	Description string `json:"description,omitempty"`
	// Rules are the policy's grants.
	Rules []ACLRule `json:"rules"`
	// Quotas are the quotas the policy grants the tokens that hold it; absent when it sets
	// none.
	Quotas *Quotas `json:"quotas,omitempty"`
}

// Quotas bound what one identity (an ACL token, or every caller without a token) may hold
// in the cluster at once (protocol version 5). A quota left out or 0 is not set here: a
// token's own quota wins, then the largest that any of its policies sets, then the
// cluster's default for identities (raftlock serve --max-leases-per-identity and the
// others).
type Quotas struct {
	// MaxLeases bounds the identity's live leases.
	MaxLeases uint64 `json:"max_leases,omitempty"`
	// MaxLocks bounds the grants it holds: locks (each holder of a shared lock),
	// semaphore permits and leaderships.
	MaxLocks uint64 `json:"max_locks,omitempty"`
	// MaxWaiters bounds its waits: for locks (one per lock of a waiting lockset), for
	// permits, and candidacies.
	MaxWaiters uint64 `json:"max_waiters,omitempty"`
}

// ACLPolicyRequest is the body of PUT /v1/acl/policies/{name}.
type ACLPolicyRequest struct {
	// Description is free text for operators.
	Description string `json:"description,omitempty"`
	// Rules are the policy's grants.
	Rules []ACLRule `json:"rules"`
	// Quotas, when set, are the quotas the policy grants (protocol version 5).
	Quotas *Quotas `json:"quotas,omitempty"`
}

// ACLTokenRequest is the body of POST /v1/acl/tokens (create) and PUT
// /v1/acl/tokens/{accessor} (update: the secret stays, the rest is replaced).
type ACLTokenRequest struct {
	// Description is free text for operators (never a secret).
	Description string `json:"description,omitempty"`
	// Policies names the policies the token holds.
	Policies []string `json:"policies"`
	// Quotas, when set, are the token's own quotas, which win over its policies'
	// (protocol version 5).
	Quotas *Quotas `json:"quotas,omitempty"`
}

// Use is one quota's use: how much the identity (or the cluster) has, and the limit (0:
// none).
type Use struct {
	Used  uint64 `json:"used"`
	Limit uint64 `json:"limit"`
}

// Usage is one identity's use of the cluster beside its quotas in force: the answer to GET
// /v1/usage (the caller's own) and an item of GET /v1/usage?all.
type Usage struct {
	// Identity is the token's accessor ID; "anonymous" for callers without a token. With
	// ACLs off every caller is one identity, "anonymous", whose quotas are the cluster's
	// limits.
	Identity string `json:"identity"`
	Leases   Use    `json:"leases"`
	Locks    Use    `json:"locks"`
	Waiters  Use    `json:"waiters"`
}

// UsageList is the answer to GET /v1/usage?all (admin on the empty prefix): every
// identity with a lease, and the whole cluster against its limits.
type UsageList struct {
	Identities []Usage `json:"identities"`
	Cluster    Usage   `json:"cluster"`
}

// ACLToken describes a token. SecretID appears only in the answer that creates the token
// (bootstrap or create); the cluster stores only its hash and can never show it again.
type ACLToken struct {
	// AccessorID is the token's public identifier: use it to list and revoke the token.
	AccessorID string `json:"accessor_id"`
	// SecretID is the bearer secret, shown once.
	SecretID string `json:"secret_id,omitempty"`
	// Description is free text for operators.
	Description string `json:"description,omitempty"`
	// Policies names the policies the token holds.
	Policies []string `json:"policies"`
	// Quotas are the token's own quotas; absent when it sets none.
	Quotas *Quotas `json:"quotas,omitempty"`
}

// ACLTokenList is the answer to GET /v1/acl/tokens.
type ACLTokenList struct {
	// Tokens are sorted by accessor ID, without secrets.
	Tokens []ACLToken `json:"tokens"`
}

// ACLPolicyList is the answer to GET /v1/acl/policies.
type ACLPolicyList struct {
	// Policies are sorted by name.
	Policies []ACLPolicy `json:"policies"`
}

// LeaseRequest is the body of the lease routes that keep the lease ID out of the URL
// (POST /v1/leases/keepalive, /v1/leases/lookup, /v1/leases/revoke): a URL ends up in
// access logs, proxies' logs and error texts, and a lease ID is a bearer secret.
type LeaseRequest struct {
	// LeaseID is the lease acted on.
	LeaseID string `json:"lease_id"`
}
