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
from cluster import ModuleCluster, free_port  # noqa: E402
from raftlock._http import NAME_RULE  # noqa: E402
from raftlock.aio import AsyncClient  # noqa: E402

_CLUSTER = ModuleCluster()
setUpModule, tearDownModule = _CLUSTER.start, _CLUSTER.stop
endpoints = _CLUSTER.endpoints


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
                self.assertTrue((await a.status("aio/x"))["held"])
            h2 = await asyncio.wait_for(waiter, 10)
            self.assertGreater(h2.token, h1.token)
            await h2.release()
            self.assertFalse((await a.status("aio/x"))["held"])

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
            self.assertFalse((await r.status("aio/close"))["held"])  # revoked, not left for 30 s


if __name__ == "__main__":
    unittest.main()
