/**
 * The GC-pause demo in TypeScript (the story of scripts/gc-pause-demo.sh, with Node worker
 * processes): two workers charge card 42 under a lock; worker A takes the lock and freezes
 * (SIGSTOP, standing in for a stop-the-world pause of the whole Node process) right before its
 * write, for longer than the lock's TTL; B takes the lock and charges; A is resumed and charges.
 *
 *   1. A Redis-style lock (SET key NX PX ttl: a key with an expiry, and no fencing token; here a
 *      stand-in served by this driver, so that the demo needs nothing but Node) in front of a
 *      ledger WITHOUT fencing: A's late write is accepted, the card is charged twice.
 *   2. raftlock (this package's Client) and the fenced ledger (cmd/ledger): A keeps its lease
 *      alive while it prepares for longer than one TTL, then freezes, keepalives and all. Its
 *      lease expires on cluster time; B is granted the lock with a higher token and charges; A's
 *      late write carries its old token and the ledger answers 409 stale_token. Charged once.
 *
 *   npm run build && node build/examples/gc-pause-demo.js
 *
 * Environment: RAFTLOCK_BIN and LEDGER_BIN (default bin/raftlock and bin/ledger at the
 * repository's root: go build -o bin/ledger ./cmd/ledger), TTL_MS (default 2000),
 * DEMO_NO_FENCING=1 (the raftlock half against a ledger that does not check tokens: a negative
 * control that must show the double charge and fail). Exits non-zero unless each half ends as told.
 */
import { spawn, ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Client, fencingHeaders } from "../src/index.js";
import { Cluster, freePorts, waitFor } from "../test/cluster.js";

const TTL_MS = Number(process.env.TTL_MS ?? 2000);
const AMOUNT = 2500;
const here = fileURLToPath(import.meta.url);
const root = resolve(dirname(here), "..", "..", "..", "..");

/** POST a charge to the ledger at port; resolves with "STATUS code-or-body". */
async function charge(port: number, chargeId: string, headers: Record<string, string>): Promise<{ status: number; code: string }> {
  const r = await fetch(`http://127.0.0.1:${port}/v1/charges`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ charge_id: chargeId, account: "card-42", amount_cents: AMOUNT }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await r.json().catch(() => ({}))) as { error?: { code?: string } };
  return { status: r.status, code: body.error?.code ?? "" };
}

const verdict = (a: { status: number; code: string } | undefined) =>
  a === undefined ? "no answer" : a.status >= 200 && a.status < 300 ? `accepted (${a.status})` : a.status === 409 ? `refused (${a.code || 409})` : `unexpected (${a.status} ${a.code})`;

// ---------------------------------------------------------------- the workers (child processes)

async function redisWorker(me: string, freeze: boolean, lockPort: number, ledgerPort: number, out: string): Promise<void> {
  const set = await fetch(`http://127.0.0.1:${lockPort}/set?key=card:42&value=${me}&px=${TTL_MS}`, { method: "POST" });
  if (set.status !== 200) throw new Error(`${me}: lock busy`);
  console.log(`worker ${me}: took the Redis-style lock (SET card:42 NX PX ${TTL_MS})`);
  if (freeze) {
    console.log(`worker ${me}: GC pause...`);
    process.kill(process.pid, "SIGSTOP");
    console.log(`worker ${me}: resumed, still thinks it holds the lock`);
  }
  const ans = await charge(ledgerPort, `redis-${me}-${process.pid}`, { "Fencing-Token": "1" });
  writeFileSync(out, JSON.stringify(ans));
  console.log(`worker ${me}: ledger answered ${ans.status} ${ans.code}`);
  await fetch(`http://127.0.0.1:${lockPort}/del?key=card:42&value=${me}`, { method: "POST" });
}

async function raftlockWorkerA(endpoints: string, lock: string, ledgerPort: number, work: string): Promise<void> {
  const client = new Client({ endpoints });
  const held = await client.lock(lock, { ttl: TTL_MS, owner: "worker-A" });
  writeFileSync(join(work, "tokenA"), String(held.token));
  console.log(`worker A: took ${lock} with fencing token ${held.token}`);
  const prep = Math.round(TTL_MS * 1.5);
  console.log(`worker A: preparing the charge for ${prep} ms, longer than the TTL (the client's keepalives hold the lease)`);
  await new Promise((r) => setTimeout(r, prep));
  if (held.lost.aborted) throw new Error("worker A: the lock was lost while preparing");
  console.log("worker A: the loss signal is clear; GC pause... (the whole process stops, its keepalives too)");
  process.kill(process.pid, "SIGSTOP"); // the pause falls between the check and the write
  console.log(`worker A: resumed, still thinks it holds the lock; charging with token ${held.token}`);
  const ans = await charge(ledgerPort, `raftlock-A-${process.pid}`, fencingHeaders(held.token));
  writeFileSync(join(work, "answerA"), JSON.stringify(ans));
  console.log(`worker A: ledger answered ${ans.status} ${ans.code}`);
  // Once its timers run again, the client sees that safeUntil has passed.
  await new Promise((r) => (held.lost.aborted ? r(undefined) : held.lost.addEventListener("abort", r, { once: true })));
  console.log(`worker A: loss signal: ${(held.lost.reason as Error).message}`);
  await held.release().catch(() => undefined);
  await client.close();
}

