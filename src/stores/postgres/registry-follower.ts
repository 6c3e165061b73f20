import { fromBinary } from "@bufbuild/protobuf";
import { ToolSpecSchema, type ToolSpec } from "../../../gen/toolruntime/v1/tool_pb.js";
import type { ToolChange, ToolChangeKind } from "../../registry/change-log.js";
import type { RegistrySet } from "../../registry/registry-set.js";
import type { ToolRegistry } from "../../registry/tool-registry.js";
import type { Doorbell } from "./doorbell.js";
import { NextFlight } from "../../async/next-flight.js";
import type { Database } from "./open-database.js";
import { inTransaction, query } from "./transaction.js";

/** The channel whose notifications say "registry <payload> changed". */
export const toolsChannel = "toolruntime_tools";

/** Changes read per round trip while catching up. */
const changesPerRead = 500;

interface ChangeRow {
  head: string;
  version: string | null;
  kind: ToolChangeKind | null;
  spec: Buffer | null;
}

/**
 * Keeps this process's registry views in step with the store: each view applies the store's
 * changes in version order, so its subscribers (WatchTools, runners) see every replica's changes
 * gapless and in commit order. A view catches up when asked ({@link sync}, before a read), when the
 * doorbell rings for its registry, and on a periodic poll that makes a lost notification cost
 * latency only. A view too far behind to replay (its changes were pruned) is reloaded whole.
 */
export class RegistryFollower {
  readonly #flights = new Map<string, NextFlight>();
  /** Names of the registries the store was found to hold, whose views this process keeps. */
  readonly #known = new Set<string>();
  readonly #poller: NodeJS.Timeout;
  /** Counts the rings of each registry (and reconnections, as a ring of every registry). */
  readonly #rings = new Map<string, number>();
  #reconnections = 0;
  /** The rings each view has caught up with: a catch-up that began after them finished. */
  readonly #caughtUp = new Map<string, number>();

  constructor(
    private readonly database: Database,
    private readonly registries: RegistrySet,
    private readonly doorbell: Doorbell,
    pollIntervalMs: number,
    private readonly onError: (error: unknown) => void,
  ) {
    doorbell.listen(toolsChannel, (registryName) => {
      this.#rings.set(registryName, (this.#rings.get(registryName) ?? 0) + 1);
      this.#refresh(registryName);
    });
    doorbell.onReconnect(() => {
      this.#reconnections += 1;
      this.#pollAll();
    });
    this.#poller = setInterval(() => this.#pollAll(), pollIntervalMs);
    this.#poller.unref();
  }

  /**
   * Brings the view of `name` up to date with the store, creating it when the store holds the
   * registry and this process has no view yet. Resolves to the view, or undefined when the store
   * has no such registry. Concurrent callers share round trips (see NextFlight).
   */
  async sync(name: string): Promise<ToolRegistry | undefined> {
    let flight = this.#flights.get(name);
    if (!flight) {
      flight = new NextFlight(async () => {
        const rings = this.#ringsOf(name);
        await this.#catchUp(name);
        this.#caughtUp.set(name, rings);
      });
      this.#flights.set(name, flight);
    }
    await flight.run();
    return this.#known.has(name) ? this.registries.find(name) : undefined;
  }

  /**
   * The view of `name` when it is known to be up to date without asking the store: the doorbell
   * is delivering (see Doorbell.delivering) and the view caught up with every change it rang for.
   * A change committed through another replica is then seen here within a notification's delivery.
   */
  current(name: string): ToolRegistry | undefined {
    if (!this.#known.has(name) || this.#caughtUp.get(name) !== this.#ringsOf(name)) return undefined;
    return this.doorbell.delivering() ? this.registries.find(name) : undefined;
  }

  #ringsOf(name: string): number {
    return (this.#rings.get(name) ?? 0) + this.#reconnections;
  }

  /** Stops polling. */
  close(): void {
    clearInterval(this.#poller);
  }

  #refresh(name: string): void {
    if (!this.#known.has(name)) return;
    this.sync(name).catch(this.onError);
  }

  #pollAll(): void {
    const names = [...this.#known];
    if (names.length === 0) return;
    query<{ name: string; version: string }>(
      this.database,
      "SELECT name, version FROM toolruntime.registries WHERE name = ANY($1)",
      [names],
    ).then(({ rows }) => {
      for (const row of rows) {
        const view = this.registries.find(row.name);
        if (!view || view.version < BigInt(row.version)) this.#refresh(row.name);
      }
    }, this.onError);
  }

  async #catchUp(name: string): Promise<void> {
    for (;;) {
      const view = this.#known.has(name) ? this.registries.find(name) : undefined;
      if (!view) return this.#load(name);
      const { rows } = await query<ChangeRow>(
        this.database,
        `SELECT r.version AS head, c.version, c.kind, c.spec
           FROM toolruntime.registries r
           LEFT JOIN LATERAL (
             SELECT version, kind, spec FROM toolruntime.tool_changes
              WHERE registry = r.name AND version > $2 ORDER BY version LIMIT ${changesPerRead}
           ) c ON true
          WHERE r.name = $1`,
        [name, view.version.toString()],
      );
      if (rows.length === 0) return; // the registry is not in the store (never committed)
      const head = BigInt((rows[0] as ChangeRow).head);
      const changes = rows.filter((row) => row.version !== null).map(toChange);
      if (head <= view.version) return;
      if (changes[0]?.version !== view.version + 1n) return this.#load(name);
      for (const change of changes) view.apply(change);
      if (changes.length < changesPerRead) return;
    }
  }

  /** Loads the whole registry at one version (a consistent snapshot) into a view. */
  async #load(name: string): Promise<void> {
    const snapshot = await inTransaction(this.database, async (client) => {
      await client.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY");
      const head = await client.query<{ version: string }>(
        "SELECT version FROM toolruntime.registries WHERE name = $1",
        [name],
      );
      const version = head.rows[0]?.version;
      if (version === undefined) return undefined;
      const tools = await client.query<{ spec: Buffer }>(
        "SELECT spec FROM toolruntime.tools WHERE registry = $1 ORDER BY name",
        [name],
      );
      return { version: BigInt(version), specs: tools.rows.map((row) => decodeSpec(row.spec)) };
    });
    if (!snapshot) return;
    const view = this.registries.find(name);
    // A view already at or past the snapshot (a concurrent catch-up) is newer: keep it.
    if (view && this.#known.has(name) && view.version >= snapshot.version) return;
    this.registries.mirror(name, snapshot.specs, snapshot.version);
    this.#known.add(name);
  }
}

function toChange(row: ChangeRow): ToolChange {
  return {
    kind: row.kind as ToolChangeKind,
    spec: decodeSpec(row.spec as Buffer),
    version: BigInt(row.version as string),
  };
}

/** A spec as the store holds it: protobuf bytes. */
export function decodeSpec(bytes: Uint8Array): ToolSpec {
  return fromBinary(ToolSpecSchema, bytes);
}
