/**
 * Prefix routing across clusters, with the Go client.Router's rules (client/routes.go).
 */
import { CrossClusterError, NoRouteError } from "./errors.js";
import type { AcquireOptions, CallOptions, Client, Held, HeldSet, HoldOptions, Leadership, LockOptions, StatusOptions } from "./client.js";
import type { Lease } from "./lease.js";
import type { Grant, LockStatus } from "./types.js";

/** One cluster of a Router: its client and the name prefixes it owns ("" is the default route). */
export interface Route {
  /** A label for errors ("eu-1"); default "cluster N". */
  name?: string;
  /** The prefixes the cluster owns, compared byte by byte; "" owns every name no other prefix matches. */
  prefixes: string[];
  /** The cluster's client: its own endpoints, TLS and ACL token (a token of one cluster is never sent to another). */
  client: Client;
}

/**
 * Sends each call to the cluster that owns its name: the one routed the longest prefix of
 * the name (NoRouteError when none does, before anything is sent). Clusters share nothing: a
 * lease, its grants and their fencing tokens live on one cluster, and tokens are never
 * compared across clusters (a name always routes to the same one). A lease of one cluster
 * given for another's name is refused with CrossClusterError before anything is sent: a
 * Lease object always, a lease ID when this Router made or saw the lease (newLease, acquire).
 */
export class Router {
  readonly #clusters: { name: string; client: Client }[] = [];
  readonly #prefixes: { prefix: string; cluster: number }[] = [];
  readonly #leases = new Map<string, { cluster: number; until?: number }>();
  #sweepAt = 64;

  constructor(routes: Route[]) {
    if (routes.length === 0) throw new NoRouteError("invalid_argument", "router: no routes given");
    const owner = new Map<string, string>();
    routes.forEach((r, i) => {
      const name = r.name || `cluster ${i + 1}`;
      if (r.prefixes.length === 0) throw new NoRouteError("invalid_argument", `router: route ${name} has no prefixes (give "" for the default route)`);
      for (const p of r.prefixes) {
        const other = owner.get(p);
        if (other !== undefined) throw new NoRouteError("invalid_argument", `router: prefix ${JSON.stringify(p)} is routed to both ${other} and ${name}`);
        owner.set(p, name);
        this.#prefixes.push({ prefix: p, cluster: i });
      }
      this.#clusters.push({ name, client: r.client });
    });
    this.#prefixes.sort((a, b) => b.prefix.length - a.prefix.length);
  }

  #route(verb: string, name: string): number {
    for (const p of this.#prefixes) if (name.startsWith(p.prefix)) return p.cluster;
    throw new NoRouteError("no_route", `${verb} ${JSON.stringify(name)}: no route owns the name (no routed prefix matches it, and there is no default route "")`);
  }

  /** The client of the cluster that owns name. */
  clientFor(name: string): Client {
    return this.#clusters[this.#route("route", name)].client;
  }

  /** The label of the cluster that owns name. */
  clusterFor(name: string): string {
    return this.#clusters[this.#route("route", name)].name;
  }

  #cross(verb: string, name: string, i: number, other: string): CrossClusterError {
    const own = this.#clusters[i].name;
    return new CrossClusterError("cross_cluster", `${verb} ${JSON.stringify(name)}: the name is ${own}'s, the lease ${other}'s; take a lease on ${own}`);
  }

  #home(lease: Lease): string {
    const h = this.#leases.get(lease.id);
    return h ? this.#clusters[h.cluster].name : "a cluster outside this router";
  }

  /** Throws CrossClusterError unless lease lives on the cluster that owns name. */
  checkLease(lease: Lease, name: string): void {
    const i = this.#route("lease for", name);
    const h = this.#leases.get(lease.id);
    if (h === undefined || h.cluster !== i) throw this.#cross("lease for", name, i, this.#home(lease));
  }

  #checkLeaseID(verb: string, name: string, i: number, leaseId: string): void {
    const h = this.#leases.get(leaseId);
    if (h !== undefined && h.until !== undefined && performance.now() > h.until) {
      this.#leases.delete(leaseId);
      return;
    }
    if (h !== undefined && h.cluster !== i) throw this.#cross(verb, name, i, this.#clusters[h.cluster].name);
  }

  #remember(leaseId: string, cluster: number, until?: number): void {
    this.#leases.set(leaseId, { cluster, until });
    if (this.#leases.size < this.#sweepAt) return;
    const t = performance.now();
    for (const [id, h] of this.#leases) if (h.until !== undefined && t > h.until) this.#leases.delete(id);
    this.#sweepAt = 2 * this.#leases.size + 64;
  }

  /** A lease kept alive on the cluster that owns name (a lock name or a prefix). */
  async newLease(name: string, ttl?: number, opts: CallOptions = {}): Promise<Lease> {
    const i = this.#route("new lease for", name);
    const l = await this.#clusters[i].client.newLease(ttl, opts);
    this.#remember(l.id, i);
    l.lost.addEventListener("abort", () => this.#leases.delete(l.id), { once: true });
    return l;
  }

  /** Takes lock name on the cluster that owns it; with opts.lease, CrossClusterError unless the lease lives there. */
  lock(name: string, opts: LockOptions = {}): Promise<Held> {
    if (opts.lease !== undefined) this.checkLease(opts.lease, name);
    return this.clientFor(name).lock(name, opts);
  }

  /** Takes every lock of names in one commit on the cluster that owns them all (CrossClusterError when several do). */
  lockset(names: string[], opts: LockOptions = {}): Promise<HeldSet> {
    const homes = new Set(names.map((n) => this.#route("lockset", n)));
    if (homes.size > 1) {
      const [a, b] = [...homes];
      throw this.#cross("lockset", names.join(","), a, this.#clusters[b].name);
    }
    if (opts.lease !== undefined) this.checkLease(opts.lease, names[0]);
    return this.clientFor(names[0]).lockset(names, opts);
  }

  semaphore(name: string, limit: number, opts: HoldOptions = {}): Promise<Held> {
    return this.clientFor(name).semaphore(name, limit, opts);
  }

  campaign(name: string, value: string, opts: HoldOptions = {}): Promise<Leadership> {
    return this.clientFor(name).campaign(name, value, opts);
  }

  /** One plain acquire on the cluster that owns name; the lease it creates is remembered as that cluster's. */
  async acquire(name: string, opts: AcquireOptions = {}): Promise<Grant> {
    const i = this.#route("acquire", name);
    if (opts.leaseId) this.#checkLeaseID("acquire", name, i, opts.leaseId);
    const g = await this.#clusters[i].client.acquire(name, opts);
    if (!opts.leaseId) this.#remember(g.lease_id, i, performance.now() + g.ttl_ms);
    return g;
  }

  /** Releases lock name on the cluster that owns it; a lease known to live on another is refused (CrossClusterError). */
  release(name: string, leaseId: string, token: number, opts: CallOptions = {}): Promise<void> {
    const i = this.#route("release", name);
    this.#checkLeaseID("release", name, i, leaseId);
    return this.#clusters[i].client.release(name, leaseId, token, opts);
  }

  status(name: string, opts: StatusOptions = {}): Promise<LockStatus> {
    return this.clientFor(name).status(name, opts);
  }

  /** Closes every cluster's client (revoking its leases). */
  async close(): Promise<void> {
    await Promise.all(this.#clusters.map((c) => c.client.close()));
  }
}
