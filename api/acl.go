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
}

// ACLPolicyRequest is the body of PUT /v1/acl/policies/{name}.
type ACLPolicyRequest struct {
	// Description is free text for operators.
	Description string `json:"description,omitempty"`
	// Rules are the policy's grants.
	Rules []ACLRule `json:"rules"`
}

// ACLTokenRequest is the body of POST /v1/acl/tokens.
type ACLTokenRequest struct {
	// Description is free text for operators (never a secret).
	Description string `json:"description,omitempty"`
	// Policies names the policies the token holds.
	Policies []string `json:"policies"`
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
