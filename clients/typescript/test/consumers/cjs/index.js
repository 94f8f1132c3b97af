// A CommonJS project, as `npm init -y` makes one: require("raftlock") must work.
const assert = require("node:assert");
const { inspect } = require("node:util");
const { Client, InvalidError, UnreachableError } = require("raftlock");

async function main() {
  const client = new Client(); // RAFTLOCK_ENDPOINTS
  await client.withLock("consumers/cjs", async (held) => {
    assert.ok(held.token > 0);
    assert.ok(!inspect(held).includes(held.lease.id), "the lease ID is shown by inspect");
    assert.ok(!JSON.stringify(held).includes(held.lease.id), "the lease ID is in JSON");
  }, { ttl: 5000, wait: 10000 });
  await assert.rejects(client.lock("a//b"), InvalidError);
  assert.strictEqual(typeof UnreachableError, "function");
  await client.close();
  console.log("cjs consumer: ok");
}
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
