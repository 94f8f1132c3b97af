/**
 * The TypeScript conformance runner: executes every scenario file of clients/conformance
 * (FORMAT.md) against one real three-node cluster, with this package's client. Adding a
 * scenario needs no code here: the operations and matchers of FORMAT.md are implemented
 * once, and a file combines them.
 *
 *   node build/conformance/runner.js           # scenarios from ../conformance/ (clients/conformance)
 *   RAFTLOCK_CONFORMANCE_DIR=/path/to/clients/conformance node build/conformance/runner.js
 *   RAFTLOCK_CONFORMANCE_ONLY=name1,name2 ...  # only those scenarios
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Client, Held, Leadership, Lease, RaftlockError, Router, SQLiteGuard } from "../src/index.js";
import type { ElectionStatus, Grant, LockEvent, SQLiteDatabase, Watch } from "../src/index.js";
import { Cluster, waitFor } from "../test/cluster.js";
import { FaultProxies } from "../test/proxy.js";

/** The runner's name in a scenario's `skip` list. */
const RUNNER = "typescript";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };

interface RouteSpec {
  name?: string;
  nodes: string[];
  prefixes: string[];
}

interface Scenario {
  name: string;
  description: string;
  clients?: Record<string, { proxy?: boolean; nodes?: string[]; routes?: RouteSpec[] }>;
  steps: Obj[];
  skip?: string[];
}

/** A failure of the step itself (not an outcome an `expect` can name): it fails the scenario. */
class StepFailure extends Error {}

/** A step's outcome: its result fields, or the API (or fencing) error code it failed with. */
type Outcome = { ok: true; result: Obj; hold?: Hold } | { ok: false; code: string; message: string };

/** A hold: the held object of lock/lockset/semaphore/campaign, a plain acquire's grant, or a lease. */
type Hold = { held: Held; client: string } | { grant: Grant; client: string } | { lease: Lease; client: string };

/** better-sqlite3 (a dev dependency), loaded as the user of SQLiteGuard would. */
const Database = createRequire(import.meta.url)("better-sqlite3") as new (file: string, opts?: { timeout?: number }) => SQLiteDatabase & { close(): void };

/** A watch or an observe the runner keeps reading (FORMAT.md, "streams"). */
class Stream {
  readonly events: LockEvent[] = [];
  readonly states: ElectionStatus[] = [];
  code = "";
  readonly ctl = new AbortController();
  done: Promise<void>;

  /** An observe's stream (a watch's when false). */
  readonly isObserve: boolean;

  constructor(watch: Watch | undefined, observe: AsyncGenerator<ElectionStatus> | undefined) {
    this.isObserve = watch === undefined;
    this.done = (async () => {
      try {
        if (watch) for await (const e of watch) this.events.push(e);
        else for await (const st of observe!) this.states.push(st);
      } catch (err) {
        if (!this.ctl.signal.aborted && err instanceof RaftlockError) this.code = err.code;
      }
    })();
    this.stop = () => {
      this.ctl.abort();
      watch?.close();
    };
  }

  readonly stop: () => void;

  summary(): Obj {
    if (this.isObserve) return this.observeSummary();
    const seen = new Set<string>();
    let repeated = 0;
    let grants = 0;
    let inOrder = true;
    const ev = this.events;
    ev.forEach((e, i) => {
      const k = `${e.index}\u0000${e.name}\u0000${e.kind}`;
      if (seen.has(k)) repeated++;
      seen.add(k);
      if (e.kind === "granted") grants++;
      if (i > 0 && e.index < ev[i - 1].index) inOrder = false;
    });
    const last = ev[ev.length - 1];
    return {
      events: ev.length, grants, repeated, in_order: inOrder, first_index: ev[0]?.index ?? 0, last_index: last?.index ?? 0,
      last_kind: last?.kind ?? "", last_name: last?.name ?? "", error: this.code,
    };
  }

  observeSummary(): Obj {
    const l = this.states[this.states.length - 1];
    return { states: this.states.length, elected: l?.elected ?? false, owner: l?.owner ?? "", value: l?.value ?? "", token: l?.token ?? 0 };
  }
}

