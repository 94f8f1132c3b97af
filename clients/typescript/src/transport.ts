/**
 * The HTTP transport: one request, once, to one endpoint, on node:http / node:https with
 * keep-alive agents.
 *
 * Why not the global fetch: in Node 20, fetch (undici) takes a private CA or a client
 * certificate only through an undici `dispatcher`, and undici's Agent is not importable
 * without installing the undici package, which would be a runtime dependency. The
 * NODE_EXTRA_CA_CERTS variable works for fetch, but only for the whole process, set
 * before it starts, and it has no client certificate. node:https takes `ca`, `cert` and
 * `key` per agent, so each Client has its own trust. One transport serves both schemes,
 * so that plain HTTP and TLS fail, time out and are retried the same way; and node:http
 * tells a connection that was never made (nothing can have been applied; the error says so)
 * from one that failed after the request may have been sent, which fetch folds into one
 * TypeError.
 */
import * as http from "node:http";
import * as https from "node:https";
import {
  AbortedError,
  ErrorOptions,
  PermissionDeniedError,
  RaftlockError,
  ServerError,
  TLSError,
  UnauthenticatedError,
  UnavailableError,
  UnreachableError,
  errorFor,
} from "./errors.js";

/** A TLS configuration: PEM contents (strings or Buffers), not file names. */
export interface TLSOptions {
  /** The cluster's CA certificate(s); absent means Node's default roots. */
  ca?: string | Buffer;
  /** A client certificate, offered when the cluster asks for one (both cert and key, or neither). */
  cert?: string | Buffer;
  /** The client certificate's private key. */
  key?: string | Buffer;
  /** The name to verify the servers' certificates against, when it is not the endpoint's host. */
  servername?: string;
}

/** @internal An answered exchange. */
export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** @internal Why an exchange failed without an answer. */
export class TransportFailure extends Error {
  /** The connection was never made: the request cannot have reached the server. */
  readonly notSent: boolean;
  /** The TLS handshake failed for a reason retrying will not fix. */
  readonly tls: boolean;
  /** The attempt's own timeout ended it. */
  readonly timedOut: boolean;

  constructor(message: string, opts: { notSent: boolean; tls: boolean; timedOut: boolean; cause?: unknown }) {
    super(message, { cause: opts.cause });
    this.notSent = opts.notSent;
    this.tls = opts.tls;
    this.timedOut = opts.timedOut;
  }
}

/** The most of an answer the client reads. */
const maxAnswerBytes = 16 << 20;

/** Error codes of a certificate or handshake that will not verify however often we try. */
const tlsCodes = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_SIGNATURE_FAILURE",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "EPROTO",
]);

function isTLSCode(code: string | undefined): boolean {
  return code !== undefined && (tlsCodes.has(code) || code.startsWith("ERR_SSL_"));
}

/** Codes of a connection that failed before it was made. */
const dialCodes = new Set(["ECONNTIMEOUT", "ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL"]);

/** How long connecting to one endpoint may take (as the Go client's dialer), ms. */
export const CONNECT_TIMEOUT_MS = 2000;

/** @internal Keep-alive agents of one client, one per scheme. */
export class Agents {
  readonly http: http.Agent;
  readonly https: https.Agent;
  readonly #tls: TLSOptions | undefined;

  /** The TLS options of a request made without an agent (a stream). */
  tlsOptions(): https.RequestOptions {
    const t = this.#tls;
    return { minVersion: "TLSv1.2", ca: t?.ca, cert: t?.cert, key: t?.key, servername: t?.servername };
  }

  constructor(tls?: TLSOptions) {
    this.#tls = tls;
    this.http = new http.Agent({ keepAlive: true, maxSockets: 64 });
    this.https = new https.Agent({
      keepAlive: true,
      maxSockets: 64,
      minVersion: "TLSv1.2",
      ca: tls?.ca,
      cert: tls?.cert,
      key: tls?.key,
      servername: tls?.servername,
    });
  }

