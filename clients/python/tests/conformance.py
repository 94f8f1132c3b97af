"""The Python runner of the conformance suite (clients/conformance/FORMAT.md).

    python3 clients/python/tests/conformance.py            # every scenario
    RAFTLOCK_CONFORMANCE_ONLY=election python3 ...          # only those named

It starts one three-node cluster of real `raftlock serve` processes, runs every scenario
file against it with the raftlock package, and exits non-zero when any fails. Nothing in
it is specific to one scenario: a new file needs no code here.
"""

from __future__ import annotations

import http.client
import http.server
import json
import math
import os
import sqlite3
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import raftlock  # noqa: E402
from cluster import REPO, Cluster, in_ci  # noqa: E402
from raftlock.fencing import FencedDB, StaleToken  # noqa: E402

SCENARIOS = REPO / "clients" / "conformance" / "scenarios"
DEFAULT_CLIENTS: dict[str, dict[str, Any]] = {"a": {}, "b": {}, "c": {}}


class StepFailure(Exception):
    """A step's outcome did not match, or a wait ran out: the scenario fails."""


# --- fault proxy -------------------------------------------------------------------------


class ProxyState:
    """The request log and fault list shared by the proxies of one client."""

    def __init__(self) -> None:
        self.mu = threading.Lock()
        self.log: list[tuple[str, str, str | None]] = []  # method, path, request_id
        self.bodies: list[Any] = []  # each request's decoded JSON body (None when none), as log
        self.faults: list[dict[str, Any]] = []
        self.closed = threading.Event()  # set when a proxy of this state closes (ends a "hang")

    def take_fault(self, method: str, path: str) -> str | None:
        with self.mu:
            for f in self.faults:
                if f["count"] > 0 and f["method"] == method and path.startswith(f["path_prefix"]):
                    f["count"] -= 1
                    return str(f["kind"])
        return None


class FaultProxy:
    """An HTTP/1.1 server on a free loopback port forwarding to one node (FORMAT.md)."""

    def __init__(self, state: ProxyState, target_port: int) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                path = self.path.split("?", 1)[0]
                rid, decoded = None, None
                if body:
                    try:
                        decoded = json.loads(body)
                        v = decoded.get("request_id")
                        rid = v if isinstance(v, str) and v else None
                    except (ValueError, AttributeError):
                        pass
                with state.mu:
                    state.log.append((self.command, path, rid))
                    state.bodies.append(decoded)
                fault = state.take_fault(self.command, path)
                hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection", "content-length")}
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", target_port, timeout=60)
                    conn.request(self.command, self.path, body=body or None, headers=hdrs)
                    resp = conn.getresponse()
                    data = resp.read()
                    rhdrs = [(k, v) for k, v in resp.getheaders() if k.lower() not in ("connection", "content-length", "transfer-encoding", "keep-alive")]
                    status = resp.status
                    conn.close()
                except OSError:
                    self.close_connection = True
                    try:
                        self.connection.shutdown(2)
                    except OSError:
                        pass
                    return
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if fault == "hang":
                    # Python tests only (not in FORMAT.md): the request was applied, and its
                    # answer never comes while the proxy runs.
                    state.closed.wait(60)
                    self.close_connection = True
                    return
                if fault == "unknown_outcome":
                    status, data = 503, json.dumps({"error": {"code": "unknown_outcome", "message": "conformance fault: the answer was dropped"}}).encode()
                    rhdrs = [("Content-Type", "application/json"), ("Retry-After", "0")]
                self.send_response(status)
                for k, v in rhdrs:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = _handle

        self.state = state
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.state.closed.set()
        self.server.shutdown()
        self.server.server_close()


# --- one scenario --------------------------------------------------------------------------


