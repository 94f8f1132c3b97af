/**
 * The SQL fencing guards against real databases: SQLite through better-sqlite3 (a temporary
 * file), and PostgreSQL through pg when RAFTLOCK_TEST_POSTGRES_DSN names one (scripts/ci-postgres.sh
 * start DIR PORT prints such a DSN); without it the PostgreSQL test skips, saying so, and
 * under CI=true it fails. Tokens are bigints, past 2^53 included.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, InvalidTokenError, PgPool, PostgresGuard, SQLiteDatabase, SQLiteGuard, StaleTokenError } from "../src/index.js";
import { Cluster } from "./cluster.js";

const require = createRequire(import.meta.url);
const Database = require("better-sqlite3") as new (file: string, opts?: { timeout?: number }) => SQLiteDatabase & { close(): void };
const big = 1n << 60n; // past Number.MAX_SAFE_INTEGER

const dir = mkdtempSync(join(tmpdir(), "raftlock-ts-fence-"));
let cluster: Cluster | undefined;

before(async () => {
  cluster = await Cluster.start();
});
after(() => {
  cluster?.close();
  rmSync(dir, { recursive: true, force: true });
});

test("SQLiteGuard: the fence is raised by the write's transaction; a stale token changes nothing", () => {
  const db = new Database(join(dir, "a.db"), { timeout: 10_000 });
  const g = new SQLiteGuard(db);
  g.createTable();
  g.createTable(); // idempotent
  db.exec("CREATE TABLE notes (resource TEXT, body TEXT)");
  const write = (token: bigint | number | string, body: string) =>
    g.do("acct", token, (tx) => {
      tx.prepare("INSERT INTO notes VALUES (?, ?)").run("acct", body);
      return body.length;
    });
  assert.equal(write(5, "five"), 4);
  assert.equal(write(7n, "seven"), 5);
  assert.equal(write("7", "seven again"), 11, "the holder writes many times with its token (<=)");
  assert.throws(() => write(5, "stale"), (e: unknown) => e instanceof StaleTokenError && e.offered === 5n && e.current === 7n);
  assert.equal(g.current("acct"), 7n);
  assert.equal(write(big, "big"), 3, "a token past 2^53 is exact as a bigint");
  assert.throws(() => write(big - 1n, "below big"), StaleTokenError);
  assert.equal(g.current("acct"), big);
  assert.deepEqual(
    (db.prepare("SELECT body FROM notes ORDER BY rowid") as unknown as { all(): { body: string }[] }).all().map((r) => r.body),
    ["five", "seven", "seven again", "big"],
    "refused writes left nothing",
  );
  assert.throws(() => g.do("acct", big + 1n, () => { throw new Error("fn failed"); }), /fn failed/);
  assert.equal(g.current("acct"), big, "fn's error rolled the fence back too");
  for (const bad of [0, -1, 1.5, Number.MAX_SAFE_INTEGER + 2, "x", (1n << 63n)]) {
    assert.throws(() => g.do("acct", bad as bigint, () => undefined), InvalidTokenError, String(bad));
  }
  assert.throws(() => g.do("", 1, () => undefined), InvalidTokenError);
  db.close();
});

test("SQLiteGuard fences a write with a lock's token: the late holder is refused", async () => {
  const c = new Client({ endpoints: cluster!.endpoints() });
  const db = new Database(join(dir, "b.db"), { timeout: 10_000 });
  const g = new SQLiteGuard(db);
  g.createTable();
  try {
    const first = await c.lock("ts/fence/sqlite", { ttl: 2000 });
    await first.release();
    await using second = await c.lock("ts/fence/sqlite", { ttl: 2000 });
    g.do("ts/fence/sqlite", second.token, () => undefined);
    assert.throws(() => g.do("ts/fence/sqlite", first.token, () => undefined), StaleTokenError);
  } finally {
    db.close();
    await c.close();
  }
});

test("PostgresGuard fences a PostgreSQL write (RAFTLOCK_TEST_POSTGRES_DSN)", async (t) => {
  const dsn = process.env.RAFTLOCK_TEST_POSTGRES_DSN;
  if (!dsn) {
    if (process.env.CI === "true") assert.fail("RAFTLOCK_TEST_POSTGRES_DSN is not set, and nothing may skip under CI=true");
    t.skip("RAFTLOCK_TEST_POSTGRES_DSN is not set (scripts/ci-postgres.sh start DIR PORT prints one)");
    return;
  }
  const pg = require("pg") as { Pool: new (o: { connectionString: string; max?: number }) => PgPool & { end(): Promise<void> } };
  const pool = new pg.Pool({ connectionString: dsn, max: 4 });
  const c = new Client({ endpoints: cluster!.endpoints() });
  const table = `ts_fence_${process.pid}`;
  try {
    const g = new PostgresGuard(pool);
    await Promise.all([g.createTable(), g.createTable(), g.createTable()]); // processes starting together
    await pool.query(`CREATE TABLE ${table} (id TEXT PRIMARY KEY, balance BIGINT NOT NULL)`);
    await pool.query(`INSERT INTO ${table} VALUES ('A', 10000)`);
    const resource = `ts/fence/pg/${process.pid}`;
    // A stranger's script: take the lock, charge under its token.
    const charge = async (token: number | bigint, amount: number) =>
      g.do(resource, token, async (tx) => {
        await tx.query(`UPDATE ${table} SET balance = balance - $1 WHERE id = 'A'`, [amount]);
        return (await tx.query(`SELECT balance FROM ${table} WHERE id = 'A'`)).rows[0].balance;
      });
    const first = await c.lock(resource, { ttl: 2000 });
    await first.release();
    {
      await using held = await c.lock(resource, { ttl: 2000 });
      assert.equal(String(await charge(held.token, 2500)), "7500");
      await assert.rejects(charge(first.token, 2500), (e: unknown) => e instanceof StaleTokenError && e.current === BigInt(held.token));
    }
    assert.equal(String((await pool.query(`SELECT balance FROM ${table}`)).rows[0].balance), "7500", "the stale charge changed nothing");
    assert.equal(await charge(big, 1), "7499");
    assert.equal(await g.current(resource), big, "BIGINT read back exactly (pg returns it as a string)");
    await assert.rejects(charge(big - 1n, 1), StaleTokenError);
    // Writers racing on one resource serialize on its fence row: every accepted charge counts.
    const results = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => charge(big + BigInt(i % 3), 1)));
    const ok = results.filter((r) => r.status === "fulfilled").length;
    assert.equal(String((await pool.query(`SELECT balance FROM ${table}`)).rows[0].balance), String(7499 - ok));
  } finally {
    await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
    await pool.end();
    await c.close();
  }
});