  /** Closes the idle connections. */
  destroy(): void {
    this.http.destroy();
    this.https.destroy();
  }
}

/**
 * @internal
 * Sends one request. It resolves with any answer (any status) and rejects with a
 * TransportFailure when there is none: the signal ended it (timedOut when timeout, the
 * attempt's own timer, is the one that fired), the connection failed, or the answer broke
 * off. The error message names the endpoint's origin only, never the path or the body.
 */
export function send(
  agents: Agents,
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  signal: AbortSignal,
  timeout: AbortSignal,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const isTLS = url.protocol === "https:";
    const mod = isTLS ? https : http;
    let connected = false; // the connection was made (TLS included): the request may have been sent
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      const e = err as NodeJS.ErrnoException;
      const timedOut = timeout.aborted;
      const aborted = signal.aborted || timedOut;
      const code = e?.code;
      const tlsFail = !aborted && isTLS && isTLSCode(code);
      const notSent = !connected && (aborted || tlsFail || (code !== undefined && dialCodes.has(code)));
      const what = aborted ? (timedOut ? "timed out" : "aborted") : `${code ?? ""} ${e?.message ?? String(err)}`.trim();
      reject(new TransportFailure(`${url.origin}: ${what}`, { notSent, tls: tlsFail, timedOut, cause: err }));
    };
    const h = { ...headers };
    if (body !== undefined) h["content-length"] = String(Buffer.byteLength(body));
    let req: http.ClientRequest;
    try {
      req = mod.request(url, { method, headers: h, agent: isTLS ? agents.https : agents.http, signal });
    } catch (err) {
      fail(err);
      return;
    }
    req.on("socket", (s) => {
      if (req.reusedSocket) {
        connected = true; // a kept-alive connection
        return;
      }
      // A node that drops SYNs must cost a connect timeout, not the attempt's whole timeout.
      const ct = setTimeout(() => {
        if (!connected) req.destroy(Object.assign(new Error(`connect timed out after ${CONNECT_TIMEOUT_MS} ms`), { code: "ECONNTIMEOUT" }));
      }, CONNECT_TIMEOUT_MS);
      ct.unref();
      s.once("close", () => clearTimeout(ct));
      s.once(isTLS ? "secureConnect" : "connect", () => {
        connected = true;
        clearTimeout(ct);
      });
    });
    req.on("error", fail);
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      let n = 0;
      res.on("data", (c: Buffer) => {
        n += c.length;
        if (n > maxAnswerBytes) {
          req.destroy(new Error(`the answer is larger than ${maxAnswerBytes} bytes`));
          return;
        }
        chunks.push(c);
      });
      res.on("error", fail);
      res.on("aborted", () => fail(new Error("the answer broke off")));
      res.on("end", () => {
        if (settled) return;
        settled = true;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") });
      });
    });
    req.end(body);
  });
}

/**
 * @internal
 * Opens a streaming GET (the event stream): resolves with the answer once its head came, its
 * body unread (a 200), or with the whole (bounded) body of an error answer. Rejects with a
 * TransportFailure as send does. The stream ends when signal aborts.
 */
