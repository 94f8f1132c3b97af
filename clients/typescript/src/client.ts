/**
 * The raftlock client: endpoint failover, retries with backoff and Retry-After, and the
 * primitives (locks, shared locks, semaphores, elections) held with leases that one
 * keepalive loop per client renews in batches. The rules are the Go client's
 * (client/retry.go, attempt.go, keepalive.go, hold.go), so that a request is retried
 * exactly when the Go client retries it.
 */
import { randomBytes } from "node:crypto";
import { inspect } from "node:util";
import {
  AbortedError,
  ErrorOptions,
  InvalidError,
  LeaseLostError,
  LeaseNotFoundError,
  NotHolderError,
  PermissionDeniedError,
  RaftlockError,
  ServerError,
  TLSError,
  TooManyRequestsError,
  UnauthenticatedError,
  UnavailableError,
  UnreachableError,
  WaitTimeoutError,
  errorFor,
} from "./errors.js";
import { Agents, send, TLSOptions, TransportFailure } from "./transport.js";
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
import type {
  Cluster,
  ElectionGrant,
  ElectionStatus,
  Grant,
  History,
  LockList,
  LockStatus,
  SemaphoreGrant,
  SemaphoreStatus,
} from "./types.js";

/** Defaults of the client's options (the Go client's). */
export const DEFAULT_TIMEOUT_MS = 5000;
export const DEFAULT_MIN_BACKOFF_MS = 50;
export const DEFAULT_DEADLINE_MS = 30_000;
/** The longest single server-side wait a lock/semaphore/campaign asks for; longer waits are re-issued. */
export const DEFAULT_WAIT_CHUNK_MS = 240_000;
/** The most one wait may last on the server (api.MaxWaitMs). */
export const MAX_WAIT_MS = 300_000;

const leaderHeader = "x-raftlock-leader";

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

/** Options of lock. */
export interface LockOptions extends HoldOptions {
  /** "exclusive" (default) or "shared". */
  mode?: "exclusive" | "shared";
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
}

/** One request as the retry loop sends it. */
interface Req {
  op: string;
  method: string;
  path: string;
  query?: URLSearchParams;
  /** The JSON body of the next attempt (called per attempt: a wait sends what remains). */
  body?: () => unknown;
  /** The server-side wait of the next attempt, added to the attempt timeout. */
  waitMs?: () => number;
  attemptTimeoutMs?: number;
  maxBackoffMs?: number;
  /** Values that must not show in an error text (lease IDs, request IDs). */
  secrets?: string[];
}

/** Where a call stands: its signal (caller's and deadline) and its deadline on the monotonic clock. */
interface Scope {
  signal: AbortSignal;
  deadline: number;
}

/** The outcome of a call: ok with the answer, or the error and how many attempts it took. */
type Outcome<T> = { ok: true; out: T; sent: number; first: number; attempts: number } | { ok: false; err: RaftlockError; sent: number; first: number; attempts: number };

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

/** Parses Retry-After: delay-seconds or an HTTP date; 0 for absent, malformed or past. */
export function parseRetryAfter(v: string | undefined, nowWall = Date.now()): number {
  if (v === undefined) return 0;
  v = v.trim();
  if (v === "") return 0;
  if (/^\d+$/.test(v)) return Math.min(Number(v), 24 * 3600) * 1000;
  const t = Date.parse(v);
  return Number.isFinite(t) && t > nowWall ? t - nowWall : 0;
}

/** A pause drawn at random from the upper half of backoff: jitter spreads clients out. */
function upperHalf(backoff: number): number {
  return backoff / 2 + Math.random() * (backoff / 2);
}

