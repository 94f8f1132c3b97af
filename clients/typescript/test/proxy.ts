/**
 * The fault proxy of clients/conformance/FORMAT.md: one HTTP/1.1 server per node, on a free
 * loopback port, forwarding every request to its node and relaying the answer. The proxies
 * of one client share a request log and a fault list; a request matching an armed fault is
 * forwarded (the cluster applies it), its answer read and thrown away, and the client gets
 * a 503 unknown_outcome, or a closed connection.
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** One logged request. */
export interface LoggedRequest {
  method: string;
  path: string;
  requestId?: string;
}

/** An armed fault. */
export interface Fault {
  /**
   * unknown_outcome and drop as FORMAT.md says; too_many_requests (an extension for this
   * package's own tests) answers 429 with Retry-After: retryAfter seconds WITHOUT forwarding, as
   * a node at its limit of held requests does (nothing was proposed).
   */
  kind: "unknown_outcome" | "drop" | "too_many_requests";
  retryAfter?: number;
  method: string;
  pathPrefix: string;
  count: number;
}

/** The shared state and servers of one client's proxies. */
export class FaultProxies {
  readonly log: LoggedRequest[] = [];
  readonly faults: Fault[] = [];
  private readonly servers: http.Server[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly agent = new http.Agent({ keepAlive: true });
  readonly endpoints: string[] = [];

  /** Starts one proxy in front of each target ("http://127.0.0.1:PORT"). */
  static async start(targets: string[]): Promise<FaultProxies> {
    const p = new FaultProxies();
    for (const t of targets) await p.listen(new URL(t));
    return p;
  }

  /** Arms a fault. */
  arm(f: Fault): void {
    this.faults.push({ ...f });
  }

  /** Counts logged requests of method whose path starts with prefix. */
  count(method: string, prefix: string): { requests: number; distinct_request_ids: number; without_request_id: number } {
    const hits = this.log.filter((r) => r.method === method && r.path.startsWith(prefix));
    const ids = new Set(hits.filter((r) => r.requestId).map((r) => r.requestId));
    return { requests: hits.length, distinct_request_ids: ids.size, without_request_id: hits.filter((r) => !r.requestId).length };
  }

  private listen(target: URL): Promise<void> {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => this.handle(target, req, res, Buffer.concat(chunks)));
    });
    server.on("connection", (s) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
    this.servers.push(server);
    return new Promise((resolve) => server.listen(0, "127.0.0.1", () => {
      this.endpoints.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      resolve();
    }));
  }

  private handle(target: URL, req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): void {
    const path = (req.url ?? "/").split("?")[0];
    const method = req.method ?? "GET";
    let requestId: string | undefined;
    try {
      const j = JSON.parse(body.toString("utf8")) as { request_id?: unknown };
      if (typeof j?.request_id === "string" && j.request_id !== "") requestId = j.request_id;
    } catch {
      // no JSON body
    }
    this.log.push({ method, path, requestId });
    const fault = this.faults.find((f) => f.count > 0 && f.method === method && path.startsWith(f.pathPrefix));
    if (fault) fault.count--;
    if (fault?.kind === "too_many_requests") {
      const b = JSON.stringify({ error: { code: "too_many_requests", message: "test fault: this node holds its limit of requests" } });
      res.writeHead(429, { "content-type": "application/json", "retry-after": String(fault.retryAfter ?? 1), "content-length": Buffer.byteLength(b) });
      res.end(b);
      return;
    }
    const headers = { ...req.headers, host: target.host };
    const up = http.request(
      { host: target.hostname, port: target.port, method, path: req.url, headers, agent: this.agent },
      (ures) => {
        const parts: Buffer[] = [];
        ures.on("data", (c: Buffer) => parts.push(c));
        ures.on("end", () => {
          if (fault?.kind === "unknown_outcome") {
            const b = JSON.stringify({ error: { code: "unknown_outcome", message: "conformance fault: the answer was dropped" } });
            res.writeHead(503, { "content-type": "application/json", "retry-after": "0", "content-length": Buffer.byteLength(b) });
            res.end(b);
          } else if (fault?.kind === "drop") {
            req.socket.destroy();
          } else {
            res.writeHead(ures.statusCode ?? 502, ures.headers);
            res.end(Buffer.concat(parts));
          }
        });
        ures.on("error", () => req.socket.destroy());
      },
    );
    up.on("error", () => req.socket.destroy()); // the node is down: so is its proxy, to the client
    up.end(body);
  }

  /** Stops the proxies. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.agent.destroy();
    await Promise.all(this.servers.map((s) => new Promise((r) => s.close(r))));
  }
}
