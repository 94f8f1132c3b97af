"""Unit tests of the raftlock Python client against real `raftlock serve` processes.

    python3 -m unittest discover -s clients/python/tests -t clients/python

One three-node cluster serves the whole module (started in setUpModule, killed in
tearDownModule); tests that need every node stopped restore it afterwards.
"""

from __future__ import annotations

import ast
import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import raftlock  # noqa: E402
from cluster import Cluster, ModuleCluster, free_port, wait_for  # noqa: E402
from conformance import FaultProxy, ProxyState, Scenario, StepFailure  # noqa: E402
from raftlock.fencing import FencedDB, StaleToken  # noqa: E402

_CLUSTER = ModuleCluster()
setUpModule, tearDownModule = _CLUSTER.start, _CLUSTER.stop
cluster = _CLUSTER.get


class ProxiedClient:
    """A Client whose endpoints are fault proxies in front of the cluster's nodes."""

    def __init__(self) -> None:
        self.state = ProxyState()
        self.proxies = [FaultProxy(self.state, p) for p in cluster().http]
        self.client = raftlock.Client([f"http://127.0.0.1:{p.port}" for p in self.proxies])

    def fault(self, kind: str, method: str, prefix: str, count: int = 1) -> None:
        with self.state.mu:
            self.state.faults.append({"kind": kind, "method": method, "path_prefix": prefix, "count": count})

    def requests(self, method: str, prefix: str) -> list[tuple[str, str, str | None]]:
        with self.state.mu:
            return [r for r in self.state.log if r[0] == method and r[1].startswith(prefix)]

    def close(self) -> None:
        self.client.close()
        for p in self.proxies:
            p.close()


class ClientTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = raftlock.Client(cluster().endpoints)
        self.addCleanup(self.c.close)

    def test_lock_conflict_wait_handover(self) -> None:
        with self.c.lock("py/handover", ttl=5, owner="a") as a:
            self.assertGreater(a.token, 0)
            self.assertFalse(a.lost.is_set())
            self.assertGreater(a.safe_until(), time.monotonic())
            with self.assertRaises(raftlock.LockHeld) as cm:
                self.c.lock("py/handover", ttl=5)
            self.assertEqual(cm.exception.code, "lock_held")
            got: dict[str, raftlock.Held] = {}
            t = threading.Thread(target=lambda: got.setdefault("b", self.c.lock("py/handover", ttl=5, wait=20, owner="b")))
            t.start()
            wait_for(lambda: self.c.status("py/handover").waiters == 1, 10, "b to queue")
        t.join(20)
        b = got["b"]
        self.assertGreater(b.token, a.token)
        st = self.c.status("py/handover")
        self.assertEqual((st.held, st.token, st.owner), (True, b.token, "b"))
        b.release()
        self.assertFalse(self.c.status("py/handover").held)
        with self.assertRaises(raftlock.NotLocked):
            b.release()

    def test_contending_threads_hold_one_at_a_time_with_rising_tokens(self) -> None:
        """Four clients take one lock five times each, waiting in the queue, and make a
        fenced read-modify-write under it: no two holds overlap, every token is above the
        one before, no write is refused, and the counter counts every hold."""
        path = os.path.join(tempfile.mkdtemp(prefix="raftlock-contend-"), "c.db")
        setup = sqlite3.connect(path)
        FencedDB(setup).create_table()
        setup.execute("CREATE TABLE n (k TEXT PRIMARY KEY, v INTEGER)")
        setup.execute("INSERT INTO n VALUES ('n', 0)")
        setup.commit()
        setup.close()
        holds: list[tuple[float, float, int]] = []
        mu = threading.Lock()
        errors: list[BaseException] = []

        def work(i: int) -> None:
            c = raftlock.Client(cluster().endpoints)
            db = FencedDB(sqlite3.connect(path, timeout=10))
            try:
                for _ in range(5):
                    with c.lock("py/contend", ttl=3, wait=30, owner=f"w{i}") as h:
                        t0 = time.monotonic()
                        with db.write("py/contend", h.token) as cur:
                            v = cur.execute("SELECT v FROM n WHERE k = 'n'").fetchone()[0]
                            cur.execute("UPDATE n SET v = ? WHERE k = 'n'", (v + 1,))
                        with mu:
                            holds.append((t0, time.monotonic(), h.token))
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
            finally:
                db.conn.close()
                c.close()

        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(120)
        self.assertEqual(errors, [])
        holds.sort()
        self.assertEqual(len(holds), 20)
        for (s1, e1, t1), (s2, _, t2) in zip(holds, holds[1:]):
            self.assertLessEqual(e1, s2, "two holds overlapped")
            self.assertGreater(t2, t1, "a later hold has a lower token")
        conn = sqlite3.connect(path)
        self.assertEqual(conn.execute("SELECT v FROM n").fetchone()[0], 20)
        conn.close()

    def test_wait_timeout(self) -> None:
        with self.c.lock("py/waittimeout", ttl=5):
            with self.assertRaises(raftlock.WaitTimeout):
                self.c.lock("py/waittimeout", ttl=2, wait=0.5)
        self.assertEqual(self.c.status("py/waittimeout").waiters, 0)

    def test_release_with_stale_token_is_refused(self) -> None:
        h1 = self.c.lock("py/stale", ttl=5)
        h1.release()
        with self.c.lock("py/stale", ttl=5) as h2:
            with self.assertRaises(raftlock.NotHolder):
                self.c.release("py/stale", h2.lease_id, h1.token)
            self.assertEqual(self.c.status("py/stale").token, h2.token)

    def test_keepalive_keeps_a_short_lease(self) -> None:
        with self.c.lock("py/kept", ttl=1.0) as h:
            t0 = time.monotonic()
            # Three TTLs pass; the lease must survive them on keepalives alone.
            wait_for(lambda: time.monotonic() - t0 > 3.0, 6, "3 s to pass")
            self.assertFalse(h.lost.is_set())
            self.assertTrue(self.c.status("py/kept").held)

    def test_plain_acquire_expires(self) -> None:
        g = self.c.acquire("py/expires", ttl=0.5)
        self.assertGreater(g.token, 0)
        wait_for(lambda: not self.c.status("py/expires").held, 10, "the lease to expire")
        self.assertEqual(self.c.history("py/expires").events[-1]["kind"], "expired")

    def test_keepalives_are_batched(self) -> None:
        pc = ProxiedClient()
        self.addCleanup(pc.close)
        holds = [pc.client.lock(f"py/batch/{i}", ttl=1.5) for i in range(3)]
        ids = {h.lease_id for h in holds}
        wait_for(lambda: any(set((b or {}).get("lease_ids", [])) == ids for b in list(pc.state.bodies)), 5, "one keepalive renewing all three leases")
        for h in holds:
            self.assertFalse(h.lost.is_set())
            h.release()

    def test_unknown_outcome_retry_reuses_request_id(self) -> None:
        """Fails when the retry of an acquire draws a new request_id: the first attempt's
        lease then holds the lock, and the retry is refused with lock_held."""
        pc = ProxiedClient()
        self.addCleanup(pc.close)
        for kind in ("unknown_outcome", "drop"):
            name = f"py/unknown/{kind}"
            pc.fault(kind, "PUT", "/v1/locks/py/unknown/")
            with pc.client.lock(name, ttl=3) as h:
                reqs = pc.requests("PUT", "/v1/locks/" + name)
                self.assertEqual(len(reqs), 2, reqs)
                self.assertIsNotNone(reqs[0][2])
                self.assertEqual(reqs[0][2], reqs[1][2], "the retry must carry the first attempt's request_id")
                st = self.c.status(name)
                self.assertEqual((st.held, st.token, st.holder_count), (True, h.token, 1))
                self.assertEqual(sum(1 for e in self.c.history(name).events if e["kind"] == "granted"), 1)
            self.assertFalse(self.c.status(name).held)

    def test_negative_control_new_request_id_per_attempt_is_caught(self) -> None:
        """The broken client (a new request_id per attempt, the test hook) must fail the way
        the test above says: the retry is refused, the first attempt's lease holds the lock."""
        pc = ProxiedClient()
        self.addCleanup(pc.close)
        pc.client._reuse_request_id = False
        pc.fault("unknown_outcome", "PUT", "/v1/locks/py/broken")
        with self.assertRaises(raftlock.LockHeld):
            pc.client.lock("py/broken", ttl=1)
        reqs = pc.requests("PUT", "/v1/locks/py/broken")
        self.assertEqual(len({r[2] for r in reqs}), 2)
        wait_for(lambda: not self.c.status("py/broken").held, 10, "the orphaned lease to expire")

    def test_failover_past_a_dead_endpoint(self) -> None:
        dead = f"http://127.0.0.1:{free_port()}"
        c = raftlock.Client([dead, *cluster().endpoints])
        self.addCleanup(c.close)
        with c.lock("py/failover", ttl=2) as h:
            self.assertGreater(h.token, 0)

    def test_failover_past_a_hung_node(self) -> None:
        """A node that accepts connections and never answers (SIGSTOP) costs one attempt
        timeout; the call is then served by the next endpoint."""
        cl = cluster()
        self.addCleanup(cl.restore)
        leader = cl.wait_leader()
        hung = (leader + 1) % 3  # a follower: the other two keep a majority and a leader
        cl.pause(hung)
        eps = cl.endpoints
        c = raftlock.Client([eps[hung]] + [e for i, e in enumerate(eps) if i != hung], timeout=0.5)
        self.addCleanup(c.close)
        with c.lock("py/hung", ttl=3) as h:
            self.assertGreater(h.token, 0)
        self.assertNotEqual(c._t.preferred(), 0)

    def test_leader_kill_keeps_the_lock(self) -> None:
        self.addCleanup(cluster().restore)
        with self.c.lock("py/leaderkill", ttl=3) as h:
            cluster().kill_leader()
            cluster().wait_leader()
            t0 = time.monotonic()
            wait_for(lambda: time.monotonic() - t0 > 3.5, 6, "more than a TTL to pass")
            self.assertFalse(h.lost.is_set())
            self.assertEqual(self.c.status("py/leaderkill").token, h.token)

    def test_loss_signal_fires_before_expiry_when_every_node_is_stopped(self) -> None:
        """Fails without the loss signal: with every node hung, no keepalive is answered,
        and held.lost must be set on the client's clock before the lease can have expired
        (a TTL after the last answered keepalive was sent, which was before the stop)."""
        self.addCleanup(cluster().restore)
        ttl = 2.0
        h = self.c.lock("py/loss", ttl=ttl)
        self.assertFalse(h.lost.is_set())
        stopped = time.monotonic()
        cluster().stop_all()
        self.assertTrue(h.lost.wait(ttl), "the loss signal was not set within a TTL of the stop")
        seen = time.monotonic()
        self.assertLess(seen, stopped + ttl)
        self.assertLessEqual(h.safe_until(), seen)
        self.assertTrue(h.is_lost())
        self.assertIsInstance(h.lease.error, raftlock.LeaseLost)
        self.assertEqual(h.token, h.token)  # still readable, to label the abandoned work
        cluster().cont_all()
        cluster().wait_leader()
        try:
            h.release()
        except (raftlock.NotHolder, raftlock.LeaseNotFound):
            pass

    def test_shared_semaphore_election(self) -> None:
        r1 = self.c.lock("py/rw", ttl=5, mode="shared")
        r2 = self.c.lock("py/rw", ttl=5, mode="shared")
        self.assertEqual(self.c.status("py/rw").holder_count, 2)
        with self.assertRaises(raftlock.LockHeld):
            self.c.lock("py/rw", ttl=5)
        r1.release()
        r2.release()

        p1 = self.c.semaphore("py/sem", 2, ttl=5)
        p2 = self.c.semaphore("py/sem", 2, ttl=5)
        with self.assertRaises(raftlock.SemaphoreFull):
            self.c.semaphore("py/sem", 2, ttl=5)
        with self.assertRaises(raftlock.LimitConflict):
            self.c.semaphore("py/sem", 3, ttl=5)
        self.assertEqual(len(self.c.semaphore_status("py/sem").permits), 2)
        p1.release()
        p2.release()

        lead = self.c.campaign("py/elect", "host-a", ttl=5, owner="a")
        with self.assertRaises(raftlock.ElectionHeld):
            self.c.campaign("py/elect", "host-b", ttl=5)
        seen: list[raftlock.ElectionStatus] = []

        def watch() -> None:
            for st in self.c.observe("py/elect", duration=15):
                seen.append(st)
                if st.value == "host-b":
                    return

        w = threading.Thread(target=watch)
        w.start()
        wait_for(lambda: len(seen) >= 1, 5, "the first observation")
        self.assertEqual(lead.proclaim("host-a:2"), lead.token)
        got: dict[str, raftlock.Leadership] = {}
        t = threading.Thread(target=lambda: got.setdefault("b", self.c.campaign("py/elect", "host-b", ttl=5, wait=20, owner="b")))
        t.start()
        wait_for(lambda: self.c.election_status("py/elect").candidates == 1, 10, "b to be a candidate")
        lead.resign()
        t.join(20)
        w.join(20)
        self.assertGreater(got["b"].token, lead.token)
        self.assertEqual([s.value for s in seen][-1], "host-b")
        self.assertIn("host-a:2", [s.value for s in seen])
        got["b"].resign()
        self.assertFalse(self.c.election_status("py/elect").elected)

    def test_lease_ids_stay_out_of_errors(self) -> None:
        secret = "f" * 32
        with self.assertRaises((raftlock.NotHolder, raftlock.LeaseNotFound)) as cm:
            self.c.release("py/secret", secret, 5)
        self.assertNotIn(secret, str(cm.exception))
        with self.assertRaises(raftlock.LeaseNotFound) as cm2:
            self.c.keepalive(secret)
        self.assertNotIn(secret, str(cm2.exception))

    def test_errors_per_code(self) -> None:
        with self.assertRaises(raftlock.InvalidRequest):
            self.c.lock("py/ttl", ttl=0.1)
        with self.assertRaises(raftlock.LeaseNotFound):
            self.c.keepalive("0" * 32)
        e = raftlock.errors.error_for("no_leader", "x", 2.0)
        self.assertIsInstance(e, raftlock.NoLeader)
        self.assertEqual(e.retry_after, 2.0)
        self.assertIsInstance(raftlock.errors.error_for("something_new", "x"), raftlock.ServerError)


