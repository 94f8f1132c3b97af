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

/** An answered exchange. */
export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** Why an exchange failed without an answer. */
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

/** Keep-alive agents of one client, one per scheme. */
export class Agents {
  readonly http: http.Agent;
  readonly https: https.Agent;

  constructor(tls?: TLSOptions) {
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
