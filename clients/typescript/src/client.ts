/**
 * The raftlock client: the primitives (locks, shared locks, locksets, semaphores,
 * elections) held with leases that one keepalive loop per client renews in batches, reads,
 * watches and observes. Every request goes through the transport's retry engine
 * (transport.ts: endpoint failover, backoff, Retry-After, the call's deadline), with the rules
 * of the Go client (client/retry.go, attempt.go, keepalive.go, hold.go).
 */
import { randomBytes } from "node:crypto";
import { inspect } from "node:util";
import {
  InvalidError,
  LeaseLostError,
  LeaseNotFoundError,
  NotHolderError,
  PermissionDeniedError,
  RaftlockError,
  ServerError,
  UnauthenticatedError,
  WaitTimeoutError,
} from "./errors.js";
import { Outcome, parseRetryAfter, Scope, sleep, TLSOptions, Transport } from "./transport.js";
import {
  DEFAULT_MAX_BACKOFF_MS,
  DEFAULT_TTL_MS,
  KeepAliveBatch,
  Keepaliver,
  Lease,
  LeaseClosedError,
  LeaseHost,
  LeaseTimingOptions,
  leaseConfig,
  checkDuration,
  now,
  redactID,
} from "./lease.js";
import { Watch, WatchOptions } from "./events.js";
import type {
  Cluster,
  ElectionGrant,
  ElectionStatus,
  Grant,
  History,
  LockList,
  LockSetGrant,
  LockStatus,
  SemaphoreGrant,
  SemaphoreStatus,
} from "./types.js";

export { parseRetryAfter };

/** Defaults of the client's options (the Go client's). */
export const DEFAULT_TIMEOUT_MS = 5000;
export const DEFAULT_MIN_BACKOFF_MS = 50;
export const DEFAULT_DEADLINE_MS = 30_000;
/** The longest single server-side wait a lock/semaphore/campaign asks for; longer waits are re-issued. */
export const DEFAULT_WAIT_CHUNK_MS = 240_000;
/** The most one wait may last on the server (api.MaxWaitMs). */
export const MAX_WAIT_MS = 300_000;

/** Options of a Client. */
export interface ClientOptions {
  /**
   * The cluster's endpoints: base URLs such as "http://127.0.0.1:7001" (a bare "host:port"
   * means http, or https with `tls`), as an array or one comma-separated string. One is
   * enough, since any node answers any request; listing every node survives the loss of one.
   */
  endpoints?: string[] | string;
  /** An ACL token's secret, sent as "Authorization: Bearer"; never logged or put in an error. Default: RAFTLOCK_TOKEN. */
  token?: string;
  /**
   * TLS: PEM contents of the cluster's CA and, when the cluster asks for client certificates,
   * a client certificate and key (see tlsFromFiles). `true` means https with Node's default
   * roots. With TLS, a bare "host:port" means https and "http://" endpoints are refused.
   */
  tls?: TLSOptions | boolean;
  /** Bounds each attempt on one endpoint, not counting a requested server-side wait (default 5000 ms). */
  timeoutMs?: number;
  /**
   * Bounds a whole call (all its retries) that has no signal, on top of its own wait
   * (default 30000 ms, as the Python client's call_timeout). The Go client has no such default because every Go call has a
   * context; here a call without a signal would otherwise retry forever.
   */
  deadlineMs?: number;
  /** The pause between rounds of failed attempts starts at min, doubles up to max, jittered (defaults 50 and 1000 ms). */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Receives the client's log lines (retries, lost leases); none are logged by default. Lines never hold secrets. */
  logger?: (level: "debug" | "warn", msg: string) => void;
}

/** Options common to every call. */
export interface CallOptions {
  /** Ends the call (and every retry of it) when it aborts. */
  signal?: AbortSignal;
}

/** Options of lock, semaphore and campaign. */
export interface HoldOptions extends CallOptions, LeaseTimingOptions {
  /** The TTL (ms) of the lease the hold creates (default 10000). Ignored with `lease`. */
  ttl?: number;
  /**
   * How long (ms) to wait in the server's FIFO queue when it is held (default 0: fail at
   * once with LockHeldError / SemaphoreFullError / ElectionHeldError). Infinity waits until
   * the signal aborts. Waits longer than 240 s are re-issued, each joining the back of the queue.
   */
  wait?: number;
  /** A label shown in the status (a host name, a job ID). */
  owner?: string;
  /** Hold with this lease (many grants, one keepalive stream) instead of one created per hold. */
  lease?: Lease;
}

/** Options of lock and lockset. */
export interface LockOptions extends HoldOptions {
  /** "exclusive" (default) or "shared". */
  mode?: "exclusive" | "shared";
  /**
   * The grant ends this long (ms) after it, on cluster time, even while the lease is kept
   * alive (max_hold_ms): the next waiter is granted in that commit, and the hold's `lost`
   * aborts then (timed from the request's send when granted at once, from its answer after a
   * wait). 0: none.
   */
  maxHold?: number;
  /**
   * Exclusive only: after the lease expires or is revoked without a release, the lock stays
   * free for nobody this long (ms; lock_delay_ms), for storage that cannot check tokens. 0: none.
   */
  lockDelay?: number;
}

/** Options of a status read. */
export interface StatusOptions extends CallOptions {
  /** With wait > 0: a blocking query that answers once modify_index exceeds waitIndex. */
  waitIndex?: number;
  /** Bounds a blocking query, ms (at most 300000). */
  wait?: number;
  /** Let any node answer from its own state, which may lag the leader's. */
  stale?: boolean;
}

/** Options of the low-level acquire (one request, no keepalives). */
export interface AcquireOptions extends CallOptions {
  /** The lease to hold the lock with; absent creates a lease of `ttl` in the grant's entry. */
  leaseId?: string;
  /** The TTL (ms) of a lease created with the grant (default: the server's, 10000). */
  ttl?: number;
  /** Server-side wait in the FIFO queue, ms (0 to 300000). */
  wait?: number;
  owner?: string;
  /**
   * Makes an acquire without leaseId safe to retry. Absent: the client draws one (128
   * random bits) per call and sends it on every retry of that call. As secret as a lease ID.
   */
  requestId?: string;
  mode?: "exclusive" | "shared";
  /** As LockOptions.maxHold. */
  maxHold?: number;
  /** As LockOptions.lockDelay. */
  lockDelay?: number;
}

