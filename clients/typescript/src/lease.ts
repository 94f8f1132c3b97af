/**
 * Leases kept alive in the background, and the one keepalive loop per client that renews
 * them in batches.
 *
 * The timing contract (the Go client's, client/lease.go): a lease's deadline on the cluster
 * is at least TTL after the server received the last answered renewal, which is after the
 * client sent it. So on this process's monotonic clock (performance.now()) the lease cannot
 * have expired before `sent + TTL`; `safeUntil()` is that minus a drift margin (the rate
 * difference between clocks, and the delay before the holder notices). The `lost` signal
 * aborts as soon as the lease can no longer be assumed alive: when the cluster answers that
 * it is gone, when it is closed, or when `safeUntil()` passes without an answered keepalive
 * (a watchdog timer) — before the cluster can have expired it and granted the lock to
 * somebody else.
 */
import { inspect } from "node:util";
import { LeaseLostError, LeaseNotFoundError, RaftlockError, ServerError, InvalidError } from "./errors.js";

/** The smallest default drift margin, in ms. */
export const MIN_DRIFT_MARGIN_MS = 100;
/** The most lease IDs one batch keepalive may carry (api.MaxKeepAliveBatch). */
export const MAX_KEEPALIVE_BATCH = 10_000;
/** The TTL bounds of the API, in ms. */
export const MIN_TTL_MS = 500;
export const MAX_TTL_MS = 24 * 60 * 60 * 1000;
/** The TTL the server gives a lease when none is asked for. */
export const DEFAULT_TTL_MS = 10_000;
/** The fastest a failing keepalive is retried (client/lease.go keepAliveRetryMin). */
const KEEPALIVE_RETRY_MIN_MS = 10;
/** The longest pause between retry rounds (client.DefaultMaxBackoff). */
export const DEFAULT_MAX_BACKOFF_MS = 1000;

/** The monotonic clock every time of this package is read on. */
export const now = (): number => performance.now();

/** Options of a lease's timing. */
export interface LeaseTimingOptions {
  /** How much earlier than send time + TTL the client stops trusting the lease (default max(TTL/10, 100 ms)). */
  driftMarginMs?: number;
  /** The pause between keepalives (default TTL/3, each shortened by up to a tenth at random). */
  keepaliveIntervalMs?: number;
}

/** A lease's checked timing. */
export interface LeaseConfig {
  driftMs: number;
  intervalMs: number;
}

/** Refuses a duration that is not a number (a string "10000", null): durations are ms as numbers. */
export function checkDuration(op: string, what: string, v: unknown): void {
  if (typeof v !== "number") {
    throw new InvalidError("invalid_argument", `${op}: ${what} ${JSON.stringify(v)} is ${v === null ? "null" : `a ${typeof v}`}; durations are milliseconds as a number, such as 10000`);
  }
}

/** Checks ttlMs and the timing options the way the Go client does (newLeaseConfig). */
export function leaseConfig(op: string, ttlMs: number, opts: LeaseTimingOptions): LeaseConfig {
  checkDuration(op, "ttl", ttlMs);
  const cfg = {
    driftMs: opts.driftMarginMs ?? Math.max(ttlMs / 10, MIN_DRIFT_MARGIN_MS),
    intervalMs: opts.keepaliveIntervalMs ?? ttlMs / 3,
  };
  if (!Number.isFinite(ttlMs) || ttlMs < MIN_TTL_MS || ttlMs > MAX_TTL_MS) {
    throw new InvalidError("invalid_ttl", `${op}: TTL ${ttlMs} ms is outside ${MIN_TTL_MS} ms to ${MAX_TTL_MS} ms`);
  }
  if (!(cfg.driftMs > 0 && cfg.driftMs < ttlMs)) {
    throw new InvalidError("invalid_argument", `${op}: drift margin ${cfg.driftMs} ms must be positive and shorter than the TTL ${ttlMs} ms`);
  }
  if (!(cfg.intervalMs > 0 && cfg.intervalMs < ttlMs - cfg.driftMs)) {
    throw new InvalidError(
      "invalid_argument",
      `${op}: keepalive interval ${cfg.intervalMs} ms must be positive and shorter than TTL - drift margin (${ttlMs - cfg.driftMs} ms)`,
    );
  }
  return cfg;
}

/** d shortened by up to a tenth at random, so that many clients do not renew in lockstep. */
export function jittered(d: number): number {
  return d - Math.random() * (d / 10);
}