/** The runner's clusters: A (n1..n3) and B (b1, started before the first scenario that names it). */
interface Clusters {
  a: Cluster;
  b?: Cluster;
}

/** The directory holding scenarios/: $RAFTLOCK_CONFORMANCE_DIR, or clients/conformance beside this package. */
function scenarioDir(): string {
  const here = dirname(fileURLToPath(import.meta.url)); // clients/typescript/build/conformance
  const base = process.env.RAFTLOCK_CONFORMANCE_DIR ? resolve(process.env.RAFTLOCK_CONFORMANCE_DIR) : resolve(here, "..", "..", "..", "conformance");
  return existsSync(join(base, "scenarios")) ? join(base, "scenarios") : base;
}

/** One scenario's run: its clients, proxies, stores, results and holds. */
class Run {
  readonly clients = new Map<string, Client>();
  readonly routers = new Map<string, Router>();
  readonly proxies = new Map<string, FaultProxies>();
  readonly results = new Map<string, Obj>();
  readonly holds = new Map<string, Hold>();
  readonly background = new Map<string, Promise<Outcome>>();
  readonly streams = new Map<string, Stream>();
  readonly stores = new Map<string, { guard: SQLiteGuard; db: SQLiteDatabase & { close(): void } }>();
  readonly tmp = mkdtempSync(join(tmpdir(), "raftlock-ts-conf-"));

  constructor(readonly cs: Clusters) {}

  get cluster(): Cluster {
    return this.cs.a;
  }

  /** The cluster and ID of node label (n1..n3 of A, b1 of B). */
  node(label: string): { c: Cluster; id: string } {
    const c = label.startsWith("b") ? this.cs.b : this.cs.a;
    if (!c || !c.nodes.some((n) => n.id === label)) throw new StepFailure(`no node ${label}`);
    return { c, id: label };
  }

  endpoints(nodes: string[]): string[] {
    return nodes.map((l) => {
      const { c, id } = this.node(l);
      return c.endpoints()[c.nodes.findIndex((n) => n.id === id)];
    });
  }

  async setup(spec: Scenario["clients"]): Promise<void> {
    const labels = spec ?? { a: {}, b: {}, c: {} };
    for (const [label, opts] of Object.entries(labels)) {
      if (opts?.routes) {
        this.routers.set(label, new Router(opts.routes.map((r) => ({ name: r.name, prefixes: r.prefixes, client: new Client({ endpoints: this.endpoints(r.nodes), deadlineMs: 30_000 }) }))));
        continue;
      }
      let endpoints = opts?.nodes ? this.endpoints(opts.nodes) : this.cluster.endpoints();
      if (opts?.proxy) {
        const p = await FaultProxies.start(endpoints);
        this.proxies.set(label, p);
        endpoints = p.endpoints;
      }
      this.clients.set(label, new Client({ endpoints, deadlineMs: 30_000 }));
    }
  }

  /** Closes the clients (releasing every hold still open; errors ignored) and the proxies, bounded. */
  async teardown(): Promise<void> {
    const bounded = <T>(p: Promise<T>, ms: number) => Promise.race([p.catch(() => undefined), new Promise((r) => setTimeout(r, ms))]);
    for (const st of this.streams.values()) st.stop();
    await bounded(Promise.all([...this.streams.values()].map((s) => s.done)), 2000);
    await bounded(Promise.all([...this.background.values()]), 1000);
    const release = (h: Hold) => {
      if ("held" in h) return h.held.lost.aborted ? undefined : h.held.release({ signal: AbortSignal.timeout(2000) });
      if ("lease" in h) return h.lease.close();
      return this.anyClient(h.client).release(h.grant.name, h.grant.lease_id, h.grant.token, { signal: AbortSignal.timeout(2000) });
    };
    const holds = [...this.holds.values()];
    await bounded(Promise.all(holds.filter((h) => !("lease" in h)).map(release)), 3000);
    await bounded(Promise.all(holds.filter((h) => "lease" in h).map(release)), 3000);
    await bounded(Promise.all([...this.clients.values()].map((c) => c.close())), 3000);
    await bounded(Promise.all([...this.routers.values()].map((r) => r.close())), 3000);
    for (const p of this.proxies.values()) await p.close();
    for (const st of this.stores.values()) st.db.close();
    rmSync(this.tmp, { recursive: true, force: true });
  }