/** Reads PEM files into the `tls` option of a Client (ca, and optionally cert and key). */
export async function tlsFromFiles(ca?: string, cert?: string, key?: string): Promise<TLSOptions> {
  const { readFile } = await import("node:fs/promises");
  if ((cert === undefined) !== (key === undefined)) {
    throw new InvalidError("invalid_argument", "TLS: a client certificate needs both its certificate file and its key file");
  }
  const read = async (what: string, f: string) => {
    try {
      return await readFile(f);
    } catch (err) {
      throw new InvalidError("invalid_argument", `TLS: reading the ${what} file ${f}: ${(err as Error).message}`, { cause: err });
    }
  };
  const out: TLSOptions = {};
  if (ca) out.ca = await read("CA", ca);
  if (cert && key) {
    out.cert = await read("certificate", cert);
    out.key = await read("key", key);
  }
  return out;
}

/** A new request_id: 128 random bits as 32 hex characters, as unguessable as a lease ID. */
export function newRequestID(): string {
  return randomBytes(16).toString("hex");
}

/** The rule every name follows, word for word the server's (api.NameRule). */
export const NAME_RULE = 'a name is 1 to 512 bytes of UTF-8, segments separated by "/", with no empty segment, no "." or ".." segment, and no control characters';

/** Checks a name against the server's rule, with the server's message, before anything is sent. */
function checkName(op: string, kind: string, name: string): void {
  const ok =
    typeof name === "string" &&
    !/\p{Cs}/u.test(name) && // a lone surrogate is not UTF-8
    Buffer.byteLength(name) >= 1 &&
    Buffer.byteLength(name) <= 512 &&
    // eslint-disable-next-line no-control-regex
    !/[\u0000-\u001f\u007f-\u009f]/.test(name) &&
    name.split("/").every((seg) => seg !== "" && seg !== "." && seg !== "..");
  if (!ok) throw new InvalidError("invalid_name", `${op}: invalid ${kind} name: ${NAME_RULE}`);
}

function checkWait(op: string, wait: number): void {
  if (!(wait >= 0 && wait <= MAX_WAIT_MS)) throw new InvalidError("invalid_argument", `${op}: wait ${wait} ms is outside 0 to ${MAX_WAIT_MS} ms`);
}

function checkLeaseID(op: string, id: string): void {
  if (!/^[0-9a-f]{32}$/.test(id)) throw new InvalidError("invalid_argument", `${op}: lease_id must be 32 lowercase hex characters`);
}

function checkRequestID(op: string, id: string): void {
  if (!/^[A-Za-z0-9_-]{16,128}$/.test(id)) {
    throw new InvalidError("invalid_argument", `${op}: request_id must be 16 to 128 characters of A-Z, a-z, 0-9, '_' and '-'`);
  }
}

/** route followed by name, each segment escaped, so that "accounts/A" or "a b?c" reach the server unchanged. */
function namePath(route: string, name: string): string {
  return route + name.split("/").map(encodeURIComponent).join("/");
}

/** Whole milliseconds, rounded up so that a positive duration never becomes 0 ("default" or "do not wait"). */
function ms(d: number): number {
  return d <= 0 ? 0 : Math.ceil(d);
}

/** @internal What a held grant needs of its client: giving it back and proclaiming. */
export interface HoldHost {
  releaseAt(op: string, route: string, name: string, leaseId: string, token: number, opts: CallOptions): Promise<Outcome<unknown>>;
  releaseSetAt(op: string, leaseId: string, tokens: Record<string, number>, opts: CallOptions): Promise<Outcome<unknown>>;
  proclaim(name: string, leaseId: string, token: number, value: string, opts: CallOptions): Promise<number>;
  log(level: "debug" | "warn", msg: string): void;
}

/**
 * A grant held with a lease: a lock (either mode) or a semaphore permit (a leadership is a
 * Leadership, a lockset a HeldSet). `await using held = await client.lock(...)` releases it
 * at the end of the block (Symbol.asyncDispose).
 */
export class Held {
  /** "lock", "semaphore", "election" or "lockset". */
  readonly kind: string;
  /** The lock's (semaphore's, election's) name; a lockset's names joined with ",". */
  readonly name: string;
  /**
   * The fencing token: the Raft log index of the grant, strictly increasing per name. Pass
   * it to every write the grant protects; the storage refuses tokens below the highest it saw.
   */
  readonly token: number;
  /** The lock's mode ("exclusive" or "shared"); undefined for semaphores and elections. */
  readonly mode?: string;
  /** The lease the grant is held with. */
  readonly lease: Lease;

  readonly #host: HoldHost;
  readonly #ownLease: boolean;
  readonly #route: string;
  readonly #ctl = new AbortController();
  readonly #maxHoldEnd: number | undefined;
  readonly #onLost: () => void;
  #releasing: Promise<void> | undefined;
  #releasedAt: number | undefined;
  #endTimer: ReturnType<typeof setTimeout> | undefined;

  /** What util.inspect and console.log show: never the lease ID, which is a secret. */
  [inspect.custom](): string {
    return `${this.constructor.name} { kind: ${JSON.stringify(this.kind)}, name: ${JSON.stringify(this.name)}, token: ${this.token}, lost: ${this.lost.aborted} }`;
  }

  /** What JSON.stringify writes: never the lease ID. */
  toJSON(): { kind: string; name: string; token: number; mode?: string } {
    return { kind: this.kind, name: this.name, token: this.token, mode: this.mode };
  }

  /** @internal Made by Client.lock, lockset, semaphore and campaign. */
  constructor(host: HoldHost, kind: string, route: string, name: string, token: number, lease: Lease, ownLease: boolean, mode?: string, maxHoldEnd?: number) {
    this.#host = host;
    this.kind = kind;
    this.#route = route;
    this.name = name;
    this.token = token;
    this.lease = lease;
    this.#ownLease = ownLease;
    this.mode = mode;
    this.#maxHoldEnd = maxHoldEnd;
    this.#onLost = () => this.#lose(lease.lost.reason);
    if (lease.lost.aborted) this.#onLost();
    else lease.lost.addEventListener("abort", this.#onLost, { once: true });
    if (maxHoldEnd !== undefined && !this.#ctl.signal.aborted) {
      this.#endTimer = setTimeout(() => this.#lose(this.#ended()), Math.max(0, maxHoldEnd - now()));
      this.#endTimer.unref?.();
    }
  }

  #ended(): LeaseLostError {
    return new LeaseLostError("lease_lost", `${this.kind} ${JSON.stringify(this.name)}: its maximum hold ended the grant`);
  }

