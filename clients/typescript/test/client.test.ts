/**
 * Unit tests of the client against a real three-node cluster of `raftlock serve` processes
 * (test/cluster.ts). One cluster for the file; tests that stop or kill nodes restore it.
 */
import { test, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  Client,
  ElectionHeldError,
  Held,
  InvalidError,
  LeaseLostError,
  LimitConflictError,
  LockHeldError,
  ModeConflictError,
  NotHolderError,
  SemaphoreFullError,
  UnavailableError,
  UnreachableError,
  AbortedError,
  WaitTimeoutError,
  parseRetryAfter,
  MemoryGuard,
  StaleTokenError,
  TooManyRequestsError,
} from "../src/index.js";
import { Cluster, waitFor } from "./cluster.js";
import { FaultProxies } from "./proxy.js";

let cluster: Cluster;
const clients: Client[] = [];
const proxies: FaultProxies[] = [];

function newClient(endpoints = cluster.endpoints(), extra: Partial<ConstructorParameters<typeof Client>[0]> = {}): Client {
  const c = new Client({ endpoints, timeoutMs: 1000, ...extra });
  clients.push(c);
  return c;
}

/** Fault proxies in front of every node (closed after the test) and a client that calls through them. */
async function proxied(): Promise<{ p: FaultProxies; a: Client }> {
  const p = await FaultProxies.start(cluster.endpoints());
  proxies.push(p);
  return { p, a: newClient(p.endpoints) };
}

before(async () => {
  cluster = await Cluster.start();
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  for (const p of proxies.splice(0)) await p.close();
  await cluster.restore();
});

after(() => cluster?.close());

let seq = 0;
const uniq = (what: string) => `ts/${what}/${process.pid}-${++seq}`;