  /** The client or router of label (a router routes the calls a plain client answers). */
  anyClient(label: string): Client | Router {
    return this.routers.get(label) ?? this.client(label);
  }

  client(label: string): Client {
    const c = this.clients.get(label);
    if (!c) throw new StepFailure(`no client ${JSON.stringify(label)} in this scenario`);
    return c;
  }

  /** Resolves "$label.field" references, deeply. */
  ref(v: Json | undefined): Json | undefined {
    if (typeof v === "string" && v.startsWith("$")) {
      const [label, ...path] = v.slice(1).split(".");
      const res = this.results.get(label);
      if (res === undefined) throw new StepFailure(`reference ${v}: no result labelled ${label}`);
      let cur: Json | undefined = res;
      for (const f of path) cur = cur !== null && typeof cur === "object" && !Array.isArray(cur) ? (cur as Obj)[f] : undefined;
      if (cur === undefined) throw new StepFailure(`reference ${v}: no field ${path.join(".")} in ${JSON.stringify(res)}`);
      return cur;
    }
    if (Array.isArray(v)) return v.map((x) => this.ref(x) as Json);
    if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, this.ref(x) as Json]));
    return v;
  }

  hold(step: Obj): Hold {
    const label = String(step.hold);
    const h = this.holds.get(label);
    if (!h) throw new StepFailure(`no hold labelled ${JSON.stringify(label)}`);
    return h;
  }

  held(step: Obj): Held {
    const h = this.hold(step);
    if (!("held" in h)) throw new StepFailure(`hold ${step.hold} is not a held object`);
    return h.held;
  }

  /** The lease of the step's lease field. */
  lease(label: string | undefined): Lease | undefined {
    if (label === undefined) return undefined;
    const h = this.holds.get(label);
    if (!h || !("lease" in h)) throw new StepFailure(`no lease labelled ${label}`);
    return h.lease;
  }

  leaseIdOf(h: Hold): string {
    return "held" in h ? h.held.leaseId : "lease" in h ? h.lease.id : h.grant.lease_id;
  }

  /** Runs one operation (references resolved) and returns its result and hold. */
  async op(step: Obj): Promise<{ result: Obj; hold?: Hold }> {
    const s = this.ref(step) as Obj;
    const label = (s.client as string | undefined) ?? "a";
    const num = (k: string, d?: number): number | undefined => (s[k] === undefined ? d : Number(s[k]));
    const str = (k: string): string | undefined => (s[k] === undefined ? undefined : String(s[k]));
    const holdOpts = () => ({ ttl: num("ttl_ms"), wait: num("wait_ms", 0), owner: str("owner") });
    const lockOpts = () => ({ ...holdOpts(), mode: (str("mode") as "exclusive" | "shared" | undefined) ?? "exclusive", maxHold: num("max_hold_ms"), lockDelay: num("lock_delay_ms"), lease: this.lease(str("lease")) });
    const router = this.routers.get(label);
    if (router !== undefined && s.op !== "release") return this.routerOp(router, label, s);
    switch (s.op) {
      case "lock": {
        const held = await this.client(label).lock(String(s.name), lockOpts());
        return { result: { token: held.token }, hold: { held, client: label } };
      }
      case "lockset": {
        const held = await this.client(label).lockset((s.names as string[]).map(String), lockOpts());
        return { result: { token: held.token, locks: Object.keys(held.tokens).length }, hold: { held, client: label } };
      }
      case "lease": {
        const lease = await this.client(label).newLease(num("ttl_ms", 10_000));
        return { result: {}, hold: { lease, client: label } };
      }
      case "revoke": {
        const h = this.hold(s);
        await this.client(label).revoke(this.leaseIdOf(h));
        return { result: {} };
      }
      case "watch": {
        const w = await this.client(label).watch(str("prefix") ?? "", { fromIndex: num("from_index", 0) });
        this.streams.set(String(s.as), new Stream(w, undefined));
        return { result: {} };
      }
      case "observe": {
        const st = new Stream(undefined, undefined);
        st.done = (async () => {
          try {
            for await (const x of this.client(label).observe(String(s.name), { signal: st.ctl.signal })) st.states.push(x);
          } catch (err) {
            if (!st.ctl.signal.aborted && err instanceof RaftlockError) st.code = err.code;
          }
        })();
        this.streams.set(String(s.as), st);
        return { result: {} };
      }
      case "wait_seen": {
        const st = this.streams.get(String(s.stream));
        if (!st) throw new StepFailure(`no stream ${s.stream}`);
        const until = s.until as Obj;
        let last: Obj = {};
        await waitFor(() => this.mismatch(until, (last = st.summary())) === undefined, num("timeout_ms", 10_000)!, () => `the stream never matched ${JSON.stringify(until)}; last ${JSON.stringify(last)}`, 20).catch((e: Error) => {
          throw new StepFailure(e.message);
        });
        return { result: last };
      }
      case "stop_stream": {
        const st = this.streams.get(String(s.stream));
        if (!st) throw new StepFailure(`no stream ${s.stream}`);
        st.stop();
        await st.done;
        return { result: {} };
      }
      case "stop_node": {
        const { c, id } = this.node(String(s.node));
        c.signal(id, "SIGSTOP");
        return { result: {} };
      }
      case "kill_node": {
        const { c, id } = this.node(String(s.node));
        await c.kill(id);
        return { result: {} };
      }
      case "snapshot_restart": {
        const { c, id } = this.node(String(s.node));
        await c.snapshotRestart(id).catch((e: Error) => {
          throw new StepFailure(e.message);
        });
        return { result: {} };
      }
      case "semaphore": {
        const held = await this.client(label).semaphore(String(s.name), Number(s.limit), holdOpts());
        return { result: { token: held.token }, hold: { held, client: label } };
      }
      case "campaign": {
        const held = await this.client(label).campaign(String(s.name), String(s.value), holdOpts());
        return { result: { token: held.token }, hold: { held, client: label } };
      }
      case "acquire": {
        const grant = await this.client(label).acquire(String(s.name), { ttl: num("ttl_ms"), owner: str("owner") });
        return { result: { token: grant.token }, hold: { grant, client: label } };
      }
      case "release": {
        const h = this.hold(s);
        if ("held" in h) await h.held.release();
        else if ("lease" in h) await h.lease.close();
        else await this.anyClient(h.client).release(h.grant.name, h.grant.lease_id, h.grant.token);
        return { result: {} };
      }
      case "release_token": {
        const h = this.hold(s);
        await this.client(label).release(String(s.name), this.leaseIdOf(h), Number(s.token));
        return { result: {} };
      }
      case "proclaim": {
        const held = this.held(s);
        if (!(held instanceof Leadership)) throw new StepFailure(`hold ${s.hold} is not a leadership`);
        return { result: { token: await held.proclaim(String(s.value)) } };
      }
      case "check_hold": {
        const held = this.held(s);
        return { result: { lost: held.lost.aborted, token: held.token, safe_ms: Math.floor(held.safeUntil() - performance.now()) } };
      }
      case "wait_lost": {
        const held = this.held(s);
        const timeout = num("timeout_ms", 30_000)!;
        const seen = await new Promise<boolean>((res) => {
          if (held.lost.aborted) return res(true);
          const t = setTimeout(() => res(false), timeout);
          held.lost.addEventListener("abort", () => { clearTimeout(t); res(true); }, { once: true });
        });
        if (!seen) throw new StepFailure(`the loss signal was not set within ${timeout} ms`);
        return { result: { lost: true, safe_ms: Math.floor(held.safeUntil() - performance.now()) } };
      }
      case "status":
        return { result: await this.status(label, String(s.name)) };
      case "semaphore_status": {
        const st = await this.client(label).semaphoreStatus(String(s.name));
        return { result: { limit: st.limit, permits: st.permits?.length ?? 0, waiters: st.waiters } };
      }
      case "election_status": {
        const st = await this.client(label).electionStatus(String(s.name));
        return { result: { elected: st.elected, owner: st.owner ?? "", value: st.value ?? "", token: st.token } };
      }
      case "history": {
        const h = await this.client(label).history(String(s.name));
        const ev = h.events ?? [];
        return { result: { grants: ev.filter((e) => e.kind === "granted").length, events: ev.length, last_kind: ev.length ? ev[ev.length - 1].kind : "" } };
      }
      case "wait_status": {
        const until = s.until as Obj;
        const timeout = num("timeout_ms", 30_000)!;
        let last: Obj = {};
        await waitFor(async () => {
          last = await this.status(label, String(s.name));
          return this.mismatch(until, last) === undefined;
        }, timeout, () => `status never matched ${JSON.stringify(until)}; last ${JSON.stringify(last)}`).catch((e: Error) => {
          throw new StepFailure(e.message);
        });
        return { result: last };
      }
      case "fenced_write": {
        const st = this.store(String(s.store));
        const resource = String(s.resource);
        st.guard.do(resource, Number(s.token), (db) => {
          db.prepare("INSERT INTO kv (resource, value) VALUES (?, ?) ON CONFLICT (resource) DO UPDATE SET value = excluded.value").run(resource, String(s.value));
        });
        return { result: {} };
      }
      case "read_store": {
        const row = this.store(String(s.store)).db.prepare("SELECT value FROM kv WHERE resource = ?").get(String(s.resource)) as { value: string } | undefined;
        return { result: { value: row?.value ?? "" } };
      }
      case "fault": {
        const p = this.proxy(label);
        p.arm({ kind: s.kind as "unknown_outcome" | "drop", method: String(s.method), pathPrefix: String(s.path_prefix), count: num("count", 1)! });
        return { result: {} };
      }
      case "proxy_log":
        return { result: this.proxy(label).count(String(s.method), String(s.path_prefix)) };
      case "stop_all":
        this.cluster.stopAll();
        return { result: {} };
      case "cont_all":
        this.cluster.contAll();
        return { result: {} };
      case "kill_leader":
        return { result: { node: await this.cluster.killLeader() } };
      case "restart":
        this.cluster.restart();
        this.cs.b?.restart();
        return { result: {} };
      case "wait_leader":
        try {
          return { result: { node: await this.cluster.waitLeader(num("timeout_ms", 20_000)) } };
        } catch (e) {
          throw new StepFailure((e as Error).message.split("\n")[0]);
        }
      case "pause":
        await new Promise((r) => setTimeout(r, num("ms", 0)));
        return { result: {} };
      default:
        throw new StepFailure(`unknown op ${JSON.stringify(s.op)}: this runner is out of date`);
    }
  }

  private async status(label: string, name: string): Promise<Obj> {
    const st = await this.anyClient(label).status(name);
    return {
      held: st.held,
      token: st.token ?? 0,
      holder_count: st.holder_count ?? 0,
      waiters: st.waiters ?? 0,
      owner: st.owner ?? "",
      mode: st.held ? st.mode || "exclusive" : "",
      delay_ms: st.lock_delay_remaining_ms ?? 0,
    };
  }

  /** A step on a client that is a router (FORMAT.md, "routes"). */
  private async routerOp(r: Router, label: string, s: Obj): Promise<{ result: Obj; hold?: Hold }> {
    const name = String(s.name);
    const num = (k: string, d?: number): number | undefined => (s[k] === undefined ? d : Number(s[k]));
    switch (s.op) {
      case "lock": {
        const held = await r.lock(name, { ttl: num("ttl_ms"), wait: num("wait_ms", 0), owner: s.owner === undefined ? undefined : String(s.owner), lease: this.lease(s.lease === undefined ? undefined : String(s.lease)) });
        return { result: { token: held.token }, hold: { held, client: label } };
      }
      case "acquire": {
        const grant = await r.acquire(name, { ttl: num("ttl_ms"), owner: s.owner === undefined ? undefined : String(s.owner) });
        return { result: { token: grant.token }, hold: { grant, client: label } };
      }
      case "lease":
        return { result: {}, hold: { lease: await r.newLease(name, num("ttl_ms", 10_000)), client: label } };
      case "release_token":
        await r.release(name, this.leaseIdOf(this.hold(s)), Number(s.token));
        return { result: {} };
      case "status":
        return { result: await this.status(label, name) };
      default:
        throw new StepFailure(`op ${JSON.stringify(s.op)} is not one a router client runs (FORMAT.md)`);
    }
  }

  private store(label: string) {
    let st = this.stores.get(label);
    if (!st) {
      const db = new Database(join(this.tmp, `${label}.db`), { timeout: 10_000 });
      const guard = new SQLiteGuard(db);
      guard.createTable();
      db.exec("CREATE TABLE IF NOT EXISTS kv (resource TEXT PRIMARY KEY, value TEXT NOT NULL)");
      this.stores.set(label, (st = { guard, db }));
    }
    return st;
  }

  private proxy(label: string): FaultProxies {
    const p = this.proxies.get(label);
    if (!p) throw new StepFailure(`client ${label} has no fault proxy (it needs "proxy": true)`);
    return p;
  }

  /** Runs op and captures its outcome; a StepFailure (or any non-client error) propagates. */
  async outcome(step: Obj): Promise<Outcome> {
    try {
      const r = await this.op(step);
      return { ok: true, ...r };
    } catch (err) {
      if (err instanceof RaftlockError) return { ok: false, code: err.code, message: err.message };
      throw err;
    }
  }

  /** Why result does not match want, or undefined when it does. */
  mismatch(want: Obj, result: Obj): string | undefined {
    for (const [field, w0] of Object.entries(want)) {
      const w = this.ref(w0);
      const got = result[field];
      if (w !== null && typeof w === "object" && !Array.isArray(w) && Object.keys(w).length === 1 && ["eq", "ne", "gt", "ge", "lt", "le"].includes(Object.keys(w)[0])) {
        const [m, v0] = Object.entries(w)[0];
        const v = Number(this.ref(v0));
        const g = Number(got);
        const ok = typeof got === "number" && { eq: g === v, ne: g !== v, gt: g > v, ge: g >= v, lt: g < v, le: g <= v }[m];
        if (!ok) return `${field} = ${JSON.stringify(got)}, want ${m} ${v}`;
      } else if (JSON.stringify(got) !== JSON.stringify(w)) {
        return `${field} = ${JSON.stringify(got)}, want ${JSON.stringify(w)}`;
      }
    }
    return undefined;
  }

  /** Checks an outcome against expect; returns why it fails, or undefined. */
  check(expect: Obj | undefined, o: Outcome): string | undefined {
    const e = expect ?? { ok: true };
    const got = o.ok ? "ok" : o.code;
    if (e.error !== undefined) return o.ok ? `succeeded, want error ${e.error}` : o.code === e.error ? undefined : `error ${o.code} (${o.message}), want ${e.error}`;
    if (e.one_of !== undefined) return (e.one_of as string[]).includes(got) ? undefined : `${o.ok ? "succeeded" : `error ${o.code} (${o.message})`}, want one of ${JSON.stringify(e.one_of)}`;
    if (!o.ok) return `error ${o.code}: ${o.message}`;
    return e.result ? this.mismatch(e.result as Obj, o.result) : undefined;
  }

  /** Runs the steps; throws a StepFailure naming the step that failed. */
  async steps(steps: Obj[]): Promise<void> {
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i];
      const where = `step ${i + 1} (${step.op})`;
      try {
        if (step.op === "await") {
          const label = String(step.step);
          const bg = this.background.get(label);
          if (!bg) throw new StepFailure(`no background step labelled ${label}`);
          const timeout = Number(step.timeout_ms ?? 30_000);
          const o = await Promise.race([bg, new Promise<undefined>((r) => setTimeout(() => r(undefined), timeout))]);
          if (o === undefined) throw new StepFailure(`background step ${label} did not end within ${timeout} ms`);
          this.record(label, o);
          const why = this.check(step.expect as Obj | undefined, o);
          if (why) throw new StepFailure(why);
          continue;
        }
        if (step.background) {
          if (!step.as) throw new StepFailure("a background step needs `as`");
          const p = this.outcome(step).catch((err: unknown) => ({ ok: false as const, code: "runner_failure", message: String((err as Error)?.message ?? err) }));
          this.background.set(String(step.as), p);
          continue;
        }
        const o = await this.outcome(step);
        const why = this.check(step.expect as Obj | undefined, o);
        if (why) throw new StepFailure(why);
        if (step.as) this.record(String(step.as), o);
      } catch (err) {
        throw new StepFailure(`${where}: ${(err as Error).message}`);
      }
    }
  }

  private record(label: string, o: Outcome): void {
    if (!o.ok) return;
    this.results.set(label, o.result);
    if (o.hold) this.holds.set(label, o.hold);
  }
}

