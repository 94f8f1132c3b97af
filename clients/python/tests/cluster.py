"""A real three-node raftlock cluster of `raftlock serve` processes on loopback, for the
unit tests and the conformance runner (clients/conformance/FORMAT.md, "Cluster and
runner": the same flags as scripts/cluster.sh, on free ports)."""

from __future__ import annotations

import ctypes
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def in_ci() -> bool:
    """As testkit.InCI: CI set to anything but "", "false" or "0". Nothing may skip then."""
    return os.environ.get("CI", "") not in ("", "false", "0")


def binary() -> str:
    """$RAFTLOCK_BIN, or bin/raftlock at the repository's root (built when missing)."""
    b = os.environ.get("RAFTLOCK_BIN") or str(REPO / "bin" / "raftlock")
    if not os.path.exists(b):
        subprocess.run(["go", "build", "-o", b, "./cmd/raftlock"], cwd=REPO, check=True)
    return b


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the test process dies (Linux
    PR_SET_PDEATHSIG), so that a killed test never leaves servers running."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def wait_for(cond, timeout: float, what: str, every: float = 0.02) -> None:
    """Wait for cond() with a deadline (never a bare sleep), asking every `every` seconds;
    fail naming what was awaited."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def free_port() -> int:
    """A free loopback port (bind 0, read it, close)."""
    return free_ports(1)[0]


def free_ports(n: int) -> list[int]:
    """n distinct free loopback ports: every socket stays bound until all are read, so the
    kernel cannot hand out one port twice."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


class PortTaken(RuntimeError):
    """A node exited at start because its port was taken between free_ports and its bind
    (another process, an outgoing connection's ephemeral port)."""


def _get(port: int, path: str, timeout: float = 1.0, ctx: ssl.SSLContext | None = None, token: str | None = None, method: str = "GET") -> tuple[int, dict]:
    conn: http.client.HTTPConnection
    if ctx is not None:
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout, context=ctx)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, headers={"Authorization": f"Bearer {token}"} if token else {})
        r = conn.getresponse()
        data = r.read()
        try:
            return r.status, json.loads(data) if data else {}
        except ValueError:
            return r.status, {}
    finally:
        conn.close()


