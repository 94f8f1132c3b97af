/**
 * TLS with a private CA and client certificates (the reason the transport is node:https and
 * not fetch: see src/transport.ts), against a three-node cluster started with
 * --tls-client-auth require, certificates made by `raftlock tls` as scripts/cluster.sh --tls does.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { Client, TLSError, tlsFromFiles, InvalidError } from "../src/index.js";
import { Cluster } from "./cluster.js";

let cluster: Cluster;
before(async () => {
  cluster = await Cluster.start({ tls: true });
});
after(() => cluster?.close());

test("a client with the cluster's CA and a client certificate takes and releases a lock over HTTPS", async () => {
  const dir = cluster.tlsDir!;
  const tls = await tlsFromFiles(join(dir, "ca.pem"), join(dir, "local.pem"), join(dir, "local-key.pem"));
  // Bare host:port endpoints mean https once TLS is configured.
  const c = new Client({ endpoints: cluster.endpoints().map((e) => e.replace("https://", "")), tls });
  try {
    const held = await c.lock("ts/tls/a", { ttl: 2000 });
    assert.ok(held.token > 0);
    assert.equal((await c.status("ts/tls/a")).token, held.token);
    await held.release();
  } finally {
    await c.close();
  }
});

test("a server certificate that does not verify ends the call with TLSError after one round", async () => {
  const c = new Client({ endpoints: cluster.endpoints(), tls: true, deadlineMs: 20_000 }); // Node's default roots
  const t0 = performance.now();
  await assert.rejects(c.status("ts/tls/b"), TLSError);
  assert.ok(performance.now() - t0 < 5000, "an untrusted certificate was retried as if waiting could fix it");
  await c.close();
});

test("without a client certificate the cluster refuses the handshake: TLSError", async () => {
  const dir = cluster.tlsDir!;
  const c = new Client({ endpoints: cluster.endpoints(), tls: await tlsFromFiles(join(dir, "ca.pem")), deadlineMs: 20_000 });
  await assert.rejects(c.status("ts/tls/c"), TLSError);
  await c.close();
});

test("TLS configuration mistakes are refused before any request", async () => {
  await assert.rejects(tlsFromFiles("/nonexistent/ca.pem"), InvalidError);
  await assert.rejects(tlsFromFiles(undefined, "/x.pem"), InvalidError);
  assert.throws(() => new Client({ endpoints: ["http://127.0.0.1:7001"], tls: {} }), InvalidError);
});
