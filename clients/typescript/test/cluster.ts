/**
 * A real three-node raftlock cluster of `raftlock serve` processes on free loopback ports,
 * started the way clients/conformance/FORMAT.md says ("Cluster and runner"): the flags of
 * scripts/cluster.sh, a fresh temporary directory, logs to DIR/nI.log. Used by the unit
 * tests and the conformance runner. Every wait has a deadline; close() kills every node.
 */
import { spawn, spawnSync, ChildProcess } from "node:child_process";
import https from "node:https";
import http from "node:http";
import { mkdtempSync, rmSync, existsSync, readFileSync, readdirSync, openSync, closeSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";

/** The raftlock binary: $RAFTLOCK_BIN, or bin/raftlock at the repository's root. */
export function raftlockBin(): string {
  if (process.env.RAFTLOCK_BIN) return resolve(process.env.RAFTLOCK_BIN);
  // build/test/cluster.js -> clients/typescript -> repository root
  const here = dirname(fileURLToPath(import.meta.url));
  return resolve(here, "..", "..", "..", "..", "bin", "raftlock");
}

/** Free loopback ports: bind port 0, read it, close. */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<ReturnType<typeof createServer>>((res, rej) => {
      const s = createServer();
      s.once("error", rej);
      s.listen(0, "127.0.0.1", () => res(s));
    })),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** Waits for cond with a deadline, polling every intervalMs; throws what() on timeout. */
