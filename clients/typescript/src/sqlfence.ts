/**
 * Fencing SQL writes (docs/FENCING.md), with the guard table and rule of the Go fencing
 * package (fencing/sql.go): one row per resource in `fences`, holding the highest token
 * accepted; a write with token t on resource r runs in one transaction whose first statement
 * raises the fence (`UPDATE fences SET token = t WHERE resource = r AND token <= t`, creating
 * the row the first time), and a refusal (the fence is above t) rolls everything back. `<=`,
 * not `<`: the current holder may write many times with its token.
 *
 * - {@link PostgresGuard}: PostgreSQL through `pg` (a Pool), at READ COMMITTED.
 * - {@link SQLiteGuard}: SQLite through `better-sqlite3` (synchronous), in BEGIN IMMEDIATE.
 *
 * Both drivers are optional peer dependencies: install the one you use. The guards take the
 * driver's objects by their shape (no import of either package here). Tokens are `bigint`
 * (a lock's `token` number, a decimal string as `pg` returns a BIGINT, or a bigint are all
 * accepted): a SQL BIGINT goes past 2^53.
 */
import { InvalidTokenError, StaleTokenError } from "./fencing.js";

/** The fence table, the same as Go's fencing.CreateTableSQL. Rows must never be deleted or lowered. */
export const FENCES_TABLE_SQL = `CREATE TABLE IF NOT EXISTS fences (
	resource TEXT NOT NULL PRIMARY KEY,
	token    BIGINT NOT NULL
)`;

/** The largest token a SQL guard accepts: a BIGINT's maximum (Go's fencing.MaxToken). */
export const MAX_SQL_TOKEN = (1n << 63n) - 1n;

/** The PostgreSQL advisory lock createTable holds, so that processes starting together do not race (Go's createLockKey: "raftfenc"). */
const createLockKey = "8246495095245631075"; // 0x7261667466656e63

const raiseSQL = "UPDATE fences SET token = ? WHERE resource = ? AND token <= ?";
const insertSQL = "INSERT INTO fences (resource, token) VALUES (?, ?) ON CONFLICT (resource) DO NOTHING";
const currentSQL = "SELECT token FROM fences WHERE resource = ?";
/** Retries when a fence row disappears between statements (someone deleted rows of fences). */
const maxRaiseAttempts = 3;

/** A token as a bigint in 1..MAX_SQL_TOKEN, or InvalidTokenError. */
export function sqlToken(resource: string, token: bigint | number | string): bigint {
  if (typeof resource !== "string" || resource === "") throw new InvalidTokenError("invalid_argument", "fencing: the resource is empty");
  let t: bigint;
  try {
    if (typeof token === "number" && !Number.isSafeInteger(token)) throw new RangeError("not a safe integer");
    if (typeof token === "string" && !/^\d+$/.test(token)) throw new RangeError("not a decimal integer");
    t = BigInt(token);
  } catch {
    throw new InvalidTokenError("invalid_token", `fencing: token ${String(token)} is not an integer from 1 to ${MAX_SQL_TOKEN}`);
  }
  if (t < 1n || t > MAX_SQL_TOKEN) throw new InvalidTokenError("invalid_token", `fencing: token ${t} is not an integer from 1 to ${MAX_SQL_TOKEN}`);
  return t;
}

/** '?' placeholders as $1, $2... (Go's Dialect.Rebind for PostgreSQL). */
function rebind(q: string): string {
  let n = 0;
  return q.replace(/\?/g, () => `$${++n}`);
}

// ---------------------------------------------------------------------- PostgreSQL (pg)

/** What the guard uses of a pg Client (or a pooled client): query. */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<{ rowCount: number | null; rows: Record<string, unknown>[] }>;
}

/** What the guard uses of a pg Pool: connect, for a client of its own per transaction. */
export interface PgPool extends PgQueryable {
  connect(): Promise<PgQueryable & { release(err?: Error | boolean): void }>;
}

/** Raises the fence of resource to token as the first statement of tx (a transaction at READ COMMITTED); StaleTokenError when it is above. */
export async function raiseFencePg(tx: PgQueryable, resource: string, token: bigint | number | string): Promise<void> {
  const t = sqlToken(resource, token);
  const ts = t.toString(); // sent as text: PostgreSQL reads it as the BIGINT column's type
  const one = async (q: string, args: unknown[]) => ((await tx.query(rebind(q), args)).rowCount ?? 0) > 0;
  for (let i = 0; i < maxRaiseAttempts; i++) {
    if (await one(raiseSQL, [ts, resource, ts])) return; // the common case: the fence exists and is at or below t
    // The fence is above t, or does not exist (or exists only in a transaction not yet
    // committed: the INSERT waits for it).
    if (await one(insertSQL, [resource, ts])) return;
    if (await one(raiseSQL, [ts, resource, ts])) return; // created meanwhile: try again against the committed row
    const r = await tx.query(rebind(currentSQL), [resource]);
    if (r.rows.length === 0) continue; // deleted under us: start over
    throw new StaleTokenError(resource, t, BigInt(String(r.rows[0].token)));
  }
  throw new Error(`fencing: the fence row of ${JSON.stringify(resource)} keeps disappearing: rows of the fences table must never be deleted`);
}