class Cluster:
    """Three `raftlock serve` processes n1..n3. Always call stop() (use it as a context
    manager): it kills every node and removes the temporary directory."""

    def __init__(self, n: int = 3, extra: list[str] | None = None, tls: bool = False, acl: bool = False, id_prefix: str = "n") -> None:
        self.bin = binary()
        self.dir = tempfile.mkdtemp(prefix="raftlock-py-")
        self.tls, self.acl = tls, acl
        self.token: str | None = None  # the ACL management token, once bootstrapped
        self.ctx: ssl.SSLContext | None = None
        if tls:
            t = os.path.join(self.dir, "tls")
            subprocess.run([self.bin, "tls", "ca", "--dir", t], check=True, capture_output=True)
            for i in range(n):
                subprocess.run([self.bin, "tls", "cert", "--node", f"n{i + 1}", "--dir", t], check=True, capture_output=True)
            subprocess.run([self.bin, "tls", "cert", "--client", "local", "--dir", t], check=True, capture_output=True)
            self.tls_dir = t
            self.ctx = ssl.create_default_context(cafile=os.path.join(t, "ca.pem"))
            self.ctx.load_cert_chain(os.path.join(t, "local.pem"), os.path.join(t, "local-key.pem"))
        self.ids = [f"{id_prefix}{i + 1}" for i in range(n)]
        self.extra = extra or []
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * n
        self.stopped: set[int] = set()
        self._new_ports()

    def _new_ports(self) -> None:
        ports = free_ports(2 * len(self.ids))
        self.http, self.raft = ports[: len(self.ids)], ports[len(self.ids):]
        self.boot = ",".join(f"{id_}=127.0.0.1:{p}" for id_, p in zip(self.ids, self.raft))

    def start_fresh(self, attempts: int = 3) -> None:
        """Start every node and wait for a ready leader. When a node finds its port taken
        at start, start the whole cluster again on new ports and empty data directories
        (the ports are in the bootstrap list, so the nodes cannot keep theirs)."""
        for attempt in range(attempts):
            self.start_all()
            try:
                self.wait_leader()
                return
            except PortTaken:
                if attempt == attempts - 1:
                    raise
                for i in range(len(self.ids)):
                    self.kill(i)
                    shutil.rmtree(os.path.join(self.dir, self.ids[i]), ignore_errors=True)
                    Path(self.dir, self.ids[i] + ".log").unlink(missing_ok=True)
                self._new_ports()

    def __enter__(self) -> Cluster:
        self.start_fresh()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def endpoints(self) -> list[str]:
        """Every node's base URL, in node order."""
        scheme = "https" if self.tls else "http"
        return [f"{scheme}://127.0.0.1:{p}" for p in self.http]

    def start(self, i: int) -> None:
        """Start node i (with its data directory) if it is not running."""
        if self.procs[i] is not None and self.procs[i].poll() is None:
            return
        d = os.path.join(self.dir, self.ids[i])
        os.makedirs(d, exist_ok=True)
        log = open(os.path.join(self.dir, self.ids[i] + ".log"), "ab")
        argv = [
            self.bin, "serve", "--id", self.ids[i],
            "--http-addr", f"127.0.0.1:{self.http[i]}", "--raft-addr", f"127.0.0.1:{self.raft[i]}",
            "--data-dir", d, "--bootstrap", self.boot, *self.extra,
        ]
        if self.tls:
            t, id_ = self.tls_dir, self.ids[i]
            argv += ["--tls-cert", f"{t}/{id_}.pem", "--tls-key", f"{t}/{id_}-key.pem", "--tls-ca", f"{t}/ca.pem", "--tls-client-auth", "require"]
        if self.acl:
            argv += ["--acl"]
        # Started from the main thread only: the death signal follows the thread that forks.
        self.procs[i] = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True, preexec_fn=_die_with_parent)
        log.close()

    def start_all(self) -> None:
        for i in range(len(self.ids)):
            self.start(i)

    def running(self, i: int) -> bool:
        p = self.procs[i]
        return p is not None and p.poll() is None

    def kill(self, i: int) -> None:
        """SIGKILL node i and reap it."""
        p = self.procs[i]
        if p is None:
            return
        if i in self.stopped:
            self.stopped.discard(i)
        try:
            p.kill()
        except ProcessLookupError:
            pass
        p.wait(timeout=10)
        self.procs[i] = None

    def pause(self, i: int) -> None:
        """SIGSTOP node i (cont_all or restore continues it)."""
        p = self.procs[i]
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGSTOP)
            self.stopped.add(i)

    def stop_all(self) -> None:
        """SIGSTOP every running node: each hangs, connections are accepted by the kernel."""
        for i, p in enumerate(self.procs):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGSTOP)
                self.stopped.add(i)

    def cont_all(self) -> None:
        """SIGCONT every stopped node."""
        for i in sorted(self.stopped):
            p = self.procs[i]
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGCONT)
        self.stopped.clear()

    def restart_killed(self) -> None:
        """Start again every node that is not running."""
        for i in range(len(self.ids)):
            if not self.running(i):
                self.start(i)

    def leader_index(self) -> int:
        """The index of a ready leader (it names itself leader and serves a linearizable
        read), or -1."""
        for i in range(len(self.ids)):
            if not self.running(i) or i in self.stopped:
                continue
            try:
                if self.acl and self.token is None:
                    # Before the bootstrap nothing reads; bootstrap on the first ready node.
                    st, _ = _get(self.http[i], "/readyz", ctx=self.ctx)
                    if st != 200:
                        continue
                    st, tok = _get(self.http[i], "/v1/acl/bootstrap", ctx=self.ctx, method="POST", timeout=5)
                    if st == 200 and tok.get("secret_id"):
                        self.token = tok["secret_id"]
                    continue
                st, info = _get(self.http[i], "/v1/cluster", ctx=self.ctx, token=self.token)
                if st != 200 or info.get("leader_id") != self.ids[i]:
                    continue
                st, _ = _get(self.http[i], "/v1/locks?prefix=%00", ctx=self.ctx, token=self.token)
                if st == 200:
                    return i
            except OSError:
                continue
        return -1

    def wait_leader(self, timeout: float = 20.0) -> int:
        """Wait for a ready leader; raise (with the logs' tails) when there is none in time,
        and PortTaken at once when a node exited because its port was taken."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            i = self.leader_index()
            if i >= 0:
                return i
            self._check_ports()
            time.sleep(0.02)
        raise RuntimeError(f"no ready leader after {timeout}s\n{self.logs()}")

    def _check_ports(self) -> None:
        for i, p in enumerate(self.procs):
            if p is None or p.poll() is None:
                continue
            try:
                log = Path(self.dir, self.ids[i] + ".log").read_text(errors="replace")
            except OSError:
                continue
            if "address already in use" in log:
                raise PortTaken(f"{self.ids[i]} exited: its port was taken\n{self.logs()}")

    def wait_protocol(self, version: int = 3, timeout: float = 30.0) -> None:
        """Wait until the leader answers protocol_version ``version`` or more."""

        def active() -> bool:
            i = self.leader_index()
            if i < 0:
                return False
            st, info = _get(self.http[i], "/v1/cluster", ctx=self.ctx, token=self.token)
            return st == 200 and int(info.get("protocol_version", 0)) >= version

        wait_for(active, timeout, f"protocol version {version}")

    def snapshot_restart(self, i: int, timeout: float = 20.0) -> None:
        """Wait until node i holds a snapshot at or above the index it has applied now, kill
        it, start it again and wait for a ready leader (FORMAT.md, snapshot_restart)."""
        st, info = _get(self.http[i], "/v1/cluster", ctx=self.ctx, token=self.token)
        if st != 200:
            raise RuntimeError(f"{self.ids[i]} answered /v1/cluster with {st}")
        applied = int(info.get("applied_index", 0))
        snaps = Path(self.dir, self.ids[i], "snapshots")

        def newest() -> int:
            best = 0
            for p in snaps.glob("*") if snaps.is_dir() else []:
                parts = p.name.split("-")
                if p.is_dir() and not p.name.endswith(".tmp") and len(parts) == 3 and parts[1].isdigit():
                    best = max(best, int(parts[1]))
            return best

        wait_for(lambda: newest() >= applied, timeout, f"a snapshot of {self.ids[i]} at or above index {applied}", every=0.05)
        self.kill(i)
        self.start(i)
        self.wait_leader()

    def kill_leader(self) -> str:
        """SIGKILL the leader; returns its ID."""
        i = self.wait_leader()
        self.kill(i)
        return self.ids[i]

    def restore(self) -> None:
        """Back to three running nodes with a ready leader."""
        self.cont_all()
        self.restart_killed()
        self.wait_leader()

    def logs(self, lines: int = 30) -> str:
        """The tail of every node's log."""
        out = []
        for id_ in self.ids:
            try:
                text = Path(self.dir, id_ + ".log").read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                text = []
            out.append(f"--- {id_} ---\n" + "\n".join(text))
        return "\n".join(out)

    def stop(self) -> None:
        """Kill every node and remove the directory."""
        self.cont_all()
        for i in range(len(self.ids)):
            self.kill(i)
        shutil.rmtree(self.dir, ignore_errors=True)


class ModuleCluster:
    """One fresh three-node cluster for a test module, started by its setUpModule and
    stopped by its tearDownModule:

        _CLUSTER = ModuleCluster()
        setUpModule, tearDownModule = _CLUSTER.start, _CLUSTER.stop
    """

    def __init__(self) -> None:
        self.cluster: Cluster | None = None

    def start(self) -> None:
        self.cluster = Cluster()
        try:
            self.cluster.start_fresh()
        except BaseException:
            self.cluster.stop()
            raise

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()

    def get(self) -> Cluster:
        assert self.cluster is not None, "the module's cluster is not started (setUpModule)"
        return self.cluster

    def endpoints(self) -> list[str]:
        return self.get().endpoints