  #lose(reason: unknown): void {
    if (this.#endTimer !== undefined) clearTimeout(this.#endTimer);
    this.#endTimer = undefined;
    if (!this.#ctl.signal.aborted) this.#ctl.abort(reason);
  }

  /** The lease ID: a secret (it authorizes release and revoke). */
  get leaseId(): string {
    return this.lease.id;
  }

  /**
   * Aborts when the grant can no longer be assumed held: the lease was lost (the cluster
   * said so, or safeUntil() passed without an answered keepalive) or closed, the maximum hold
   * ended, or the grant was released. Its reason is a LeaseLostError. Stop writing under the
   * grant when it aborts. Reading it compares the times with the clock (after a pause of the
   * whole process it reads aborted at once).
   */
  get lost(): AbortSignal {
    void this.lease.lost; // reading the lease's signal notices a passed safe time at once (after a pause)
    if (this.#maxHoldEnd !== undefined && now() >= this.#maxHoldEnd) this.#lose(this.#ended());
    return this.#ctl.signal;
  }

  /**
   * Until when (performance.now() clock, ms) the grant is certainly still held: the lease's
   * safeUntil(), or the end of the maximum hold when sooner. After a release or a loss it is at
   * most that moment. Even before it, a process pause can outlast it at any moment: writes
   * still need the token checked by the storage.
   */
  safeUntil(): number {
    let su = this.lease.safeUntil();
    if (this.#maxHoldEnd !== undefined) su = Math.min(su, this.#maxHoldEnd);
    return this.#releasedAt === undefined ? su : Math.min(su, this.#releasedAt);
  }

  /**
   * Gives the grant back with its lease and token, so that a retried or late release can
   * never free a later grant; a hold with a lease of its own then revokes the lease. It
   * rejects with NotHolderError or LeaseNotFoundError when the grant had already been lost.
   * Calling it again returns the first call's promise.
   */
  release(opts: CallOptions = {}): Promise<void> {
    if (this.#releasing === undefined) this.#releasing = this.#giveBack(opts);
    return this.#releasing;
  }

  /**
   * `await using held = await client.lock(...)`: releases the grant when the block ends. It
   * rejects with LeaseLostError when the grant was lost inside the block (not released or
   * closed there), as leaving Python's `with` does: the block ran, at least partly, without
   * the lock. An error of the block itself wins (this one is then suppressed).
   */
  async [Symbol.asyncDispose](): Promise<void> {
    const lost = this.lost.aborted && !(this.lost.reason instanceof LeaseClosedError);
    const why = this.lost.reason as Error | undefined;
    try {
      await this.release();
    } catch (err) {
      if (err instanceof NotHolderError || err instanceof LeaseNotFoundError) {
        throw new LeaseLostError("lease_lost", `${this.kind} ${JSON.stringify(this.name)} was lost inside the block (${err.message})`, { cause: err });
      }
      if (!lost) throw err;
    }
    if (lost) throw new LeaseLostError("lease_lost", `${this.kind} ${JSON.stringify(this.name)} was lost inside the block${why?.message ? ` (${why.message})` : ""}`, { cause: why });
  }

  /** @internal Gives the grant back (a lockset overrides it). */
  protected giveBackRequest(op: string, opts: CallOptions): Promise<Outcome<unknown>> {
    return this.#host.releaseAt(op, this.#route, this.name, this.lease.id, this.token, opts);
  }

  /** @internal */
  protected get host(): HoldHost {
    return this.#host;
  }

  async #giveBack(opts: CallOptions): Promise<void> {
    const op = `release ${this.kind} ${JSON.stringify(this.name)}`;
    const r = await this.giveBackRequest(op, opts);
    let err: RaftlockError | undefined = r.ok ? undefined : r.err;
    if (err instanceof NotHolderError && r.attempts > 1 && !this.lease.lost.aborted) {
      err = undefined; // an earlier attempt, whose answer was lost, released it
    }
    let gone = err === undefined || err instanceof NotHolderError || err instanceof LeaseNotFoundError;
    if (this.#ownLease) {
      // Our own lease holds nothing else: revoking it frees the grant in any case.
      try {
        await this.lease.close();
        if (!gone) err = undefined; // the release did not get through, the revoke did
        gone = true;
      } catch (cerr) {
        if (err === undefined) err = cerr as RaftlockError;
      }
    }
    if (gone) {
      this.lease.lost.removeEventListener("abort", this.#onLost); // a shared lease outlives its holds
      this.#releasedAt = now();
      this.#lose(new LeaseClosedError("lease_closed", `${this.kind} ${JSON.stringify(this.name)} was released`));
    } else {
      this.#releasing = undefined; // a network failure: the caller may try again
    }
    if (err !== undefined) throw err;
  }
}

/** A leadership of an election: a Held with its published value, proclaim and resign. */
export class Leadership extends Held {
  #value: string;

  /** @internal */
  constructor(host: HoldHost, name: string, token: number, lease: Lease, ownLease: boolean, value: string) {
    super(host, "election", "/v1/elections/", name, token, lease, ownLease);
    this.#value = value;
  }

  /** The value this leader publishes. */
  get value(): string {
    return this.#value;
  }

  /** Publishes a new value under the same leadership; resolves with the answer's token (the leadership's). */
  async proclaim(value: string, opts: CallOptions = {}): Promise<number> {
    if (this.lost.aborted) throw new LeaseLostError("lease_lost", `proclaim ${JSON.stringify(this.name)}: the leadership is lost`, { cause: this.lost.reason });
    if (typeof value !== "string" || Buffer.byteLength(value) > 4096) throw new InvalidError("invalid_argument", `proclaim: value must be a string of at most 4096 bytes`);
    const token = await this.host.proclaim(this.name, this.lease.id, this.token, value, opts);
    this.#value = value;
    return token;
  }

  /** Resigns: the next candidate leads, in the same commit. */
  resign(opts: CallOptions = {}): Promise<void> {
    return this.release(opts);
  }
}

/** A lockset held with one lease: every lock of `names` taken in one commit, each with its own token. */
export class HeldSet extends Held {
  /** The locks of the set, in the order given. */
  readonly names: readonly string[];
  /** Each lock's fencing token, by name (`token` is the first name's). */
  readonly tokens: Readonly<Record<string, number>>;

  /** @internal */
  constructor(host: HoldHost, names: string[], tokens: Record<string, number>, lease: Lease, ownLease: boolean, mode: string, maxHoldEnd?: number) {
    super(host, "lockset", "/v1/locksets", names.join(","), tokens[names[0]] ?? 0, lease, ownLease, mode, maxHoldEnd);
    this.names = [...names];
    this.tokens = { ...tokens };
  }

  /** @internal Releases every lock of the set in one commit. */
  protected override giveBackRequest(op: string, opts: CallOptions): Promise<Outcome<unknown>> {
    return this.host.releaseSetAt(op, this.lease.id, { ...this.tokens }, opts);
  }
}

/** The most locks of a lockset (api.MaxLockSetNames). */
export const MAX_LOCKSET_NAMES = 64;

/** A grant as the hold machinery sees it. */
interface Granted {
  out: Record<string, unknown>;
  token: number;
  leaseId: string;
  ttlMs: number;
  sent: number;
  first: number;
}

/** A client of a raftlock cluster. Safe to share; one keepalive loop renews all its leases. */
export class Client {
  readonly endpoints: readonly string[];
  readonly #t: Transport;
  readonly #keepaliver: Keepaliver;
  readonly #leaseHost: LeaseHost;
  readonly #holdHost: HoldHost;

  constructor(opts: ClientOptions = {}) {
    const tlsOn = opts.tls !== undefined && opts.tls !== false;
    // Without endpoints (or token) the client reads the CLI's environment variables.
    const given = opts.endpoints ?? process.env.RAFTLOCK_ENDPOINTS ?? "";
    const raw = typeof given === "string" ? given.split(",") : given;
    const eps: string[] = [];
    let plain = false;
    for (let e of raw ?? []) {
      e = e.trim();
      if (e === "") continue;
      if (!e.includes("://")) e = (tlsOn ? "https://" : "http://") + e;
      let u: URL;
      try {
        u = new URL(e);
      } catch {
        throw new InvalidError("invalid_argument", `endpoint ${JSON.stringify(e)} is not an http(s) URL such as http://127.0.0.1:7001`);
      }
      if (u.protocol !== "http:" && u.protocol !== "https:") {
        throw new InvalidError("invalid_argument", `endpoint ${JSON.stringify(e)} is not an http(s) URL such as http://127.0.0.1:7001`);
      }
      if (u.protocol === "http:" && tlsOn) {
        throw new InvalidError("invalid_argument", `endpoint ${JSON.stringify(e)} is plain HTTP but TLS is configured: use https://${u.host}`);
      }
      plain ||= u.protocol === "http:";
      eps.push(e.replace(/\/+$/, ""));
    }
    if (eps.length === 0) throw new InvalidError("invalid_argument", "no endpoints given, and RAFTLOCK_ENDPOINTS is not set");
    this.endpoints = eps;
    const tok = (opts.token ?? process.env.RAFTLOCK_TOKEN)?.trim();
    // eslint-disable-next-line no-control-regex
    if (tok && /[\s\u0000-\u001f]/.test(tok)) throw new InvalidError("invalid_argument", "the ACL token contains white space or a control character");
    const minB = opts.minBackoffMs && opts.minBackoffMs > 0 ? opts.minBackoffMs : DEFAULT_MIN_BACKOFF_MS;
    this.#t = new Transport({
      endpoints: eps,
      timeoutMs: opts.timeoutMs && opts.timeoutMs > 0 ? opts.timeoutMs : DEFAULT_TIMEOUT_MS,
      deadlineMs: opts.deadlineMs && opts.deadlineMs > 0 ? opts.deadlineMs : DEFAULT_DEADLINE_MS,
      minBackoffMs: minB,
      maxBackoffMs: Math.max(minB, opts.maxBackoffMs && opts.maxBackoffMs > 0 ? opts.maxBackoffMs : DEFAULT_MAX_BACKOFF_MS),
      token: tok || undefined,
      tls: typeof opts.tls === "object" ? opts.tls : undefined,
      logger: opts.logger,
    });
    const t = this.#t;
    this.#keepaliver = new Keepaliver(() => this.#leaseHost);
    this.#leaseHost = {
      timeoutMs: t.timeoutMs,
      keepaliver: this.#keepaliver,
      log: (level, msg) => t.log(level, msg),
      revokeLease: (id) => this.#revokeLease(id),
      keepAliveBatch: (ids, deadline, attemptTimeoutMs, maxBackoffMs) => this.#keepAliveBatch(ids, deadline, attemptTimeoutMs, maxBackoffMs),
      keepAliveOne: (id, deadline, signal, attemptTimeoutMs, maxBackoffMs) => this.#keepAliveOne(id, deadline, signal, attemptTimeoutMs, maxBackoffMs),
    };
    this.#holdHost = {
      releaseAt: (op, route, name, leaseId, token, o) => this.#releaseAt(op, route, name, leaseId, token, o),
      releaseSetAt: (op, leaseId, tokens, o) => this.#releaseSetAt(op, leaseId, tokens, o),
      proclaim: async (name, leaseId, token, value, o) => {
        const r = await this.#campaignRequest(t.scope(o.signal, 0), name, value, { leaseId }, token);
        return r.out.token;
      },
      log: (level, msg) => t.log(level, msg),
    };
    if (plain && t.hasToken) {
      t.log("warn", "an ACL token is sent over plain HTTP, where anyone on the path can read it; use https endpoints and TLS");
    }
  }

