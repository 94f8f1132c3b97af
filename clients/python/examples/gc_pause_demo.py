#!/usr/bin/env python3
"""The GC-pause double charge, in Python (the story of `make demo`).

Worker A takes a lock, then freezes itself with SIGSTOP (a stand-in for a stop-the-world
pause: a long GC, swapping, a stopped VM) right before it charges a card, for longer than
the lock's TTL. Worker B takes the lock meanwhile and charges. A is resumed and charges too.

    python3 clients/python/examples/gc_pause_demo.py            # starts its own 3-node cluster
    RAFTLOCK_ENDPOINTS=http://127.0.0.1:7001,... python3 ...     # or uses yours (make run)
    python3 ... --no-fencing                                     # raftlock without fencing: must fail

Two halves, each with two worker processes and a SQLite ledger:

1. A Redis-style lock (``SET lock NX PX ttl``, emulated in SQLite: an owner and a wall-clock
   expiry, no token) and a plain ledger: the card is charged twice.
2. raftlock (``client.lock``) and a ledger fenced with ``raftlock.fencing``: B is granted the
   lock by the commit that expires A's lease, with a higher token; B's charge raises the
   account's fence, and A's late charge with its old token is refused (StaleToken).

Each worker uses its own charge id, as two holders generating their own attempt ids would:
an idempotency key alone would not catch this. Exit status 0 when raftlock charged once.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

TTL = 2.0  # seconds: the pause is longer than this
ACCOUNT = "accounts/A"
AMOUNT = 3000


# --- the ledger --------------------------------------------------------------------------


def open_ledger(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=10)
    conn.execute("CREATE TABLE IF NOT EXISTS charges (charge_id TEXT PRIMARY KEY, account TEXT, amount INTEGER, token INTEGER)")
    conn.commit()
    return conn


def charge(path: str, charge_id: str, token: int | None, fenced: bool) -> bool:
    """Record a charge; with fencing, only if ``token`` is not stale. True when accepted."""
    from raftlock.fencing import FencedDB, StaleToken

    conn = open_ledger(path)
    try:
        if not fenced:
            conn.execute("INSERT INTO charges VALUES (?, ?, ?, ?)", (charge_id, ACCOUNT, AMOUNT, token))
            conn.commit()
            return True
        db = FencedDB(conn)
        db.create_table()
        assert token is not None
        try:
            with db.write(ACCOUNT, token) as cur:
                cur.execute("INSERT INTO charges VALUES (?, ?, ?, ?)", (charge_id, ACCOUNT, AMOUNT, token))
            return True
        except StaleToken:
            return False
    finally:
        conn.close()


# --- the Redis-style lock ------------------------------------------------------------------


def plain_lock(path: str, owner: str, ttl: float, wait: float) -> None:
    """SET lock owner NX PX ttl, retried until ``wait`` passes: a lock that expires on a
    wall clock and gives no token."""
    end = time.monotonic() + wait
    conn = sqlite3.connect(path, timeout=10, isolation_level=None)
    conn.execute("CREATE TABLE IF NOT EXISTS plainlock (name TEXT PRIMARY KEY, owner TEXT, expires REAL)")
    try:
        while True:
            conn.execute("BEGIN IMMEDIATE")
            row = conn.execute("SELECT owner, expires FROM plainlock WHERE name = 'lock'").fetchone()
            if row is None or row[1] < time.time():
                conn.execute("INSERT OR REPLACE INTO plainlock VALUES ('lock', ?, ?)", (owner, time.time() + ttl))
                conn.execute("COMMIT")
                return
            conn.execute("COMMIT")
            if time.monotonic() > end:
                raise TimeoutError("the lock stayed held")
            time.sleep(0.05)
    finally:
        conn.close()


# --- a worker process ------------------------------------------------------------------------


def say(**kv: object) -> None:
    print(json.dumps(kv), flush=True)


def worker(args: argparse.Namespace) -> int:
    """One worker: take the lock, (A only) freeze before the write, then charge."""
    if args.kind == "plain":
        plain_lock(args.lockdb, args.name, TTL, 30)
        say(event="locked", token=None)
        if args.pause:
            os.kill(os.getpid(), signal.SIGSTOP)  # the "GC pause", right before the write
        say(event="charge", accepted=charge(args.ledger, f"charge-{args.name}", None, fenced=False))
        return 0
    import raftlock

    client = raftlock.Client(args.endpoints)
    held = client.lock("demo/" + ACCOUNT, ttl=TTL, wait=30, owner=args.name)
    say(event="locked", token=held.token)
    if held.lost.is_set():
        say(event="lost-before-write")
        return 1
    if args.pause:
        os.kill(os.getpid(), signal.SIGSTOP)  # the "GC pause", after the check, before the write
    accepted = charge(args.ledger, f"charge-{args.name}", held.token, fenced=not args.no_fencing)
    say(event="charge", accepted=accepted, lost_after_pause=held.lost.is_set())
    try:
        held.release()
    except raftlock.RaftlockError:
        pass  # A's grant is long gone
    client.close()
    return 0


# --- the orchestration ------------------------------------------------------------------------


def stopped(pid: int) -> bool:
    """Whether process pid is stopped (state T in /proc)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except (OSError, IndexError):
        return False