export function openStream(
  agents: Agents,
  url: URL,
  headers: Record<string, string>,
  signal: AbortSignal,
  headTimeoutMs: number,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; stream?: http.IncomingMessage; body: string }> {
  return new Promise((resolve, reject) => {
    const isTLS = url.protocol === "https:";
    const mod = isTLS ? https : http;
    let settled = false;
    const head = AbortSignal.timeout(headTimeoutMs);
    const both = AbortSignal.any([signal, head]);
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      const e = err as NodeJS.ErrnoException;
      const timedOut = head.aborted && !signal.aborted;
      const what = signal.aborted ? "aborted" : timedOut ? "timed out" : `${e?.code ?? ""} ${e?.message ?? String(err)}`.trim();
      const tlsFail = !signal.aborted && isTLS && isTLSCode(e?.code);
      reject(new TransportFailure(`${url.origin}: ${what}`, { notSent: false, tls: tlsFail, timedOut, cause: err }));
    };
    let req: http.ClientRequest;
    try {
      // No agent: a stream holds its connection for as long as it runs.
      req = mod.request(url, { method: "GET", headers, agent: false, signal: both, ...(isTLS ? agents.tlsOptions() : {}) });
    } catch (err) {
      fail(err);
      return;
    }
    req.on("error", fail);
    req.on("response", (res) => {
      if (res.statusCode === 200) {
        settled = true;
        // From now on only the caller's signal ends the stream (the head came in time).
        const onAbort = () => req.destroy();
        if (signal.aborted) onAbort();
        else signal.addEventListener("abort", onAbort, { once: true });
        res.once("close", () => signal.removeEventListener("abort", onAbort));
        resolve({ status: 200, headers: res.headers, stream: res, body: "" });
        return;
      }
      const chunks: Buffer[] = [];
      let n = 0;
      res.on("data", (c: Buffer) => {
        n += c.length;
        if (n <= 1 << 20) chunks.push(c);
      });
      res.on("error", fail);
      res.on("end", () => {
        if (settled) return;
        settled = true;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") });
      });
    });
    req.end();
  });
}

// ---------------------------------------------------------------------- the retry engine

/** @internal One request as the retry engine sends it. */
export interface Req {
  op: string;
  method: string;
  path: string;
  query?: URLSearchParams;
  /** The JSON body of the next attempt (called per attempt: a wait sends what remains). */
  body?: () => unknown;
  /** The server-side wait of the next attempt, added to the attempt timeout. */
  waitMs?: () => number;
  attemptTimeoutMs?: number;
  maxBackoffMs?: number;
  /** Values that must not show in an error text (lease IDs, request IDs). */
  secrets?: string[];
}

/** @internal Where a call stands: its signal (the caller's, or the deadline's) and its deadline on the monotonic clock. */
export interface Scope {
  signal: AbortSignal;
  deadline: number;
}

/** @internal The outcome of a call: ok with the answer, or the error and how many attempts it took. */
export type Outcome<T> =
  | { ok: true; out: T; sent: number; first: number; attempts: number }
  | { ok: false; err: RaftlockError; sent: number; first: number; attempts: number };

/** @internal The options the engine takes from the client's. */
export interface TransportOptions {
  endpoints: string[];
  timeoutMs: number;
  deadlineMs: number;
  minBackoffMs: number;
  maxBackoffMs: number;
  token?: string;
  tls?: TLSOptions;
  logger?: (level: "debug" | "warn", msg: string) => void;
}

const leaderHeader = "x-raftlock-leader";

/** Parses Retry-After: delay-seconds or an HTTP date; 0 for absent, malformed or past. */
export function parseRetryAfter(v: string | undefined, nowWall = Date.now()): number {
  if (v === undefined) return 0;
  v = v.trim();
  if (v === "") return 0;
  if (/^\d+$/.test(v)) return Math.min(Number(v), 24 * 3600) * 1000;
  const t = Date.parse(v);
  return Number.isFinite(t) && t > nowWall ? t - nowWall : 0;
}

/** @internal A pause drawn at random from the upper half of backoff: jitter spreads clients out. */
export function upperHalf(backoff: number): number {
  return backoff / 2 + Math.random() * (backoff / 2);
}

