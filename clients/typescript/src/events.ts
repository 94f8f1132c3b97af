/**
 * Watching lock events: GET /v1/events, Server-Sent Events, as an async iterator that
 * reconnects by itself with the last event ID (the Go client's client/watch.go).
 */
import type { IncomingMessage } from "node:http";
import { AbortedError, InvalidError, RaftlockError, ServerError } from "./errors.js";
import { retryable, sleep, Transport, upperHalf } from "./transport.js";
import type { HistoryEvent } from "./types.js";

/** Options of Client.watch. */
export interface WatchOptions {
  /** Start at this entry index (an older one than the node holds: IndexCompactedError); 0: from now on. */
  fromIndex?: number;
  /** Ends the watch when it aborts (as close()). */
  signal?: AbortSignal;
}

/** One lock event of a watch: its lock's `name`, the entry `index` (the stream's event ID), `kind`, `token`... */
export type LockEvent = HistoryEvent & { name: string };

/** The most one message of the stream may hold. */
const maxMessageBytes = 16 << 20;

/**
 * The lock events of the locks whose names start with a prefix, in log order:
 * `for await (const e of watch)`. After a disconnect (a node that stops, restarts or drops a
 * slow reader) it reconnects to the next endpoint with `Last-Event-ID` = the last entry index
 * received, so no event is lost or repeated while some node still holds the events since.
 * When the node reached no longer holds them (it restored a snapshot taken after that index),
 * the iteration rejects with IndexCompactedError and the watch ends: read the state you derive
 * from events (status, history), then watch again from now on. close() ends it.
 */
export class Watch implements AsyncIterable<LockEvent> {
  /** The prefix watched. */
  readonly prefix: string;
  readonly #t: Transport;
  readonly #ctl = new AbortController();
  readonly #from: number;
  #ep: number;
  #stream: IncomingMessage | undefined;
  #last: number | undefined;
  #iterating = false;

  /** @internal Made by Client.watch. */
  constructor(t: Transport, prefix: string, opts: WatchOptions) {
    const from = opts.fromIndex ?? 0;
    if (!Number.isSafeInteger(from) || from < 0) throw new InvalidError("invalid_argument", `watch: fromIndex ${from} is not an entry index`);
    this.#t = t;
    this.prefix = prefix;
    this.#from = from;
    this.#ep = t.preferred;
    if (from > 0) this.#last = from - 1;
    if (opts.signal) {
      if (opts.signal.aborted) this.close();
      else opts.signal.addEventListener("abort", () => this.close(), { once: true });
    }
  }

  /** The index of the last entry whose events were all delivered (or that the stream started after); 0 before any. */
  get lastIndex(): number {
    return this.#last ?? 0;
  }

  /** @internal The first connection, whose refusal (IndexCompactedError...) is the caller's. */
  async open(): Promise<void> {
    this.#stream = await this.#connect(this.#from, undefined);
  }

  #connect(from: number, lastEventID: number | undefined): Promise<IncomingMessage> {
    const q = new URLSearchParams();
    if (this.prefix) q.set("prefix", this.prefix);
    const extra: Record<string, string> = {};
    if (lastEventID !== undefined) extra["last-event-id"] = String(lastEventID);
    else if (from > 0) q.set("from_index", String(from));
    return this.#t.stream(this.#ep, { op: `watch ${JSON.stringify(this.prefix)}`, method: "GET", path: "/v1/events", query: q }, extra, this.#ctl.signal);
  }

  /** Ends the watch: an iteration waiting for an event returns. */
  close(): void {
    this.#ctl.abort(new AbortedError("aborted", "watch: closed"));
    this.#stream?.destroy();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<LockEvent> {
    if (this.#iterating) throw new InvalidError("invalid_argument", "watch: iterated twice");
    this.#iterating = true;
    let backoff = this.#t.minBackoffMs;
    try {
      while (!this.#ctl.signal.aborted) {
        const stream = this.#stream;
        this.#stream = undefined;
        let got = false;
        if (stream !== undefined) {
          try {
            for await (const e of this.#read(stream)) {
              got = true;
              yield e;
            }
          } catch (err) {
            if (err instanceof RaftlockError && !retryable(err)) throw err;
            // a disconnect: resume elsewhere
          } finally {
            stream.destroy();
          }
        }
        if (this.#ctl.signal.aborted) return;
        if (got) backoff = this.#t.minBackoffMs;
        if (!(await sleep(upperHalf(backoff), this.#ctl.signal))) return;
        backoff = Math.min(2 * backoff, this.#t.maxBackoffMs);
        this.#ep = (this.#ep + 1) % this.#t.endpoints.length;
        try {
          this.#stream = await this.#connect(0, this.#last);
        } catch (err) {
          if (this.#ctl.signal.aborted) return;
          if (err instanceof RaftlockError && !retryable(err)) throw err;
          this.#t.log("debug", `watch: reconnecting after entry ${this.#last ?? 0}: ${(err as Error).message}`);
        }
      }
    } finally {
      this.close();
    }
  }

  /** The events of one stream's messages; throws the error an `error` message carries. */
  async *#read(stream: IncomingMessage): AsyncGenerator<LockEvent> {
    let buf = "";
    let id: string | undefined;
    let event = "";
    let data: string[] = [];
    let size = 0;
    stream.setEncoding("utf8");
    for await (const chunk of stream as AsyncIterable<string>) {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
        if (line !== "") {
          if (line.startsWith(":")) continue; // a ping
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          let value = colon < 0 ? "" : line.slice(colon + 1);
          if (value.startsWith(" ")) value = value.slice(1);
          if (field === "id") id = value;
          else if (field === "event") event = value;
          else if (field === "data") {
            size += value.length;
            if (size > maxMessageBytes) throw new ServerError("internal", `watch: a message over ${maxMessageBytes} bytes`);
            data.push(value);
          }
          continue;
        }
        const d = data.join("\n");
        if (event === "entry" && d) {
          let e: { index: number; events?: LockEvent[] };
          try {
            e = JSON.parse(d) as { index: number; events?: LockEvent[] };
          } catch {
            throw new ServerError("internal", "watch: an event that is not the API's JSON");
          }
          for (const ev of e.events ?? []) yield { ...ev, index: ev.index ?? e.index };
        } else if (event === "error" && d) {
          throw this.#t.errorOf({ op: `watch ${JSON.stringify(this.prefix)}` }, this.#t.endpoints[this.#ep], { status: 0, headers: {}, body: d });
        }
        if (id !== undefined && /^\d+$/.test(id)) {
          const n = Number(id);
          if (this.#last === undefined || n > this.#last) this.#last = n;
        }
        id = undefined;
        event = "";
        data = [];
        size = 0;
      }
      if (buf.length > maxMessageBytes) throw new ServerError("internal", `watch: a line over ${maxMessageBytes} bytes`);
    }
  }
}