class Scenario:
    """The state of one scenario's run: clients, holds, results, stores, proxies."""

    def __init__(self, spec: dict[str, Any], cluster: Cluster, tmp: str, cluster_b: Cluster | None = None) -> None:
        self.spec = spec
        self.cluster = cluster
        self.cluster_b = cluster_b
        self.tmp = tmp
        self.clients: dict[str, raftlock.Client] = {}
        self.routers: dict[str, raftlock.Router] = {}
        self.proxies: dict[str, ProxyState] = {}
        self.proxy_servers: list[FaultProxy] = []
        self.results: dict[str, dict[str, Any]] = {}
        self.holds: dict[str, Any] = {}
        self.stores: dict[str, FencedDB] = {}
        self.streams: dict[str, Stream] = {}
        self.background: dict[str, tuple[threading.Thread, dict[str, Any]]] = {}
        for label, opts in (spec.get("clients") or DEFAULT_CLIENTS).items():
            if "routes" in opts:
                self.routers[label] = raftlock.Router([
                    raftlock.Route(client=raftlock.Client(self.endpoints(r["nodes"])), prefixes=list(r["prefixes"]), name=r.get("name", ""))
                    for r in opts["routes"]
                ])
                continue
            eps = self.endpoints(opts["nodes"]) if "nodes" in opts else cluster.endpoints
            if opts.get("proxy"):
                st = ProxyState()
                self.proxies[label] = st
                targets, eps = eps, []
                for t in targets:
                    p = FaultProxy(st, int(t.rsplit(":", 1)[1]))
                    self.proxy_servers.append(p)
                    eps.append(f"http://127.0.0.1:{p.port}")
            self.clients[label] = raftlock.Client(eps)

    def node(self, label: str) -> tuple[Cluster, int]:
        """The cluster and index of node label (n1..n3 of cluster A, b1 of B)."""
        c = self.cluster_b if label.startswith("b") else self.cluster
        if c is None or label not in c.ids:
            raise StepFailure(f"no node {label!r}")
        return c, c.ids.index(label)

    def endpoints(self, nodes: list[str]) -> list[str]:
        out = []
        for n in nodes:
            c, i = self.node(n)
            out.append(c.endpoints[i])
        return out

    # references and matchers

    def ref(self, v: Any) -> Any:
        if isinstance(v, str) and v.startswith("$"):
            label, _, fld = v[1:].partition(".")
            if label not in self.results or fld not in self.results[label]:
                raise StepFailure(f"reference {v}: no such result")
            return self.results[label][fld]
        return v

    def matches(self, result: dict[str, Any], want: dict[str, Any]) -> str | None:
        """None when result matches want, else what differs."""
        for k, w in want.items():
            if k not in result:
                return f"result has no field {k!r} (has {sorted(result)})"
            got = result[k]
            if isinstance(w, dict):
                if len(w) != 1:
                    return f"matcher {w} must have one key"
                (op, rv), = w.items()
                v = self.ref(rv)
                ok = {"eq": got == v, "ne": got != v, "gt": got > v, "ge": got >= v, "lt": got < v, "le": got <= v}.get(op)
                if ok is None:
                    return f"unknown matcher {op!r}"
                if not ok:
                    return f"{k} = {got!r}, want {op} {v!r}"
            elif got != self.ref(w):
                return f"{k} = {got!r}, want {self.ref(w)!r}"
        return None

    def check(self, step: dict[str, Any], outcome: tuple[str, Any]) -> None:
        exp = step.get("expect") or {"ok": True}
        kind, val = outcome
        if "one_of" in exp:
            got = "ok" if kind == "ok" else val
            if got not in exp["one_of"]:
                raise StepFailure(f"outcome {got!r}, want one of {exp['one_of']}")
            return
        if "error" in exp:
            if kind == "ok":
                raise StepFailure(f"succeeded with {val}, want error {exp['error']!r}")
            if val != exp["error"]:
                raise StepFailure(f"error {val!r}, want {exp['error']!r}")
            return
        if kind != "ok":
            raise StepFailure(f"error {val!r}, want success")
        diff = self.matches(val, exp.get("result") or {})
        if diff:
            raise StepFailure(diff)

    # operations

    def client(self, step: dict[str, Any]) -> raftlock.Client:
        return self.clients[step.get("client", "a")]

    def held(self, step: dict[str, Any]) -> Any:
        h = self.holds.get(step["hold"])
        if h is None:
            raise StepFailure(f"no hold {step['hold']!r}")
        return h

    def given_lease(self, step: dict[str, Any]) -> raftlock.Lease | None:
        if "lease" not in step:
            return None
        h = self.holds.get(step["lease"])
        if not isinstance(h, raftlock.Lease):
            raise StepFailure(f"no lease {step['lease']!r}")
        return h

    def router_op(self, step: dict[str, Any], r: raftlock.Router) -> dict[str, Any]:
        """A step on a client that is a router (FORMAT.md, "routes")."""
        o = step["op"]
        s = lambda k, d=0: float(step.get(k, d)) / 1000  # noqa: E731
        name = step.get("name", "")
        if o == "lock":
            h = r.lock(name, s("ttl_ms", 10000), s("wait_ms"), lease=self.given_lease(step), owner=step.get("owner", ""))
            if "as" in step:
                self.holds[step["as"]] = h
            return {"token": h.token}
        if o == "acquire":
            g = r.acquire(name, ttl=s("ttl_ms", 10000), owner=step.get("owner", ""))
            if "as" in step:
                self.holds[step["as"]] = (r, g)
            return {"token": g.token}
        if o == "lease":
            self.holds[step["as"]] = r.lease(name, s("ttl_ms", 10000))
            return {}
        if o == "release_token":
            h = self.held(step)
            r.release(name, h[1].lease_id if isinstance(h, tuple) else h.lease_id if not isinstance(h, raftlock.Lease) else h.id, int(self.ref(step["token"])))
            return {}
        if o == "status":
            return status_result(r.status(name))
        if o == "release":
            return self.op(step)
        raise StepFailure(f"op {o!r} is not one a router client runs (FORMAT.md)")

    def op(self, step: dict[str, Any]) -> dict[str, Any]:
        """Run one step; return its result, or raise a RaftlockError (its code is the outcome)."""
        o = step["op"]
        s = lambda k, d=0: float(step.get(k, d)) / 1000  # noqa: E731 - milliseconds to seconds
        r = self.routers.get(step.get("client", "a"))
        if r is not None and o != "release":
            return self.router_op(step, r)
        if o == "lockset":
            h = self.client(step).lockset(list(step["names"]), ttl=s("ttl_ms", 10000), wait=s("wait_ms"), owner=step.get("owner", ""),
                                          max_hold=s("max_hold_ms"), lock_delay=s("lock_delay_ms"))
            if "as" in step:
                self.holds[step["as"]] = h
            return {"token": h.token, "locks": len(h.tokens)}
        if o == "lease":
            self.holds[step["as"]] = self.client(step).lease(s("ttl_ms", 10000))
            return {}
        if o == "revoke":
            h = self.held(step)
            self.client(step).revoke(h.lease_id)
            return {}
        if o in ("watch", "observe", "wait_seen", "stop_stream"):
            return self.stream_op(step)
        if o == "stop_node":
            c, i = self.node(step["node"])
            c.pause(i)
            return {}
        if o == "kill_node":
            c, i = self.node(step["node"])
            c.kill(i)
            return {}
        if o == "snapshot_restart":
            c, i = self.node(step["node"])
            try:
                c.snapshot_restart(i)
            except (AssertionError, RuntimeError) as e:
                raise StepFailure(str(e)) from None
            return {}
        if o in ("lock", "semaphore", "campaign"):
            c = self.client(step)
            if o == "lock":
                h = c.lock(step["name"], ttl=s("ttl_ms", 10000), wait=s("wait_ms"), mode=step.get("mode", "exclusive"), owner=step.get("owner", ""),
                           lease=self.given_lease(step), max_hold=s("max_hold_ms"), lock_delay=s("lock_delay_ms"))
            elif o == "semaphore":
                h = c.semaphore(step["name"], int(step["limit"]), ttl=s("ttl_ms", 10000), wait=s("wait_ms"), owner=step.get("owner", ""))
            else:
                h = c.campaign(step["name"], step["value"], ttl=s("ttl_ms", 10000), wait=s("wait_ms"), owner=step.get("owner", ""))
            if "as" in step:
                self.holds[step["as"]] = h
            return {"token": h.token}
        if o == "acquire":
            g = self.client(step).acquire(step["name"], ttl=s("ttl_ms", 10000), owner=step.get("owner", ""))
            if "as" in step:
                self.holds[step["as"]] = (self.client(step), g)
            return {"token": g.token}
        if o == "release":
            h = self.held(step)
            if isinstance(h, tuple):
                c, g = h
                c.release(g.name, g.lease_id, g.token)
            elif isinstance(h, raftlock.Lease):
                h.close()
            else:
                h.release()
            return {}
        if o == "release_token":
            h = self.held(step)
            lid = h[1].lease_id if isinstance(h, tuple) else h.id if isinstance(h, raftlock.Lease) else h.lease_id
            self.client(step).release(step["name"], lid, int(self.ref(step["token"])))
            return {}
        if o == "proclaim":
            return {"token": self.held(step).proclaim(step["value"])}
        if o == "check_hold":
            h = self.held(step)
            return {"lost": h.lost.is_set(), "token": h.token, "safe_ms": math.floor((h.safe_until() - time.monotonic()) * 1000)}
        if o == "wait_lost":
            h = self.held(step)
            if not h.lost.wait(s("timeout_ms")):
                raise StepFailure(f"the loss signal was not set within {step['timeout_ms']} ms (safe-until in {(h.safe_until() - time.monotonic()) * 1000:.0f} ms)")
            return {"lost": True, "safe_ms": math.floor((h.safe_until() - time.monotonic()) * 1000)}
        if o == "status":
            return self.status(step)
        if o == "semaphore_status":
            st = self.client(step).semaphore_status(step["name"])
            return {"limit": st.limit, "permits": len(st.permits), "waiters": st.waiters}
        if o == "election_status":
            es = self.client(step).election_status(step["name"])
            return {"elected": es.elected, "owner": es.owner, "value": es.value, "token": es.token, "candidates": es.candidates}
        if o == "history":
            ev = self.client(step).history(step["name"]).events
            return {"grants": sum(1 for e in ev if e.get("kind") == "granted"), "events": len(ev), "last_kind": ev[-1]["kind"] if ev else ""}
        if o == "wait_status":
            end = time.monotonic() + s("timeout_ms")
            while True:
                r = self.status(step)
                if self.matches(r, step["until"]) is None:
                    return r
                if time.monotonic() >= end:
                    raise StepFailure(f"status never matched {step['until']} within {step['timeout_ms']} ms; last {r}")
                time.sleep(0.05)
        if o == "fenced_write":
            db = self.store(step["store"])
            with db.write(step["resource"], int(self.ref(step["token"]))) as cur:
                cur.execute(
                    "INSERT INTO kv (resource, value) VALUES (?, ?) ON CONFLICT (resource) DO UPDATE SET value = excluded.value",
                    (step["resource"], step["value"]),
                )
            return {}
        if o == "read_store":
            row = self.store(step["store"]).conn.execute("SELECT value FROM kv WHERE resource = ?", (step["resource"],)).fetchone()
            return {"value": row[0] if row else ""}
        if o == "fault":
            st = self.proxies[step["client"]]
            with st.mu:
                st.faults.append({"kind": step["kind"], "method": step["method"], "path_prefix": step["path_prefix"], "count": int(step.get("count", 1))})
            return {}
        if o == "proxy_log":
            st = self.proxies[step["client"]]
            with st.mu:
                hits = [r for r in st.log if r[0] == step["method"] and r[1].startswith(step["path_prefix"])]
            return {"requests": len(hits), "distinct_request_ids": len({r[2] for r in hits if r[2]}), "without_request_id": sum(1 for r in hits if not r[2])}
        if o == "stop_all":
            self.cluster.stop_all()
            return {}
        if o == "cont_all":
            self.cluster.cont_all()
            return {}
        if o == "kill_leader":
            return {"node": self.cluster.kill_leader()}
        if o == "restart":
            self.cluster.restart_killed()
            if self.cluster_b is not None:
                self.cluster_b.restart_killed()
            return {}
        if o == "wait_leader":
            self.cluster.wait_leader(s("timeout_ms", 20000))
            return {}
        if o == "pause":
            time.sleep(s("ms"))
            return {}
        raise StepFailure(f"unknown op {o!r} (this runner is out of date with FORMAT.md)")

    def status(self, step: dict[str, Any]) -> dict[str, Any]:
        return status_result(self.client(step).status(step["name"]))

    def stream_op(self, step: dict[str, Any]) -> dict[str, Any]:
        o = step["op"]
        if o == "watch":
            w = self.client(step).watch(step.get("prefix", ""), from_index=int(self.ref(step.get("from_index", 0))))
            self.streams[step["as"]] = Stream(watch=w)
            return {}
        if o == "observe":
            self.streams[step["as"]] = Stream(observe=self.client(step).observe(step["name"]))
            return {}
        st = self.streams.get(step["stream"])
        if st is None:
            raise StepFailure(f"no stream {step['stream']!r}")
        if o == "stop_stream":
            st.stop()
            return {}
        end = time.monotonic() + float(step.get("timeout_ms", 10000)) / 1000
        while True:
            sm = st.summary()
            if self.matches(sm, step["until"]) is None:
                return sm
            if time.monotonic() >= end:
                raise StepFailure(f"the stream never matched {step['until']} within {step.get('timeout_ms', 10000)} ms; last {sm}")
            time.sleep(0.02)

    def store(self, label: str) -> FencedDB:
        if label not in self.stores:
            conn = sqlite3.connect(os.path.join(self.tmp, f"{label}.db"), timeout=10, check_same_thread=False)
            db = FencedDB(conn)
            db.create_table()
            conn.execute("CREATE TABLE IF NOT EXISTS kv (resource TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.commit()
            self.stores[label] = db
        return self.stores[label]

    def outcome(self, step: dict[str, Any]) -> tuple[str, Any]:
        try:
            return "ok", self.op(step)
        except StaleToken:
            return "error", "stale_token"
        except raftlock.RaftlockError as e:
            return "error", e.code

    def run(self) -> None:
        for n, step in enumerate(self.spec["steps"], 1):
            try:
                self.run_step(step)
            except StepFailure as e:
                raise StepFailure(f"step {n} ({step['op']}): {e}") from None

    def run_step(self, step: dict[str, Any]) -> None:
        if step.get("background"):
            box: dict[str, Any] = {}
            t = threading.Thread(target=lambda: box.setdefault("outcome", self.outcome(step)), daemon=True)
            t.start()
            self.background[step["as"]] = (t, box)
            return
        if step["op"] == "await":
            t, box = self.background[step["step"]]
            t.join(float(step.get("timeout_ms", 30000)) / 1000)
            if t.is_alive():
                raise StepFailure(f"background step {step['step']!r} did not end in time")
            out = box["outcome"]
        else:
            out = self.outcome(step)
        self.check(step, out)
        if out[0] == "ok" and step.get("as") and step["op"] != "await":
            self.results[step["as"]] = out[1]
        if out[0] == "ok" and step["op"] == "await":
            self.results[step["step"]] = out[1]

    def cleanup(self) -> None:
        for st in self.streams.values():
            st.stop()
        for leases in (False, True):
            for h in self.holds.values():
                if isinstance(h, raftlock.Lease) != leases:
                    continue
                try:
                    if isinstance(h, tuple):
                        h[0].release(h[1].name, h[1].lease_id, h[1].token, timeout=2)
                    elif isinstance(h, raftlock.Lease):
                        h.close(timeout=2)
                    else:
                        h.release(timeout=2)
                except Exception:  # noqa: BLE001 - cleanup is best effort
                    pass
        for c in self.clients.values():
            c.close()
        for r in self.routers.values():
            r.close()
        for p in self.proxy_servers:
            p.close()
        for db in self.stores.values():
            db.conn.close()


def status_result(st: raftlock.LockStatus) -> dict[str, Any]:
    return {"held": st.held, "token": st.token, "holder_count": st.holder_count, "waiters": st.waiters, "owner": st.owner, "mode": st.mode,
            "delay_ms": st.lock_delay_remaining_ms}


class Stream:
    """A watch or an observe the runner keeps reading in a thread (FORMAT.md, "streams")."""

    def __init__(self, watch: raftlock.Watch | None = None, observe: Any = None) -> None:
        self.mu = threading.Lock()
        self.watch, self.observe = watch, observe
        self.events: list[raftlock.Event] = []
        self.states: list[raftlock.ElectionStatus] = []
        self.code = ""
        self.stopped = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            if self.watch is not None:
                for e in self.watch:
                    with self.mu:
                        self.events.append(e)
            else:
                for st in self.observe:
                    if self.stopped:
                        return
                    with self.mu:
                        self.states.append(st)
        except raftlock.RaftlockError as e:
            if not self.stopped:
                with self.mu:
                    self.code = e.code

    def stop(self) -> None:
        self.stopped = True
        if self.watch is not None:
            self.watch.close()
        # an observe's blocking read ends within its wait; its thread is a daemon

    def summary(self) -> dict[str, Any]:
        with self.mu:
            if self.watch is None:
                last = self.states[-1] if self.states else None
                return {"states": len(self.states), "elected": bool(last and last.elected), "owner": last.owner if last else "",
                        "value": last.value if last else "", "token": last.token if last else 0}
            seen: set[tuple[int, str, str]] = set()
            repeated, grants, in_order = 0, 0, True
            for i, e in enumerate(self.events):
                k = (e.index, e.name, e.kind)
                repeated += k in seen
                seen.add(k)
                grants += e.kind == "granted"
                if i and e.index < self.events[i - 1].index:
                    in_order = False
            ev = self.events
            return {"events": len(ev), "grants": grants, "repeated": repeated, "in_order": in_order, "first_index": ev[0].index if ev else 0,
                    "last_index": ev[-1].index if ev else 0, "last_kind": ev[-1].kind if ev else "", "last_name": ev[-1].name if ev else "",
                    "error": self.code}


def load(only: set[str] | None = None) -> list[dict[str, Any]]:
    """Every scenario file, in file-name order (those named in ``only`` when given)."""
    out = []
    for f in sorted(SCENARIOS.glob("*.json")):
        spec = json.loads(f.read_text())
        if only and spec["name"] not in only:
            continue
        if "python" in (spec.get("skip") or []):
            if in_ci():
                raise SystemExit(f"scenario {spec['name']} skips the python runner, and nothing may skip under CI=true")
            print(f"SKIP {spec['name']} (the file skips the python runner)")
            continue
        out.append(spec)
    return out


def run_all(specs: list[dict[str, Any]], out: Callable[[str], None] = print) -> list[tuple[str, str | None]]:
    """Run specs against one fresh cluster; returns (name, failure or None) per scenario."""
    results: list[tuple[str, str | None]] = []
    cluster_b: list[Cluster] = []  # started before the first scenario that names b1
    try:
        return _run_all(specs, out, cluster_b)
    finally:
        for c in cluster_b:
            c.stop()


def _run_all(specs: list[dict[str, Any]], out: Callable[[str], None], started_b: list[Cluster]) -> list[tuple[str, str | None]]:
    results: list[tuple[str, str | None]] = []
    cluster_b: Cluster | None = None
    with Cluster() as cluster, tempfile.TemporaryDirectory(prefix="raftlock-conf-") as tmp:
        cluster.wait_protocol(3)
        for spec in specs:
            t0 = time.monotonic()
            if cluster_b is None and '"b1"' in json.dumps(spec.get("clients") or {}):
                cluster_b = Cluster(1, extra=["--snapshot-threshold", "1", "--snapshot-interval", "100ms"], id_prefix="b")
                started_b.append(cluster_b)
                cluster_b.start_fresh()
                cluster_b.wait_protocol(3)
            sc = Scenario(spec, cluster, tmp, cluster_b)
            err: str | None = None
            try:
                sc.run()
            except StepFailure as e:
                err = str(e)
            except Exception:  # noqa: BLE001 - a runner bug fails the scenario, with its trace
                err = traceback.format_exc()
            finally:
                sc.cleanup()
                try:
                    cluster.restore()
                    if cluster_b is not None:
                        cluster_b.restore()
                except RuntimeError as e:
                    err = (err or "") + f"\nrestoring the cluster: {e}"
            dt = time.monotonic() - t0
            if err:
                out(f"FAIL {spec['name']} ({dt:.1f}s): {err}")
                out(cluster.logs(15))
            else:
                out(f"PASS {spec['name']} ({dt:.1f}s)")
            results.append((spec["name"], err))
    return results


def main() -> int:
    only_env = os.environ.get("RAFTLOCK_CONFORMANCE_ONLY", "")
    only = {x.strip() for x in only_env.split(",") if x.strip()} or None
    specs = load(only)
    if not specs:
        print("no scenarios found", file=sys.stderr)
        return 1
    results = run_all(specs)
    failed = [n for n, e in results if e]
    print(f"python conformance: {len(results) - len(failed)}/{len(results)} scenarios passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