  /** What util.inspect and console.log show: never the ACL token. */
  [inspect.custom](): string {
    return `Client { endpoints: ${JSON.stringify(this.endpoints)} }`;
  }

  /** Keepalive batches sent so far by this client's one keepalive loop (for tests and metrics). */
  get keepaliveBatchesSent(): number {
    return this.#keepaliver.batchesSent;
  }

  /**
   * Closes the client: revokes every lease it keeps alive (which frees everything they hold
   * at once, each grant to its next waiter), within one attempt timeout, and closes idle
   * connections. A lease whose revoke fails expires on the cluster a TTL after its last
   * keepalive; its lost signal aborts either way.
   */
  async close(): Promise<void> {
    const leases = [...this.#keepaliver.leases()];
    await Promise.all(leases.map((l) => l.close().catch((err: unknown) => this.#t.log("debug", `close: revoking lease ${redactID(l.id)} failed: ${(err as Error).message}`))));
    this.#t.destroy();
  }

  /** `await using client = new Client(...)`: close() at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  // ------------------------------------------------------------------ leases

  /** Creates a lease (TTL ms; default the server's 10000) with no keepalives: see newLease. */
  async createLease(ttl = 0, opts: CallOptions = {}): Promise<{ lease_id: string; ttl_ms: number }> {
    const r = await this.#createLeaseAt(ttl, this.#t.scope(opts.signal, 0));
    return r.out;
  }

  #createLeaseAt(ttl: number, scope: Scope) {
    return this.#t.do<{ lease_id: string; ttl_ms: number }>({ op: "create lease", method: "POST", path: "/v1/leases", body: () => ({ ttl_ms: ms(ttl) }) }, scope);
  }

  /** Creates a lease and keeps it alive in the background until close() or its loss. */
  async newLease(ttl = DEFAULT_TTL_MS, opts: CallOptions & LeaseTimingOptions = {}): Promise<Lease> {
    leaseConfig("new lease", ttl, opts);
    return this.#newLeaseIn(ttl, opts, this.#t.scope(opts.signal, 0));
  }

  async #newLeaseIn(ttl: number, opts: LeaseTimingOptions, scope: Scope): Promise<Lease> {
    const r = await this.#createLeaseAt(ttl, scope);
    return this.#startLease(r.out.lease_id, r.out.ttl_ms, r.sent, opts);
  }

  /** Starts keeping alive a lease whose last answered renewal was sent at `sent`. */
  #startLease(id: string, ttlMs: number, sent: number, opts: LeaseTimingOptions): Lease {
    let cfg;
    try {
      cfg = leaseConfig(`lease ${redactID(id)}`, ttlMs, opts);
    } catch (err) {
      void this.#revokeQuietly(id); // the TTL the server chose does not fit the options
      throw err;
    }
    return new Lease(this.#leaseHost, id, ttlMs, sent, cfg);
  }

  /** Renews a lease once. Rejects with LeaseNotFoundError when it expired or was revoked. */
  async keepAlive(leaseId: string, opts: CallOptions = {}): Promise<{ lease_id: string; ttl_ms: number }> {
    checkLeaseID("keepalive", leaseId);
    const r = await this.#t.do<{ lease_id: string; ttl_ms: number }>(
      { op: "keepalive", method: "POST", path: "/v1/leases/keepalive", body: () => ({ lease_id: leaseId }), secrets: [leaseId] },
      this.#t.scope(opts.signal, 0),
    );
    return r.out;
  }

  /** Revokes a lease, releasing everything it holds. A retried revoke that finds no lease succeeds. */
  async revoke(leaseId: string, opts: CallOptions = {}): Promise<void> {
    checkLeaseID("revoke", leaseId);
    const r = await this.#t.tryDo<unknown>(
      { op: "revoke", method: "POST", path: "/v1/leases/revoke", body: () => ({ lease_id: leaseId }), secrets: [leaseId] },
      this.#t.scope(opts.signal, 0),
    );
    if (!r.ok && !(r.err instanceof LeaseNotFoundError && r.attempts > 1)) throw r.err;
  }