class RunnerTest(unittest.TestCase):
    """The conformance runner fails a scenario whose expectations are wrong: it cannot pass
    every file vacuously."""

    def run_steps(self, steps: list[dict]) -> None:
        sc = Scenario({"name": "self-test", "steps": steps}, cluster(), tempfile.mkdtemp(prefix="raftlock-runner-"))
        try:
            sc.run()
        finally:
            sc.cleanup()

    def test_wrong_expectations_fail(self) -> None:
        lock = {"op": "lock", "name": "py/runner/l", "ttl_ms": 3000, "as": "h1"}
        wrong = [
            [{"op": "status", "name": "py/runner/free", "expect": {"result": {"held": True}}}],
            [lock, {"op": "status", "client": "b", "name": "py/runner/l", "expect": {"result": {"token": {"gt": "$h1.token"}}}}],
            [lock, {"op": "lock", "client": "b", "name": "py/runner/l", "ttl_ms": 3000}],
            [{"op": "status", "name": "py/runner/free", "expect": {"error": "lock_held"}}],
            [{"op": "status", "name": "py/runner/free", "expect": {"one_of": ["not_holder"]}}],
            [lock, {"op": "wait_lost", "hold": "h1", "timeout_ms": 300}],
            [{"op": "no_such_op"}],
        ]
        for steps in wrong:
            with self.subTest(steps=steps[-1]), self.assertRaises(StepFailure):
                self.run_steps(steps)
        self.run_steps([lock, {"op": "status", "client": "b", "name": "py/runner/l", "expect": {"result": {"token": {"eq": "$h1.token"}, "held": True}}}])