async function raftlockWorkerB(endpoints: string, lock: string, ledgerPort: number, work: string): Promise<void> {
  const client = new Client({ endpoints });
  console.log("worker B: queues for the lock (granted by the commit that expires A's lease, no polling)");
  await client.withLock(lock, async (held) => {
    writeFileSync(join(work, "tokenB"), String(held.token));
    console.log(`worker B: holds ${lock} with fencing token ${held.token}`);
    const ans = await charge(ledgerPort, `raftlock-B-${process.pid}`, fencingHeaders(held.token));
    console.log(`worker B: ledger answered ${ans.status} ${ans.code}`);
  }, { ttl: TTL_MS, wait: 30_000, owner: "worker-B" });
  await client.close();
}

// ---------------------------------------------------------------- the driver

const children: ChildProcess[] = [];

function worker(...args: string[]): ChildProcess {
  const p = spawn(process.execPath, [here, ...args], { stdio: ["ignore", "inherit", "inherit"] });
  children.push(p);
  return p;
}

const exited = (p: ChildProcess) => new Promise<number>((r) => (p.exitCode !== null ? r(p.exitCode) : p.once("exit", (c) => r(c ?? 1))));

/** Whether process pid is stopped (state T in /proc/PID/stat). */
function stopped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] === "T";
  } catch {
    return false;
  }
}

/** A Redis-style lock: SET key value NX PX ms, GET, DEL-if-value; keys expire on the server's clock. */
function redisStandIn(port: number): http.Server {
  const keys = new Map<string, { value: string; expires: number }>();
  const live = (k: string) => {
    const e = keys.get(k);
    if (e && e.expires <= performance.now()) keys.delete(k);
    return keys.get(k);
  };
  const s = http.createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://x");
    const k = u.searchParams.get("key") ?? "";
    if (u.pathname === "/set") {
      if (live(k)) return res.writeHead(409).end();
      keys.set(k, { value: u.searchParams.get("value") ?? "", expires: performance.now() + Number(u.searchParams.get("px")) });
      return res.writeHead(200).end("OK");
    }
    if (u.pathname === "/exists") return res.writeHead(200).end(live(k) ? "1" : "0");
    if (u.pathname === "/del") {
      if (live(k)?.value === u.searchParams.get("value")) keys.delete(k);
      return res.writeHead(200).end();
    }
    res.writeHead(404).end();
  });
  s.listen(port, "127.0.0.1");
  return s;
}

async function startLedger(bin: string, port: number, dir: string, fenced: boolean): Promise<ChildProcess> {
  const p = spawn(bin, ["--listen", `127.0.0.1:${port}`, "--data-dir", dir, "--log-level", "warn", ...(fenced ? [] : ["--no-fencing"])], { stdio: ["ignore", "ignore", "inherit"] });
  children.push(p);
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200, 10_000, () => "the ledger did not come up");
  return p;
}

async function charges(port: number): Promise<number> {
  const a = (await (await fetch(`http://127.0.0.1:${port}/v1/accounts/card-42`)).json()) as { charges?: unknown[] };
  return a.charges?.length ?? 0;
}