async function main(): Promise<number> {
  const dir = scenarioDir();
  const only = (process.env.RAFTLOCK_CONFORMANCE_ONLY ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  if (!existsSync(dir)) {
    console.error(`conformance: ${dir} does not exist (set RAFTLOCK_CONFORMANCE_DIR to the clients/conformance directory)`);
    return 1;
  }
  const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort();
  if (files.length === 0) {
    console.error(`conformance: no scenario files in ${dir}`);
    return 1;
  }
  const scenarios = files.map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as Scenario);
  const cluster = await Cluster.start();
  const cs: Clusters = { a: cluster };
  let failed = 0;
  let ran = 0;
  try {
    await cluster.waitProtocol(3);
    for (const sc of scenarios) {
      if (only.length && !only.includes(sc.name)) continue;
      if (sc.skip?.includes(RUNNER)) {
        console.log(`SKIP ${sc.name} (skip lists ${RUNNER})`);
        if (process.env.CI === "true") failed++;
        continue;
      }
      ran++;
      const t0 = performance.now();
      if (cs.b === undefined && JSON.stringify(sc.clients ?? {}).includes('"b1"')) {
        cs.b = await Cluster.start({ n: 1, prefix: "b", extra: ["--snapshot-threshold", "1", "--snapshot-interval", "100ms"] });
        await cs.b.waitProtocol(3);
      }
      const run = new Run(cs);
      let why: string | undefined;
      try {
        await run.setup(sc.clients);
        await Promise.race([
          run.steps(sc.steps),
          new Promise((_, rej) => setTimeout(() => rej(new StepFailure("the scenario did not end within 120 s")), 120_000).unref()),
        ]);
      } catch (err) {
        why = (err as Error).message;
      }
      await run.teardown();
      const secs = ((performance.now() - t0) / 1000).toFixed(1);
      if (why === undefined) console.log(`PASS ${sc.name} (${secs}s)`);
      else {
        failed++;
        console.log(`FAIL ${sc.name}: ${why} (${secs}s)`);
        console.log(cluster.logTail());
      }
      try {
        await cluster.restore();
        await cs.b?.restore();
      } catch (err) {
        console.log(`cluster: could not restore after ${sc.name}: ${(err as Error).message}`);
        failed++;
        break;
      }
    }
  } finally {
    cluster.close();
    cs.b?.close();
  }
  console.log(`${ran - failed >= 0 ? ran - failed : 0}/${ran} scenarios passed (${dir})`);
  return failed > 0 || ran === 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`conformance: ${(err as Error).stack ?? err}`);
    process.exit(1);
  },
);