class RetryAfterTest(unittest.TestCase):
    """too_many_requests with Retry-After, from a real node limited to one held request."""

    def test_too_many_requests_waits_retry_after_or_gives_up_at_once(self) -> None:
        with Cluster(n=1, extra=["--max-held-requests", "1"]) as one:
            c = raftlock.Client(one.endpoints)
            self.addCleanup(c.close)
            idx = c.status("py/busy").modify_index
            # The blocker holds the node's one slot for 5 s, longer than the checks below take
            # even on a loaded machine. The probe holds the slot itself for 10 ms at most, once
            # per 100 ms: a probe that waited longer, back to back, could take the slot each time
            # the blocker retried after its own 429, and never see the blocker hold it (CI on a
            # loaded machine did just that).
            blocker = threading.Thread(target=lambda: c.status("py/busy", wait_index=idx, wait=5))
            blocker.start()
            wait_for(lambda: _busy(c, idx), 15, "the node to refuse a second blocking query", every=0.1)
            # A call whose deadline falls before the Retry-After pause gives up at once.
            with self.assertRaises(raftlock.TooManyRequests) as cm:
                c.status("py/busy", wait_index=idx, wait=0.2, timeout=0.5)
            self.assertIsNotNone(cm.exception.retry_after)
            self.assertEqual(cm.exception.result.attempts, 1)  # type: ignore[attr-defined]
            # One with time to spare waits as asked and then is served.
            t0 = time.monotonic()
            c.status("py/busy", wait_index=idx, wait=0.2, timeout=10)
            self.assertGreaterEqual(time.monotonic() - t0, min(cm.exception.retry_after or 0, 1.0) * 0.99)
            blocker.join(10)