/** Waits ms or until signal aborts; reports whether the whole pause passed. */
function sleep(d: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, d);
    const onAbort = () => {
      clearTimeout(t);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

function retryable(err: RaftlockError): boolean {
  return ["unavailable", "no_leader", "unknown_outcome", "too_many_requests", "tls"].includes(err.code);
}

/** A grant held with a lease: a lock (either mode), a semaphore permit, a leadership. */
export class Held {
  /** "lock", "semaphore" or "election". */
  readonly kind: string;
  /** The lock's (semaphore's, election's) name. */
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

  /** @internal */ protected readonly client: Client;
  private readonly ownLease: boolean;
  private readonly route: string;
  private readonly ctl = new AbortController();
  private releasing: Promise<void> | undefined;
  private releasedAt: number | undefined;

  /** What util.inspect and console.log show: never the lease ID, which is a secret. */
  [inspect.custom](): string {
    return `${this.constructor.name} { kind: ${JSON.stringify(this.kind)}, name: ${JSON.stringify(this.name)}, token: ${this.token}, lost: ${this.lease.lost.aborted} }`;
  }

  /** What JSON.stringify writes: never the lease ID. */
  toJSON(): { kind: string; name: string; token: number; mode?: string } {
    return { kind: this.kind, name: this.name, token: this.token, mode: this.mode };
  }

  /** @internal Made by Client.lock, semaphore and campaign. */
  constructor(client: Client, kind: string, route: string, name: string, token: number, lease: Lease, ownLease: boolean, mode?: string) {
    this.client = client;
    this.kind = kind;
    this.route = route;
    this.name = name;
    this.token = token;
    this.lease = lease;
    this.ownLease = ownLease;
    this.mode = mode;
    this.onLost = () => this.ctl.abort(lease.lost.reason);
    if (lease.lost.aborted) this.onLost();
    else lease.lost.addEventListener("abort", this.onLost, { once: true });
  }

  private readonly onLost: () => void;

  /** The lease ID: a secret (it authorizes release and revoke). */
  get leaseId(): string {
    return this.lease.id;
  }

  /**
   * Aborts when the grant can no longer be assumed held: the lease was lost (the cluster
   * said so, or safeUntil() passed without an answered keepalive) or closed, or the grant
   * was released. Its reason is a LeaseLostError. Stop writing under the grant when it aborts.
   */
  get lost(): AbortSignal {
    void this.lease.lost; // reading the lease's signal notices a passed safe time at once (after a pause)
    return this.ctl.signal;
  }

  /**
   * Until when (performance.now() clock, ms) the grant is certainly still held: the lease's
   * safeUntil(). After a release or a loss it is at most that moment. Even before it, a
   * process pause can outlast it at any moment: writes still need the token checked by the storage.
   */
  safeUntil(): number {
    const su = this.lease.safeUntil();
    return this.releasedAt === undefined ? su : Math.min(su, this.releasedAt);
  }

  /**
   * Gives the grant back with its lease and token, so that a retried or late release can
   * never free a later grant; a hold with a lease of its own then revokes the lease. It
   * rejects with NotHolderError or LeaseNotFoundError when the grant had already been lost.
   * Calling it again returns the first call's promise.
   */
  release(opts: CallOptions = {}): Promise<void> {
    if (this.releasing === undefined) this.releasing = this.giveBack(opts);
    return this.releasing;
  }

  private async giveBack(opts: CallOptions): Promise<void> {
    const c = this.client;
    const op = `release ${this.kind} ${JSON.stringify(this.name)}`;
    const r = await c.releaseAt(op, this.route, this.name, this.lease.id, this.token, opts);
    let err: RaftlockError | undefined = r.ok ? undefined : r.err;
    if (err instanceof NotHolderError && r.attempts > 1 && !this.lease.lost.aborted) {
      err = undefined; // an earlier attempt, whose answer was lost, released it
    }
    let gone = err === undefined || err instanceof NotHolderError || err instanceof LeaseNotFoundError;
    if (this.ownLease) {
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
      this.lease.lost.removeEventListener("abort", this.onLost); // a shared lease outlives its holds
      this.releasedAt = now();
      this.ctl.abort(new LeaseClosedError("lease_closed", `${this.kind} ${JSON.stringify(this.name)} was released`));
    } else {
      this.releasing = undefined; // a network failure: the caller may try again
    }
    if (err !== undefined) throw err;
  }
}

/** A leadership of an election: a Held with its published value. */
export class Leadership extends Held {
  private currentValue: string;

  /** @internal */
  constructor(client: Client, name: string, token: number, lease: Lease, ownLease: boolean, value: string) {
    super(client, "election", "/v1/elections/", name, token, lease, ownLease);
    this.currentValue = value;
  }

  /** The value this leader publishes. */
  get value(): string {
    return this.currentValue;
  }

  /** Publishes a new value under the same leadership; resolves with the answer's token (the leadership's). */
  async proclaim(value: string, opts: CallOptions = {}): Promise<number> {
    if (this.lost.aborted) throw new LeaseLostError("lease_lost", `proclaim ${JSON.stringify(this.name)}: the leadership is lost`, { cause: this.lost.reason });
    if (typeof value !== "string" || Buffer.byteLength(value) > 4096) throw new InvalidError("invalid_argument", `proclaim: value must be a string of at most 4096 bytes`);
    const scope = this.client.scope(opts.signal, 0);
    const r = await this.client.campaignRequest(scope, this.name, value, { leaseId: this.lease.id, owner: undefined }, this.token);
    this.currentValue = value;
    return r.out.token;
  }

  /** Resigns: the next candidate leads, in the same commit. */
  resign(opts: CallOptions = {}): Promise<void> {
    return this.release(opts);
  }
}

/** A client of a raftlock cluster. Safe to share; one keepalive loop renews all its leases. */
export class Client implements LeaseHost {
  readonly endpoints: readonly string[];
  /** @internal */ readonly timeoutMs: number;
  private readonly deadlineMs: number;
  private readonly minBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly authHeader: string | undefined;
  private readonly tokenSecret: string | undefined;
  private readonly agents: Agents;
  private readonly logger: ((level: "debug" | "warn", msg: string) => void) | undefined;
  private preferred = 0;
  /** @internal The one keepalive loop of this client. */
  readonly keepaliver: Keepaliver;

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
    this.timeoutMs = opts.timeoutMs && opts.timeoutMs > 0 ? opts.timeoutMs : DEFAULT_TIMEOUT_MS;
    this.deadlineMs = opts.deadlineMs && opts.deadlineMs > 0 ? opts.deadlineMs : DEFAULT_DEADLINE_MS;
    this.minBackoffMs = opts.minBackoffMs && opts.minBackoffMs > 0 ? opts.minBackoffMs : DEFAULT_MIN_BACKOFF_MS;
    this.maxBackoffMs = Math.max(this.minBackoffMs, opts.maxBackoffMs && opts.maxBackoffMs > 0 ? opts.maxBackoffMs : DEFAULT_MAX_BACKOFF_MS);
    const tok = (opts.token ?? process.env.RAFTLOCK_TOKEN)?.trim();
    if (tok) {
      if (/[\s\u0000-\u001f]/.test(tok)) throw new InvalidError("invalid_argument", "the ACL token contains white space or a control character");
      this.tokenSecret = tok;
      this.authHeader = `Bearer ${tok}`;
    }
    this.logger = opts.logger;
    this.agents = new Agents(typeof opts.tls === "object" ? opts.tls : undefined);
    this.keepaliver = new Keepaliver(() => this);
    if (plain && this.authHeader) {
      this.log("warn", "an ACL token is sent over plain HTTP, where anyone on the path can read it; use https endpoints and TLS");
    }
  }

  /** What util.inspect and console.log show: never the ACL token. */
  [inspect.custom](): string {
    return `Client { endpoints: ${JSON.stringify(this.endpoints)} }`;
  }

  /** @internal */
  log(level: "debug" | "warn", msg: string): void {
    this.logger?.(level, msg);
  }

  /**
   * Closes the client: revokes every lease it keeps alive (which frees everything they hold
   * at once, each grant to its next waiter), within one attempt timeout, and closes idle
   * connections. A lease whose revoke fails expires on the cluster a TTL after its last
   * keepalive; its lost signal aborts either way.
   */
  async close(): Promise<void> {
    const leases = [...this.keepaliver.leases()];
    await Promise.all(leases.map((l) => l.close().catch((err: unknown) => this.log("debug", `close: revoking lease ${redactID(l.id)} failed: ${(err as Error).message}`))));
    this.agents.destroy();
  }

  // ------------------------------------------------------------------ the retry loop

  /** @internal The signal and deadline of a call: the caller's signal, else deadlineMs, on top of extraMs of wait. */
  scope(signal: AbortSignal | undefined, extraMs: number): Scope {
    if (signal !== undefined) return { signal, deadline: Infinity };
    const total = this.deadlineMs + extraMs;
    if (!Number.isFinite(total)) return { signal: new AbortController().signal, deadline: Infinity };
    return { signal: AbortSignal.timeout(Math.ceil(total)), deadline: now() + total };
  }

  private redact(r: Req, s: string): string {
    if (this.tokenSecret) s = s.split(this.tokenSecret).join("[token]");
    for (const v of r.secrets ?? []) if (v && v.length >= 8) s = s.split(v).join(redactID(v));
    return s;
  }

  /**
   * Sends r until an endpoint answers with anything but no_leader, unknown_outcome or
   * too_many_requests, or the scope ends (client/retry.go do). Each round tries every
   * endpoint once, starting with the preferred one (the last that answered, or the leader a
   * follower named); between rounds it pauses for a jittered, doubling backoff, or the
   * Retry-After of a too_many_requests answer when longer. A round in which every endpoint
   * failed the TLS handshake ends the call: waiting cannot fix a misconfiguration.
   */
  private async tryDo<T>(r: Req, scope: Scope): Promise<Outcome<T>> {
    const n = this.endpoints.length;
    let idx = this.preferred;
    const maxBackoff = r.maxBackoffMs ?? this.maxBackoffMs;
    let backoff = Math.min(this.minBackoffMs, maxBackoff);
    let attempts = 0;
    let first = 0;
    let last: RaftlockError | undefined;
    const seen: Record<string, string> = {}; // each endpoint's last error, for UnreachableError
    const failed = (err: RaftlockError, sent: number): Outcome<T> => ({ ok: false, err, sent, first, attempts });
    for (;;) {
      let throttled = 0;
      let tlsFails = 0;
      for (let i = 0; i < n; i++) {
        const ep = (idx + i) % n;
        if (scope.signal.aborted) return failed(this.abortErr(r.op, scope, last, seen), 0);
        attempts++;
        const a = await this.attempt<T>(ep, r, scope);
        if (attempts === 1) first = a.sent;
        if (a.err === undefined) return { ok: true, out: a.out as T, sent: a.sent, first, attempts };
        const err = a.err;
        if (!retryable(err)) return failed(err, a.sent);
        last = err;
        seen[this.endpoints[ep]] = err.message.startsWith(`${r.op}: `) ? err.message.slice(r.op.length + 2) : err.message;
        if (scope.signal.aborted) return failed(this.abortErr(r.op, scope, last, seen), a.sent);
        if (err instanceof TLSError) tlsFails++;
        if (err instanceof TooManyRequestsError) {
          // The node is busy, not gone: wait as it asked before asking again.
          throttled = Math.max(err.retryAfterMs ?? 0, 1);
          this.log("debug", `${r.op}: throttled by ${this.endpoints[ep]}, retrying after ${throttled} ms`);
          break;
        }
        this.log("debug", `${r.op}: ${err.message}; trying the next endpoint`);
        this.preferred = (ep + 1) % n;
      }
      if (tlsFails === n && last) return failed(last, 0);
      idx = this.preferred;
      let pause = upperHalf(backoff);
      if (throttled > 0) {
        pause = Math.max(pause, throttled);
        if (scope.deadline - now() < pause && last) return failed(last, 0); // it cannot be served before the caller gives up
      }
      if (!(await sleep(pause, scope.signal))) return failed(this.abortErr(r.op, scope, last, seen), 0);
      backoff = Math.min(2 * backoff, maxBackoff);
    }
  }

  /** @internal Like tryDo, but throws the error. */
  async do<T>(r: Req, scope: Scope): Promise<{ out: T; sent: number; first: number; attempts: number }> {
    const o = await this.tryDo<T>(r, scope);
    if (!o.ok) throw o.err;
    return o;
  }

  private abortErr(op: string, scope: Scope, last: RaftlockError | undefined, seen: Record<string, string> = {}): AbortedError | UnreachableError {
    const reason = scope.signal.reason as { name?: string; message?: string } | undefined;
    if (reason?.name === "TimeoutError" && last instanceof UnavailableError) {
      // The call's deadline passed with no endpoint answering: name every endpoint's error.
      const parts = this.endpoints.map((e) => `${e}: ${seen[e] ?? "not tried before the deadline"}`).join("; ");
      return new UnreachableError("unavailable", `${op}: no endpoint answered before the deadline (${parts})`, { cause: last, errors: seen });
    }
    const why = reason?.name === "TimeoutError" ? "the call's deadline passed" : `aborted${reason?.message ? `: ${reason.message}` : ""}`;
    return new AbortedError("aborted", `${op}: ${why}${last ? `; last error: ${last.message}` : ""}`, { cause: last ?? scope.signal.reason });
  }

  /** Sends r once to endpoint ep (client/attempt.go). */
  private async attempt<T>(ep: number, r: Req, scope: Scope): Promise<{ sent: number; out?: T; err?: RaftlockError }> {
    const base = this.endpoints[ep];
    let body: string | undefined;
    if (r.body) body = JSON.stringify(r.body());
    let timeout = r.attemptTimeoutMs ?? this.timeoutMs;
    if (r.waitMs) timeout += r.waitMs();
    const tsig = AbortSignal.timeout(Math.ceil(timeout));
    const signal = AbortSignal.any([scope.signal, tsig]);
    const url = new URL(base + r.path + (r.query && [...r.query].length > 0 ? `?${r.query}` : ""));
    const headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.authHeader) headers["authorization"] = this.authHeader;
    const sent = now();
    let ans;
    try {
      ans = await send(this.agents, url, r.method, headers, body, signal, tsig);
    } catch (e) {
      const f = e as TransportFailure;
      const msg = `${r.op}: ${this.redact(r, f.message)}${f.notSent ? " (the request was not sent)" : ""}`;
      if (f.tls) return { sent, err: new TLSError("tls", msg, { cause: f }) };
      return { sent, err: new UnavailableError("unavailable", msg, { cause: f }) };
    }
    const leader = ans.headers[leaderHeader];
    if (typeof leader === "string" && leader !== "") this.noteLeader(leader);
    else if (ans.status < 500) this.preferred = ep;
    const status = `${ans.status}`;
    if (ans.status >= 200 && ans.status < 300) {
      try {
        return { sent, out: (ans.body === "" ? {} : JSON.parse(ans.body)) as T };
      } catch {
        return { sent, err: new ServerError("internal", `${r.op}: ${base} answered ${status} with a body that is not the API's JSON`, { status: ans.status }) };
      }
    }
    const ra = ans.headers["retry-after"];
    const eo: ErrorOptions = { status: ans.status, retryAfterMs: parseRetryAfter(typeof ra === "string" ? ra : undefined) || undefined };
    let code: string | undefined;
    let message = "";
    try {
      const eb = JSON.parse(ans.body) as { error?: { code?: string; message?: string } };
      code = eb?.error?.code || undefined;
      message = eb?.error?.message ?? "";
    } catch {
      // not the API's error body: a proxy's page
    }
    if (code === undefined) {
      if ([502, 503, 504].includes(ans.status)) return { sent, err: new UnavailableError("unavailable", `${r.op}: ${base} answered ${status}`, eo) };
      if (ans.status === 401) return { sent, err: new UnauthenticatedError("unauthenticated", `${r.op}: ${base} answered ${status}`, eo) };
      if (ans.status === 403) return { sent, err: new PermissionDeniedError("permission_denied", `${r.op}: ${base} answered ${status}`, eo) };
      return { sent, err: new ServerError("internal", `${r.op}: ${base} answered ${status}: ${this.redact(r, ans.body.slice(0, 200))}`, eo) };
    }
    return { sent, err: errorFor(code, `${r.op}: ${this.redact(r, message)}`, eo) };
  }

  /** Prefers the endpoint whose host is the leader's HTTP address, to skip the forwarding hop. */
  private noteLeader(addr: string): void {
    const i = this.endpoints.findIndex((e) => new URL(e).host === addr);
    if (i >= 0) this.preferred = i;
  }

  // ------------------------------------------------------------------ leases

  /** Creates a lease (TTL ms; default the server's 10000) with no keepalives: see newLease. */
  async createLease(ttl = 0, opts: CallOptions = {}): Promise<{ lease_id: string; ttl_ms: number }> {
    const r = await this.createLeaseAt(ttl, this.scope(opts.signal, 0));
    return r.out;
  }

  private createLeaseAt(ttl: number, scope: Scope) {
    return this.do<{ lease_id: string; ttl_ms: number }>(
      { op: "create lease", method: "POST", path: "/v1/leases", body: () => ({ ttl_ms: ms(ttl) }) },
      scope,
    );
  }

  /** Creates a lease and keeps it alive in the background until close() or its loss. */
  async newLease(ttl = DEFAULT_TTL_MS, opts: CallOptions & LeaseTimingOptions = {}): Promise<Lease> {
    leaseConfig("new lease", ttl, opts);
    return this.newLeaseIn(ttl, opts, this.scope(opts.signal, 0));
  }

  private async newLeaseIn(ttl: number, opts: LeaseTimingOptions, scope: Scope): Promise<Lease> {
    const r = await this.createLeaseAt(ttl, scope);
    return this.startLease(r.out.lease_id, r.out.ttl_ms, r.sent, opts);
  }

  /** Starts keeping alive a lease whose last answered renewal was sent at `sent`. */
  private startLease(id: string, ttlMs: number, sent: number, opts: LeaseTimingOptions): Lease {
    let cfg;
    try {
      cfg = leaseConfig(`lease ${redactID(id)}`, ttlMs, opts);
    } catch (err) {
      void this.revokeQuietly(id); // the TTL the server chose does not fit the options
      throw err;
    }
    return new Lease(this, id, ttlMs, sent, cfg);
  }

  /** Renews a lease once. Rejects with LeaseNotFoundError when it expired or was revoked. */
  async keepAlive(leaseId: string, opts: CallOptions = {}): Promise<{ lease_id: string; ttl_ms: number }> {
    checkLeaseID("keepalive", leaseId);
    const r = await this.do<{ lease_id: string; ttl_ms: number }>(
      { op: "keepalive", method: "POST", path: "/v1/leases/keepalive", body: () => ({ lease_id: leaseId }), secrets: [leaseId] },
      this.scope(opts.signal, 0),
    );
    return r.out;
  }

  /** Revokes a lease, releasing everything it holds. A retried revoke that finds no lease succeeds. */
  async revoke(leaseId: string, opts: CallOptions = {}): Promise<void> {
    checkLeaseID("revoke", leaseId);
    const r = await this.tryDo<unknown>(
      { op: "revoke", method: "POST", path: "/v1/leases/revoke", body: () => ({ lease_id: leaseId }), secrets: [leaseId] },
      this.scope(opts.signal, 0),
    );
    if (!r.ok && !(r.err instanceof LeaseNotFoundError && r.attempts > 1)) throw r.err;
  }

  /** @internal LeaseHost: revoke, a lease the cluster no longer knows counting as revoked. */
  async revokeLease(id: string): Promise<void> {
    try {
      await this.revoke(id, { signal: AbortSignal.timeout(Math.ceil(this.timeoutMs * 2)) });
    } catch (err) {
      if (!(err instanceof LeaseNotFoundError)) throw err;
    }
  }

  private async revokeQuietly(id: string): Promise<void> {
    try {
      await this.revokeLease(id);
    } catch (err) {
      this.log("debug", `revoking an unused lease failed; it will expire: ${(err as Error).message}`);
    }
  }

  /** @internal LeaseHost: one batch keepalive, retried until deadline. */
  async keepAliveBatch(ids: string[], deadline: number, attemptTimeoutMs: number, maxBackoffMs: number) {
    const left = Math.max(1, deadline - now());
    const r = await this.tryDo<KeepAliveBatch>(
      { op: "batch keepalive", method: "POST", path: "/v1/leases/keepalive", body: () => ({ lease_ids: ids }), attemptTimeoutMs, maxBackoffMs, secrets: ids },
      { signal: AbortSignal.timeout(Math.ceil(left)), deadline },
    );
    return r.ok ? { ok: true as const, out: r.out, sent: r.sent } : { ok: false as const, err: r.err, sent: r.sent };
  }

  /** @internal LeaseHost: one single keepalive, retried until deadline or until signal aborts. */
  async keepAliveOne(id: string, deadline: number, signal: AbortSignal, attemptTimeoutMs: number, maxBackoffMs: number) {
    const left = Math.max(1, deadline - now());
    const r = await this.tryDo<unknown>(
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
    const r = await this.acquireAt<Grant>(this.scope(opts.signal, opts.wait ?? 0), `acquire ${JSON.stringify(name)}`, "/v1/locks/", name, opts, (b) => ({
      ...b,
      mode: opts.mode === "shared" ? "shared" : undefined,
    }));
    return r.out;
  }

  /**
   * @internal Sends an acquire-like request (lock, permit, campaign): checks the options,
   * draws the request_id of a lease created with the grant, the same on every retry, and
   * asks a retried waiting request only for the wait that remains (client/locks.go acquireAt).
   */
  async acquireAt<T>(
    scope: Scope,
    op: string,
    route: string,
    name: string,
    opts: AcquireOptions,
    body: (b: Record<string, unknown>) => unknown,
  ) {
    checkName(op, route.split("/")[2].replace(/s$/, ""), name);
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
    return this.do<T>(
      {
        op,
        method: "PUT",
        path: namePath(route, name),
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
    const r = await this.releaseAt(`release ${JSON.stringify(name)}`, "/v1/locks/", name, leaseId, token, opts);
    if (!r.ok) throw r.err;
  }

  /** @internal Gives back the grant of name at route held by leaseId with token. */
  async releaseAt(op: string, route: string, name: string, leaseId: string, token: number, opts: CallOptions) {
    checkName(op, route.split("/")[2].replace(/s$/, ""), name);
    checkLeaseID(op, leaseId);
    if (!token) throw new InvalidError("invalid_argument", `${op}: the token of the grant is required`);
    return this.tryDo<unknown>(
      { op, method: "DELETE", path: namePath(route, name), body: () => ({ lease_id: leaseId, token }), secrets: [leaseId] },
      this.scope(opts.signal, 0),
    );
  }

  // ------------------------------------------------------------------ held primitives

  /**
   * Takes lock `name` and keeps its lease alive until release() or its loss. Without `wait`
   * it is one round trip (the server creates the lease in the entry that grants, with a
   * request_id so that retries cannot create a second lease) and rejects with LockHeldError
   * when the lock is held; with `wait` it creates a lease first and waits in the lock's FIFO
   * queue on the server (no polling), rejecting with WaitTimeoutError when the wait ends.
   */
  async lock(name: string, opts: LockOptions = {}): Promise<Held> {
    const mode = opts.mode ?? "exclusive";
    if (mode !== "exclusive" && mode !== "shared") throw new InvalidError("invalid_argument", `lock: mode ${JSON.stringify(mode)} is neither "exclusive" nor "shared"`);
    const op = `lock ${JSON.stringify(name)}`;
    return this.take(op, opts, async (scope, a) => {
      const r = await this.acquireAt<Grant>(scope, op, "/v1/locks/", name, a, (b) => ({ ...b, mode: mode === "shared" ? "shared" : undefined }));
      return { ...r, token: r.out.token, leaseId: r.out.lease_id, ttlMs: r.out.ttl_ms };
    }, (token, lease, own) => new Held(this, "lock", "/v1/locks/", name, token, lease, own, mode));
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
      await held.release().catch((rerr: unknown) => this.log("debug", `release after a failure failed: ${(rerr as Error).message}`));
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
    return this.take(op, opts, async (scope, a) => {
      const r = await this.acquireAt<SemaphoreGrant>(scope, op, "/v1/semaphores/", name, a, (b) => ({ ...b, limit }));
      return { ...r, token: r.out.token, leaseId: r.out.lease_id, ttlMs: r.out.ttl_ms };
    }, (token, lease, own) => new Held(this, "semaphore", "/v1/semaphores/", name, token, lease, own));
  }

  /**
   * Campaigns in election `name` with `value`: resolves once this client leads (waiting as a
   * candidate with `wait`), rejects with ElectionHeldError when another leads and it did not wait.
   */
  async campaign(name: string, value: string, opts: HoldOptions = {}): Promise<Leadership> {
    const op = `campaign ${JSON.stringify(name)}`;
    if (typeof value !== "string" || Buffer.byteLength(value) > 4096) throw new InvalidError("invalid_argument", `${op}: value must be a string of at most 4096 bytes`);
    return this.take(op, opts, async (scope, a) => {
      const r = await this.campaignRequest(scope, name, value, a, 0);
      return { ...r, token: r.out.token, leaseId: r.out.lease_id, ttlMs: r.out.ttl_ms };
    }, (token, lease, own) => new Leadership(this, name, token, lease, own, value));
  }

  /** @internal One campaign (or, with token, proclaim) request. */
  campaignRequest(scope: Scope, name: string, value: string, a: AcquireOptions, token: number) {
    return this.acquireAt<ElectionGrant>(scope, `campaign ${JSON.stringify(name)}`, "/v1/elections/", name, a, (b) => ({ ...b, value, token: token || undefined }));
  }

  /**
   * The machinery every held primitive shares (client/hold.go take and takeWith): a grant
   * held by a lease (a given one, or one created per hold), taken with server-side waits that
   * are re-issued, and watched for loss.
   */
  private async take<H extends Held>(
    op: string,
    opts: HoldOptions,
    acq: (scope: Scope, a: AcquireOptions) => Promise<{ token: number; leaseId: string; ttlMs: number; sent: number; first: number }>,
    make: (token: number, lease: Lease, ownLease: boolean) => H,
  ): Promise<H> {
    const wait = opts.wait ?? 0;
    checkDuration(op, "wait", wait);
    if (opts.ttl !== undefined) checkDuration(op, "ttl", opts.ttl);
    if (!(wait >= 0)) throw new InvalidError("invalid_argument", `${op}: wait ${wait} ms is negative`);
    const ttl = opts.ttl ?? DEFAULT_TTL_MS;
    const scope = this.scope(opts.signal, wait);
    if (opts.lease !== undefined) return this.takeWith(op, opts, opts.lease, false, wait, scope, acq, make);
    leaseConfig(op, ttl, opts);
    if (wait === 0) {
      // One round trip: the server creates the lease in the entry that grants, and nothing
      // when it refuses. Retries carry the request_id acquireAt draws.
      const g = await acq(scope, { ttl, owner: opts.owner });
      // safeUntil counts from the first attempt: the lease may have been created by it (its
      // answer lost) and only returned by a later one.
      const lease = this.startLease(g.leaseId, g.ttlMs, g.first, opts);
      return make(g.token, lease, true);
    }
    const lease = await this.newLeaseIn(ttl, opts, scope);
    try {
      return await this.takeWith(op, opts, lease, true, wait, scope, acq, make);
    } catch (err) {
      await lease.close().catch(() => undefined);
      throw err;
    }
  }

  private async takeWith<H extends Held>(
    op: string,
    opts: HoldOptions,
    lease: Lease,
    own: boolean,
    wait: number,
    scope: Scope,
    acq: (scope: Scope, a: AcquireOptions) => Promise<{ token: number; leaseId: string; ttlMs: number; sent: number }>,
    make: (token: number, lease: Lease, ownLease: boolean) => H,
  ): Promise<H> {
    const waitEnd = now() + wait;
    for (;;) {
      if (lease.lost.aborted) throw new LeaseLostError("lease_lost", `${op}: the lease is lost`, { cause: lease.lost.reason });
      const w = wait > 0 ? Math.min(DEFAULT_WAIT_CHUNK_MS, Math.max(waitEnd - now(), 1)) : 0;
      // The request ends when the lease is lost: the server then drops the wait.
      const rscope = { signal: AbortSignal.any([scope.signal, lease.lost]), deadline: scope.deadline };
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
          this.log("debug", `${op}: re-issuing a wait`);
          continue;
        }
        throw err;
      }
      if (!lease.observe(g.sent)) {
        // Granted, but the lease was declared lost meanwhile: give the grant back.
        const held = make(g.token, lease, false);
        await held.release().catch(() => undefined);
        throw new LeaseLostError("lease_lost", `${op}: the lease was lost as it was granted`, { cause: lease.lost.reason });
      }
      return make(g.token, lease, own);
    }
  }

  // ------------------------------------------------------------------ reads

  private async statusAt<T>(op: string, route: string, name: string, opts: StatusOptions): Promise<T> {
    checkName(op, route.split("/")[2].replace(/s$/, ""), name);
    const wait = opts.wait ?? 0;
    checkWait(op, wait);
    const q = new URLSearchParams();
    if (opts.stale) q.set("stale", "true");
    if (wait > 0) {
      q.set("wait_index", String(opts.waitIndex ?? 0));
      q.set("wait_ms", String(ms(wait)));
    }
    return this.do<T>({ op, method: "GET", path: namePath(route, name), query: q, waitMs: () => wait }, this.scope(opts.signal, wait)).then((r) => r.out);
  }

  /** Reads lock `name`: held, token, owner, mode, holders, waiters, modify_index (linearizable unless stale). */
  status(name: string, opts: StatusOptions = {}): Promise<LockStatus> {
    return this.statusAt<LockStatus>(`status ${JSON.stringify(name)}`, "/v1/locks/", name, opts);
  }

  /** Reads semaphore `name`: limit, permits, waiters. */
  semaphoreStatus(name: string, opts: StatusOptions = {}): Promise<SemaphoreStatus> {
    return this.statusAt<SemaphoreStatus>(`semaphore status ${JSON.stringify(name)}`, "/v1/semaphores/", name, opts);
  }

  /** Reads election `name`: elected, owner, value, token, candidates. */
  electionStatus(name: string, opts: StatusOptions = {}): Promise<ElectionStatus> {
    return this.statusAt<ElectionStatus>(`election status ${JSON.stringify(name)}`, "/v1/elections/", name, opts);
  }

  /**
   * Observes election `name`: yields its current state, then every change of leader or
   * value (blocking reads on modify_index, no polling), until the signal aborts. Failed
   * reads are retried with backoff; a read that cannot succeed (invalid, unauthorized) ends it.
   */
  async *observe(name: string, opts: CallOptions = {}): AsyncGenerator<ElectionStatus> {
    let last = 0;
    let first = true;
    let backoff = this.minBackoffMs;
    const signal = opts.signal ?? new AbortController().signal;
    while (!signal.aborted) {
      let st: ElectionStatus;
      try {
        st = await this.electionStatus(name, first ? { signal } : { signal, waitIndex: last, wait: 60_000 });
      } catch (err) {
        if (err instanceof InvalidError || err instanceof UnauthenticatedError || err instanceof PermissionDeniedError) throw err;
        if (signal.aborted) return;
        await sleep(backoff, signal);
        backoff = Math.min(2 * backoff, this.maxBackoffMs);
        continue;
      }
      backoff = this.minBackoffMs;
      if (!first && st.modify_index <= last) continue; // the wait ended without a change
      first = false;
      last = st.modify_index;
      yield st;
    }
  }

  /** The lock's last events (grants, releases, expiries, revocations), oldest first. */
  async history(name: string, opts: CallOptions & { stale?: boolean } = {}): Promise<History> {
    const op = `history ${JSON.stringify(name)}`;
    checkName(op, "lock", name);
    const q = new URLSearchParams();
    if (opts.stale) q.set("stale", "true");
    return this.do<History>({ op, method: "GET", path: namePath("/v1/history/", name), query: q }, this.scope(opts.signal, 0)).then((r) => r.out);
  }

  /** The cluster as the answering node sees it: leader, term, indexes, nodes. */
  cluster(opts: CallOptions = {}): Promise<Cluster> {
    return this.do<Cluster>({ op: "cluster", method: "GET", path: "/v1/cluster" }, this.scope(opts.signal, 0)).then((r) => r.out);
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
      const page = (await this.do<LockList>({ op: "list locks", method: "GET", path: "/v1/locks", query: q }, this.scope(opts.signal, 0))).out;
      all.push(...(page.locks ?? []));
      if (!page.truncated) return all;
      if (!page.next || page.next <= after) throw new ServerError("internal", "list locks: a truncated page whose next cursor does not move forward");
      after = page.next;
    }
  }
}
