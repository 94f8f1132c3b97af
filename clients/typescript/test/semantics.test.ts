/**
 * The semantics every client shares (clients/README.md's table): names, an unreachable
 * cluster, secrets in inspect, environment defaults, a loss inside withLock. Against a real
 * three-node cluster (test/cluster.ts).
 */
import { test, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { inspect } from "node:util";
import { Client, InvalidError, UnavailableError, UnreachableError, LeaseLostError, LockHeldError } from "../src/index.js";
import { NAME_RULE } from "../src/client.js";
import { Cluster, waitFor } from "./cluster.js";

let cluster: Cluster;
const clients: Client[] = [];

function newClient(opts: ConstructorParameters<typeof Client>[0] = {}): Client {
  const c = new Client({ endpoints: cluster.endpoints(), timeoutMs: 1000, ...opts });
  clients.push(c);
  return c;
}

async function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

before(async () => {
  cluster = await Cluster.start();
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

after(() => cluster?.close());

test("names the server refuses are refused before sending, with the server's rule", async () => {
  const c = newClient({ endpoints: `http://127.0.0.1:${await freePort()}`, deadlineMs: 500 });
  for (const name of ["", "/abs", "a//b", "../up", "a/./b", "a/..", ".", "a/", "a\u0001b", "a\u0085b", "n".repeat(513), "\ud800"]) {
    for (const call of [() => c.lock(name), () => c.acquire(name), () => c.status(name), () => c.semaphore(name, 1)]) {
      await assert.rejects(call(), (err: unknown) => err instanceof InvalidError && err.code === "invalid_name" && err.message.includes(NAME_RULE), JSON.stringify(name));
    }
  }
  const ok = newClient();
  await ok.withLock("ts2/düsseldorf/日本", (h) => assert.ok(h.token > 0), { ttl: 2000 });
});

test("an unreachable cluster is one UnreachableError naming every endpoint", async () => {
  const dead = [`http://127.0.0.1:${await freePort()}`, `http://127.0.0.1:${await freePort()}`];
  const c = newClient({ endpoints: dead, deadlineMs: 500 });
  await assert.rejects(c.status("ts2/x"), (err: unknown) => {
    assert.ok(err instanceof UnreachableError && err instanceof UnavailableError, String(err));
    for (const d of dead) {
      assert.ok(err.message.includes(d), err.message);
      assert.ok(d in err.errors);
    }
    return true;
  });
});

test("the lease ID is not shown by inspect or JSON, nor the token by the client", async () => {
  const c = newClient({ token: "s3cret-token-value" });
  const held = await c.lock("ts2/inspect", { ttl: 2000 }).catch(() => undefined);
  // (no ACL on this cluster: the token is ignored by the server)
  assert.ok(held);
  for (const text of [inspect(held), inspect(held.lease), inspect({ held }), JSON.stringify(held), JSON.stringify(held.lease)]) {
    assert.ok(!text.includes(held.lease.id), text);
  }
  assert.ok(!inspect(c).includes("s3cret"), inspect(c));
  await held.release();
});

test("RAFTLOCK_ENDPOINTS and RAFTLOCK_TOKEN are the defaults", async () => {
  const saved = { e: process.env.RAFTLOCK_ENDPOINTS, t: process.env.RAFTLOCK_TOKEN };
  try {
    process.env.RAFTLOCK_ENDPOINTS = cluster.endpoints().join(",");
    process.env.RAFTLOCK_TOKEN = "tok-from-env";
    const c = new Client();
    clients.push(c);
    assert.deepEqual([...c.endpoints], cluster.endpoints());
    assert.ok(!inspect(c).includes("tok-from-env"));
    delete process.env.RAFTLOCK_ENDPOINTS;
    assert.throws(() => new Client(), InvalidError);
  } finally {
    if (saved.e === undefined) delete process.env.RAFTLOCK_ENDPOINTS;
    else process.env.RAFTLOCK_ENDPOINTS = saved.e;
    if (saved.t === undefined) delete process.env.RAFTLOCK_TOKEN;
    else process.env.RAFTLOCK_TOKEN = saved.t;
  }
});

test("after a pause of the whole process past safeUntil, lost reads aborted at once", async () => {
  const c = newClient();
  const held = await c.lock("ts2/pause", { ttl: 1000 });
  // Block the event loop (no timer, no keepalive runs), as a stopped process would be.
  const gate = new Int32Array(new SharedArrayBuffer(4));
  while (performance.now() < held.safeUntil() + 10) Atomics.wait(gate, 0, 0, 20);
  assert.equal(held.lost.aborted, true, "lost read 'not lost' after safeUntil passed");
  assert.ok(held.safeUntil() <= performance.now());
  await held.release().catch(() => undefined);
});

test("durations must be numbers", async () => {
  const c = newClient();
  for (const bad of ["10000", null, true]) {
    await assert.rejects(c.lock("ts2/ttl", { ttl: bad as unknown as number }), (err: unknown) => err instanceof InvalidError && err.message.includes("as a number"), String(bad));
  }
  await assert.rejects(c.lock("ts2/ttl", { wait: "5" as unknown as number }), (err: unknown) => err instanceof InvalidError && err.message.includes("as a number"));
});

test("a lock lost inside withLock rejects", async () => {
  const c = newClient();
  await assert.rejects(
    c.withLock("ts2/lost", async (held) => {
      await c.revoke(held.lease.id);
      await waitFor(() => held.lost.aborted, 10_000, () => "the loss to be noticed");
    }, { ttl: 2000 }),
    (err: unknown) => err instanceof LeaseLostError && err.message.includes("was lost while"),
  );
  // A release inside fn is not a loss.
  assert.equal(await c.withLock("ts2/lost", async (held) => { await held.release(); return 7; }, { ttl: 2000 }).catch((e: unknown) => e instanceof LeaseLostError ? e : 7), 7);
});

test("await using releases a hold at the end of the block, and reports a loss inside it", async () => {
  const c = newClient();
  const name = "ts2/dispose";
  {
    await using held = await c.lock(name, { ttl: 3000 });
    assert.equal((await c.status(name)).held, true);
    assert.ok(held.token > 0);
  }
  assert.equal((await c.status(name)).held, false, "released when the block ended");
  {
    await using lease = await c.newLease(3000);
    await c.lock("ts2/dispose/a", { lease });
    await c.lock("ts2/dispose/b", { lease });
  }
  assert.equal((await c.status("ts2/dispose/b")).held, false, "a lease disposed of frees what it held");
  await assert.rejects(
    (async () => {
      await using held = await c.lock(name, { ttl: 3000 });
      await c.revoke(held.leaseId); // as the cluster expiring the lease
      await waitFor(() => held.lost.aborted, 10_000, () => "the loss was never noticed");
    })(),
    (err: unknown) => err instanceof LeaseLostError,
  );
  await c.close();
});

test("a lockset, a maximum hold and a lock delay", async () => {
  const c = newClient();
  const d = newClient();
  const s = await c.lockset(["ts2/set/x", "ts2/set/y"], { ttl: 3000 });
  assert.deepEqual(Object.keys(s.tokens).sort(), ["ts2/set/x", "ts2/set/y"]);
  await assert.rejects(d.lockset(["ts2/set/z", "ts2/set/y"], { ttl: 3000 }), LockHeldError);
  assert.equal((await d.status("ts2/set/z")).held, false, "a refused set takes none of its locks");
  await s.release();
  assert.equal((await d.status("ts2/set/x")).held, false);
  const m = await c.lock("ts2/maxhold", { ttl: 5000, maxHold: 700 });
  assert.ok(m.safeUntil() <= performance.now() + 700, "safeUntil is capped by the maximum hold");
  await waitFor(() => m.lost.aborted, 10_000, () => "the maximum hold never ended the grant");
  assert.ok(m.lost.reason instanceof LeaseLostError);
  assert.equal(m.lease.lost.aborted, false, "the lease outlives the grant");
  const h = await c.lock("ts2/delay", { ttl: 5000, lockDelay: 1500 });
  await c.revoke(h.leaseId);
  const st = await d.status("ts2/delay");
  assert.equal(st.held, false);
  assert.ok((st.lock_delay_remaining_ms ?? 0) > 0, `lock delay: ${JSON.stringify(st)}`);
  await assert.rejects(d.lock("ts2/delay", { ttl: 2000 }), LockHeldError);
  await c.close();
  await d.close();
});