/**
 * Runs writes to PostgreSQL under a fence: do(resource, token, fn) is one transaction (READ
 * COMMITTED) on a client of the pool whose first statement raises the resource's fence to
 * token; fn then runs its statements on that client; a refusal (StaleTokenError, fn not run)
 * or fn's error rolls everything back, the fence included.
 */
export class PostgresGuard {
  readonly #pool: PgPool;

  constructor(pool: PgPool) {
    this.#pool = pool;
  }

  /** Creates the fences table if it does not exist; safe to run from several processes at once. */
  async createTable(): Promise<void> {
    const c = await this.#pool.connect();
    try {
      await c.query("BEGIN");
      await c.query("SELECT pg_advisory_xact_lock($1)", [createLockKey]);
      await c.query(FENCES_TABLE_SQL);
      await c.query("COMMIT");
    } catch (err) {
      await c.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  }

  /** Runs fn in one transaction under the fence of resource; rejects with StaleTokenError (nothing applied) when token is below it. */
  async do<T>(resource: string, token: bigint | number | string, fn?: (tx: PgQueryable) => Promise<T>): Promise<T | undefined> {
    sqlToken(resource, token);
    const c = await this.#pool.connect();
    let broken: Error | undefined;
    try {
      await c.query("BEGIN ISOLATION LEVEL READ COMMITTED");
      try {
        await raiseFencePg(c, resource, token);
        const out = fn ? await fn(c) : undefined;
        await c.query("COMMIT");
        return out;
      } catch (err) {
        await c.query("ROLLBACK").catch((rerr: Error) => (broken = rerr));
        throw err;
      }
    } finally {
      c.release(broken);
    }
  }

  /** The highest token resource has accepted, 0n when it was never fenced. */
  async current(resource: string): Promise<bigint> {
    const r = await this.#pool.query(rebind(currentSQL), [resource]);
    return r.rows.length === 0 ? 0n : BigInt(String(r.rows[0].token));
  }
}

// ---------------------------------------------------------------------- SQLite (better-sqlite3)

/** What the guard uses of a better-sqlite3 statement. */
export interface SQLiteStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  safeIntegers(on?: boolean): SQLiteStatement;
}

/** What the guard uses of a better-sqlite3 Database. */
export interface SQLiteDatabase {
  prepare(sql: string): SQLiteStatement;
  exec(sql: string): unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  transaction<F extends (...args: any[]) => any>(fn: F): F & { immediate: F };
}

/** Raises the fence of resource to token inside the caller's transaction (BEGIN IMMEDIATE); StaleTokenError when it is above. */
export function raiseFenceSQLite(db: SQLiteDatabase, resource: string, token: bigint | number | string): void {
  const t = sqlToken(resource, token);
  const raise = db.prepare(raiseSQL);
  for (let i = 0; i < maxRaiseAttempts; i++) {
    if (raise.run(t, resource, t).changes > 0) return;
    if (db.prepare(insertSQL).run(resource, t).changes > 0) return;
    if (raise.run(t, resource, t).changes > 0) return;
    const row = db.prepare(currentSQL).safeIntegers(true).get(resource) as { token: bigint } | undefined;
    if (row === undefined) continue;
    throw new StaleTokenError(resource, t, BigInt(row.token));
  }
  throw new Error(`fencing: the fence row of ${JSON.stringify(resource)} keeps disappearing: rows of the fences table must never be deleted`);
}

/**
 * Runs writes to SQLite under a fence (better-sqlite3, synchronous): do(resource, token, fn)
 * is one BEGIN IMMEDIATE transaction (the write lock taken at once) whose first statement
 * raises the fence; fn runs its statements on the same Database; a refusal (StaleTokenError,
 * fn not run) or fn's exception rolls everything back. Open the database with a busy timeout
 * (`new Database(file, { timeout: 10000 })`) so that writers of other processes wait for the
 * lock instead of failing.
 */
export class SQLiteGuard {
  readonly #db: SQLiteDatabase;

  constructor(db: SQLiteDatabase) {
    this.#db = db;
  }

  /** Creates the fences table if it does not exist. */
  createTable(): void {
    this.#db.exec(FENCES_TABLE_SQL);
  }

  /** Runs fn in one transaction under the fence of resource; throws StaleTokenError (nothing applied) when token is below it. */
  do<T>(resource: string, token: bigint | number | string, fn?: (db: SQLiteDatabase) => T): T | undefined {
    sqlToken(resource, token);
    const db = this.#db;
    return db.transaction(() => {
      raiseFenceSQLite(db, resource, token);
      return fn ? fn(db) : undefined;
    }).immediate();
  }

  /** The highest token resource has accepted, 0n when it was never fenced. */
  current(resource: string): bigint {
    const row = this.#db.prepare(currentSQL).safeIntegers(true).get(resource) as { token: bigint } | undefined;
    return row === undefined ? 0n : BigInt(row.token);
  }
}
