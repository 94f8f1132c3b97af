"""Tests of the protocol core (raftlock._core) that need no cluster: the one HTTP/1.1
parser both clients use (bounded, library errors only), the Server-Sent Events reader, the
routing table, and the package's module structure (no import cycle, no private call across
modules)."""

from __future__ import annotations

import ast
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import raftlock  # noqa: E402
from raftlock import _core as core  # noqa: E402

PKG = HERE.parent / "raftlock"


class ParserTest(unittest.TestCase):
    def parse(self, raw: bytes, step: int = 1) -> tuple[core.ResponseParser, bytes]:
        p = core.ResponseParser()
        body = b""
        for i in range(0, len(raw), step):  # byte by byte: every state meets a cut
            for piece in p.feed(raw[i : i + step]):
                body += piece
        return p, body

    def test_content_length_chunked_and_close_answers(self) -> None:
        for step in (1, 7, 4096):
            p, body = self.parse(b'HTTP/1.1 200 OK\r\nContent-Length: 11\r\nX-Raftlock-Leader: 127.0.0.1:1\r\n\r\n{"a":"bcd"}', step)
            self.assertTrue(p.done)
            self.assertEqual((p.status, body, p.keep_alive), (200, b'{"a":"bcd"}', True))
            self.assertEqual(core.leader_of(p.headers), "127.0.0.1:1")
            p, body = self.parse(b"HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\nX-T: y\r\n\r\n", step)
            self.assertTrue(p.done)
            self.assertEqual(body, b'{"a":1}')
        p, body = self.parse(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\nuntil close")
        self.assertFalse(p.done)
        p.eof()
        self.assertTrue(p.done)
        self.assertEqual((body, p.keep_alive), (b"until close", False))

    def test_malformed_or_unbounded_answers_raise_broken_answer_only(self) -> None:
        bad = [
            b"NOTHTTP 200\r\n\r\n",
            b"HTTP/1.1 abc OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXX",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (core.MAX_BODY_BYTES + 1),
            b"HTTP/1.1 200 OK\r\nX: " + b"a" * (core.MAX_HEAD_BYTES + 10),
        ]
        for raw in bad:
            with self.assertRaises(core.BrokenAnswer, msg=raw[:60]):
                self.parse(raw, 4096)
        p = core.ResponseParser()
        p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        with self.assertRaises(core.BrokenAnswer):
            p.eof()  # cut off
        big = core.ResponseParser()
        big.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        with self.assertRaises(core.BrokenAnswer):  # a chunked body past the bound
            for _ in range(core.MAX_BODY_BYTES // (1 << 20) + 2):
                big.feed(b"100000\r\n" + b"x" * (1 << 20) + b"\r\n")

    def test_error_answers_are_the_librarys_errors(self) -> None:
        req = core.Request(op="acquire 'x'", method="PUT", path="/v1/locks/x", secrets=["s3cret"])
        ep = core.parse_endpoints(["http://127.0.0.1:1"], False)[0]
        with self.assertRaises(raftlock.LockHeld):
            core.interpret(req, ep, 409, {}, b'{"error":{"code":"lock_held","message":"held by s3cret"}}')
        with self.assertRaises(raftlock.Unavailable):
            core.interpret(req, ep, 502, {}, b"<html>bad gateway</html>")
        with self.assertRaises(raftlock.ServerError) as cm:
            core.interpret(req, ep, 200, {}, b"not json")
        self.assertNotIn("s3cret", str(cm.exception))
        with self.assertRaises(raftlock.IndexCompacted):
            core.interpret(req, ep, 409, {}, b'{"error":{"code":"index_compacted","message":"gone"}}')

    def test_event_stream(self) -> None:
        es = core.EventStream()
        raw = (b"retry: 1000\nid: 9\n\n: ping\n\nid: 10\nevent: entry\n"
               b'data: {"index":10,"events":[{"name":"a","kind":"granted","index":10,"token":10}]}\n\n')
        evs = []
        for i in range(len(raw)):
            evs += es.feed(raw[i : i + 1])
        self.assertEqual([(e.name, e.kind, e.index, e.token) for e in evs], [("a", "granted", 10, 10)])
        self.assertEqual(es.last, 10)
        with self.assertRaises(raftlock.IndexCompacted):
            es.feed(b'event: error\ndata: {"error":{"code":"index_compacted","message":"x"}}\n\n')
        with self.assertRaises(raftlock.ServerError):
            core.EventStream().feed(b"event: entry\ndata: {not json\n\n")

    def test_route_table(self) -> None:
        t = core.RouteTable([("A", ["a/", ""]), ("B", ["b/", "a/special/"])])
        self.assertEqual([t.names[t.route("x", n)] for n in ["a/x", "a/special/y", "a/specialist", "b/z", "zz"]], ["A", "B", "A", "B", "A"])
        t.remember("lease-of-a", 0, None)
        with self.assertRaises(raftlock.CrossCluster):
            t.check_lease_id("release", "b/z", 1, "lease-of-a")
        t.check_lease_id("release", "a/x", 0, "lease-of-a")
        with self.assertRaises(raftlock.NoRoute):
            core.RouteTable([("B", ["b/"])]).route("lock", "c/x")
        with self.assertRaises(ValueError):
            core.RouteTable([("A", ["x/"]), ("B", ["x/"])])


class StructureTest(unittest.TestCase):
    def modules(self) -> dict[str, ast.Module]:
        return {p.stem: ast.parse(p.read_text()) for p in PKG.glob("*.py")}

    def test_no_import_cycle(self) -> None:
        graph: dict[str, set[str]] = {}
        for name, tree in self.modules().items():
            deps: set[str] = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.level == 1:
                    if node.module:
                        deps.add(node.module.split(".")[0])
                    else:
                        deps.update(a.name for a in node.names)
            graph[name] = deps - {name}
        seen: dict[str, int] = {}

        def visit(n: str, path: list[str]) -> None:
            if seen.get(n) == 1:
                self.fail("import cycle: " + " -> ".join(path + [n]))
            if seen.get(n) == 2:
                return
            seen[n] = 1
            for d in sorted(graph.get(n, ())):
                if d != "__init__":
                    visit(d, path + [n])
            seen[n] = 2

        for n in sorted(graph):
            if n != "__init__":
                visit(n, [])

    def test_no_private_call_across_modules(self) -> None:
        """A module touches another object's _private attributes only when its own code
        defines them: no module reaches into another module's internals."""
        mods = self.modules()
        for name, tree in mods.items():
            own: set[str] = set()
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    own.add(node.name)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    own.add(node.attr)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    own.add(node.id)
            for node in ast.walk(tree):
                if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
                    continue
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    continue
                self.assertIn(node.attr, own, f"{name}.py line {node.lineno}: ._{node.attr[1:]} is another module's private name")

    def test_lock_object_has_one_name(self) -> None:
        c = raftlock.Client(["http://127.0.0.1:1"])
        with self.assertWarns(DeprecationWarning):
            lk = c.Lock("x/y")
        self.assertIsInstance(lk, raftlock.Lock)
        self.assertIsInstance(raftlock.Lock(c, "x/y"), raftlock.Lock)
        c.close()


if __name__ == "__main__":
    unittest.main()