def _busy(c: raftlock.Client, idx: int) -> bool:
    try:
        c.status("py/busy", wait_index=idx, wait=0.01, timeout=0.3)
    except raftlock.TooManyRequests:
        return True
    except raftlock.RaftlockError:
        return False
    return False


class TLSAndACLTest(unittest.TestCase):
    """A cluster with HTTPS, client certificates required, and ACLs on."""

    def test_tls_client_certificate_and_token(self) -> None:
        with Cluster(tls=True, acl=True) as tc:
            t = tc.tls_dir
            ctx = raftlock.tls_context(ca=f"{t}/ca.pem", cert=f"{t}/local.pem", key=f"{t}/local-key.pem")
            c = raftlock.Client(tc.endpoints, token=tc.token, tls=ctx)
            self.addCleanup(c.close)
            with c.lock("py/tls", ttl=2) as h:
                self.assertGreater(h.token, 0)
            no_token = raftlock.Client(tc.endpoints, tls=ctx)
            self.addCleanup(no_token.close)
            with self.assertRaises(raftlock.Unauthenticated):
                no_token.status("py/tls")
            bad = raftlock.Client(tc.endpoints, token="x" * 36, tls=ctx)
            self.addCleanup(bad.close)
            with self.assertRaises(raftlock.Unauthenticated) as cm:
                bad.status("py/tls")
            self.assertNotIn("x" * 36, str(cm.exception))
            no_cert = raftlock.Client(tc.endpoints, token=tc.token, tls=raftlock.tls_context(ca=f"{t}/ca.pem"), call_timeout=3)
            self.addCleanup(no_cert.close)
            with self.assertRaises((raftlock.TLSError, raftlock.Unavailable)):
                no_cert.status("py/tls")
            untrusted = raftlock.Client(tc.endpoints, token=tc.token, tls=True, call_timeout=3)
            self.addCleanup(untrusted.close)
            with self.assertRaises(raftlock.TLSError):
                untrusted.status("py/tls")
            with self.assertRaises(ValueError):
                raftlock.Client(["http://127.0.0.1:1"], tls=ctx)


