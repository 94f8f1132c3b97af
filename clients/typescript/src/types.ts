/**
 * The API's JSON answers, as the server sends them (snake_case, durations in ms). Tokens
 * and indexes are Raft log indexes: numbers well inside JavaScript's safe integer range.
 */

/** PUT /v1/locks/{name}: a grant. */
export interface Grant {
  name: string;
  token: number;
  lease_id: string;
  ttl_ms: number;
  owner?: string;
  mode?: string;
}

/** A holder of a lock (shared locks have several) or of a semaphore permit. */
export interface Holder {
  owner?: string;
  token: number;
}

/** GET /v1/locks/{name}. */
export interface LockStatus {
  name: string;
  held: boolean;
  token: number;
  owner?: string;
  mode?: string;
  holders: Holder[] | null;
  holder_count: number;
  waiters: number;
  modify_index: number;
  /** How long (cluster time, ms) a lock delay still keeps the lock from everyone; absent when none. */
  lock_delay_remaining_ms?: number;
}

/** POST /v1/locksets: every lock of the set granted in one commit. */
export interface LockSetGrant {
  lease_id: string;
  ttl_ms: number;
  mode?: string;
  locks: { name: string; token: number }[];
}

/** GET /v1/locks?prefix=. */
export interface LockList {
  locks: LockStatus[] | null;
  truncated: boolean;
  next?: string;
}

/** PUT /v1/semaphores/{name}: a permit. */
export interface SemaphoreGrant {
  name: string;
  token: number;
  lease_id: string;
  ttl_ms: number;
  owner?: string;
  limit: number;
}

/** GET /v1/semaphores/{name}. */
export interface SemaphoreStatus {
  name: string;
  limit: number;
  permits: Holder[] | null;
  waiters: number;
  modify_index: number;
}

/** PUT /v1/elections/{name}: a leadership (or a proclaim). */
export interface ElectionGrant {
  name: string;
  token: number;
  lease_id: string;
  ttl_ms: number;
  owner?: string;
  value: string;
  modify_index: number;
}

/** GET /v1/elections/{name}. */
export interface ElectionStatus {
  name: string;
  elected: boolean;
  owner?: string;
  value?: string;
  token: number;
  modify_index: number;
  candidates: number;
}

/** One event of a lock's history. */
export interface HistoryEvent {
  name?: string;
  kind: string;
  index: number;
  time_ms: number;
  token?: number;
  owner?: string;
  lease_fingerprint?: string;
  from_queue?: boolean;
  waited_ms?: number;
  deadline_ms?: number;
  renewed_ms?: number;
}

/** GET /v1/history/{name}. */
export interface History {
  name: string;
  events: HistoryEvent[];
  cluster_time_ms: number;
}

/** A member of the cluster. */
export interface Node {
  id: string;
  raft_addr: string;
  http_addr: string;
  voter: boolean;
  leader: boolean;
}

/** GET /v1/cluster. */
export interface Cluster {
  leader_id: string;
  term: number;
  commit_index: number;
  applied_index: number;
  nodes: Node[];
  ready: boolean;
  serving: string;
  protocol_version?: number;
}
