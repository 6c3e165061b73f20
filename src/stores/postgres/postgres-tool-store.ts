import { create, toBinary } from "@bufbuild/protobuf";
import { ToolSpecSchema, type ToolSpec } from "../../../gen/toolruntime/v1/tool_pb.js";
import { ErrorType, ToolRuntimeError } from "../../errors/tool-runtime-error.js";
import type { ToolChange } from "../../registry/change-log.js";
import { quote } from "../../registry/names.js";
import { registryNotFound, resolveRegistryName, type RegistrySet } from "../../registry/registry-set.js";
import type { ToolRegistration, ToolRegistry } from "../../registry/tool-registry.js";
import { sameDefinition } from "../../registry/same-definition.js";
import { validateSpec, wireKeyNames } from "../../registry/validate-spec.js";
import type { ToolStore } from "../tool-store.js";
import type { Doorbell } from "./doorbell.js";
import type { PostgresToolStoreOptions } from "./postgres-options.js";
import type { Database } from "./open-database.js";
import { decodeSpec, RegistryFollower, toolsChannel } from "./registry-follower.js";
import { inTransaction, query, type TransactionClient } from "./transaction.js";

/** Serialises the creation of registries, so the cluster-wide count is exact ("tlrtrg" in ASCII). */
const registryCreationLockKey = 0x746c72747267;

/**
 * The tool store on PostgreSQL, shared by every replica on the database. Each write is one
 * transaction that locks its registry's row, checks the policy against the committed state, writes
 * the spec and a change numbered by the registry's next version, and rings the doorbell; so
 * concurrent registrations of one name on any replicas have exactly one winner, and versions are
 * gapless and in commit order. After committing, the writer brings its own view up to date, so the
 * caller reads its write at once; other replicas follow within a notification (or a poll).
 */
