/**
 * The client's error map against the server's catalogue of outcomes (api/outcomes.json,
 * generated from api/outcomes.go): every code has its error class and the catalogue's
 * retry class, the retries go by it, and a code the client does not know is its generic
 * error. Needs no cluster.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Client, RaftlockError, ServerError, errorFor } from "../src/index.js";
import { retryable, Transport } from "../src/transport.js";

interface Outcome {
  code: string;
  status: number;
  retry: string;
}
const catalogue = JSON.parse(readFileSync(fileURLToPath(new URL("../../../../api/outcomes.json", import.meta.url)), "utf8")) as {
  retry_classes: string[];
  outcomes: Outcome[];
};

const transport = new Transport({ endpoints: ["http://127.0.0.1:1"], timeoutMs: 1000, deadlineMs: 1000, minBackoffMs: 1, maxBackoffMs: 2 });
const answer = (status: number, body: string): RaftlockError => transport.errorOf({ op: "acquire" }, "http://127.0.0.1:1", { status, headers: {}, body });

test("every code of the catalogue has its error class and retry class", () => {
  assert.ok(catalogue.outcomes.length >= 20, "api/outcomes.json lists too few outcomes");
  for (const o of catalogue.outcomes) {
    const e = errorFor(o.code, "m");
    assert.equal(e.code, o.code);
    assert.equal(e.retryClass, o.retry, `${o.code}: retry class ${e.retryClass}, the catalogue says ${o.retry}`);
    assert.equal(retryable(e), o.retry !== "never", o.code);
    if (o.code !== "internal") assert.notEqual(e.constructor, ServerError, `${o.code} (api/outcomes.json) has no error class in src/errors.ts`);
    const wired = answer(o.status, JSON.stringify({ error: { code: o.code, message: "m" } }));
    assert.equal(wired.constructor, e.constructor, o.code);
    assert.ok(catalogue.retry_classes.includes(e.retryClass));
  }
});

test("a code the client does not know is a ServerError, never retried, never a crash", () => {
  const e = errorFor("a_code_of_a_newer_server", "m");
  assert.ok(e instanceof ServerError);
  assert.equal(e.code, "a_code_of_a_newer_server");
  assert.equal(e.retryClass, "never");
  assert.equal(retryable(e), false);
  for (const code of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
    const odd = errorFor(code, "m");
    assert.ok(odd instanceof ServerError, code);
    assert.equal(odd.retryClass, "never", code);
  }
  const wired = answer(503, '{"error":{"code":"leader_busy","message":"newer"}}');
  assert.ok(wired instanceof ServerError);
  assert.equal(wired.code, "leader_busy");
  assert.match(wired.message, /newer/);
  // Codes or messages that are no strings are no API answer: a library error by status.
  for (const body of ['{"error":{"code":["x"]}}', '{"error":{"code":{"a":1}}}', '{"error":{"code":7}}', '{"error":{"code":"lock_held","message":5}}', "null", '{"error":"x"}']) {
    assert.ok(answer(409, body) instanceof RaftlockError, body);
  }
});

const servers: Server[] = [];
after(() => {
  for (const s of servers) s.close();
});

test("an unknown code on the wire is answered once, as a ServerError", async () => {
  let hits = 0;
  const s = createServer((_req, res) => {
    hits++;
    res.writeHead(503, { "content-type": "application/json", "retry-after": "1" });
    res.end('{"error":{"code":"leader_busy","message":"a newer server\'s code"}}');
  });
  servers.push(s);
  await new Promise<void>((res) => s.listen(0, "127.0.0.1", res));
  const c = new Client({ endpoints: [`http://127.0.0.1:${(s.address() as AddressInfo).port}`], timeoutMs: 1000, deadlineMs: 5000 });
  try {
    await assert.rejects(c.acquire("x", { ttl: 2000 }), (err: unknown) => err instanceof ServerError && err.code === "leader_busy");
    assert.equal(hits, 1, "an unknown code was retried");
  } finally {
    await c.close();
  }
});
