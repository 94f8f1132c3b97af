// A TypeScript project compiled to CommonJS: it must type-check against the package's
// require types and then run.
import { Client, Held } from "raftlock";

async function main(): Promise<void> {
  const client = new Client();
  const held: Held = await client.lock("consumers/ts-cjs", { ttl: 5000, wait: 10000 });
  if (!(held.token > 0)) throw new Error("no token");
  await held.release();
  await client.close();
  console.log("ts-cjs consumer: ok");
}
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