test("package.json has no runtime dependencies, only optional peers the library never imports, and no install script", () => {
  const here = dirname(fileURLToPath(import.meta.url));
  const root = resolve(here, "..", "..");
  const pkg = JSON.parse(readFileSync(resolve(root, "package.json"), "utf8")) as Record<string, unknown>;
  for (const field of ["dependencies", "optionalDependencies", "bundledDependencies"]) {
    const v = pkg[field] as Record<string, unknown> | undefined;
    assert.ok(v === undefined || Object.keys(v).length === 0, `package.json has ${field}: ${JSON.stringify(v)}`);
  }
  const peers = (pkg.peerDependencies ?? {}) as Record<string, string>;
  const meta = (pkg.peerDependenciesMeta ?? {}) as Record<string, { optional?: boolean }>;
  assert.deepEqual(Object.keys(peers).sort(), ["better-sqlite3", "pg"]);
  for (const p of Object.keys(peers)) assert.equal(meta[p]?.optional, true, `peer ${p} is not optional`);
  // The SQL guards take the drivers' objects by their shape: nothing of dist loads them.
  for (const dir of ["dist", "dist/cjs"]) {
    for (const f of readdirSync(resolve(root, dir)).filter((x) => x.endsWith(".js") || x.endsWith(".d.ts"))) {
      const text = readFileSync(resolve(root, dir, f), "utf8");
      assert.ok(!/(require\(|from |import\()\s*["'](pg|better-sqlite3)["']/.test(text), `${dir}/${f} loads a peer dependency`);
    }
  }
  const scripts = (pkg.scripts ?? {}) as Record<string, string>;
  for (const s of ["preinstall", "install", "postinstall", "prepare"]) assert.equal(scripts[s], undefined, `package.json has a ${s} script, which npm runs (or warns about) at install`);
  const dev = pkg.devDependencies as Record<string, string>;
  for (const [name, version] of Object.entries(dev)) assert.match(version, /^\d+\.\d+\.\d+$/, `${name} is not pinned: ${version}`);
});

test("the public type declarations hold no internals", () => {
  const dist = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "dist");
  const all = readdirSync(dist).filter((f) => f.endsWith(".d.ts")).map((f) => [f, readFileSync(resolve(dist, f), "utf8")] as const);
  for (const [f, text] of all) {
    assert.ok(!text.includes("@internal"), `${f} declares something @internal`);
    for (const name of ["acquireAt", "releaseAt", "keepAliveBatch", "keepAliveOne", "campaignRequest", "revokeLease", "tryDo", "LeaseHost", "HoldHost", "class Transport", "class Keepaliver", "class Agents", "scope("]) {
      assert.ok(!text.includes(name), `${f} shows the internal ${name}`);
    }
  }
  const client = all.find(([f]) => f === "client.d.ts")![1];
  assert.ok(!/constructor\(host/.test(client), "a hold's constructor (made by the client) is in the public types");
});

test("lock, conflict, wait and handover with a higher token", async () => {
  const a = newClient();
  const b = newClient();
  const name = uniq("handover");
  const h1 = await a.lock(name, { ttl: 3000, owner: "a" });
  assert.ok(h1.token > 0);
  assert.equal(h1.lost.aborted, false);
  assert.ok(h1.safeUntil() > performance.now());
  await assert.rejects(b.lock(name, { ttl: 3000 }), LockHeldError);
  const waiting = b.lock(name, { ttl: 3000, wait: 10_000, owner: "b" });
  await waitFor(async () => (await a.status(name)).waiters === 1, 5000, () => "b never queued");
  await h1.release();
  assert.equal(h1.lost.aborted, true, "a released hold is no longer held");
  const h2 = await waiting;
  assert.ok(h2.token > h1.token, `handover token ${h2.token} not above ${h1.token}`);
  const st = await a.status(name);
  assert.equal(st.held, true);
  assert.equal(st.token, h2.token);
  assert.equal(st.owner, "b");
  await h2.release();
  assert.equal((await a.status(name)).held, false);
});

test("a wait that ends without a grant is WaitTimeoutError and leaves the queue", async () => {
  const a = newClient();
  const name = uniq("waittimeout");
  const h = await a.lock(name, { ttl: 3000 });
  const t0 = performance.now();
  await assert.rejects(a.lock(name, { ttl: 3000, wait: 600 }), WaitTimeoutError);
  assert.ok(performance.now() - t0 >= 550, "the wait ended early");
  assert.equal((await a.status(name)).waiters, 0);
  await h.release();
});

test("withLock releases after the function, and after its error", async () => {
  const a = newClient();
  const name = uniq("withlock");
  const token = await a.withLock(name, async (held) => {
    assert.equal((await a.status(name)).token, held.token);
    return held.token;
  });
  assert.ok(token > 0);
  assert.equal((await a.status(name)).held, false);
  await assert.rejects(a.withLock(name, async () => { throw new Error("boom"); }), /boom/);
  assert.equal((await a.status(name)).held, false);
});

test("keepalives hold a lease for several TTLs, with one batch per interval for all of a client's leases", async () => {
  const { p, a } = await proxied();
  const names = Array.from({ length: 10 }, () => uniq("batch"));
  // TTL 3 s: a keepalive attempt may take min(timeout, max(TTL/6, 250 ms)) = 500 ms (the Go
  // client's rule) before the next endpoint is tried; with TTL 1.5 s (250 ms) a loaded 2-core
  // machine lost a lease once (commits slower than 250 ms for a whole interval).
  const held = await Promise.all(names.map((n) => a.lock(n, { ttl: 3000 })));
  const before = p.count("POST", "/v1/leases/keepalive").requests;
  await new Promise((r) => setTimeout(r, 7000)); // more than two TTLs must pass: what is checked is survival
  for (const h of held) assert.equal(h.lost.aborted, false, `a kept-alive lease was lost: ${held.find((x) => x.lost.aborted)?.lost.reason}`);
  for (const n of names) assert.equal((await a.status(n)).held, true);
  const sent = p.count("POST", "/v1/leases/keepalive").requests - before;
  // 7 s at TTL/3 = 1 s: about 7 rounds; one request per lease would be about 70.
  assert.ok(sent >= 3 && sent <= 20, `keepalive requests in 7 s for 10 leases: ${sent}`);
  await Promise.all(held.map((h) => h.release()));
});

test("the loss signal fires before the lease can have expired when every node is stopped", async () => {
  const a = newClient();
  const name = uniq("lost");
  const h = await a.lock(name, { ttl: 1500 });
  const lostAt = new Promise<number>((r) => h.lost.addEventListener("abort", () => r(performance.now()), { once: true }));
  cluster.stopAll();
  const stoppedAt = performance.now();
  const su = h.safeUntil(); // no keepalive is answered from here on
  const drift = h.lease.driftMarginMs;
  const t = await Promise.race([lostAt, new Promise<number>((r) => setTimeout(() => r(-1), 3000))]);
  assert.notEqual(t, -1, "the loss signal did not fire within 3 s of stopping every node (TTL 1.5 s)");
  assert.ok(h.lost.reason instanceof LeaseLostError, `reason: ${h.lost.reason}`);
  // su + drift = send time of the last answered renewal + TTL: the earliest the cluster
  // could expire the lease. The signal must come before it.
  assert.ok(t < su + drift, `lost at +${(t - stoppedAt).toFixed(0)} ms, not before the earliest expiry at +${(su + drift - stoppedAt).toFixed(0)} ms`);
  assert.ok(h.safeUntil() <= t + 1);
  cluster.contAll();
  await cluster.waitLeader();
  await h.release().catch(() => undefined);
});

test("an acquire answered unknown_outcome is retried with the same request_id and takes one grant", async () => {
  const { p, a } = await proxied();
  const name = uniq("reqid");
  p.arm({ kind: "unknown_outcome", method: "PUT", pathPrefix: "/v1/locks/", count: 1 });
  const h = await a.lock(name, { ttl: 3000 });
  const log = p.count("PUT", "/v1/locks/" + name);
  assert.equal(log.requests, 2, "the acquire was not retried");
  assert.equal(log.distinct_request_ids, 1, "the retry carried another request_id");
  assert.equal(log.without_request_id, 0);
  const st = await a.status(name);
  assert.equal(st.token, h.token, "the retry got another grant than the one the cluster holds");
  assert.equal(st.holder_count, 1);
  const hist = await a.history(name);
  assert.equal(hist.events.filter((e) => e.kind === "granted").length, 1, JSON.stringify(hist.events));
  await h.release();
  assert.equal((await a.status(name)).held, false);
});

test("a dropped connection on release is retried; the release succeeds once", async () => {
  const { p, a } = await proxied();
  const name = uniq("droprelease");
  const h = await a.lock(name, { ttl: 3000 });
  p.arm({ kind: "drop", method: "DELETE", pathPrefix: "/v1/locks/", count: 1 });
  await h.release();
  assert.equal(p.count("DELETE", "/v1/locks/" + name).requests, 2);
  assert.equal((await a.status(name)).held, false);
});

test("too_many_requests is retried after its Retry-After, or refused at once when the deadline is sooner", async () => {
  const { p, a } = await proxied();
  const name = uniq("throttled");
  p.arm({ kind: "too_many_requests", method: "PUT", pathPrefix: "/v1/locks/", count: 1, retryAfter: 1 });
  const t0 = performance.now();
  const h = await a.lock(name, { ttl: 3000 });
  const took = performance.now() - t0;
  assert.ok(took >= 950, `retried after ${took.toFixed(0)} ms, before the Retry-After of 1 s`);
  assert.equal(p.count("PUT", "/v1/locks/" + name).requests, 2);
  await h.release();
  const short = newClient(p.endpoints, { deadlineMs: 400 });
  p.arm({ kind: "too_many_requests", method: "PUT", pathPrefix: "/v1/locks/", count: 1, retryAfter: 2 });
  const t1 = performance.now();
  await assert.rejects(short.lock(uniq("throttled2"), { ttl: 3000 }), TooManyRequestsError);
  assert.ok(performance.now() - t1 < 300, "it slept toward a deadline that falls before the Retry-After");
});

test("many grants on one given lease: releasing one keeps the others; closing the lease loses them", async () => {
  const a = newClient();
  const lease = await a.newLease(3000);
  const n1 = uniq("shared-lease");
  const n2 = uniq("shared-lease");
  const h1 = await a.lock(n1, { lease });
  const h2 = await a.lock(n2, { lease, wait: 1000 });
  assert.equal(h1.leaseId, lease.id);
  assert.equal(h2.leaseId, lease.id);
  await h1.release();
  assert.equal(h1.lost.aborted, true);
  assert.equal(lease.lost.aborted, false, "releasing a grant closed the shared lease");
  assert.equal(h2.lost.aborted, false);
  assert.equal((await a.status(n1)).held, false);
  assert.equal((await a.status(n2)).held, true);
  await lease.close();
  assert.equal(h2.lost.aborted, true, "closing the lease did not abort its grant's loss signal");
  assert.equal((await a.status(n2)).held, false, "the revoke did not free the lease's lock");
});

test("failover: a dead first endpoint is skipped", async () => {
  const [dead] = await (await import("./cluster.js")).freePorts(1);
  const a = newClient([`http://127.0.0.1:${dead}`, ...cluster.endpoints()]);
  const name = uniq("failover");
  const h = await a.lock(name, { ttl: 2000 });
  await h.release();
});

test("a leader killed during a hold keeps the lock and the token", async () => {
  const a = newClient();
  const name = uniq("leaderkill");
  const h = await a.lock(name, { ttl: 3000 });
  await cluster.killLeader();
  await cluster.waitLeader();
  await new Promise((r) => setTimeout(r, 3500)); // longer than the TTL: the lease must survive the failover
  assert.equal(h.lost.aborted, false, `lost: ${h.lost.reason}`);
  const st = await a.status(name);
  assert.equal(st.token, h.token);
  await h.release();
});

test("a release with a stale token is refused with NotHolderError and frees nothing", async () => {
  const a = newClient();
  const name = uniq("stale");
  const h1 = await a.lock(name, { ttl: 3000 });
  await h1.release();
  const h2 = await a.lock(name, { ttl: 3000 });
  await assert.rejects(a.release(name, h2.leaseId, h1.token), NotHolderError);
  assert.equal((await a.status(name)).token, h2.token);
  await h2.release();
});

test("shared locks: readers share, a writer is refused, no upgrade", async () => {
  const a = newClient();
  const b = newClient();
  const name = uniq("shared");
  const r1 = await a.lock(name, { mode: "shared", ttl: 3000 });
  const r2 = await b.lock(name, { mode: "shared", ttl: 3000 });
  assert.equal((await a.status(name)).holder_count, 2);
  await assert.rejects(a.lock(name, { ttl: 3000 }), LockHeldError);
  await assert.rejects(a.acquire(name, { leaseId: r1.leaseId }), ModeConflictError);
  await r1.release();
  await r2.release();
});

test("semaphores: limit holders, semaphore_full, limit_conflict", async () => {
  const a = newClient();
  const name = uniq("sem");
  const p1 = await a.semaphore(name, 2, { ttl: 3000 });
  const p2 = await a.semaphore(name, 2, { ttl: 3000 });
  assert.notEqual(p1.token, p2.token);
  await assert.rejects(a.semaphore(name, 2, { ttl: 3000 }), SemaphoreFullError);
  await assert.rejects(a.semaphore(name, 3, { ttl: 3000 }), LimitConflictError);
  const st = await a.semaphoreStatus(name);
  assert.equal(st.limit, 2);
  assert.equal(st.permits?.length, 2);
  await p1.release();
  await p2.release();
});

test("elections: campaign, election_held, proclaim, observe, resign hands over", async () => {
  const a = newClient();
  const b = newClient();
  const name = uniq("elect");
  const l1 = await a.campaign(name, "v1", { ttl: 3000, owner: "a" });
  await assert.rejects(b.campaign(name, "v2", { ttl: 3000 }), ElectionHeldError);
  const ac = new AbortController();
  const seen: string[] = [];
  const observer = (async () => {
    for await (const st of b.observe(name, { signal: ac.signal })) {
      seen.push(`${st.owner}:${st.value}`);
      if (st.value === "v1b") return;
    }
  })();
  await waitFor(() => seen.length >= 1, 5000, () => "observe yielded nothing");
  await l1.proclaim("v1b");
  await observer;
  ac.abort();
  assert.deepEqual(seen, ["a:v1", "a:v1b"]);
  assert.equal((await b.electionStatus(name)).token, l1.token, "a proclaim keeps the token");
  const waiting = b.campaign(name, "v2", { ttl: 3000, wait: 10_000, owner: "b" });
  await waitFor(async () => (await a.electionStatus(name)).candidates >= 1, 5000, () => "b never became a candidate");
  await l1.resign();
  const l2 = await waiting;
  assert.ok(l2.token > l1.token);
  assert.equal((await a.electionStatus(name)).value, "v2");
  await l2.resign();
});

test("a caller's signal ends a wait", async () => {
  const a = newClient();
  const name = uniq("abort");
  const h = await a.lock(name, { ttl: 3000 });
  const ac = new AbortController();
  const p = a.lock(name, { ttl: 3000, wait: 20_000, signal: ac.signal });
  await waitFor(async () => (await a.status(name)).waiters === 1, 5000, () => "never queued");
  ac.abort();
  await assert.rejects(p, AbortedError);
  await waitFor(async () => (await a.status(name)).waiters === 0, 5000, () => "the aborted waiter stayed in the queue");
  await h.release();
});

test("an unreachable cluster ends a call at its deadline with every endpoint's error", async () => {
  const [dead] = await (await import("./cluster.js")).freePorts(1);
  const a = newClient([`http://127.0.0.1:${dead}`], { deadlineMs: 500 });
  const err = await a.lock(uniq("dead"), { ttl: 1000 }).catch((e: unknown) => e);
  assert.ok(err instanceof UnreachableError, String(err));
  assert.ok((err as UnreachableError).cause instanceof UnavailableError, String((err as Error).cause));
});

test("client-side checks refuse what the server would", async () => {
  const a = newClient();
  await assert.rejects(a.lock("", {}), InvalidError);
  await assert.rejects(async () => a.lock(uniq("ttl"), { ttl: 100 }), InvalidError);
  assert.throws(() => new Client({ endpoints: ["http://127.0.0.1:1"], tls: true }), InvalidError);
  assert.throws(() => new Client({ endpoints: [] }), InvalidError);
});

test("Retry-After: seconds and HTTP dates", () => {
  assert.equal(parseRetryAfter("2"), 2000);
  assert.equal(parseRetryAfter(""), 0);
  assert.equal(parseRetryAfter("soon"), 0);
  const now = Date.parse("2026-12-02T06:00:00Z");
  assert.equal(parseRetryAfter("Wed, 02 Dec 2026 06:00:03 GMT", now), 3000);
  assert.equal(parseRetryAfter("Wed, 02 Dec 2026 05:59:00 GMT", now), 0);
});

test("MemoryGuard refuses a stale token and changes nothing", async () => {
  const g = new MemoryGuard();
  let value = "";
  await g.do("r", 5, () => { value = "a"; });
  await g.do("r", 7, () => { value = "b"; });
  await assert.rejects(g.do("r", 5, () => { value = "stale"; }), StaleTokenError);
  assert.equal(value, "b");
  await g.do("r", 7, () => { value = "b2"; });
  assert.equal(value, "b2");
  assert.equal(g.current("r"), 7);
});

export type { Held };
