"""Tests of the semantics every client shares (clients/README.md's table), against real
`raftlock serve` processes (one three-node cluster for the module).

    python3 -m unittest discover -s clients/python/tests
"""

from __future__ import annotations

import os
import sys
import time
import unittest
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import raftlock  # noqa: E402
from cluster import ModuleCluster, free_port, wait_for  # noqa: E402
from raftlock._http import NAME_RULE  # noqa: E402

_CLUSTER = ModuleCluster()
setUpModule, tearDownModule = _CLUSTER.start, _CLUSTER.stop
endpoints = _CLUSTER.endpoints


class SemanticsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = raftlock.Client(endpoints())
        self.addCleanup(self.c.close)

    def test_lost_reads_set_once_safe_until_passed_after_a_pause(self) -> None:
        held = self.c.lock("py2/pause", ttl=1)
        with self.c._keepaliver._cond:
            while time.monotonic() < held.safe_until() + 0.01:
                time.sleep(0.01)
            self.assertIsNone(held.lease._error)
            # The keepalive thread is still stopped: the reader alone must see the loss.
            self.assertTrue(held.lost.is_set(), "lost.is_set() said 'not lost' after safe-until")
            self.assertTrue(held.lost.wait(0))
            self.assertTrue(held.is_lost())
        with self.assertRaises(raftlock.LeaseLost):
            held.__exit__(None, None, None)

    def test_with_block_raises_when_the_lock_was_lost_inside(self) -> None:
        with self.assertRaises(raftlock.LeaseLost) as cm:
            with self.c.lock("py2/lost-in-with", ttl=1) as held:
                self.c.revoke(held.lease_id)
                wait_for(held.lost.is_set, 10, "the loss to be noticed")
        self.assertIn("lost inside the with block", str(cm.exception))
        # A release inside the block is not a loss.
        with self.c.lock("py2/lost-in-with", ttl=1) as held:
            held.release()
        # The block's own exception wins.
        with self.assertRaises(KeyError):
            with self.c.lock("py2/lost-in-with", ttl=1) as held:
                self.c.revoke(held.lease_id)
                raise KeyError("mine")

    def test_close_revokes_held_leases(self) -> None:
        c = raftlock.Client(endpoints())
        held = c.lock("py2/close", ttl=30)
        self.assertTrue(self.c.status("py2/close").held)
        c.close()
        self.assertTrue(held.lost.is_set())
        # Revoked, not left to expire: free long before the 30 s TTL.
        self.assertFalse(self.c.status("py2/close").held)

    def test_names_refused_before_sending_with_the_rule(self) -> None:
        c = raftlock.Client([f"http://127.0.0.1:{free_port()}"], call_timeout=1)
        self.addCleanup(c.close)
        for name in ["", "/abs", "a//b", "../up", "a/./b", "a/..", ".", "a/", "a\x01b", "a\x85b", "n" * 513, "\ud800"]:
            for call in (lambda: c.lock(name), lambda: c.acquire(name), lambda: c.status(name), lambda: c.semaphore(name, 1), lambda: raftlock.Lock(c, name)):
                with self.assertRaises(raftlock.InvalidRequest) as cm:
                    call()
                self.assertEqual(cm.exception.code, "invalid_name")
                self.assertIn(NAME_RULE, str(cm.exception))
        with self.c.lock("py2/düsseldorf/日本", ttl=2) as h:
            self.assertGreater(h.token, 0)

    def test_unreachable_names_every_endpoint(self) -> None:
        dead = [f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"]
        c = raftlock.Client(dead, call_timeout=0.5)
        self.addCleanup(c.close)
        with self.assertRaises(raftlock.Unreachable) as cm:
            c.status("py2/x")
        self.assertIsInstance(cm.exception, raftlock.Unavailable)
        for d in dead:
            self.assertIn(d, str(cm.exception))
            self.assertIn(d, cm.exception.errors)

    def test_endpoint_path_prefix_is_kept(self) -> None:
        c = raftlock.Client([endpoints()[0] + "/mount"], call_timeout=2)
        self.addCleanup(c.close)
        with self.assertRaises(raftlock.InvalidRequest) as cm:  # the server has no /mount route
            c.status("py2/prefix")
        self.assertEqual(cm.exception.code, "not_found")

    def test_durations_must_be_numbers(self) -> None:
        for bad in ("10", None, True):
            with self.assertRaises(raftlock.InvalidRequest) as cm:
                self.c.lock("py2/ttl", ttl=bad)  # type: ignore[arg-type]
            self.assertIn("seconds as a number", str(cm.exception))
        with self.assertRaises(raftlock.InvalidRequest):
            self.c.lock("py2/ttl", wait="5")  # type: ignore[arg-type]

    def test_environment_defaults(self) -> None:
        with mock.patch.dict(os.environ, {"RAFTLOCK_ENDPOINTS": ",".join(endpoints()), "RAFTLOCK_TOKEN": "s3cret-token"}):
            c = raftlock.Client()
            self.addCleanup(c.close)
            self.assertEqual(c.endpoints, endpoints())
            self.assertEqual(c._t._auth, "Bearer s3cret-token")
            self.assertNotIn("s3cret", repr(c))
        with mock.patch.dict(os.environ, {"RAFTLOCK_ENDPOINTS": ""}):
            with self.assertRaises(ValueError):
                raftlock.Client()

    def test_no_secret_in_repr(self) -> None:
        with self.c.lock("py2/repr", ttl=2) as h:
            for obj in (h, h.lease, self.c.acquire("py2/repr-plain", ttl=1)):
                self.assertNotIn(h.lease_id, repr(obj))
                self.assertNotIn(h.lease_id, str(obj))
            g = self.c.acquire("py2/repr-grant", ttl=1)
            self.assertNotIn(g.lease_id, repr(g))

    def test_reusable_lock_object(self) -> None:
        a = raftlock.Lock(self.c, "py2/obj", ttl=2)
        b = raftlock.Lock(self.c, "py2/obj", ttl=2)
        self.assertTrue(a.acquire())
        self.assertTrue(a.locked())
        self.assertFalse(b.acquire(blocking=False))
        self.assertFalse(b.acquire(timeout=0.3))
        su = a.extend()
        self.assertGreater(su, time.monotonic())
        t1 = a.token
        a.release()
        self.assertFalse(a.locked())
        self.assertTrue(b.acquire(timeout=5))
        self.assertGreater(b.token, t1)
        b.release()
        with a:
            self.assertTrue(a.locked())
        self.assertTrue(a.acquire(blocking=False))  # reusable after release
        a.release()
        with self.assertRaises(raftlock.NotLocked):
            a.release()

    def test_several_locks_on_one_lease(self) -> None:
        lease = self.c.lease(ttl=2)
        self.addCleanup(lease.close)
        x = lease.lock("py2/multi/x")
        y = lease.lock("py2/multi/y")
        z = raftlock.Lock(self.c, "py2/multi/z", lease=lease)
        self.assertTrue(z.acquire(blocking=False))
        # Kept alive past several TTLs by the one lease.
        end = time.monotonic() + 2.5
        wait_for(lambda: time.monotonic() > end, 5, "two and a half seconds")
        for n in ("x", "y", "z"):
            self.assertTrue(self.c.status(f"py2/multi/{n}").held, n)
        x.release()  # this lock only: the lease stays
        self.assertFalse(self.c.status("py2/multi/x").held)
        self.assertTrue(self.c.status("py2/multi/y").held)
        self.assertFalse(lease.lost.is_set())
        lease.close()
        self.assertFalse(self.c.status("py2/multi/y").held)
        self.assertTrue(y.lost.is_set())


if __name__ == "__main__":
    unittest.main()
