/**
 * Storage-side fencing helpers (docs/FENCING.md). The storage makes the final check,
 * atomically with the write: accept a write with token t on resource r only if t is at least
 * every token already accepted on r; a refused write changes nothing.
 *
 * - {@link fencingHeaders}: the HTTP convention, a `Fencing-Token` header in decimal, for a
 *   storage service that checks tokens itself (the demo ledger, `fencing.HTTPGuard` in Go).
 * - {@link MemoryGuard}: the check for in-process state (Go's fencing.MemoryGuard).
 * - PostgresGuard and SQLiteGuard (sqlfence.ts): SQL databases through `pg` and
 *   `better-sqlite3`, with Go's fencing.SQLGuard table and rule.
 */
import { RaftlockError } from "./errors.js";

/** The request header that carries a fencing token, in decimal. */
export const FENCING_HEADER = "Fencing-Token";

/** The largest token a guard accepts (a SQL BIGINT's maximum, as in Go's fencing.MaxToken). */
export const MAX_TOKEN = Number.MAX_SAFE_INTEGER;

/** code "stale_token": a write with a token below the resource's fence was refused. Nothing changed. */
export class StaleTokenError extends RaftlockError {
  readonly resource: string;
  /** The token offered: a number from MemoryGuard, a bigint from the SQL guards. */
  readonly offered: number | bigint;
  /** The resource's fence: the highest token it accepted. */
  readonly current: number | bigint;

  constructor(resource: string, offered: number | bigint, current: number | bigint) {
    super("stale_token", `fencing: stale token ${offered} for ${JSON.stringify(resource)}: the fence is at ${current}`, { status: 409 });
    this.resource = resource;
    this.offered = offered;
    this.current = current;
  }
}

/** code "invalid_token": 0, negative, fractional or too large. 0 is never issued: it is a forgotten token. */
export class InvalidTokenError extends RaftlockError {}

function checkToken(resource: string, token: number): void {
  if (typeof resource !== "string" || resource === "") throw new InvalidTokenError("invalid_argument", "fencing: the resource is empty");
  if (!Number.isSafeInteger(token) || token < 1 || token > MAX_TOKEN) {
    throw new InvalidTokenError("invalid_token", `fencing: token ${token} is not an integer from 1 to ${MAX_TOKEN}`);
  }
}

/** The headers that carry token to a storage service that checks it. */
export function fencingHeaders(token: number): Record<string, string> {
  checkToken("header", token);
  return { [FENCING_HEADER]: String(token) };
}

/**
 * Fences in-process state: do(resource, token, fn) runs fn only when token is at least the
 * resource's fence, and raises the fence to token once fn succeeded. Calls on one resource
 * run one at a time (fn may be async), so the check and the write are one step.
 */
export class MemoryGuard {
  private readonly fences = new Map<string, number>();
  private readonly queues = new Map<string, Promise<unknown>>();

  /** Runs fn under the fence of resource; rejects with StaleTokenError (fn not run) when token is below it. */
  do<T>(resource: string, token: number, fn?: () => T | Promise<T>): Promise<T | undefined> {
    checkToken(resource, token);
    const prev = this.queues.get(resource) ?? Promise.resolve();
    const run = prev.then(async () => {
      const current = this.fences.get(resource) ?? 0;
      if (token < current) throw new StaleTokenError(resource, token, current);
      const out = fn ? await fn() : undefined;
      this.fences.set(resource, token);
      return out;
    });
    this.queues.set(resource, run.catch(() => undefined));
    return run;
  }

  /** The resource's fence: the highest token accepted, 0 when none. */
  current(resource: string): number {
    return this.fences.get(resource) ?? 0;
  }
}