export async function waitFor(cond: () => Promise<boolean> | boolean, timeoutMs: number, what: () => string, intervalMs = 50): Promise<void> {
  const end = performance.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (performance.now() > end) throw new Error(`timed out after ${timeoutMs} ms: ${what()}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

interface Node {
  id: string;
  http: number;
  raft: number;
  proc?: ChildProcess;
  stopped: boolean;
}

const live = new Set<Cluster>();
process.on("exit", () => {
  for (const c of live) c.killAll();
});
// An interrupted run (Ctrl-C, a timeout's SIGTERM) must not leave nodes behind either.
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.once(sig, () => {
    for (const c of live) c.close();
    process.exit(128 + (sig === "SIGINT" ? 2 : sig === "SIGTERM" ? 15 : 1));
  });
}

/** A running three-node cluster. */
export class Cluster {
  readonly dir: string;
  readonly nodes: Node[] = [];
  private readonly bin: string;
  /** With TLS: the directory of the development CA (ca.pem) and certificates (nI.pem, local.pem). */
  tlsDir?: string;
  private agent?: https.Agent;

  private constructor(dir: string, bin: string) {
    this.dir = dir;
    this.bin = bin;
  }

  private extra: string[] = [];

  /**
   * Starts n1..n3 (or `n` nodes named `${prefix}1`...) with `extra` serve flags and waits for
   * a ready leader.
   */
  static async start(opts: { tls?: boolean; n?: number; prefix?: string; extra?: string[] } = {}): Promise<Cluster> {
    const bin = raftlockBin();
    if (!existsSync(bin)) throw new Error(`${bin} not found: build it with 'go build -o bin/raftlock ./cmd/raftlock' (or set RAFTLOCK_BIN)`);
    const c = new Cluster(mkdtempSync(join(tmpdir(), "raftlock-ts-")), bin);
    live.add(c);
    if (opts.tls) {
      // The development CA and certificates, as scripts/cluster.sh --tls makes them.
      const dir = join(c.dir, "tls");
      const run = (...args: string[]) => {
        const r = spawnSync(bin, ["tls", ...args, "--dir", dir], { encoding: "utf8" });
        if (r.status !== 0) throw new Error(`raftlock tls ${args.join(" ")}: ${r.stderr}`);
      };
      run("ca");
      for (const id of ["n1", "n2", "n3"]) run("cert", "--node", id, "--ip", "127.0.0.1");
      run("cert", "--client", "local");
      c.tlsDir = dir;
      c.agent = new https.Agent({
        ca: readFileSync(join(dir, "ca.pem")),
        cert: readFileSync(join(dir, "local.pem")),
        key: readFileSync(join(dir, "local-key.pem")),
      });
    }
    const n = opts.n ?? 3;
    c.extra = opts.extra ?? [];
    const ports = await freePorts(2 * n);
    for (let i = 0; i < n; i++) c.nodes.push({ id: `${opts.prefix ?? "n"}${i + 1}`, http: ports[2 * i], raft: ports[2 * i + 1], stopped: false });
    try {
      for (const n of c.nodes) c.spawn(n);
      await c.waitLeader(30_000);
    } catch (err) {
      c.close();
      throw err;
    }
    return c;
  }

  /** The nodes' HTTP endpoints, in node order. */
  endpoints(): string[] {
    return this.nodes.map((n) => `${this.tlsDir ? "https" : "http"}://127.0.0.1:${n.http}`);
  }

  private spawn(n: Node): void {
    const bootstrap = this.nodes.map((m) => `${m.id}=127.0.0.1:${m.raft}`).join(",");
    const tlsFlags = this.tlsDir
      ? ["--tls-cert", join(this.tlsDir, `${n.id}.pem`), "--tls-key", join(this.tlsDir, `${n.id}-key.pem`), "--tls-ca", join(this.tlsDir, "ca.pem"), "--tls-client-auth", "require"]
      : [];
    const log = openSync(join(this.dir, `${n.id}.log`), "a");
    n.proc = spawn(
      this.bin,
      ["serve", "--id", n.id, "--http-addr", `127.0.0.1:${n.http}`, "--raft-addr", `127.0.0.1:${n.raft}`, "--data-dir", join(this.dir, n.id), "--bootstrap", bootstrap, ...tlsFlags, ...this.extra],
      { stdio: ["ignore", log, log] },
    );
    closeSync(log);
    n.stopped = false;
    const proc = n.proc;
    proc.once("exit", () => {
      if (n.proc === proc) n.proc = undefined;
    });
  }

  /** SIGSTOP to every running node: each hangs (the kernel accepts connections, nothing answers). */
  stopAll(): void {
    for (const n of this.nodes) if (n.proc && !n.stopped) {
      n.proc.kill("SIGSTOP");
      n.stopped = true;
    }
  }

  /** SIGCONT to every stopped node. */
  contAll(): void {
    for (const n of this.nodes) if (n.proc && n.stopped) {
      n.proc.kill("SIGCONT");
      n.stopped = false;
    }
  }

  /** SIGSTOP or SIGCONT to one node. */
  signal(id: string, sig: "SIGSTOP" | "SIGCONT"): void {
    const n = this.node(id);
    n.proc?.kill(sig);
    n.stopped = sig === "SIGSTOP";
  }

  node(id: string): Node {
    const n = this.nodes.find((m) => m.id === id);
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  /** The ID of the ready leader (FORMAT.md: leader_id is its own, and a linearizable read answers 200), or undefined. */
  async leader(): Promise<string | undefined> {
    for (const n of this.nodes) {
      if (!n.proc || n.stopped) continue;
      try {
        const base = `${this.tlsDir ? "https" : "http"}://127.0.0.1:${n.http}`;
        const r = await this.get(`${base}/v1/cluster`, 1000);
        if (r.status !== 200) continue;
        const body = JSON.parse(r.body) as { leader_id?: string };
        if (body.leader_id !== n.id) continue;
        const q = await this.get(`${base}/v1/locks?prefix=%00`, 2000);
        if (q.status === 200) return n.id;
      } catch {
        // not answering: try the next node
      }
    }
    return undefined;
  }

  /** A GET with the cluster's client certificate when TLS is on. */
  private get(url: string, timeoutMs: number): Promise<{ status: number; body: string }> {
    return new Promise((res, rej) => {
      const mod = url.startsWith("https:") ? https : http;
      const req = mod.get(url, { agent: this.agent, timeout: timeoutMs }, (r) => {
        let body = "";
        r.setEncoding("utf8");
        r.on("data", (c: string) => (body += c));
        r.on("end", () => res({ status: r.statusCode ?? 0, body }));
        r.on("error", rej);
      });
      req.on("timeout", () => req.destroy(new Error("timeout")));
      req.on("error", rej);
    });
  }

  /** Waits until a ready leader answers. */
  async waitLeader(timeoutMs = 20_000): Promise<string> {
    let id: string | undefined;
    await waitFor(async () => (id = await this.leader()) !== undefined, timeoutMs, () => `no ready leader; logs:\n${this.logTail()}`, 100);
    return id!;
  }

  /** SIGKILLs the ready leader and returns its ID. */
  async killLeader(): Promise<string> {
    const id = await this.waitLeader();
    const n = this.node(id);
    const proc = n.proc!;
    const exited = new Promise((r) => proc.once("exit", r));
    proc.kill("SIGKILL");
    await exited;
    return id;
  }

  /** SIGKILLs node id (stopped or not) and waits for it to exit. */
  async kill(id: string): Promise<void> {
    const n = this.node(id);
    const proc = n.proc;
    if (!proc) return;
    const exited = new Promise((r) => proc.once("exit", r));
    proc.kill("SIGKILL");
    await exited;
    n.stopped = false;
  }

  /** Waits until the leader answers protocol_version `v` or more. */
  async waitProtocol(v = 3, timeoutMs = 30_000): Promise<void> {
    await waitFor(async () => {
      const id = await this.leader();
      if (id === undefined) return false;
      const n = this.node(id);
      const r = await this.get(`${this.tlsDir ? "https" : "http"}://127.0.0.1:${n.http}/v1/cluster`, 1000).catch(() => undefined);
      return r !== undefined && r.status === 200 && ((JSON.parse(r.body) as { protocol_version?: number }).protocol_version ?? 0) >= v;
    }, timeoutMs, () => `protocol version ${v} not active`, 50);
  }

  /**
   * Waits (at most 20 s) until node id holds a snapshot at or above the index it has applied
   * now, kills it, starts it again and waits for a ready leader (FORMAT.md, snapshot_restart).
   */
  async snapshotRestart(id: string): Promise<void> {
    const n = this.node(id);
    const r = await this.get(`${this.tlsDir ? "https" : "http"}://127.0.0.1:${n.http}/v1/cluster`, 2000);
    const applied = (JSON.parse(r.body) as { applied_index: number }).applied_index;
    const dir = join(this.dir, id, "snapshots");
    let newest = 0;
    await waitFor(() => {
      newest = 0;
      if (existsSync(dir)) {
        for (const f of readdirSync(dir)) {
          const parts = f.split("-");
          if (!f.endsWith(".tmp") && parts.length === 3 && /^\d+$/.test(parts[1])) newest = Math.max(newest, Number(parts[1]));
        }
      }
      return newest >= applied;
    }, 20_000, () => `${id} holds no snapshot at or above index ${applied} (newest ${newest})`, 50);
    await this.kill(id);
    this.spawn(n);
    await this.waitLeader(20_000);
  }

  /** Starts again every killed node, with its data directory. */
  restart(): void {
    for (const n of this.nodes) if (!n.proc) this.spawn(n);
  }

  /** Back to three running nodes and a ready leader (after a scenario or a test). */
  async restore(): Promise<void> {
    this.contAll();
    this.restart();
    await this.waitLeader(30_000);
  }

  /** The last lines of every node's log. */
  logTail(lines = 15): string {
    return this.nodes
      .map((n) => {
        const f = join(this.dir, `${n.id}.log`);
        const text = existsSync(f) ? readFileSync(f, "utf8").trimEnd().split("\n").slice(-lines).join("\n") : "(no log)";
        return `--- ${n.id}\n${text}`;
      })
      .join("\n");
  }

  /** SIGKILLs every node at once (process exit). */
  killAll(): void {
    for (const n of this.nodes) {
      if (n.proc) {
        n.proc.kill("SIGCONT");
        n.proc.kill("SIGKILL");
      }
    }
  }

  /** Kills every node and removes the directory. */
  close(): void {
    this.killAll();
    this.agent?.destroy();
    live.delete(this);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