  /** Revokes, a lease the cluster no longer knows counting as revoked. */
  async #revokeLease(id: string): Promise<void> {
    try {
      await this.revoke(id, { signal: AbortSignal.timeout(Math.ceil(this.#t.timeoutMs * 2)) });
    } catch (err) {
      if (!(err instanceof LeaseNotFoundError)) throw err;
    }
  }

  async #revokeQuietly(id: string): Promise<void> {
    try {
      await this.#revokeLease(id);
    } catch (err) {
      this.#t.log("debug", `revoking an unused lease failed; it will expire: ${(err as Error).message}`);
    }
  }

  async #keepAliveBatch(ids: string[], deadline: number, attemptTimeoutMs: number, maxBackoffMs: number) {
    const left = Math.max(1, deadline - now());
    const r = await this.#t.tryDo<KeepAliveBatch>(
      { op: "batch keepalive", method: "POST", path: "/v1/leases/keepalive", body: () => ({ lease_ids: ids }), attemptTimeoutMs, maxBackoffMs, secrets: ids },
      { signal: AbortSignal.timeout(Math.ceil(left)), deadline },
    );
    return r.ok ? { ok: true as const, out: r.out, sent: r.sent } : { ok: false as const, err: r.err, sent: r.sent };
  }

  async #keepAliveOne(id: string, deadline: number, signal: AbortSignal, attemptTimeoutMs: number, maxBackoffMs: number) {
    const left = Math.max(1, deadline - now());
    const r = await this.#t.tryDo<unknown>(
      { op: "keepalive", method: "POST", path: "/v1/leases/keepalive", body: () => ({ lease_id: id }), attemptTimeoutMs, maxBackoffMs, secrets: [id] },
      { signal: AbortSignal.any([signal, AbortSignal.timeout(Math.ceil(left))]), deadline },
    );
    return r.ok ? { ok: true as const, sent: r.sent } : { ok: false as const, err: r.err, sent: r.sent };
  }

  // ------------------------------------------------------------------ acquire and release

  /**
   * The low-level acquire: one request (retried across endpoints with the same request_id),
   * no keepalives. Prefer lock(), which keeps the lease alive and watches for its loss.
   */
  async acquire(name: string, opts: AcquireOptions = {}): Promise<Grant> {
    const op = `acquire ${JSON.stringify(name)}`;
    const fields = holdFields(op, opts.mode ?? "exclusive", opts.maxHold, opts.lockDelay);
    const r = await this.#acquireAt<Grant>(this.#t.scope(opts.signal, opts.wait ?? 0), op, "/v1/locks/", name, opts, (b) => ({ ...b, ...fields }));
    return r.out;
  }

  /**
   * Sends an acquire-like request (lock, permit, campaign, lockset with path): checks the
   * options, draws the request_id of a lease created with the grant, the same on every retry,
   * and asks a retried waiting request only for the wait that remains (client/locks.go acquireAt).
   */
  #acquireAt<T>(scope: Scope, op: string, route: string, name: string, opts: AcquireOptions, body: (b: Record<string, unknown>) => unknown, method = "PUT", path?: string) {
    if (path === undefined) checkName(op, route.split("/")[2].replace(/s$/, ""), name);
    let reqID = opts.requestId;
    if (opts.leaseId !== undefined) {
      checkLeaseID(op, opts.leaseId);
      if (reqID !== undefined) throw new InvalidError("invalid_argument", `${op}: a request ID is only for an acquire without a lease`);
    } else if (reqID === undefined) {
      // One ID per logical acquire, the same on every retry: an attempt that was applied but
      // whose answer was lost must not leave a second lease (holding the grant, or queued) behind.
      reqID = newRequestID();
    } else checkRequestID(op, reqID);
    const wait = opts.wait ?? 0;
    checkWait(op, wait);
    if (opts.owner !== undefined && Buffer.byteLength(opts.owner) > 256) {
      throw new InvalidError("invalid_argument", `${op}: owner is longer than 256 bytes`);
    }
    const waitEnd = now() + wait;
    const remaining = () => (wait <= 0 ? 0 : Math.max(waitEnd - now(), 1));
    return this.#t.do<T>(
      {
        op,
        method,
        path: path ?? namePath(route, name),
        body: () =>
          body({
            lease_id: opts.leaseId,
            ttl_ms: opts.ttl ? ms(opts.ttl) : undefined,
            wait_ms: ms(remaining()) || undefined,
            owner: opts.owner || undefined,
            request_id: reqID,
          }),
        waitMs: remaining,
        secrets: [opts.leaseId ?? "", reqID ?? ""],
      },
      scope,
    );
  }

  /** The low-level release of lock name held by leaseId with token. Rejects with NotHolderError when they do not hold it. */
  async release(name: string, leaseId: string, token: number, opts: CallOptions = {}): Promise<void> {
    const r = await this.#releaseAt(`release ${JSON.stringify(name)}`, "/v1/locks/", name, leaseId, token, opts);
    if (!r.ok) throw r.err;
  }

  /** Gives back the grant of name at route held by leaseId with token. */
  #releaseAt(op: string, route: string, name: string, leaseId: string, token: number, opts: CallOptions) {
    checkName(op, route.split("/")[2].replace(/s$/, ""), name);
    checkLeaseID(op, leaseId);
    if (!token) throw new InvalidError("invalid_argument", `${op}: the token of the grant is required`);
    return this.#t.tryDo<unknown>(
      { op, method: "DELETE", path: namePath(route, name), body: () => ({ lease_id: leaseId, token }), secrets: [leaseId] },
      this.#t.scope(opts.signal, 0),
    );
  }

  /** Gives back every lock of a lockset held by leaseId, in one commit. */
  #releaseSetAt(op: string, leaseId: string, tokens: Record<string, number>, opts: CallOptions) {
    checkLeaseID(op, leaseId);
    const locks = Object.entries(tokens).map(([name, token]) => ({ name, token }));
    return this.#t.tryDo<unknown>(
      { op, method: "DELETE", path: "/v1/locksets", body: () => ({ lease_id: leaseId, locks }), secrets: [leaseId] },
      this.#t.scope(opts.signal, 0),
    );
  }

  // ------------------------------------------------------------------ held primitives

  /**
   * Takes lock `name` and keeps its lease alive until release() or its loss. Without `wait`
   * it is one round trip (the server creates the lease in the entry that grants, with a
   * request_id so that retries cannot create a second lease) and rejects with LockHeldError
   * when the lock is held; with `wait` it creates a lease first and waits in the lock's FIFO
   * queue on the server (no polling), rejecting with WaitTimeoutError when the wait ends.
   * `await using held = await client.lock(...)` releases it at the end of the block.
   */
  async lock(name: string, opts: LockOptions = {}): Promise<Held> {
    const mode = opts.mode ?? "exclusive";
    const op = `lock ${JSON.stringify(name)}`;
    const fields = holdFields(op, mode, opts.maxHold, opts.lockDelay);
    return this.#take(op, opts, opts.maxHold ?? 0, async (scope, a) => {
      const r = await this.#acquireAt<Grant>(scope, op, "/v1/locks/", name, a, (b) => ({ ...b, ...fields }));
      return { ...r, out: r.out as unknown as Record<string, unknown>, token: r.out.token, leaseId: r.out.lease_id, ttlMs: r.out.ttl_ms };
    }, (g, lease, own, end) => new Held(this.#holdHost, "lock", "/v1/locks/", name, g.token, lease, own, mode, end));
  }

  /**
   * Takes every lock of `names` in one commit, or none (LockHeldError naming the held ones);
   * with `wait` the set waits as one request in every queue and cannot starve. A wait that
   * would close a cycle of waiting leases rejects with DeadlockError at once. Each lock then
   * has its own token (`tokens`). Options as lock's.
   */
  async lockset(names: string[], opts: LockOptions = {}): Promise<HeldSet> {
    const op = `lockset ${names.join(",")}`;
    if (!Array.isArray(names) || names.length < 1 || names.length > MAX_LOCKSET_NAMES) {
      throw new InvalidError("invalid_argument", `${op}: a lockset names 1 to ${MAX_LOCKSET_NAMES} locks`);
    }
    for (const n of names) checkName(op, "lock", n);
    const mode = opts.mode ?? "exclusive";
    const fields = { ...holdFields(op, mode, opts.maxHold, opts.lockDelay), names: [...names] };
    return this.#take(op, opts, opts.maxHold ?? 0, async (scope, a) => {
      const r = await this.#acquireAt<LockSetGrant>(scope, op, "/v1/locksets", names.join(","), a, (b) => ({ ...b, ...fields }), "POST", "/v1/locksets");
      const tokens = Object.fromEntries((r.out.locks ?? []).map((l) => [l.name, l.token]));
      return { ...r, out: { tokens } as Record<string, unknown>, token: tokens[names[0]] ?? 0, leaseId: r.out.lease_id, ttlMs: r.out.ttl_ms };
    }, (g, lease, own, end) => new HeldSet(this.#holdHost, names, g.out.tokens as Record<string, number>, lease, own, mode, end));
  }

  /**
   * Runs fn while holding lock `name`, and releases it afterwards. When the lock was lost
   * while fn ran, it rejects with LeaseLostError (the loss's reason as its cause), as Python's
   * `with` raises LeaseLost: fn ran, at least partly, without the lock. fn's own error wins
   * over both.
   */
  async withLock<T>(name: string, fn: (held: Held) => Promise<T> | T, opts: LockOptions = {}): Promise<T> {
    const held = await this.lock(name, opts);
    let result: T;
    try {
      result = await fn(held);
    } catch (err) {
      await held.release().catch((rerr: unknown) => this.#t.log("debug", `release after a failure failed: ${(rerr as Error).message}`));
      throw err;
    }
    // A loss, not a release or close by the caller inside fn (whose reason is LeaseClosedError).
    if (held.lost.aborted && !(held.lost.reason instanceof LeaseClosedError)) {
      const why = held.lost.reason as Error | undefined;
      await held.release().catch(() => undefined); // the lease is gone or going: nothing to give back
      throw new LeaseLostError("lease_lost", `lock ${JSON.stringify(name)} was lost while withLock's function ran${why?.message ? ` (${why.message})` : ""}`, { cause: why });
    }
    try {
      await held.release();
    } catch (err) {
      // The cluster says the grant was gone before fn ended: a loss, as above.
      if (err instanceof NotHolderError || err instanceof LeaseNotFoundError) {
        throw new LeaseLostError("lease_lost", `lock ${JSON.stringify(name)} was lost while withLock's function ran (${err.message})`, { cause: err });
      }
      throw err;
    }
    return result;
  }

  /** Takes one permit of semaphore `name` (at most `limit` holders at once), like lock(). */
  async semaphore(name: string, limit: number, opts: HoldOptions = {}): Promise<Held> {
    const op = `acquire a permit of ${JSON.stringify(name)}`;
    if (!Number.isInteger(limit) || limit < 1 || limit > 10000) throw new InvalidError("invalid_argument", `${op}: limit ${limit} is outside 1 to 10000`);
    return this.#take(op, opts, 0, async (scope, a) => {
      const r = await this.#acquireAt<SemaphoreGrant>(scope, op, "/v1/semaphores/", name, a, (b) => ({ ...b, limit }));
      return { ...r, out: r.out as unknown as Record<string, unknown>, token: r.out.token, leaseId: r.out.lease_id, ttlMs: r.out.ttl_ms };
    }, (g, lease, own) => new Held(this.#holdHost, "semaphore", "/v1/semaphores/", name, g.token, lease, own));
  }

  /**
   * Campaigns in election `name` with `value`: resolves once this client leads (waiting as a
   * candidate with `wait`), rejects with ElectionHeldError when another leads and it did not wait.
   */
  async campaign(name: string, value: string, opts: HoldOptions = {}): Promise<Leadership> {
    const op = `campaign ${JSON.stringify(name)}`;
    if (typeof value !== "string" || Buffer.byteLength(value) > 4096) throw new InvalidError("invalid_argument", `${op}: value must be a string of at most 4096 bytes`);
    return this.#take(op, opts, 0, async (scope, a) => {
      const r = await this.#campaignRequest(scope, name, value, a, 0);
      return { ...r, out: r.out as unknown as Record<string, unknown>, token: r.out.token, leaseId: r.out.lease_id, ttlMs: r.out.ttl_ms };
    }, (g, lease, own) => new Leadership(this.#holdHost, name, g.token, lease, own, value));
  }

  /** One campaign (or, with token, proclaim) request. */
  #campaignRequest(scope: Scope, name: string, value: string, a: AcquireOptions, token: number) {
    return this.#acquireAt<ElectionGrant>(scope, `campaign ${JSON.stringify(name)}`, "/v1/elections/", name, a, (b) => ({ ...b, value, token: token || undefined }));
  }

  /**
   * The machinery every held primitive shares (client/hold.go take and takeWith): a grant
   * held by a lease (a given one, or one created per hold), taken with server-side waits that
   * are re-issued, and watched for loss.
   */
  async #take<H extends Held>(
    op: string,
    opts: HoldOptions,
    maxHold: number,
    acq: (scope: Scope, a: AcquireOptions) => Promise<Granted>,
    make: (g: Granted, lease: Lease, ownLease: boolean, maxHoldEnd: number | undefined) => H,
  ): Promise<H> {
    const wait = opts.wait ?? 0;
    checkDuration(op, "wait", wait);
    if (opts.ttl !== undefined) checkDuration(op, "ttl", opts.ttl);
    if (!(wait >= 0)) throw new InvalidError("invalid_argument", `${op}: wait ${wait} ms is negative`);
    const ttl = opts.ttl ?? DEFAULT_TTL_MS;
    const scope = this.#t.scope(opts.signal, wait);
    const end = (from: number) => (maxHold > 0 ? from + maxHold : undefined);
    if (opts.lease !== undefined) return this.#takeWith(op, opts, opts.lease, false, wait, scope, acq, make, end);
    leaseConfig(op, ttl, opts);
    if (wait === 0) {
      // One round trip: the server creates the lease in the entry that grants, and nothing
      // when it refuses. Retries carry the request_id acquireAt draws.
      const g = await acq(scope, { ttl, owner: opts.owner });
      // safeUntil counts from the first attempt: the lease may have been created by it (its
      // answer lost) and only returned by a later one.
      const lease = this.#startLease(g.leaseId, g.ttlMs, g.first, opts);
      return make(g, lease, true, end(g.first));
    }
    const lease = await this.#newLeaseIn(ttl, opts, scope);
    try {
      return await this.#takeWith(op, opts, lease, true, wait, scope, acq, make, end);
    } catch (err) {
      await lease.close().catch(() => undefined);
      throw err;
    }
  }

  async #takeWith<H extends Held>(
    op: string,
    opts: HoldOptions,
    lease: Lease,
    own: boolean,
    wait: number,
    scope: Scope,
    acq: (scope: Scope, a: AcquireOptions) => Promise<Granted>,
    make: (g: Granted, lease: Lease, ownLease: boolean, maxHoldEnd: number | undefined) => H,
    end: (from: number) => number | undefined,
  ): Promise<H> {
    const waitEnd = now() + wait;
    for (;;) {
      if (lease.lost.aborted) throw new LeaseLostError("lease_lost", `${op}: the lease is lost`, { cause: lease.lost.reason });
      const w = wait > 0 ? Math.min(DEFAULT_WAIT_CHUNK_MS, Math.max(waitEnd - now(), 1)) : 0;
      // The request ends when the lease is lost: the server then drops the wait.
      const rscope = { signal: AbortSignal.any([scope.signal, lease.lost]), deadline: scope.deadline };
      const sent = now();
      let g;
      try {
        g = await acq(rscope, { leaseId: lease.id, wait: w, owner: opts.owner });
      } catch (err) {
        if (lease.lost.aborted) throw new LeaseLostError("lease_lost", `${op}: the lease was lost while waiting`, { cause: lease.lost.reason });
        if (err instanceof LeaseNotFoundError) {
          const lost = new LeaseLostError("lease_lost", `${op}: the lease is gone (it expired or was revoked)`, { cause: err });
          lease.lose(lost);
          throw lost;
        }
        if (wait > 0 && err instanceof WaitTimeoutError && !scope.signal.aborted && now() < waitEnd) {
          this.#t.log("debug", `${op}: re-issuing a wait`);
          continue;
        }
        throw err;
      }
      if (!lease.observe(g.sent)) {
        // Granted, but the lease was declared lost meanwhile: give the grant back.
        const held = make(g, lease, false, undefined);
        await held.release().catch(() => undefined);
        throw new LeaseLostError("lease_lost", `${op}: the lease was lost as it was granted`, { cause: lease.lost.reason });
      }
      // Granted at once: no earlier than the send; after a wait: at some point of it.
      return make(g, lease, own, end(wait > 0 ? now() : sent));
    }
  }

  // ------------------------------------------------------------------ reads

  async #statusAt<T>(op: string, route: string, name: string, opts: StatusOptions): Promise<T> {
    checkName(op, route.split("/")[2].replace(/s$/, ""), name);
    const wait = opts.wait ?? 0;
    checkWait(op, wait);
    const q = new URLSearchParams();
    if (opts.stale) q.set("stale", "true");
    if (wait > 0) {
      q.set("wait_index", String(opts.waitIndex ?? 0));
      q.set("wait_ms", String(ms(wait)));
    }
    return this.#t.do<T>({ op, method: "GET", path: namePath(route, name), query: q, waitMs: () => wait }, this.#t.scope(opts.signal, wait)).then((r) => r.out);
  }

  /** Reads lock `name`: held, token, owner, mode, holders, waiters, modify_index, lock_delay_remaining_ms (linearizable unless stale). */
  status(name: string, opts: StatusOptions = {}): Promise<LockStatus> {
    return this.#statusAt<LockStatus>(`status ${JSON.stringify(name)}`, "/v1/locks/", name, opts);
  }

  /** Reads semaphore `name`: limit, permits, waiters. */
  semaphoreStatus(name: string, opts: StatusOptions = {}): Promise<SemaphoreStatus> {
    return this.#statusAt<SemaphoreStatus>(`semaphore status ${JSON.stringify(name)}`, "/v1/semaphores/", name, opts);
  }

  /** Reads election `name`: elected, owner, value, token, candidates. */
  electionStatus(name: string, opts: StatusOptions = {}): Promise<ElectionStatus> {
    return this.#statusAt<ElectionStatus>(`election status ${JSON.stringify(name)}`, "/v1/elections/", name, opts);
  }

  /**
   * Observes election `name`: yields its current state, then every change of leader or
   * value (blocking reads on modify_index, no polling), until the signal aborts. Failed
   * reads are retried with backoff; a read that cannot succeed (invalid, unauthorized) ends it.
   */
  async *observe(name: string, opts: CallOptions = {}): AsyncGenerator<ElectionStatus> {
    let last = 0;
    let first = true;
    let backoff = this.#t.minBackoffMs;
    const signal = opts.signal ?? new AbortController().signal;
    while (!signal.aborted) {
      let st: ElectionStatus;
      try {
        st = await this.electionStatus(name, first ? { signal } : { signal, waitIndex: last, wait: 60_000 });
      } catch (err) {
        if (err instanceof InvalidError || err instanceof UnauthenticatedError || err instanceof PermissionDeniedError) throw err;
        if (signal.aborted) return;
        await sleep(backoff, signal);
        backoff = Math.min(2 * backoff, this.#t.maxBackoffMs);
        continue;
      }
      backoff = this.#t.minBackoffMs;
      if (!first && st.modify_index <= last) continue; // the wait ended without a change
      first = false;
      last = st.modify_index;
      yield st;
    }
  }

  /**
   * Follows the lock events of the locks whose names start with `prefix` ("" for every lock),
   * from now on or from entry index `fromIndex`: `for await (const e of await client.watch("accounts/"))`.
   * It reconnects by itself, to the next endpoint, with the last event ID, so no event is
   * lost or repeated. The first connection is made before this resolves: an index older than
   * the node holds rejects with IndexCompactedError (read the state, then watch again from now on).
   */
  async watch(prefix = "", opts: WatchOptions = {}): Promise<Watch> {
    const w = new Watch(this.#t, prefix, opts);
    await w.open();
    return w;
  }

  /** The lock's last events (grants, releases, expiries, revocations), oldest first. */
  async history(name: string, opts: CallOptions & { stale?: boolean } = {}): Promise<History> {
    const op = `history ${JSON.stringify(name)}`;
    checkName(op, "lock", name);
    const q = new URLSearchParams();
    if (opts.stale) q.set("stale", "true");
    return this.#t.do<History>({ op, method: "GET", path: namePath("/v1/history/", name), query: q }, this.#t.scope(opts.signal, 0)).then((r) => r.out);
  }

  /** The cluster as the answering node sees it: leader, term, indexes, nodes. */
  cluster(opts: CallOptions = {}): Promise<Cluster> {
    return this.#t.do<Cluster>({ op: "cluster", method: "GET", path: "/v1/cluster" }, this.#t.scope(opts.signal, 0)).then((r) => r.out);
  }

  /** Every held or awaited lock whose name starts with prefix, following the pages to the end. */
  async list(prefix = "", opts: CallOptions & { stale?: boolean } = {}): Promise<LockStatus[]> {
    const all: LockStatus[] = [];
    let after = "";
    for (;;) {
      const q = new URLSearchParams();
      if (prefix) q.set("prefix", prefix);
      if (after) q.set("after", after);
      if (opts.stale) q.set("stale", "true");
      const page = (await this.#t.do<LockList>({ op: "list locks", method: "GET", path: "/v1/locks", query: q }, this.#t.scope(opts.signal, 0))).out;
      all.push(...(page.locks ?? []));
      if (!page.truncated) return all;
      if (!page.next || page.next <= after) throw new ServerError("internal", "list locks: a truncated page whose next cursor does not move forward");
      after = page.next;
    }
  }
}

/** The request fields of a lock's options (mode, max_hold_ms, lock_delay_ms), checked. */
function holdFields(op: string, mode: string, maxHold = 0, lockDelay = 0): Record<string, unknown> {
  if (mode !== "exclusive" && mode !== "shared") throw new InvalidError("invalid_argument", `${op}: mode ${JSON.stringify(mode)} is neither "exclusive" nor "shared"`);
  checkDuration(op, "maxHold", maxHold);
  checkDuration(op, "lockDelay", lockDelay);
  if (!(maxHold >= 0) || !(lockDelay >= 0)) throw new InvalidError("invalid_argument", `${op}: maxHold and lockDelay are durations of 0 or more ms`);
  return { mode: mode === "shared" ? "shared" : undefined, max_hold_ms: ms(maxHold) || undefined, lock_delay_ms: ms(lockDelay) || undefined };
}