class FencingTest(unittest.TestCase):
    def setUp(self) -> None:
        d = tempfile.mkdtemp(prefix="raftlock-fence-")
        self.path = os.path.join(d, "ledger.db")
        self.conn = sqlite3.connect(self.path, timeout=10)
        self.addCleanup(self.conn.close)
        self.db = FencedDB(self.conn)
        self.db.create_table()
        self.db.create_table()  # idempotent
        self.conn.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")
        self.conn.commit()

    def put(self, token: int, v: str) -> None:
        with self.db.write("acct", token) as cur:
            cur.execute("INSERT INTO kv VALUES ('acct', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v", (v,))

    def value(self) -> str:
        return self.conn.execute("SELECT v FROM kv WHERE k = 'acct'").fetchone()[0]

    def test_stale_writer_is_refused_and_changes_nothing(self) -> None:
        self.put(5, "a")
        self.put(5, "a2")  # the current holder writes again with its token
        self.put(9, "b")
        with self.assertRaises(StaleToken) as cm:
            self.put(5, "late")
        self.assertEqual((cm.exception.offered, cm.exception.current), (5, 9))
        self.assertEqual(self.value(), "b")
        self.assertEqual(self.db.current("acct"), 9)
        self.assertFalse(self.conn.in_transaction)

    def test_failed_write_rolls_back_the_fence(self) -> None:
        self.put(3, "a")
        with self.assertRaises(ZeroDivisionError):
            with self.db.write("acct", 7) as cur:
                cur.execute("UPDATE kv SET v = 'x'")
                1 / 0  # noqa: B018
        self.assertEqual((self.value(), self.db.current("acct")), ("a", 3))

    def test_fence_must_be_the_first_statement(self) -> None:
        self.conn.execute("UPDATE kv SET v = 'y'")  # opens an implicit transaction
        with self.assertRaises(RuntimeError):
            with self.db.write("acct", 1):
                pass
        self.conn.rollback()

    def test_token_range(self) -> None:
        for bad in (0, -1, 2**63, True):
            with self.assertRaises(ValueError):
                self.put(bad, "x")  # type: ignore[arg-type]

    def test_two_connections_serialize(self) -> None:
        other = FencedDB(sqlite3.connect(self.path, timeout=10))
        self.addCleanup(other.conn.close)
        with other.write("acct", 4):
            pass
        with self.assertRaises(StaleToken):
            self.put(2, "z")

    def test_paramstyles(self) -> None:
        q = FencedDB(self.conn, paramstyle="pyformat")._q("UPDATE f SET t = ? WHERE r = ? AND t <= ?", (1, "r", 1))
        self.assertEqual(q, ("UPDATE f SET t = %s WHERE r = %s AND t <= %s", (1, "r", 1)))
        q = FencedDB(self.conn, paramstyle="numeric")._q("SELECT ? , ?", (1, 2))
        self.assertEqual(q[0], "SELECT :1 , :2")


class ImportGraphTest(unittest.TestCase):
    def test_only_the_standard_library(self) -> None:
        pkg = HERE.parent / "raftlock"
        for f in sorted(pkg.glob("*.py")):
            tree = ast.parse(f.read_text(), str(f))
            for node in ast.walk(tree):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module or ""]
                for n in names:
                    top = n.split(".")[0]
                    self.assertTrue(top in sys.stdlib_module_names or top == "raftlock", f"{f.name} imports {n}, not in the standard library")

    def test_pyproject_has_no_dependencies(self) -> None:
        import tomllib

        meta = tomllib.loads((HERE.parent / "pyproject.toml").read_text())
        self.assertEqual(meta["project"]["dependencies"], [])
        self.assertEqual(meta["project"]["requires-python"], ">=3.11")

    def test_import_in_a_fresh_interpreter_loads_no_third_party_module(self) -> None:
        import subprocess

        code = (
            f"import sys; sys.path.insert(0, {str(HERE.parent)!r}); before = set(sys.modules); import raftlock, raftlock.fencing;"
            "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] not in sys.stdlib_module_names and m.split('.')[0] != 'raftlock'))"
        )
        out = subprocess.run([sys.executable, "-I", "-c", code], cwd=HERE.parent, capture_output=True, text=True, check=True)
        self.assertEqual(json.loads(out.stdout.replace("'", '"')), [])


if __name__ == "__main__":
    unittest.main()
