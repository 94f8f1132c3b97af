// Package ledger is a small payment ledger that shows storage-side fencing at work: the demo
// half of raftlock that a lock alone cannot provide.
//
// Workers charge accounts under a raftlock lock named after the account, and pass their
// fencing token in the Fencing-Token header. The ledger debits the account in one database
// transaction that first raises the account's fence (resource "accounts/<id>"), so a worker
// that lost its lock during a pause is refused with 409 stale_token and nothing it sent is
// written. Each charge also carries a charge_id, an idempotency key: a charge_id seen before is
// answered from the record (200, "replayed": true) and never debited twice. Fencing stops a
// stale worker; the idempotency key stops a request being applied twice by two successive,
// legitimate lock holders. A payment needs both.
//
// With Config.Fenced false the ledger skips the fence check (it still records the token it was
// given): that is what a plain time-based lock gives you, and the demo uses it to show the
// double charge that fencing prevents.
//
// The HTTP API:
//
//	POST /v1/charges        {"charge_id","account","amount_cents"} + Fencing-Token header
//	                        201 {"charge_id","account","amount_cents","token","balance_cents"}
//	                        200 the same, with "replayed": true, for a known charge_id
//	PUT  /v1/accounts/{id}  {"balance_cents"}: create or reset an account (setup, not fenced)
//	GET  /v1/accounts/{id}  {"id","balance_cents","fence_token","charges":[...]}
//	GET  /healthz
//
// Errors are {"error":{"code","message"}}: 400 invalid_json, invalid_argument, missing_token,
// invalid_token; 404 account_not_found, not_found; 405 method_not_allowed; 409 stale_token,
// charge_conflict; 413 body_too_large; 500 internal; 503 unavailable.
//
// The ledger keeps its data in SQLite (a file in a data directory, the default) or PostgreSQL.
package ledger