def wait_until(cond, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(what)
        time.sleep(0.02)


def half(kind: str, endpoints: list[str], tmp: str, no_fencing: bool) -> dict[str, object]:
    """Run worker A (paused) and worker B against a fresh ledger; return what happened."""
    ledger = os.path.join(tmp, f"{kind}-ledger.db")
    lockdb = os.path.join(tmp, f"{kind}-lock.db")
    base = [sys.executable, __file__, "worker", "--kind", kind, "--ledger", ledger, "--lockdb", lockdb, "--endpoints", ",".join(endpoints)]
    if no_fencing:
        base.append("--no-fencing")
    a = subprocess.Popen([*base, "--name", "A", "--pause"], stdout=subprocess.PIPE, text=True)
    try:
        assert a.stdout is not None
        a_locked = json.loads(a.stdout.readline())
        wait_until(lambda: stopped(a.pid), 10, "worker A to freeze")
        b = subprocess.run([*base, "--name", "B"], stdout=subprocess.PIPE, text=True, timeout=60, check=True)
        b_lines = [json.loads(x) for x in b.stdout.splitlines()]
        os.kill(a.pid, signal.SIGCONT)
        a_out, _ = a.communicate(timeout=60)
        a_lines = [a_locked] + [json.loads(x) for x in a_out.splitlines()]
    finally:
        if a.poll() is None:
            os.kill(a.pid, signal.SIGCONT)
            a.kill()
            a.wait()
    conn = open_ledger(ledger)
    charges = conn.execute("SELECT COUNT(*) FROM charges").fetchone()[0]
    conn.close()
    a_charge = next(x for x in a_lines if x["event"] == "charge")
    return {
        "a_token": a_locked["token"],
        "b_token": b_lines[0]["token"],
        "a_write": "accepted" if a_charge["accepted"] else "refused (stale_token)",
        "charges": charges,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    w = sub.add_parser("worker")
    w.add_argument("--kind", choices=["plain", "raftlock"], required=True)
    w.add_argument("--name", required=True)
    w.add_argument("--ledger", required=True)
    w.add_argument("--lockdb", required=True)
    w.add_argument("--endpoints", default="")
    w.add_argument("--pause", action="store_true")
    w.add_argument("--no-fencing", action="store_true")
    ap.add_argument("--no-fencing", action="store_true", help="raftlock without a fenced ledger (shows the double charge)")
    args = ap.parse_args()
    if args.cmd == "worker":
        args.endpoints = [e for e in args.endpoints.split(",") if e]
        return worker(args)

    cluster = None
    endpoints = [e for e in os.environ.get("RAFTLOCK_ENDPOINTS", "").split(",") if e]
    if not endpoints:
        sys.path.insert(0, str(HERE.parent / "tests"))
        from cluster import Cluster  # the tests' helper: three `raftlock serve` processes

        cluster = Cluster()
        cluster.start_all()
        cluster.wait_leader()
        endpoints = cluster.endpoints
    try:
        with tempfile.TemporaryDirectory(prefix="raftlock-demo-") as tmp:
            plain = half("plain", endpoints, tmp, False)
            rl = half("raftlock", endpoints, tmp, args.no_fencing)
    finally:
        if cluster is not None:
            cluster.stop()
    right = "raftlock + " + ("UNFENCED ledger" if args.no_fencing else "fenced ledger")
    rows = [
        ("worker A's token", "-", str(rl["a_token"])),
        ("worker B's token", "-", str(rl["b_token"])),
        ("A's write after its pause", str(plain["a_write"]), str(rl["a_write"])),
        ("charges accepted", str(plain["charges"]), str(rl["charges"])),
        ("outcome", "DOUBLE CHARGE" if plain["charges"] == 2 else "charged once", "DOUBLE CHARGE" if rl["charges"] != 1 else "charged once"),
    ]
    print(f"{'':28} {'Redis-style SET NX PX':24} {right}")
    for r in rows:
        print(f"{r[0]:28} {r[1]:24} {r[2]}")
    return 0 if rl["charges"] == 1 and int(str(rl["b_token"])) > int(str(rl["a_token"])) else 1


if __name__ == "__main__":
    sys.exit(main())
