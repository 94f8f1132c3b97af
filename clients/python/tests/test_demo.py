"""The GC-pause demo (examples/gc_pause_demo.py) runs and tells the story it claims: the
Redis-style lock charges twice, raftlock with the fenced ledger once, and raftlock without
fencing twice (the negative control: the demo's own check must fail then)."""

from __future__ import annotations

import os
import subprocess
import sys
import unittest
from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "examples" / "gc_pause_demo.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RAFTLOCK_ENDPOINTS"}
    return subprocess.run([sys.executable, str(DEMO), *args], capture_output=True, text=True, timeout=120, env=env)


def row(out: str, label: str) -> list[str]:
    line = next(x for x in out.splitlines() if x.startswith(label))
    return [c for c in line[len(label):].split("  ") if c.strip()]


class DemoTest(unittest.TestCase):
    def test_fenced_ledger_charges_once(self) -> None:
        p = run()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual([c.strip() for c in row(p.stdout, "charges accepted")], ["2", "1"])
        self.assertEqual([c.strip() for c in row(p.stdout, "A's write after its pause")], ["accepted", "refused (stale_token)"])
        a, b = (int(row(p.stdout, f"worker {w}'s token")[-1]) for w in "AB")
        self.assertGreater(b, a)

    def test_without_fencing_it_charges_twice_and_fails(self) -> None:
        p = run("--no-fencing")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual([c.strip() for c in row(p.stdout, "charges accepted")], ["2", "2"])


if __name__ == "__main__":
    unittest.main()