/** A secret shortened for messages: its first six characters. */
export function redactID(id: string): string {
  return id.length <= 6 ? "…" : id.slice(0, 6) + "…";
}

/** The answer of a batch keepalive. */
export interface KeepAliveBatch {
  leases: { lease_id: string; ttl_ms: number }[];
  not_found: string[] | null;
}

/** @internal What a keepalive loop needs from its client. */
export interface LeaseHost {
  /** The per-attempt timeout of the client, ms. */
  readonly timeoutMs: number;
  /** Sends one batch keepalive, retried until deadline (monotonic ms). */
  keepAliveBatch(
    ids: string[],
    deadline: number,
    attemptTimeoutMs: number,
    maxBackoffMs: number,
  ): Promise<{ ok: true; out: KeepAliveBatch; sent: number } | { ok: false; err: RaftlockError; sent: number }>;
  /** Sends one single keepalive (servers older than batch keepalives). */
  keepAliveOne(
    id: string,
    deadline: number,
    signal: AbortSignal,
    attemptTimeoutMs: number,
    maxBackoffMs: number,
  ): Promise<{ ok: true; sent: number } | { ok: false; err: RaftlockError; sent: number }>;
  /** Revokes a lease. */
  revokeLease(id: string): Promise<void>;
  /** Logs a line (level "debug" or "warn"); never given a secret. */
  log(level: "debug" | "warn", msg: string): void;
  /** The client's keepalive loop. */
  readonly keepaliver: Keepaliver;
}

/** The reason of a lost signal after close(): a LeaseLostError whose code is "lease_closed". */
export class LeaseClosedError extends LeaseLostError {}

/**
 * A lease kept alive in the background until close() or until it is lost. `lost` aborts
 * (with a LeaseLostError as its reason) as soon as the lease can no longer be assumed alive.
 */
export class Lease {
  /** The lease ID: the secret that authorizes keepalive, release and revoke. Keep it out of logs. */
  readonly id: string;
  /** The lease's TTL as the server granted it, ms. */
  readonly ttlMs: number;
  /** The margin between safeUntil() and send time + TTL, ms. */
  readonly driftMarginMs: number;
  /** The pause between keepalives, ms. */
  readonly keepaliveIntervalMs: number;

  private readonly host: LeaseHost;
  private readonly ctl = new AbortController();
  private safe: number;
  private watchdog: ReturnType<typeof setTimeout> | undefined;
  private closing: Promise<void> | undefined;

  /** @internal Use Client.newLease, or a lock/semaphore/campaign call, to get a lease. */
  constructor(host: LeaseHost, id: string, ttlMs: number, sent: number, cfg: LeaseConfig) {
    this.host = host;
    this.id = id;
    this.ttlMs = ttlMs;
    this.driftMarginMs = cfg.driftMs;
    this.keepaliveIntervalMs = cfg.intervalMs;
    this.safe = sent + ttlMs - cfg.driftMs;
    this.arm();
    host.keepaliver.add(this, sent + jittered(cfg.intervalMs));
  }

  /** What util.inspect and console.log show: never the ID, which is a secret. */
  [inspect.custom](): string {
    return `Lease { ttlMs: ${this.ttlMs}, lost: ${this.ctl.signal.aborted} }`;
  }

  /** What JSON.stringify writes: never the ID. */
  toJSON(): { ttlMs: number; lost: boolean } {
    return { ttlMs: this.ttlMs, lost: this.ctl.signal.aborted };
  }

  /**
   * Aborts when the lease is lost or closed; its reason (a LeaseLostError) says why. Reading
   * it also compares safeUntil() with the clock, so after a pause of the whole process (which
   * delays the watchdog timer too) it reads as aborted at once, never "not lost" past the
   * safe time.
   */
  get lost(): AbortSignal {
    if (!this.ctl.signal.aborted && now() >= this.safe) this.lose(this.expired());
    return this.ctl.signal;
  }

  /**
   * The latest moment, on the performance.now() clock, at which the holder may still assume
   * the lease is alive: the send time of the last answered keepalive (or create, or acquire)
   * plus TTL minus the drift margin. It only moves forward while the lease is live; once the
   * lease is lost it is at most the moment of the loss. Compare it with performance.now(),
   * never with Date.now().
   */
  safeUntil(): number {
    return this.safe;
  }

