"""Tests of raftlock.aio against real `raftlock serve` processes (one three-node cluster)."""

from __future__ import annotations

import asyncio
import sys
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import raftlock  # noqa: E402
from cluster import Cluster, ModuleCluster, free_port  # noqa: E402
from conformance import FaultProxy, ProxyState  # noqa: E402
from raftlock._http import NAME_RULE  # noqa: E402
from raftlock.aio import AsyncClient, AsyncLeadership  # noqa: E402

_CLUSTER = ModuleCluster()
setUpModule, tearDownModule = _CLUSTER.start, _CLUSTER.stop
endpoints = _CLUSTER.endpoints


async def until(cond, what: str, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    """Await cond() (a coroutine function) with a deadline, asking every 20 ms."""
    end = time.monotonic() + timeout
    while not await cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


class AioTest(unittest.IsolatedAsyncioTestCase):
    async def test_async_with_lock_handover_and_keepalive(self) -> None:
        async with AsyncClient(endpoints()) as a, AsyncClient(endpoints()) as b:
            # A 3 s TTL: with 1 s a keepalive answered late on a loaded machine (load 15 on
            # 2 cores) let the lease's safe time pass, which is the client working as meant.
            async with a.lock("aio/x", ttl=3) as h1:
                self.assertGreater(h1.token, 0)
                with self.assertRaises(raftlock.LockHeld):
                    await b.lock("aio/x", ttl=1)
                waiter = asyncio.ensure_future(b.lock("aio/x", ttl=1, wait=20))
                # Kept alive past two TTLs by the keepalive task.
                await asyncio.sleep(6.5)
                self.assertFalse(h1.lost.is_set())
                self.assertTrue((await a.status("aio/x")).held)
            h2 = await asyncio.wait_for(waiter, 10)
            self.assertGreater(h2.token, h1.token)
            await h2.release()
            self.assertFalse((await a.status("aio/x")).held)

    async def test_loss_inside_block_raises_and_lost_reads_set_after_a_pause(self) -> None:
        async with AsyncClient(endpoints()) as c:
            with self.assertRaises(raftlock.LeaseLost):
                async with c.lock("aio/lost", ttl=1) as held:
                    await c.revoke(held.lease.id)
            held = await c.lock("aio/pause", ttl=1)
            # Block the event loop (the keepalive task cannot run), as a paused process.
            while time.monotonic() < held.safe_until() + 0.01:
                time.sleep(0.01)
            self.assertTrue(held.lost.is_set())
            with self.assertRaises(raftlock.LeaseLost):
                await held.__aexit__(None, None, None)

    async def test_names_unreachable_close_and_repr(self) -> None:
        dead = [f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"]
        c = AsyncClient(dead, call_timeout=0.5)
        for name in ["/abs", "a//b", "../up", "a/./b", ""]:
            with self.assertRaises(raftlock.InvalidRequest) as cm:
                c.lock(name)
            self.assertIn(NAME_RULE, str(cm.exception))
        with self.assertRaises(raftlock.Unreachable) as u:
            await c.status("aio/x")
        for d in dead:
            self.assertIn(d, str(u.exception))
        with self.assertRaises(raftlock.InvalidRequest):
            c.lock("aio/ttl", ttl="10")  # type: ignore[arg-type]
        await c.close()
        ok = AsyncClient(endpoints())
        held = await ok.lock("aio/close", ttl=30)
        self.assertNotIn(held.lease.id, repr(held) + repr(held.lease) + repr(ok))
        await ok.close()
        self.assertTrue(held.lost.is_set())
        async with AsyncClient(endpoints()) as r:
            self.assertFalse((await r.status("aio/close")).held)  # revoked, not left for 30 s


    async def test_whole_api(self) -> None:
        """The threaded client's API as coroutines: locksets, maximum holds, lock delays,
        leases holding several locks, semaphores, elections with proclaim and observe,
        watches, plain acquire/release, reads, the reusable Lock object and a Router."""
        async with AsyncClient(endpoints()) as c, AsyncClient(endpoints()) as d:
            w = await c.watch("aio/api/")
            seen: list[raftlock.Event] = []

            async def follow() -> None:
                async for e in w:
                    seen.append(e)

            follower = asyncio.ensure_future(follow())
            async with c.lockset(["aio/api/x", "aio/api/y"], ttl=5) as s:
                self.assertEqual(set(s.tokens), {"aio/api/x", "aio/api/y"})
                self.assertEqual((await d.status("aio/api/y")).token, s.tokens["aio/api/y"])
                with self.assertRaises(raftlock.LockHeld):
                    await d.lockset(["aio/api/z", "aio/api/x"], ttl=5)
                self.assertFalse((await d.status("aio/api/z")).held, "a refused set takes nothing")
            await until(lambda: asyncio.sleep(0, len(seen) >= 4), "the watch to see the set's grants and releases")
            self.assertEqual([e.kind for e in seen[:2]], ["granted", "granted"])
            w.close()
            await asyncio.wait_for(follower, 10)

            held = await c.lock("aio/api/max", ttl=5, max_hold=0.7)
            self.assertFalse(held.lost.is_set())
            await asyncio.wait_for(held.lost.wait(), 10)  # the maximum hold ended the grant
            with self.assertRaises(raftlock.LeaseLost):
                await held.__aexit__(None, None, None)

            delayed = await c.lock("aio/api/delay", ttl=5, lock_delay=1.0)
            await c.revoke(delayed.lease.id)
            st = await d.status("aio/api/delay")
            self.assertFalse(st.held)
            self.assertGreater(st.lock_delay_remaining_ms, 0)

            lease = await c.lease(5)
            a1 = await lease.lock("aio/api/l1")
            a2 = await c.lock("aio/api/l2", lease=lease)
            await a1.release()
            self.assertTrue((await d.status("aio/api/l2")).held, "releasing one keeps the lease")
            await lease.close()
            self.assertFalse((await d.status("aio/api/l2")).held)
            self.assertTrue(a2.lost.is_set())

            async with c.semaphore("aio/api/sem", 2, ttl=5) as p1, d.semaphore("aio/api/sem", 2, ttl=5):
                with self.assertRaises(raftlock.SemaphoreFull):
                    await c.semaphore("aio/api/sem", 2, ttl=5)
                self.assertEqual(len((await d.semaphore_status("aio/api/sem")).permits), 2)
                self.assertGreater(p1.token, 0)

            states: list[raftlock.ElectionStatus] = []

            async def watch_election() -> None:
                async for st in d.observe("aio/api/e"):
                    states.append(st)

            obs = asyncio.ensure_future(watch_election())
            lead = await c.campaign("aio/api/e", "v1", ttl=5)
            self.assertIsInstance(lead, AsyncLeadership)
            self.assertEqual(await lead.proclaim("v2"), lead.token)
            await until(lambda: asyncio.sleep(0, bool(states) and states[-1].value == "v2"), "observe to see the proclaimed value")
            await lead.resign()
            await until(lambda: asyncio.sleep(0, not states[-1].elected), "observe to see the resignation")
            obs.cancel()

            g = await c.acquire("aio/api/plain", ttl=5)
            with self.assertRaises(raftlock.NotHolder):
                await c.release("aio/api/plain", g.lease_id, g.token + 1)
            await c.release("aio/api/plain", g.lease_id, g.token)
            self.assertEqual((await c.history("aio/api/plain")).events[-1]["kind"], "released")
            self.assertTrue((await c.cluster())["leader_id"])

            lk = raftlock.aio.Lock(c, "aio/api/obj", ttl=5)
            self.assertTrue(await lk.acquire(blocking=False))
            self.assertFalse(await raftlock.aio.Lock(d, "aio/api/obj", ttl=5).acquire(blocking=False))
            await lk.release()

            r = raftlock.Router([raftlock.Route(client=c, prefixes=["aio/api/r/"]), raftlock.Route(client=d, prefixes=[""])])
            rl = await r.lease("aio/api/r/", 5)
            with self.assertRaises(raftlock.CrossCluster):
                r.lock("aio/api/other", lease=rl)
            with self.assertRaises(raftlock.NoRoute):
                raftlock.Router([raftlock.Route(client=c, prefixes=["aio/api/r/"])]).status("elsewhere")
            hr = await r.lock("aio/api/r/x", lease=rl)
            self.assertTrue((await r.status("aio/api/r/x")).held)
            await hr.release()
            await rl.close()

    async def test_tls_locksets_semaphores_elections_renewed(self) -> None:
        """A script over TLS (client certificate required) takes locksets, permits and a
        leadership, keeps them past their TTL by renewing, and releases them."""
        tc = Cluster(1, tls=True)  # one node: TLS and client certificates are per node, as with three
        tc.start_fresh()
        try:
            t = tc.tls_dir
            ctx = raftlock.tls_context(ca=f"{t}/ca.pem", cert=f"{t}/local.pem", key=f"{t}/local-key.pem")
            async with AsyncClient(tc.endpoints, tls=ctx) as c:
                s = await c.lockset(["aio/tls/a", "aio/tls/b"], ttl=3)
                p = await c.semaphore("aio/tls/sem", 3, ttl=3)
                lead = await c.campaign("aio/tls/e", "me", ttl=3)
                first = {h: h.safe_until() for h in (s, p, lead)}
                # Renewed: each safe-until moves past where the first TTL would have ended it.
                await until(lambda: asyncio.sleep(0, all(h.safe_until() > first[h] + 3 for h in first)), "every hold renewed past its first TTL", 20)
                self.assertFalse(any(h.lost.is_set() for h in first))
                self.assertTrue((await c.status("aio/tls/b")).held)
                self.assertEqual((await c.election_status("aio/tls/e")).value, "me")
                await s.release()
                await p.release()
                await lead.resign()
                self.assertFalse((await c.status("aio/tls/a")).held)
                self.assertEqual(len((await c.semaphore_status("aio/tls/sem")).permits), 0)
                self.assertFalse((await c.election_status("aio/tls/e")).elected)
            with self.assertRaises(raftlock.TLSError):
                async with AsyncClient(tc.endpoints, tls=raftlock.tls_context(ca=f"{t}/ca.pem")) as nocert:
                    await nocert.status("aio/tls/a")
        finally:
            tc.stop()

    async def test_cancelled_waiter_leaves_the_queue_and_holds_nothing(self) -> None:
        async with AsyncClient(endpoints()) as holder, AsyncClient(endpoints()) as c:
            h = await holder.lock("aio/cancel/q", ttl=5)
            for kind in ("lock", "lockset"):
                if kind == "lock":
                    task = asyncio.ensure_future(c.lock("aio/cancel/q", ttl=5, wait=30))
                else:
                    task = asyncio.ensure_future(c.lockset(["aio/cancel/q", "aio/cancel/r"], ttl=5, wait=30))
                await until(lambda: _waiters(holder, "aio/cancel/q", 1), "the wait to queue")
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
                await until(lambda: _waiters(holder, "aio/cancel/q", 0), "the cancelled wait to leave the queue")
            await h.release()
            self.assertFalse((await holder.status("aio/cancel/q")).held, "nothing was left to the cancelled tasks")

    async def test_a_grant_arriving_as_the_task_is_cancelled_is_given_back(self) -> None:
        """The cluster grants, its answer is held back (a proxy), the task is cancelled: the
        client gives the grant back (for a wait: revoking its lease; at once: asking again
        with the same request_id, then revoking the lease that answers)."""
        for wait in (30.0, 0.0):
            st = ProxyState()
            proxies = [FaultProxy(st, int(u.rsplit(":", 1)[1])) for u in endpoints()]
            try:
                async with AsyncClient([f"http://127.0.0.1:{p.port}" for p in proxies]) as c, AsyncClient(endpoints()) as d:
                    with st.mu:
                        st.faults.append({"kind": "hang", "method": "PUT", "path_prefix": "/v1/locks/", "count": 1})
                    name = f"aio/late/{int(wait)}"
                    task = asyncio.ensure_future(c.lock(name, ttl=30, wait=wait))  # 30 s: no expiry frees it within the wait below
                    await until(lambda: _held(d, name), "the cluster to grant the held-back acquire")
                    task.cancel()
                    with self.assertRaises(asyncio.CancelledError):
                        await task
                    await until(lambda: _free(d, name), "the late grant to be given back", 10)
            finally:
                for p in proxies:
                    p.close()


async def _waiters(c: AsyncClient, name: str, n: int) -> bool:
    return (await c.status(name)).waiters == n


async def _held(c: AsyncClient, name: str) -> bool:
    return (await c.status(name)).held


async def _free(c: AsyncClient, name: str) -> bool:
    return not (await c.status(name)).held


if __name__ == "__main__":
    unittest.main()