async function driver(): Promise<number> {
  const raftlockBin = process.env.RAFTLOCK_BIN ?? join(root, "bin", "raftlock");
  const ledgerBin = process.env.LEDGER_BIN ?? join(root, "bin", "ledger");
  for (const b of [raftlockBin, ledgerBin]) if (!existsSync(b)) throw new Error(`${b} not found: go build -o bin/raftlock ./cmd/raftlock && go build -o bin/ledger ./cmd/ledger`);
  process.env.RAFTLOCK_BIN = raftlockBin;
  const noFencing = process.env.DEMO_NO_FENCING === "1";
  const work = mkdtempSync(join(tmpdir(), "raftlock-ts-demo-"));
  const [lockPort, plainLedger, fencedLedger] = await freePorts(3);
  let cluster: Cluster | undefined;
  let redisServer: http.Server | undefined;
  try {
    // ------------------------------------------------------------ 1. Redis-style lock
    console.log(`== 1. a Redis-style lock (SET card:42 NX PX ${TTL_MS}), ledger WITHOUT fencing`);
    redisServer = redisStandIn(lockPort);
    await startLedger(ledgerBin, plainLedger, join(work, "ledger-plain"), false);
    const ra = worker("redis-worker", "A", "yes", String(lockPort), String(plainLedger), join(work, "redis-A"));
    await waitFor(() => stopped(ra.pid!), 30_000, () => "redis worker A did not freeze");
    console.log(`driver: A is frozen; waiting for the lock to expire (TTL ${TTL_MS} ms)`);
    await waitFor(async () => (await (await fetch(`http://127.0.0.1:${lockPort}/exists?key=card:42`)).text()) === "0", 30_000, () => "the lock never expired");
    const rb = worker("redis-worker", "B", "no", String(lockPort), String(plainLedger), join(work, "redis-B"));
    if ((await exited(rb)) !== 0) throw new Error("redis worker B failed");
    ra.kill("SIGCONT");
    await exited(ra);
    const redisCharges = await charges(plainLedger);
    const redisLate = verdict(JSON.parse(readFileSync(join(work, "redis-A"), "utf8")));
    const redisResult = redisCharges === 2 && redisLate.startsWith("accepted") ? "DOUBLE CHARGE" : "unexpected";

    // ------------------------------------------------------------ 2. raftlock + fencing
    console.log(`== 2. raftlock (3-node cluster) and ${noFencing ? "a ledger WITHOUT fencing (DEMO_NO_FENCING=1: negative control, must fail)" : "the FENCED ledger"}`);
    cluster = await Cluster.start();
    const endpoints = cluster.endpoints().join(",");
    await startLedger(ledgerBin, fencedLedger, join(work, "ledger-fenced"), !noFencing);
    const lock = `demo/card-42-${process.pid}`;
    const wa = worker("raftlock-a", endpoints, lock, String(fencedLedger), work);
    await waitFor(() => stopped(wa.pid!), 30_000, () => "raftlock worker A did not freeze");
    const tokenA = Number(readFileSync(join(work, "tokenA"), "utf8"));
    const probe = new Client({ endpoints });
    const st = await probe.status(lock);
    await probe.close();
    if (!st.held || st.token !== tokenA) throw new Error(`A's lease did not outlive its first TTL although A kept it alive: ${JSON.stringify(st)}`);
    console.log(`driver: A froze ${Math.round(TTL_MS * 1.5)} ms after taking the lock (TTL ${TTL_MS} ms) and still holds it (token ${tokenA}): its keepalives held the lease until the pause`);
    const wb = worker("raftlock-b", endpoints, lock, String(fencedLedger), work);
    if ((await exited(wb)) !== 0) throw new Error("raftlock worker B failed");
    console.log("driver: resuming A");
    wa.kill("SIGCONT");
    await exited(wa);
    const tokenB = Number(readFileSync(join(work, "tokenB"), "utf8"));
    const rlCharges = await charges(fencedLedger);
    const rlLate = verdict(existsSync(join(work, "answerA")) ? JSON.parse(readFileSync(join(work, "answerA"), "utf8")) : undefined);
    const rlResult = rlCharges === 1 && rlLate === "refused (stale_token)" && tokenB > tokenA ? "charged once" : rlCharges === 2 ? "DOUBLE CHARGE" : "unexpected";

    console.log("\n== summary");
    const row = (a: string, b: string | number, c: string | number) => console.log(`${a.padEnd(28)} ${String(b).padEnd(22)} ${c}`);
    row("", "Redis-style SET NX PX", `raftlock + ${noFencing ? "UNFENCED" : "fenced"} ledger`);
    row("worker A's token", "-", tokenA);
    row("worker B's token", "-", tokenB);
    row("A's write after its pause", redisLate, rlLate);
    row("charges accepted", redisCharges, rlCharges);
    row("outcome", redisResult, rlResult);
    if (rlResult !== "charged once") {
      console.error(noFencing ? `FAIL (as expected with DEMO_NO_FENCING=1): without fencing the ledger took A's stale write: ${rlResult}` : `FAIL: the raftlock half did not end as expected: ${rlResult}`);
      return 1;
    }
    if (redisResult !== "DOUBLE CHARGE") {
      console.error(`FAIL: the Redis-style half did not end as expected: ${redisResult}`);
      return 1;
    }
    return 0;
  } finally {
    for (const c of children) {
      c.kill("SIGCONT");
      c.kill("SIGKILL");
    }
    redisServer?.close();
    cluster?.close();
    rmSync(work, { recursive: true, force: true });
  }
}

const [role, ...args] = process.argv.slice(2);
const run =
  role === "redis-worker" ? redisWorker(args[0], args[1] === "yes", Number(args[2]), Number(args[3]), args[4]).then(() => 0)
  : role === "raftlock-a" ? raftlockWorkerA(args[0], args[1], Number(args[2]), args[3]).then(() => 0)
  : role === "raftlock-b" ? raftlockWorkerB(args[0], args[1], Number(args[2]), args[3]).then(() => 0)
  : driver();
run.then(
  (code) => process.exit(code),
  (err) => {
    console.error(String((err as Error)?.stack ?? err));
    process.exit(1);
  },
);