  /**
   * @internal
   * Records that a request sent at `sent` renewed the lease. It reports false (and the lease
   * is lost) when the answer came after safeUntil(): a late answer does not revive a lease
   * whose holder may already have been told it is lost.
   */
  observe(sent: number): boolean {
    if (this.ctl.signal.aborted) return false;
    if (now() >= this.safe) {
      this.lose(this.expired());
      return false;
    }
    const su = sent + this.ttlMs - this.driftMarginMs;
    if (su > this.safe) {
      this.safe = su;
      this.arm();
    }
    return true;
  }

  /** @internal Declares the lease lost with err as the signal's reason (the first call wins). */
  lose(err: LeaseLostError): void {
    if (this.ctl.signal.aborted) return;
    const t = now();
    if (this.safe > t) this.safe = t;
    if (this.watchdog !== undefined) clearTimeout(this.watchdog);
    this.watchdog = undefined;
    this.host.keepaliver.remove(this);
    this.ctl.abort(err);
  }

  /** `await using lease = await client.newLease()`: close() at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /**
   * Stops the keepalives and revokes the lease, which frees everything it holds at once
   * (each grant to its next waiter). A lease the cluster no longer knows counts as revoked;
   * when the revoke fails, the lease expires a TTL after its last keepalive. Idempotent.
   */
  close(): Promise<void> {
    if (this.closing === undefined) {
      this.lose(new LeaseClosedError("lease_closed", `lease ${redactID(this.id)} was closed by its owner`));
      this.closing = this.host.revokeLease(this.id);
    }
    return this.closing;
  }

  private expired(): LeaseLostError {
    return new LeaseLostError("lease_lost", `lease ${redactID(this.id)}: its safe time passed without an answered keepalive`);
  }

  /** (Re)sets the watchdog to fire at safeUntil(). */
  private arm(): void {
    if (this.watchdog !== undefined) clearTimeout(this.watchdog);
    this.watchdog = setTimeout(() => this.check(), Math.max(0, this.safe - now()));
  }

  private check(): void {
    this.watchdog = undefined;
    if (this.ctl.signal.aborted) return;
    if (this.safe > now()) {
      this.arm(); // renewed meanwhile
      return;
    }
    this.host.log("warn", `lease ${redactID(this.id)} lost: no keepalive answered in time`);
    this.lose(this.expired());
  }

  /** @internal The attempt timeout and retry pause of this lease's keepalives (client/keepalive.go timing). */
  timing(): { attemptTimeoutMs: number; retryMs: number } {
    return {
      attemptTimeoutMs: Math.min(this.host.timeoutMs, Math.max(this.keepaliveIntervalMs / 2, 250)),
      retryMs: Math.max(Math.min(this.keepaliveIntervalMs / 4, DEFAULT_MAX_BACKOFF_MS), KEEPALIVE_RETRY_MIN_MS),
    };
  }
}

interface KaState {
  due: number;
  inflight: boolean;
}

/**
 * @internal
 * Renews all the leases of one client with as few requests as it can: one timer wakes when
 * the earliest lease is due, and one batch keepalive (POST /v1/leases/keepalive with
 * lease_ids) renews every lease due within half its interval from then. Renewing early only
 * moves safeUntil forward, and the leases a batch renewed fall due together again, so a
 * client with many leases sends about one request per interval, not one per lease.
 */
export class Keepaliver {
  private readonly host: () => LeaseHost;
  private readonly leaseStates = new Map<Lease, KaState>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private single = false;
  /** Batches sent so far (for tests and metrics). */
  batchesSent = 0;

  constructor(host: () => LeaseHost) {
    this.host = host;
  }

  /** The leases being kept alive. */
  leases(): Lease[] {
    return [...this.leaseStates.keys()];
  }

  /** The number of leases being kept alive. */
  get size(): number {
    return this.leaseStates.size;
  }

  add(l: Lease, due: number): void {
    this.leaseStates.set(l, { due, inflight: false });
    this.plan();
  }

  remove(l: Lease): void {
    if (this.leaseStates.delete(l)) this.plan();
  }

  private reschedule(l: Lease, due: number): void {
    const st = this.leaseStates.get(l);
    if (st === undefined) return;
    st.due = due;
    st.inflight = false;
    this.plan();
  }

  /** Sets the timer for the earliest lease that is not in flight. */
  private plan(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    let earliest = Infinity;
    for (const st of this.leaseStates.values()) if (!st.inflight && st.due < earliest) earliest = st.due;
    if (earliest === Infinity) return; // nothing held, or everything in flight: a settled request re-plans
    this.timer = setTimeout(() => this.fire(), Math.max(0, earliest - now()));
  }

