"""The client's error map against the server's catalogue of outcomes (api/outcomes.json,
generated from api/outcomes.go): every code has its exception with the catalogue's retry
class, the retries go by it, and a code the client does not know is its generic error.
Needs no cluster."""

from __future__ import annotations

import json
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import raftlock  # noqa: E402
from raftlock import _core as core  # noqa: E402
from raftlock import errors  # noqa: E402

CATALOGUE = HERE.parent.parent.parent / "api" / "outcomes.json"


class OutcomesTest(unittest.TestCase):
    def setUp(self) -> None:
        self.catalogue = json.loads(CATALOGUE.read_text())
        self.req = core.Request(op="acquire 'x'", method="PUT", path="/v1/locks/x")
        self.ep = core.parse_endpoints(["http://127.0.0.1:1"], False)[0]

    def test_every_code_has_its_error_and_retry_class(self) -> None:
        classes = set(self.catalogue["retry_classes"])
        codes = set()
        for o in self.catalogue["outcomes"]:
            code = o["code"]
            codes.add(code)
            self.assertIn(code, errors._BY_CODE, f"{code} (api/outcomes.json) has no exception in raftlock/errors.py")
            e = errors.error_for(code, "m")
            self.assertEqual(e.code, code)
            self.assertEqual(e.retry_class, o["retry"], f"{code}: retry class {e.retry_class}, the catalogue says {o['retry']}")
            self.assertEqual(core.retryable(e), o["retry"] != "never", code)
            self.assertEqual(core.may_have_applied(e), o["retry"] == "ambiguous", code)
            if code != "internal":
                self.assertIsNot(type(e), raftlock.ServerError, f"{code} is answered as the generic error")
            with self.assertRaises(type(e)):
                core.interpret(self.req, self.ep, o["status"], {}, json.dumps({"error": {"code": code, "message": "m"}}).encode())
        self.assertEqual(set(errors._BY_CODE) - codes, set(), "codes in raftlock/errors.py that the catalogue lacks")
        for cls in [raftlock.RaftlockError, *errors._BY_CODE.values(), raftlock.Unavailable, raftlock.TLSError, raftlock.LeaseLost]:
            self.assertIn(cls.retry_class, classes, cls.__name__)

    def test_unknown_code_is_the_generic_error_never_retried(self) -> None:
        e = errors.error_for("a_code_of_a_newer_server", "m", 1.0)
        self.assertIs(type(e), raftlock.ServerError)
        self.assertEqual((e.code, e.message, e.retry_class), ("a_code_of_a_newer_server", "m", "never"))
        self.assertFalse(core.retryable(e))
        with self.assertRaises(raftlock.ServerError) as cm:
            core.interpret(self.req, self.ep, 503, {"retry-after": "1"}, b'{"error":{"code":"leader_busy","message":"newer"}}')
        self.assertEqual(cm.exception.code, "leader_busy")
        self.assertIn("newer", str(cm.exception))
        # Codes that are not strings are no API answer: a library error by status, never a crash.
        for body in (b'{"error":{"code":["x"]}}', b'{"error":{"code":{"a":1}}}', b'{"error":{"code":7}}', b'{"error":"x"}', b'{"error":{"code":null}}'):
            with self.assertRaises(raftlock.RaftlockError):
                core.interpret(self.req, self.ep, 409, {}, body)
        with self.assertRaises(raftlock.ServerError):
            core.EventStream().feed(b'event: error\ndata: {"error":{"code":["x"],"message":"m"}}\n\n')


if __name__ == "__main__":
    unittest.main()