/** @internal Waits ms or until signal aborts; reports whether the whole pause passed. */
export function sleep(d: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, d);
    const onAbort = () => {
      clearTimeout(t);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** @internal Whether another endpoint, or a later attempt, may answer differently: the error's retry class is not "never". */
export function retryable(err: RaftlockError): boolean {
  return err.retryClass !== "never";
}

/** @internal A secret shortened for messages: its first six characters. */
export function redactID(id: string): string {
  return id.length <= 6 ? "…" : id.slice(0, 6) + "…";
}

const monotonic = (): number => performance.now();

/**
 * @internal
 * The retry engine every call goes through (the Go client's client/retry.go and
 * attempt.go; Java's and Python's transports): endpoint failover starting with the
 * preferred endpoint (the last that answered, or the leader a follower named), backoff with
 * jitter between rounds, Retry-After, the call's deadline, and the mapping of answers to the
 * library's errors. Internal to the package: the Client owns one.
 */
export class Transport {
  readonly endpoints: readonly string[];
  readonly timeoutMs: number;
  readonly deadlineMs: number;
  readonly minBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly agents: Agents;
  #authHeader: string | undefined;
  #tokenSecret: string | undefined;
  #logger: ((level: "debug" | "warn", msg: string) => void) | undefined;
  #preferred = 0;

  constructor(o: TransportOptions) {
    this.endpoints = o.endpoints;
    this.timeoutMs = o.timeoutMs;
    this.deadlineMs = o.deadlineMs;
    this.minBackoffMs = o.minBackoffMs;
    this.maxBackoffMs = o.maxBackoffMs;
    if (o.token) {
      this.#tokenSecret = o.token;
      this.#authHeader = `Bearer ${o.token}`;
    }
    this.#logger = o.logger;
    this.agents = new Agents(o.tls);
  }

  get hasToken(): boolean {
    return this.#authHeader !== undefined;
  }

  get preferred(): number {
    return this.#preferred;
  }

  log(level: "debug" | "warn", msg: string): void {
    this.#logger?.(level, msg);
  }

  /** The signal and deadline of a call: the caller's signal, else deadlineMs, on top of extraMs of wait. */
  scope(signal: AbortSignal | undefined, extraMs: number): Scope {
    if (signal !== undefined) return { signal, deadline: Infinity };
    const total = this.deadlineMs + extraMs;
    if (!Number.isFinite(total)) return { signal: new AbortController().signal, deadline: Infinity };
    return { signal: AbortSignal.timeout(Math.ceil(total)), deadline: monotonic() + total };
  }

  redact(r: { secrets?: string[] }, s: string): string {
    if (this.#tokenSecret) s = s.split(this.#tokenSecret).join("[token]");
    for (const v of r.secrets ?? []) if (v && v.length >= 8) s = s.split(v).join(redactID(v));
    return s;
  }

  /**
   * Sends r until an endpoint answers with anything but no_leader, unknown_outcome or
   * too_many_requests, or the scope ends. Each round tries every endpoint once, starting with
   * the preferred one; between rounds it pauses for a jittered, doubling backoff, or the
   * Retry-After of a too_many_requests answer when longer. A round in which every endpoint
   * failed the TLS handshake ends the call: waiting cannot fix a misconfiguration.
   */
  async tryDo<T>(r: Req, scope: Scope): Promise<Outcome<T>> {
    const n = this.endpoints.length;
    let idx = this.#preferred;
    const maxBackoff = r.maxBackoffMs ?? this.maxBackoffMs;
    let backoff = Math.min(this.minBackoffMs, maxBackoff);
    let attempts = 0;
    let first = 0;
    let last: RaftlockError | undefined;
    const seen: Record<string, string> = {}; // each endpoint's last error, for UnreachableError
    const failed = (err: RaftlockError, sent: number): Outcome<T> => ({ ok: false, err, sent, first, attempts });
    for (;;) {
      let throttled = 0;
      let tlsFails = 0;
      for (let i = 0; i < n; i++) {
        const ep = (idx + i) % n;
        if (scope.signal.aborted) return failed(this.abortErr(r.op, scope, last, seen), 0);
        attempts++;
        const a = await this.attempt<T>(ep, r, scope);
        if (attempts === 1) first = a.sent;
        if (a.err === undefined) return { ok: true, out: a.out as T, sent: a.sent, first, attempts };
        const err = a.err;
        if (!retryable(err)) return failed(err, a.sent);
        last = err;
        seen[this.endpoints[ep]] = err.message.startsWith(`${r.op}: `) ? err.message.slice(r.op.length + 2) : err.message;
        if (scope.signal.aborted) return failed(this.abortErr(r.op, scope, last, seen), a.sent);
        if (err instanceof TLSError) tlsFails++;
        if (err.retryClass === "after_delay") {
          // The node is busy, not gone: wait as it asked before asking again.
          throttled = Math.max(err.retryAfterMs ?? 0, 1);
          this.log("debug", `${r.op}: throttled by ${this.endpoints[ep]}, retrying after ${throttled} ms`);
          break;
        }
        this.log("debug", `${r.op}: ${err.message}; trying the next endpoint`);
        this.#preferred = (ep + 1) % n;
      }
      if (tlsFails === n && last) return failed(last, 0);
      idx = this.#preferred;
      let pause = upperHalf(backoff);
      if (throttled > 0) {
        pause = Math.max(pause, throttled);
        if (scope.deadline - monotonic() < pause && last) return failed(last, 0); // it cannot be served before the caller gives up
      }
      if (!(await sleep(pause, scope.signal))) return failed(this.abortErr(r.op, scope, last, seen), 0);
      backoff = Math.min(2 * backoff, maxBackoff);
    }
  }

  /** Like tryDo, but throws the error. */
  async do<T>(r: Req, scope: Scope): Promise<{ out: T; sent: number; first: number; attempts: number }> {
    const o = await this.tryDo<T>(r, scope);
    if (!o.ok) throw o.err;
    return o;
  }

  private abortErr(op: string, scope: Scope, last: RaftlockError | undefined, seen: Record<string, string> = {}): AbortedError | UnreachableError {
    const reason = scope.signal.reason as { name?: string; message?: string } | undefined;
    if (reason?.name === "TimeoutError" && last instanceof UnavailableError) {
      // The call's deadline passed with no endpoint answering: name every endpoint's error.
      const parts = this.endpoints.map((e) => `${e}: ${seen[e] ?? "not tried before the deadline"}`).join("; ");
      return new UnreachableError("unavailable", `${op}: no endpoint answered before the deadline (${parts})`, { cause: last, errors: seen });
    }
    const why = reason?.name === "TimeoutError" ? "the call's deadline passed" : `aborted${reason?.message ? `: ${reason.message}` : ""}`;
    return new AbortedError("aborted", `${op}: ${why}${last ? `; last error: ${last.message}` : ""}`, { cause: last ?? scope.signal.reason });
  }

  private url(ep: number, path: string, query?: URLSearchParams): URL {
    return new URL(this.endpoints[ep] + path + (query && [...query].length > 0 ? `?${query}` : ""));
  }

  private headers(): Record<string, string> {
    const h: Record<string, string> = { accept: "application/json" };
    if (this.#authHeader) h["authorization"] = this.#authHeader;
    return h;
  }

  /** The library error of an error answer (status, headers, body) to r from base. */
  errorOf(r: { op: string; secrets?: string[] }, base: string, ans: { status: number; headers: http.IncomingHttpHeaders; body: string }): RaftlockError {
    const status = `${ans.status}`;
    const ra = ans.headers["retry-after"];
    const eo: ErrorOptions = { status: ans.status, retryAfterMs: parseRetryAfter(typeof ra === "string" ? ra : undefined) || undefined };
    let code: string | undefined;
    let message = "";
    try {
      const eb = JSON.parse(ans.body) as { error?: { code?: unknown; message?: unknown } } | null;
      // A code that is no string is no API answer: judged by the status below.
      code = typeof eb?.error?.code === "string" && eb.error.code !== "" ? eb.error.code : undefined;
      message = typeof eb?.error?.message === "string" ? eb.error.message : "";
    } catch {
      // not the API's error body: a proxy's page
    }
    if (code === undefined) {
      if ([502, 503, 504].includes(ans.status)) return new UnavailableError("unavailable", `${r.op}: ${base} answered ${status}`, eo);
      if (ans.status === 401) return new UnauthenticatedError("unauthenticated", `${r.op}: ${base} answered ${status}`, eo);
      if (ans.status === 403) return new PermissionDeniedError("permission_denied", `${r.op}: ${base} answered ${status}`, eo);
      return new ServerError("internal", `${r.op}: ${base} answered ${status}: ${this.redact(r, ans.body.slice(0, 200))}`, eo);
    }
    return errorFor(code, `${r.op}: ${this.redact(r, message)}`, eo);
  }

  /** Sends r once to endpoint ep (client/attempt.go). */
  private async attempt<T>(ep: number, r: Req, scope: Scope): Promise<{ sent: number; out?: T; err?: RaftlockError }> {
    const base = this.endpoints[ep];
    let body: string | undefined;
    if (r.body) body = JSON.stringify(r.body());
    let timeout = r.attemptTimeoutMs ?? this.timeoutMs;
    if (r.waitMs) timeout += r.waitMs();
    const tsig = AbortSignal.timeout(Math.ceil(timeout));
    const signal = AbortSignal.any([scope.signal, tsig]);
    const headers = this.headers();
    if (body !== undefined) headers["content-type"] = "application/json";
    const sent = monotonic();
    let ans;
    try {
      ans = await send(this.agents, this.url(ep, r.path, r.query), r.method, headers, body, signal, tsig);
    } catch (e) {
      const f = e as TransportFailure;
      const msg = `${r.op}: ${this.redact(r, f.message)}${f.notSent ? " (the request was not sent)" : ""}`;
      if (f.tls) return { sent, err: new TLSError("tls", msg, { cause: f }) };
      return { sent, err: new UnavailableError("unavailable", msg, { cause: f }) };
    }
    this.noteAnswer(ep, ans.status, ans.headers);
    if (ans.status >= 200 && ans.status < 300) {
      try {
        return { sent, out: (ans.body === "" ? {} : JSON.parse(ans.body)) as T };
      } catch {
        return { sent, err: new ServerError("internal", `${r.op}: ${base} answered ${ans.status} with a body that is not the API's JSON`, { status: ans.status }) };
      }
    }
    return { sent, err: this.errorOf(r, base, ans) };
  }

  private noteAnswer(ep: number, status: number, headers: http.IncomingHttpHeaders): void {
    const leader = headers[leaderHeader];
    if (typeof leader === "string" && leader !== "") {
      // Prefer the endpoint whose host is the leader's HTTP address, to skip the forwarding hop.
      const i = this.endpoints.findIndex((e) => new URL(e).host === leader);
      if (i >= 0) this.#preferred = i;
    } else if (status < 500) this.#preferred = ep;
  }

  /**
   * Opens the event stream of r (a GET) on endpoint ep with extra headers: the body once a
   * 200 head came within the attempt timeout; an error answer throws its library error, a
   * failed connection UnavailableError.
   */
  async stream(ep: number, r: Req, extra: Record<string, string>, signal: AbortSignal): Promise<http.IncomingMessage> {
    const base = this.endpoints[ep];
    const headers = { ...this.headers(), accept: "text/event-stream", ...extra };
    let ans;
    try {
      ans = await openStream(this.agents, this.url(ep, r.path, r.query), headers, signal, this.timeoutMs);
    } catch (e) {
      const f = e as TransportFailure;
      const msg = `${r.op}: ${this.redact(r, f.message)}`;
      if (signal.aborted) throw new AbortedError("aborted", msg, { cause: f });
      throw f.tls ? new TLSError("tls", msg, { cause: f }) : new UnavailableError("unavailable", msg, { cause: f });
    }
    this.noteAnswer(ep, ans.status, ans.headers);
    if (ans.stream) return ans.stream;
    throw this.errorOf(r, base, ans);
  }

  /** Closes the idle connections. */
  destroy(): void {
    this.agents.destroy();
  }
}