  private fire(): void {
    this.timer = undefined;
    const t = now();
    const batch: Lease[] = [];
    for (const [l, st] of this.leaseStates) {
      if (!st.inflight && st.due <= t + l.keepaliveIntervalMs / 2) {
        st.inflight = true;
        batch.push(l);
      }
    }
    for (let i = 0; i < batch.length; i += MAX_KEEPALIVE_BATCH) {
      const part = batch.slice(i, i + MAX_KEEPALIVE_BATCH);
      if (this.single) for (const l of part) this.sendOne(l).catch((err: unknown) => this.failed(part, err));
      else this.sendBatch(part).catch((err: unknown) => this.failed(part, err));
    }
    this.plan();
  }

  /** A send that threw (a bug, not a failed request): log it and retry those leases later. */
  private failed(batch: Lease[], err: unknown): void {
    this.host().log("warn", `keepalive: ${(err as Error)?.message ?? err}`);
    for (const l of batch) if (!l.lost.aborted) this.reschedule(l, now() + jittered(l.timing().retryMs));
  }

  private async sendBatch(batch: Lease[]): Promise<void> {
    const host = this.host();
    let deadline = 0;
    let attemptTimeoutMs = host.timeoutMs;
    let retryMs = DEFAULT_MAX_BACKOFF_MS;
    const byID = new Map<string, Lease[]>();
    for (const l of batch) {
      if (l.lost.aborted) {
        this.remove(l);
        continue;
      }
      deadline = Math.max(deadline, l.safeUntil());
      const tm = l.timing();
      attemptTimeoutMs = Math.min(attemptTimeoutMs, tm.attemptTimeoutMs);
      retryMs = Math.min(retryMs, tm.retryMs);
      const ls = byID.get(l.id);
      if (ls === undefined) byID.set(l.id, [l]);
      else ls.push(l);
    }
    if (byID.size === 0) return;
    this.batchesSent++;
    const r = await host.keepAliveBatch([...byID.keys()], deadline, attemptTimeoutMs, retryMs);
    if (!r.ok && (r.err.code === "invalid_json" || r.err.code === "not_found")) {
      // A server older than batch keepalives refused lease_ids (or lacks the route); nothing
      // was applied. Renew one lease per request from now on.
      host.log("debug", "the server does not take batch keepalives; renewing each lease on its own");
      this.single = true;
      for (const ls of byID.values()) for (const l of ls) this.sendOne(l).catch((err: unknown) => this.failed([l], err));
      return;
    }
    if (!r.ok) {
      for (const ls of byID.values()) for (const l of ls) this.settle(l, r.sent, r.err);
      return;
    }
    for (const ans of r.out.leases ?? []) {
      for (const l of byID.get(ans.lease_id) ?? []) this.settle(l, r.sent, undefined);
      byID.delete(ans.lease_id);
    }
    for (const id of r.out.not_found ?? []) {
      for (const l of byID.get(id) ?? []) {
        this.settle(l, r.sent, new LeaseNotFoundError("lease_not_found", `lease ${redactID(id)} not found`));
      }
      byID.delete(id);
    }
    for (const ls of byID.values()) {
      for (const l of ls) {
        this.settle(l, r.sent, new ServerError("internal", `batch keepalive: the answer does not mention lease ${redactID(l.id)}`));
      }
    }
  }

  private async sendOne(l: Lease): Promise<void> {
    const tm = l.timing();
    const r = await this.host().keepAliveOne(l.id, l.safeUntil(), l.lost, tm.attemptTimeoutMs, tm.retryMs);
    this.settle(l, r.sent, r.ok ? undefined : r.err);
  }

  /** Applies the outcome of a keepalive sent at `sent` to l and schedules its next one. */
  private settle(l: Lease, sent: number, err: RaftlockError | undefined): void {
    if (err === undefined) {
      if (!l.observe(sent)) {
        this.remove(l);
        return;
      }
      this.reschedule(l, sent + jittered(l.keepaliveIntervalMs));
    } else if (err instanceof LeaseNotFoundError) {
      this.host().log("warn", `lease ${redactID(l.id)} lost: the cluster no longer knows it`);
      l.lose(new LeaseLostError("lease_lost", `lease ${redactID(l.id)}: the cluster no longer knows it (it expired or was revoked)`, { cause: err }));
    } else if (l.lost.aborted) {
      this.remove(l);
    } else {
      this.host().log("debug", `keepalive of lease ${redactID(l.id)} failed; retrying: ${err.message}`);
      this.reschedule(l, now() + jittered(l.timing().retryMs));
    }
  }
}
