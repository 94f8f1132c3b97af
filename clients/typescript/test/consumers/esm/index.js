// An ES module project: import { Client } from "raftlock" must work.
import assert from "node:assert";
import { inspect } from "node:util";
import { Client, InvalidError } from "raftlock";

const client = new Client(); // RAFTLOCK_ENDPOINTS
const held = await client.lock("consumers/esm", { ttl: 5000, wait: 10000 });
assert.ok(held.token > 0);
assert.ok(!inspect(held).includes(held.lease.id), "the lease ID is shown by inspect");
assert.ok(!inspect(client).includes("Bearer"));
await held.release();
await assert.rejects(client.lock("../up"), InvalidError);
await client.close();
console.log("esm consumer: ok");
