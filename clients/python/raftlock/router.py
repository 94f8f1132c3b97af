"""Prefix routing across clusters, for the threaded and the asyncio client alike: a Router
sends each call to the client of the cluster that owns its name, with the Go
client.Router's rules (the protocol core's RouteTable)."""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import Any

from ._core import RouteTable


@dataclass
class Route:
    """One cluster: its client (a raftlock.Client or a raftlock.aio.AsyncClient, with its
    own endpoints, TLS and ACL token: a token of one cluster is never sent to another) and
    the name prefixes it owns ("" is the default route). ``name`` labels it in errors."""

    client: Any
    prefixes: list[str] = field(default_factory=list)
    name: str = ""


class Router:
    """Sends each call to the cluster that owns its name: the one routed the longest prefix
    of the name (NoRoute when none does, before anything is sent). Clusters share nothing: a
    lease, its grants and their fencing tokens live on one cluster, and tokens are never
    compared across clusters (a name always routes to the same one). A lease of one cluster
    given for a name of another is refused with CrossCluster before anything is sent: a
    Lease object always, a lease ID when this Router made or saw the lease (``lease``,
    ``acquire``).

    With AsyncClients, each method returns what the client's returns (an awaitable, or
    ``lock``'s awaitable async context manager): ``await router.status(name)``.
    """

    def __init__(self, routes: list[Route]) -> None:
        self._routes = list(routes)
        self._table = RouteTable([(r.name, list(r.prefixes)) for r in self._routes])

    def _cluster(self, verb: str, name: str) -> int:
        return self._table.route(verb, name)

    def client_for(self, name: str) -> Any:
        """The client of the cluster that owns ``name``."""
        return self._routes[self._cluster("route", name)].client

    def cluster_for(self, name: str) -> str:
        """The label of the cluster that owns ``name``."""
        return self._table.names[self._cluster("route", name)]

    def check_lease(self, lease: Any, name: str) -> None:
        """Raise CrossCluster unless ``lease`` lives on the cluster that owns ``name``."""
        i = self._cluster("lease for", name)
        if lease.client is not self._routes[i].client:
            home = next((j for j, r in enumerate(self._routes) if r.client is lease.client), None)
            raise self._table.cross("lease for", name, i, home)

    def lease(self, name: str, ttl: float, **kw: Any) -> Any:
        """A lease kept alive on the cluster that owns ``name`` (a lock name or a prefix)."""
        i = self._cluster("new lease for", name)
        out = self._routes[i].client.lease(ttl, **kw)
        if inspect.isawaitable(out):
            async def remembered() -> Any:
                lease = await out
                self._table.remember(lease.id, i, None)
                return lease

            return remembered()
        self._table.remember(out.id, i, None)
        return out

    def lock(self, name: str, *args: Any, lease: Any = None, **kw: Any) -> Any:
        """Take lock ``name`` on the cluster that owns it (see the client's lock); with
        ``lease``, CrossCluster unless the lease lives there."""
        if lease is not None:
            self.check_lease(lease, name)
            kw["lease"] = lease
        return self.client_for(name).lock(name, *args, **kw)

    def lockset(self, names: list[str], *args: Any, lease: Any = None, **kw: Any) -> Any:
        """Take every lock of ``names`` in one commit on the cluster that owns them all;
        CrossCluster when they belong to several (a lockset is one commit of one cluster)."""
        homes = {self._cluster("lockset", n) for n in names}
        if len(homes) > 1:
            raise self._table.cross("lockset", ",".join(names), min(homes), max(homes))
        if lease is not None:
            self.check_lease(lease, names[0])
            kw["lease"] = lease
        return self.client_for(names[0]).lockset(names, *args, **kw)

    def semaphore(self, name: str, *args: Any, **kw: Any) -> Any:
        return self.client_for(name).semaphore(name, *args, **kw)

    def campaign(self, name: str, *args: Any, **kw: Any) -> Any:
        return self.client_for(name).campaign(name, *args, **kw)

    def acquire(self, name: str, **kw: Any) -> Any:
        """One plain acquire on the cluster that owns ``name``; the lease it creates is
        remembered as that cluster's (until its TTL has passed)."""
        i = self._cluster("acquire", name)
        if kw.get("lease_id"):
            self._table.check_lease_id("acquire", name, i, kw["lease_id"])
        out = self._routes[i].client.acquire(name, **kw)

        def note(g: Any) -> Any:
            if not kw.get("lease_id"):
                self._table.remember(g.lease_id, i, time.monotonic() + g.ttl_ms / 1000)
            return g

        if inspect.isawaitable(out):
            async def remembered() -> Any:
                return note(await out)

            return remembered()
        return note(out)

    def release(self, name: str, lease_id: str, token: int, **kw: Any) -> Any:
        """Release lock ``name`` on the cluster that owns it; a lease known to live on
        another is refused (CrossCluster)."""
        i = self._cluster("release", name)
        self._table.check_lease_id("release", name, i, lease_id)
        return self._routes[i].client.release(name, lease_id, token, **kw)

    def status(self, name: str, **kw: Any) -> Any:
        return self.client_for(name).status(name, **kw)

    def semaphore_status(self, name: str, **kw: Any) -> Any:
        return self.client_for(name).semaphore_status(name, **kw)

    def election_status(self, name: str, **kw: Any) -> Any:
        return self.client_for(name).election_status(name, **kw)

    def history(self, name: str, **kw: Any) -> Any:
        return self.client_for(name).history(name, **kw)

    def close(self) -> Any:
        """Close every cluster's client (revoking its leases)."""
        outs = [r.client.close() for r in self._routes]
        aws = [o for o in outs if inspect.isawaitable(o)]
        if aws:
            async def closed() -> None:
                for a in aws:
                    await a

            return closed()
        return None

    def __repr__(self) -> str:
        return f"<raftlock.Router {self._table.names!r}>"


__all__ = ["Route", "Router"]
