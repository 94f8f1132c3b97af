/**
 * raftlock: a client for the raftlock distributed lock manager (Node >= 20, no dependencies).
 *
 * ```ts
 * import { Client } from "raftlock";
 * const client = new Client({ endpoints: ["http://127.0.0.1:7001", "http://127.0.0.1:7002"] });
 * await client.withLock("accounts/A", async (held) => {
 *   await charge({ fencingToken: held.token, signal: held.lost });
 * }, { ttl: 10_000, wait: 30_000 });
 * ```
 */
export * from "./errors.js";
export * from "./types.js";
export { Client, Held, HeldSet, Leadership, tlsFromFiles, newRequestID, parseRetryAfter, MAX_LOCKSET_NAMES } from "./client.js";
export type { ClientOptions, CallOptions, HoldOptions, LockOptions, StatusOptions, AcquireOptions } from "./client.js";
export { Watch } from "./events.js";
export type { WatchOptions, LockEvent } from "./events.js";
export { Router } from "./router.js";
export type { Route } from "./router.js";
export { Lease, LeaseClosedError, MIN_TTL_MS, MAX_TTL_MS, DEFAULT_TTL_MS } from "./lease.js";
export type { LeaseTimingOptions } from "./lease.js";
export type { TLSOptions } from "./transport.js";
export { MemoryGuard, StaleTokenError, InvalidTokenError, fencingHeaders, FENCING_HEADER } from "./fencing.js";
export { PostgresGuard, SQLiteGuard, raiseFencePg, raiseFenceSQLite, sqlToken, FENCES_TABLE_SQL, MAX_SQL_TOKEN } from "./sqlfence.js";
export type { PgPool, PgQueryable, SQLiteDatabase, SQLiteStatement } from "./sqlfence.js";