export async function createPostgresToolStore(
  database: Database,
  registries: RegistrySet,
  doorbell: Doorbell,
  replicaId: string,
  options: PostgresToolStoreOptions = {},
): Promise<ToolStore> {
  const sweepIntervalMs = options.directorySweepIntervalMs ?? 1000;
  const maxTools = options.maxTools ?? 100_000;
  const maxRegistries = options.maxRegistries ?? 64;
  const retainedChanges = BigInt(options.retainedChanges ?? 10_000);
  const follower = new RegistryFollower(
    database,
    registries,
    doorbell,
    options.pollIntervalMs ?? 1000,
    options.onError ?? (() => undefined),
  );
  await query(database, "INSERT INTO toolruntime.registries (name) VALUES ('default') ON CONFLICT DO NOTHING");
  await follower.sync("default");

  /** The local view of `name`, created empty when the store has no such registry yet. */
  const viewForWrite = async (name: string): Promise<ToolRegistry> =>
    (await follower.sync(name)) ?? registries.mirror(name, [], 0n);

  /** Locks the registry's row (creating it, within the cluster-wide limit) and returns its head. */
  const lockRegistry = async (client: TransactionClient, name: string) => {
    let head = await client.query<{ version: string; tool_count: number }>(
      "SELECT version, tool_count FROM toolruntime.registries WHERE name = $1 FOR UPDATE",
      [name],
    );
    if (head.rows.length === 0) {
      await client.query("SELECT pg_advisory_xact_lock($1)", [registryCreationLockKey]);
      const count = await client.query<{ count: string }>(
        "SELECT count(*) FROM toolruntime.registries WHERE tool_count > 0 OR name = 'default'",
      );
      if (Number(count.rows[0]?.count ?? 0) >= maxRegistries) {
        throw new ToolRuntimeError(
          "RESOURCE_EXHAUSTED",
          ErrorType.ResourceExhausted,
          `registry ${quote(name)} cannot be created: the cluster holds its maximum of ${maxRegistries} registries with tools; remove the tools of one first`,
        );
      }
      await client.query("INSERT INTO toolruntime.registries (name) VALUES ($1) ON CONFLICT DO NOTHING", [name]);
      head = await client.query("SELECT version, tool_count FROM toolruntime.registries WHERE name = $1 FOR UPDATE", [
        name,
      ]);
    }
    const row = head.rows[0] as { version: string; tool_count: number };
    return { version: BigInt(row.version), toolCount: row.tool_count };
  };

  /** Records a change under the registry's lock: the next version, the log, the doorbell. */
  const commitChange = async (client: TransactionClient, registry: string, change: ToolChange, countDelta: number) => {
    await client.query("INSERT INTO toolruntime.tool_changes (registry, version, kind, spec) VALUES ($1, $2, $3, $4)", [
      registry,
      change.version.toString(),
      change.kind,
      toBinary(ToolSpecSchema, change.spec),
    ]);
    await client.query("UPDATE toolruntime.registries SET version = $2, tool_count = tool_count + $3 WHERE name = $1", [
      registry,
      change.version.toString(),
      countDelta,
    ]);
    // Pruning in batches of 1% keeps the log bounded without a delete per write.
    if (change.version % (retainedChanges / 100n + 1n) === 0n) {
      await client.query("DELETE FROM toolruntime.tool_changes WHERE registry = $1 AND version <= $2", [
        registry,
        (change.version - retainedChanges).toString(),
      ]);
    }
    await client.query("SELECT pg_notify($1, $2)", [toolsChannel, registry]);
  };

  /**
   * Registers under the registry's lock: `decide` sees the stored spec (if any) and the fresh one,
   * throws to refuse, and says whether to adopt the stored spec or write the fresh one.
   */
  const write = async (
    registryName: string,
    registration: ToolRegistration,
    decide: (
      existing: ToolSpec | undefined,
      fresh: ToolSpec,
      toolName: string,
      registry: string,
      client: TransactionClient,
    ) => Promise<"adopt" | "write">,
  ): Promise<{ spec: ToolSpec; replaced: boolean }> => {
    const name = resolveRegistryName(registryName);
    const validated = validateSpec(registration.spec, wireKeyNames, { owned: registration.owned });
    const toolName = validated.spec.name;
    const fresh = create(ToolSpecSchema, { ...validated.spec, hasHandler: registration.handler !== undefined });
    const view = await viewForWrite(name);
    const restore = registration.handler
      ? view.attachHandler(toolName, registration.handler, registration.hooks)
      : undefined;
    let outcome: { change?: ToolChange; existing?: ToolSpec };
    try {
      outcome = await inTransaction(database, async (client) => {
        const head = await lockRegistry(client, name);
        const row = await client.query<{ spec: Buffer }>(
          "SELECT spec FROM toolruntime.tools WHERE registry = $1 AND name = $2",
          [name, toolName],
        );
        const existing = row.rows[0] ? decodeSpec(row.rows[0].spec) : undefined;
        const decision = await decide(existing, fresh, toolName, name, client);
        if (decision === "adopt" && existing) return { existing };
        if (!existing && head.toolCount >= maxTools) {
          throw new ToolRuntimeError(
            "RESOURCE_EXHAUSTED",
            ErrorType.ResourceExhausted,
            `registry ${quote(name)} holds its maximum of ${maxTools} tools: remove some first`,
            toolName,
          );
        }
        const version = head.version + 1n;
        const spec = create(ToolSpecSchema, { ...fresh, version });
        await client.query(
          `INSERT INTO toolruntime.tools (registry, name, version, spec) VALUES ($1, $2, $3, $4)
           ON CONFLICT (registry, name) DO UPDATE SET version = excluded.version, spec = excluded.spec`,
          [name, toolName, version.toString(), toBinary(ToolSpecSchema, spec)],
        );
        const change: ToolChange = { kind: existing ? "updated" : "added", spec, version };
        await commitChange(client, name, change, existing ? 0 : 1);
        return { change, ...(existing ? { existing } : {}) };
      });
    } catch (error) {
      restore?.();
      throw error;
    }
    const current = await follower.sync(name);
    if (!outcome.change) {
      current?.refreshHandler(toolName);
      return { spec: current?.get(toolName)?.spec ?? (outcome.existing as ToolSpec), replaced: false };
    }
    return { spec: outcome.change.spec, replaced: outcome.existing !== undefined };
  };

  /** Removes a provider's tool that no replica serves any more (the registry's row is locked). */
  const removeIfUnserved = async (client: TransactionClient, registry: string, version: bigint, toolName: string) => {
    const left = await client.query("SELECT 1 FROM toolruntime.provider_tools WHERE registry = $1 AND tool = $2", [
      registry,
      toolName,
    ]);
    if (left.rows.length > 0) return false;
    const row = await client.query<{ spec: Buffer }>(
      "DELETE FROM toolruntime.tools WHERE registry = $1 AND name = $2 RETURNING spec",
      [registry, toolName],
    );
    if (!row.rows[0]) return false;
    await commitChange(
      client,
      registry,
      { kind: "removed", spec: decodeSpec(row.rows[0].spec), version: version + 1n },
      -1,
    );
    return true;
  };

  /**
   * Withdraws the provider connections of replicas whose lease expired: their tools that no live
   * replica serves any more are removed, as offline.
   */
  const sweepDirectory = async (): Promise<void> => {
    const gone = await query<{ registry: string; tool: string }>(
      database,
      `SELECT DISTINCT registry, tool FROM toolruntime.provider_tools p
        WHERE NOT EXISTS (SELECT 1 FROM toolruntime.replicas r WHERE r.id = p.replica AND r.lease_expires_at > now())`,
    );
    for (const { registry, tool } of gone.rows) {
      await inTransaction(database, async (client) => {
        const head = await lockRegistry(client, registry);
        await client.query(
          `DELETE FROM toolruntime.provider_tools p WHERE registry = $1 AND tool = $2
              AND NOT EXISTS (SELECT 1 FROM toolruntime.replicas r WHERE r.id = p.replica AND r.lease_expires_at > now())`,
          [registry, tool],
        );
        return removeIfUnserved(client, registry, head.version, tool);
      });
    }
  };
  const directorySweeper = setInterval(
    () => void sweepDirectory().catch(options.onError ?? (() => undefined)),
    sweepIntervalMs,
  );
  directorySweeper.unref();

  return {
    shared: true,

    register(registryName, registration, options = {}) {
      return write(registryName, registration, (existing, fresh, toolName, name) => {
        if (existing && options.adopt && sameDefinition(existing, fresh)) return Promise.resolve("adopt");
        if (existing && !options.replace && !options.adopt) {
          throw new ToolRuntimeError(
            "ALREADY_EXISTS",
            ErrorType.Registration,
            `tool ${quote(toolName)} is already registered in registry ${quote(name)}: choose another name, or remove it first`,
            toolName,
          );
        }
        if (existing?.hasHandler && !options.adopt) {
          throw new ToolRuntimeError(
            "FAILED_PRECONDITION",
            ErrorType.Registration,
            `tool ${quote(toolName)} is served by a handler in this cluster and cannot be replaced: register under another name`,
            toolName,
          );
        }
        return Promise.resolve("write");
      });
    },

    registerProvided(registryName, registration, providerName) {
      return write(registryName, registration, async (existing, fresh, toolName, name, client) => {
        const served = await client.query<{ provider: string }>(
          "SELECT DISTINCT provider FROM toolruntime.provider_tools WHERE registry = $1 AND tool = $2",
          [name, toolName],
        );
        const providers = served.rows.map((row) => row.provider);
        if (existing && !(providers.length === 1 && providers[0] === providerName)) {
          throw new ToolRuntimeError(
            "ALREADY_EXISTS",
            ErrorType.Registration,
            `tool ${quote(toolName)} is already served by ${providers.length > 0 ? `provider ${quote(providers[0] as string)}` : "this cluster or another registration"}: a provider cannot take it over`,
            toolName,
          );
        }
        await client.query(
          `INSERT INTO toolruntime.provider_tools (registry, tool, replica, provider) VALUES ($1, $2, $3, $4)
           ON CONFLICT (registry, tool, replica) DO UPDATE SET provider = excluded.provider`,
          [name, toolName, replicaId, providerName],
        );
        return existing && sameDefinition(existing, fresh) ? "adopt" : "write";
      });
    },

    async withdrawProvided(registryName, toolName, providerName) {
      const name = resolveRegistryName(registryName);
      const view = await follower.sync(name);
      if (!view) return false;
      // No more runs of it here, whether or not another replica still serves it.
      view.detachHandler(toolName);
      const removed = await inTransaction(database, async (client) => {
        const head = await lockRegistry(client, name);
        await client.query(
          "DELETE FROM toolruntime.provider_tools WHERE registry = $1 AND tool = $2 AND replica = $3",
          [name, toolName, replicaId],
        );
        return removeIfUnserved(client, name, head.version, toolName);
      });
      if (removed) view.noteOffline(toolName, providerName);
      await follower.sync(name);
      return removed;
    },

    async remove(registryName, toolName, options = {}) {
      const name = resolveRegistryName(registryName);
      const view = await follower.sync(name);
      if (!view) return false;
      const removed = await inTransaction(database, async (client) => {
        const head = await lockRegistry(client, name);
        const row = await client.query<{ spec: Buffer }>(
          "DELETE FROM toolruntime.tools WHERE registry = $1 AND name = $2 RETURNING spec",
          [name, toolName],
        );
        if (!row.rows[0]) return false;
        const spec = decodeSpec(row.rows[0].spec);
        await commitChange(client, name, { kind: "removed", spec, version: head.version + 1n }, -1);
        // Runners run the default registry's tools; a tool gone only while its provider is offline
        // keeps its activations for when the provider returns.
        if (name === "default" && options.offlineProvider === undefined) {
          await client.query("DELETE FROM toolruntime.activations WHERE tool = $1", [toolName]);
        }
        return true;
      });
      // Noted before the removal reaches the view, so that its listeners can read it.
      if (removed && options.offlineProvider !== undefined) view.noteOffline(toolName, options.offlineProvider);
      await follower.sync(name);
      return removed;
    },

    view: (registryName) => follower.sync(resolveRegistryName(registryName)),
    currentView: (registryName) => follower.current(resolveRegistryName(registryName)),

    async viewForWatch(registryName) {
      const name = resolveRegistryName(registryName);
      const view = await follower.sync(name);
      if (!view) throw registryNotFound(name);
      return view;
    },

    async changesSince(registry, version) {
      const local = registry.changesSince(version);
      if (local) return local;
      const { rows } = await query<{ oldest: string | null }>(
        database,
        "SELECT min(version) AS oldest FROM toolruntime.tool_changes WHERE registry = $1",
        [registry.name],
      );
      const oldest = rows[0]?.oldest;
      // Versions after `version` must all be retained: the first one wanted is version + 1.
      if (oldest === null || oldest === undefined || BigInt(oldest) > version + 1n) return undefined;
      const changes = await query<{ version: string; kind: ToolChange["kind"]; spec: Buffer }>(
        database,
        "SELECT version, kind, spec FROM toolruntime.tool_changes WHERE registry = $1 AND version > $2 AND version <= $3 ORDER BY version",
        [registry.name, version.toString(), registry.version.toString()],
      );
      return changes.rows.map((row) => ({ kind: row.kind, spec: decodeSpec(row.spec), version: BigInt(row.version) }));
    },

    close() {
      follower.close();
      clearInterval(directorySweeper);
      return Promise.resolve();
    },
  };
}
