// The service as a Python grpcio client sees it: each test runs one scenario of
// test/python/wire_client.py against a real server and checks the JSON it prints, so status codes,
// the ToolError in `grpc-status-details-bin`, results and streams are checked across languages.
import { expect } from "chai";
import {
  expectRpcError,
  pythonScenarios,
  uuidPattern,
  type EventSeen,
  type ResultSeen,
  type RpcErrorSeen,
  type ToolErrorSeen,
} from "../support/python-harness.js";

// ---------------------------------------------------------------------------------------------
// What wire_client.py prints beyond what the harness describes (snake_case, as the script writes it).

interface SpecSeen {
  readonly name: string;
  readonly tool_type: string;
  readonly has_handler: boolean;
  readonly version: number;
}

interface ChangeSeen {
  readonly type: string;
  readonly name: string | null;
  readonly version: number;
}

/** ExecuteTool as the script reports it: the result of an OK call, or the error of a failed one. */
type ExecuteSeen = ResultSeen | RpcErrorSeen;

// ---------------------------------------------------------------------------------------------
// Helpers.

/** Expects an OK ExecuteTool call and returns its result. */
function expectResult(seen: ExecuteSeen | undefined): ResultSeen {
  expect(seen, "ExecuteTool should answer OK").to.have.property("success");
  return seen as ResultSeen;
}

/** Expects an OK call whose result failed with `errorType`; returns the result's ToolError. */
function expectFailedRun(
  seen: ExecuteSeen | undefined,
  toolName: string,
  errorType: string,
  fragment: string,
): ToolErrorSeen {
  const result = expectResult(seen);
  expect(result.success).to.equal(false);
  expect(result.output).to.deep.equal({});
  expect(result.error, "the result's ToolError").to.not.equal(null);
  const error = result.error as ToolErrorSeen;
  expect(error.error_type, error.details).to.equal(errorType);
  expect(error.tool_name).to.equal(toolName);
  expect(error.details).to.contain(fragment);
  return error;
}

// ---------------------------------------------------------------------------------------------

describe("Python grpcio client", function () {
  this.timeout(60_000);

  /** Runs one scenario of wire_client.py against the server and returns what it printed. */
  const scenario = pythonScenarios("test/python/wire_client.py");

  it("registers, gets, pages through a namespace one tool at a time, and removes a tool", async function () {
    const seen = await scenario<{
      names: [string, string, string];
      registered: { spec: SpecSeen; replaced: boolean }[];
      got: SpecSeen;
      pages: { names: string[]; has_next: boolean }[];
      removed: boolean;
      removed_again: boolean;
      get_after_remove: RpcErrorSeen | null;
    }>("registry_crud");
    const [first] = seen.names;
    for (const { spec, replaced } of seen.registered) {
      expect(replaced).to.equal(false);
      expect(spec.has_handler).to.equal(false);
      expect(spec.version).to.be.greaterThan(0);
    }
    expect(seen.got.name).to.equal(first);
    expect(seen.got.tool_type).to.equal("function");
    expect(seen.got.version).to.equal(seen.registered[0]?.spec.version);
    // One tool per page, in name order, the nested namespace included and the look-alike prefix not.
    expect(seen.pages).to.deep.equal([
      { names: [seen.names[0]], has_next: true },
      { names: [seen.names[1]], has_next: true },
      { names: [seen.names[2]], has_next: false },
    ]);
    expect(seen.removed).to.equal(true);
    expect(seen.removed_again).to.equal(false);
    const error = expectRpcError(seen.get_after_remove, "NOT_FOUND", "NotFoundError", first);
    expect(error.tool_name).to.equal(first);
  });

  it("gets ALREADY_EXISTS with a RegistrationError ToolError when registering a taken name", async function () {
    const seen = await scenario<{ name: string; second: RpcErrorSeen | null; builtin: RpcErrorSeen | null }>(
      "register_taken_name",
    );
    const error = expectRpcError(seen.second, "ALREADY_EXISTS", "RegistrationError", "already registered");
    expect(error.tool_name).to.equal(seen.name);
    const builtin = expectRpcError(seen.builtin, "ALREADY_EXISTS", "RegistrationError", "builtin.echo");
    expect(builtin.tool_name).to.equal("builtin.echo");
  });

  it("gets INVALID_ARGUMENT with a RegistrationError when a read_only tool writes or is checkpointable", async function () {
    const seen = await scenario<{
      namespace: string;
      writes: RpcErrorSeen | null;
      checkpointable: RpcErrorSeen | null;
      read_only_idempotent_error: RpcErrorSeen | null;
      writes_checkpointable_error: RpcErrorSeen | null;
    }>("read_only_rule");
    const writes = expectRpcError(seen.writes, "INVALID_ARGUMENT", "RegistrationError", "read_only");
    expect(writes.details).to.contain("writes");
    expect(writes.tool_name).to.equal(`${seen.namespace}.alpha`);
    const checkpointable = expectRpcError(seen.checkpointable, "INVALID_ARGUMENT", "RegistrationError", "read_only");
    expect(checkpointable.details).to.contain("checkpointable");
    expect(checkpointable.tool_name).to.equal(`${seen.namespace}.beta`);
    expect(seen.read_only_idempotent_error, "read_only with idempotent registers").to.equal(null);
    expect(seen.writes_checkpointable_error, "writes with checkpointable registers").to.equal(null);
  });

  it("gets INVALID_ARGUMENT for invalid names, while names like constructor.tostring are ordinary tools", async function () {
    const seen = await scenario<{
      lengths: Record<string, number>;
      register: Record<string, RpcErrorSeen | null>;
      get: Record<string, RpcErrorSeen | null>;
      prototype_like: {
        register_error: RpcErrorSeen | null;
        registered_name: string | null;
        get_error: RpcErrorSeen | null;
        got_name: string | null;
        get_unregistered: RpcErrorSeen | null;
      };
    }>("invalid_names");
    const labels = [
      "empty",
      "uppercase and space",
      "__proto__ namespace",
      "__proto__ segment",
      "tab",
      "200 characters",
      "cyrillic look-alike",
    ];
    expect(Object.keys(seen.register)).to.have.members(labels);
    expect(seen.lengths["200 characters"]).to.equal(200);
    expect(seen.lengths["cyrillic look-alike"]).to.equal("fs.read".length);
    for (const label of labels) {
      const register = expectRpcError(seen.register[label], "INVALID_ARGUMENT", "RegistrationError", "tool name");
      expect(register.details, label).to.contain("128 characters");
      expectRpcError(seen.get[label], "INVALID_ARGUMENT", "InvalidRequestError", "tool name");
    }
    const prototypeLike = seen.prototype_like;
    expect(prototypeLike.register_error).to.equal(null);
    expect(prototypeLike.registered_name).to.equal("constructor.tostring");
    expect(prototypeLike.get_error).to.equal(null);
    expect(prototypeLike.got_name).to.equal("constructor.tostring");
    const missing = expectRpcError(
      prototypeLike.get_unregistered,
      "NOT_FOUND",
      "NotFoundError",
      "constructor.constructor",
    );
    expect(missing.tool_name).to.equal("constructor.constructor");
  });

  it("gets NOT_FOUND for an unknown tool from activate, execute and RunTool, and was_active false from deactivate", async function () {
    const seen = await scenario<{
      name: string;
      activate: RpcErrorSeen | null;
      execute: RpcErrorSeen | null;
      deactivate_was_active: boolean;
      run_events: EventSeen[];
      run_error: RpcErrorSeen | null;
    }>("unknown_tool");
    expect(expectRpcError(seen.activate, "NOT_FOUND", "ActivationError", seen.name).tool_name).to.equal(seen.name);
    expect(expectRpcError(seen.execute, "NOT_FOUND", "NotFoundError", seen.name).tool_name).to.equal(seen.name);
    expect(seen.deactivate_was_active).to.equal(false);
    expect(seen.run_events, "RunTool fails before any event").to.deep.equal([]);
    expect(expectRpcError(seen.run_error, "NOT_FOUND", "NotFoundError", seen.name).tool_name).to.equal(seen.name);
  });

  it("gets FAILED_PRECONDITION with a NotActiveError when executing a tool it did not activate", async function () {
    const seen = await scenario<{ execute: RpcErrorSeen | null }>("execute_inactive");
    const error = expectRpcError(seen.execute, "FAILED_PRECONDITION", "NotActiveError", "ActivateTool");
    expect(error.tool_name).to.equal("builtin.echo");
  });

  it("activates, executes and deactivates builtin.echo in a runner of its own", async function () {
    const startedAt = performance.now();
    const seen = await scenario<{
      runner: string;
      inputs: Record<string, unknown>;
      activated_name: string;
      already_active: [boolean, boolean];
      execution_id: string;
      result: ResultSeen;
      deactivate_was_active: boolean;
      deactivate_again_was_active: boolean;
      execute_after_deactivate: RpcErrorSeen | null;
    }>("echo_lifecycle");
    expect(seen.inputs).to.deep.equal({ a: [1, "x", null, true] });
    expect(seen.activated_name).to.equal("builtin.echo");
    expect(seen.already_active, "activate is idempotent").to.deep.equal([false, true]);
    expect(seen.execution_id).to.match(uuidPattern);
    const { result } = seen;
    expect(result.success).to.equal(true);
    expect(result.error).to.equal(null);
    expect(result.output).to.deep.equal({ echo: seen.inputs });
    // The run took no longer than the whole scenario around it, measured here.
    expect(result.duration_ms)
      .to.be.a("number")
      .and.within(0, Math.ceil(performance.now() - startedAt));
    expect(result.metadata["execution_id"]).to.equal(seen.execution_id);
    expect(result.metadata["tool_name"]).to.equal("builtin.echo");
    expect(result.metadata["runner"]).to.equal(seen.runner);
    expect(seen.deactivate_was_active).to.equal(true);
    expect(seen.deactivate_again_was_active).to.equal(false);
    expectRpcError(seen.execute_after_deactivate, "FAILED_PRECONDITION", "NotActiveError");
  });

  it("gets an InputValidationError result, not an RPC error, for NaN and Infinity in the inputs", async function () {
    const seen = await scenario<Record<"nan" | "infinity" | "negative_infinity", ExecuteSeen>>("non_finite_inputs");
    expectFailedRun(seen.nan, "builtin.echo", "InputValidationError", "NaN");
    expectFailedRun(seen.infinity, "builtin.echo", "InputValidationError", "Infinity");
    expectFailedRun(seen.negative_infinity, "builtin.echo", "InputValidationError", "-Infinity");
  });

  it("gets a HandlerError result when the handler throws a string", async function () {
    const seen = await scenario<{ result: ExecuteSeen }>("throw_string");
    expectFailedRun(seen.result, "test.throw_string", "HandlerError", "boom");
  });

  it("gets an OutputValidationError result when the handler returns a BigInt, a cycle, undefined, a function or NaN", async function () {
    const seen = await scenario<Record<string, ExecuteSeen>>("bad_output");
    const fragments = { bigint: "BigInt", cycle: "cycle", undefined: "undefined", function: "function", nan: "NaN" };
    expect(Object.keys(seen)).to.have.members(Object.keys(fragments));
    for (const [kind, fragment] of Object.entries(fragments)) {
      expectFailedRun(seen[kind], "test.bad_output", "OutputValidationError", fragment);
    }
  });

  it("gets a TimeoutError result when the handler never settles and ignores its signal", async function () {
    const seen = await scenario<{ result: ExecuteSeen; elapsed_ms: number }>("hang");
    expectFailedRun(seen.result, "test.hang", "TimeoutError", "200 ms");
    expect(expectResult(seen.result).duration_ms).to.be.within(100, 2000);
    expect(seen.elapsed_ms, "the call returns soon after the tool's 200 ms timeout").to.be.below(2000);
  });

  it("gets Input- and OutputValidationError results when inputs or output break the tool's schemas", async function () {
    const seen = await scenario<{ bad_input: ExecuteSeen; bad_output: ExecuteSeen; good: ExecuteSeen }>("schema");
    expectFailedRun(seen.bad_input, "test.schema", "InputValidationError", "/count");
    expectFailedRun(seen.bad_output, "test.schema", "OutputValidationError", "/total");
    const good = expectResult(seen.good);
    expect(good.success).to.equal(true);
    expect(good.output).to.deep.equal({ total: 2 });
  });

  it("lists a tool registered over the wire with has_handler false, activates it, and gets HandlerMissingError executing it", async function () {
    const seen = await scenario<{
      name: string;
      registered_has_handler: boolean;
      listed: SpecSeen[];
      activated_name: string;
      execute: RpcErrorSeen | null;
      run_events: EventSeen[];
      run_error: RpcErrorSeen | null;
    }>("wire_tool_without_handler");
    expect(seen.registered_has_handler).to.equal(false);
    expect(seen.listed.map((spec) => [spec.name, spec.has_handler])).to.deep.equal([[seen.name, false]]);
    expect(seen.activated_name).to.equal(seen.name);
    const error = expectRpcError(seen.execute, "FAILED_PRECONDITION", "HandlerMissingError", "no handler");
    expect(error.tool_name).to.equal(seen.name);
    expect(seen.run_events, "RunTool fails before any event").to.deep.equal([]);
    expectRpcError(seen.run_error, "FAILED_PRECONDITION", "HandlerMissingError", "no handler");
  });

  it("streams the whole lifecycle of builtin.countdown, numbered without gaps, ending with one COMPLETED", async function () {
    const seen = await scenario<{ events: EventSeen[]; error: RpcErrorSeen | null }>("run_countdown");
    expect(seen.error, "the stream ends OK").to.equal(null);
    const { events } = seen;
    const kinds = events.map((event) => event.kind).filter((kind) => kind !== "heartbeat");
    expect(kinds.slice(0, 3)).to.deep.equal(["discovered", "activated", "execution_started"]);
    expect(kinds.slice(-3)).to.deep.equal(["execution_finished", "deactivated", "completed"]);
    const middle = kinds.slice(3, -3);
    expect(middle.length, "at least one progress event").to.be.at.least(1);
    expect(new Set(middle)).to.deep.equal(new Set(["progress"]));
    expect(events.map((event) => event.sequence)).to.deep.equal(events.map((_event, index) => index + 1));
    const executionIds = new Set(events.map((event) => event.execution_id));
    expect(executionIds.size, "one execution_id throughout").to.equal(1);
    const [executionId] = executionIds;
    expect(executionId).to.match(uuidPattern);
    expect(events.filter((event) => event.kind === "completed")).to.have.length(1);
    expect(events.find((event) => event.kind === "discovered")?.tool_name).to.equal("builtin.countdown");
    expect(events.find((event) => event.kind === "execution_finished")?.success).to.equal(true);
    expect(events.find((event) => event.kind === "deactivated")?.was_active).to.equal(true);
    const completed = events[events.length - 1];
    expect(completed?.kind).to.equal("completed");
    const result = completed?.result as ResultSeen;
    expect(result.success).to.equal(true);
    expect(result.output).to.deep.equal({ counted: 3 });
    expect(result.metadata["execution_id"]).to.equal(executionId);
  });

  it("cancels a RunTool stream after its first progress event, sees CANCELLED, and the server keeps serving", async function () {
    const seen = await scenario<{
      events: EventSeen[];
      error: RpcErrorSeen | null;
      code_after_cancel: string;
      get_after: { name: string | null; error: RpcErrorSeen | null };
    }>("run_cancel");
    expect(seen.events.map((event) => event.kind)).to.deep.equal([
      "discovered",
      "activated",
      "execution_started",
      "progress",
    ]);
    expect(seen.events[3]?.fraction).to.equal(0.5);
    expect(seen.error?.code).to.equal("CANCELLED");
    expect(seen.code_after_cancel).to.equal("CANCELLED");
    expect(seen.get_after).to.deep.equal({ name: "test.wait_for_cancel", error: null });
  });

  it("gets RESOURCE_EXHAUSTED for a request over the size limit, and a following small call works", async function () {
    const seen = await scenario<{ large: RpcErrorSeen | null; small: ExecuteSeen }>("oversized_request");
    expect(seen.large?.code, seen.large?.message).to.equal("RESOURCE_EXHAUSTED");
    // The transport rejects the message before the service sees it, so (as the README says) the
    // status may lack a ToolError; one that is there must be a ResourceExhaustedError.
    if (seen.large?.tool_error) expectRpcError(seen.large, "RESOURCE_EXHAUSTED", "ResourceExhaustedError");
    const small = expectResult(seen.small);
    expect(small.success).to.equal(true);
    expect(small.output).to.deep.equal({ echo: { small: "ok" } });
  });

  it("discovers from an alternate registry, and gets NOT_FOUND for a registry that does not exist", async function () {
    const seen = await scenario<{
      name: string;
      registered_name: string;
      staging: string[] | RpcErrorSeen;
      default: string[] | RpcErrorSeen;
      default_has_next_page: boolean | null;
      nope: RpcErrorSeen | null;
      get_default: RpcErrorSeen | null;
      got_staging_name: string;
    }>("alternate_registry");
    expect(seen.registered_name).to.equal(seen.name);
    expect(seen.staging).to.deep.equal([seen.name]);
    expect(seen.default).to.be.an("array").that.includes("builtin.echo").and.does.not.include(seen.name);
    expect(seen.default_has_next_page, "the default registry fits one page").to.equal(false);
    expectRpcError(seen.nope, "NOT_FOUND", "NotFoundError", '"nope"');
    expectRpcError(seen.get_default, "NOT_FOUND", "NotFoundError", seen.name);
    expect(seen.got_staging_name).to.equal(seen.name);
  });

  it("keeps a named registry for the server's life: NOT_FOUND before its first tool, listed empty after its last", async function () {
    const seen = await scenario<{
      registry: string;
      name: string;
      list_before: RpcErrorSeen | null;
      removed_before: boolean;
      listed: string[];
      removed: boolean;
      listed_after: string[] | null;
      list_after_error: RpcErrorSeen | null;
      discovered_after: string[] | null;
      discover_after_error: RpcErrorSeen | null;
    }>("registry_lifecycle");
    expectRpcError(seen.list_before, "NOT_FOUND", "NotFoundError", seen.registry);
    expect(seen.removed_before, "RemoveTool in a registry that does not exist").to.equal(false);
    expect(seen.listed).to.deep.equal([seen.name]);
    expect(seen.removed).to.equal(true);
    expect(seen.list_after_error).to.equal(null);
    expect(seen.listed_after).to.deep.equal([]);
    expect(seen.discover_after_error).to.equal(null);
    expect(seen.discovered_after).to.deep.equal([]);
  });

  it("sees exactly one of 1,000 concurrent registrations of one name from 8 channels succeed", async function () {
    const seen = await scenario<{
      codes: Record<string, number>;
      error_types: Record<string, number>;
      winner_versions: number[];
    }>("concurrent_register");
    expect(seen.codes).to.deep.equal({ OK: 1, ALREADY_EXISTS: 999 });
    expect(seen.error_types).to.deep.equal({ RegistrationError: 999 });
    expect(seen.winner_versions).to.have.length(1);
  });

  it("watches a snapshot, then ADDED and REMOVED live, and replays both from the SNAPSHOT_END version", async function () {
    const seen = await scenario<{
      name: string;
      snapshot: ChangeSeen[];
      registered_version: number;
      removed: boolean;
      live: ChangeSeen[];
      live_end: string | null;
      replay: ChangeSeen[];
      future_version: RpcErrorSeen | null;
    }>("watch_tools");
    const end = seen.snapshot[seen.snapshot.length - 1] as ChangeSeen;
    expect(end).to.deep.include({ type: "TOOL_CHANGE_TYPE_SNAPSHOT_END", name: null });
    const tools = seen.snapshot.slice(0, -1);
    expect(tools.map((change) => change.type)).to.satisfy((types: string[]) =>
      types.every((type) => type === "TOOL_CHANGE_TYPE_SNAPSHOT"),
    );
    expect(tools.map((change) => change.version)).to.satisfy((versions: number[]) =>
      versions.every((version) => version === end.version),
    );
    expect(tools.map((change) => change.name)).to.include.members(["builtin.echo", "test.wait_for_cancel"]);
    expect(tools.map((change) => change.name)).to.not.include(seen.name);
    expect(seen.removed).to.equal(true);
    // Nothing else changes the registry while the scenario runs, so the versions are the next two.
    const changes = [
      { type: "TOOL_CHANGE_TYPE_ADDED", name: seen.name, version: end.version + 1 },
      { type: "TOOL_CHANGE_TYPE_REMOVED", name: seen.name, version: end.version + 2 },
    ];
    expect(seen.live).to.deep.equal(changes);
    expect(seen.registered_version).to.equal(end.version + 1);
    expect(seen.live_end).to.equal("CANCELLED");
    expect(seen.replay, "the same changes replayed after from_version").to.deep.equal(changes);
    expectRpcError(seen.future_version, "INVALID_ARGUMENT", "InvalidRequestError", "from_version");
  });

  it("gets NOT_FOUND watching a registry that does not exist, and its snapshot once it does", async function () {
    const seen = await scenario<{
      registry: string;
      name: string;
      missing_first: ChangeSeen | null;
      missing_error: RpcErrorSeen | null;
      snapshot: ChangeSeen[];
    }>("watch_missing_registry");
    expect(seen.missing_first, "no message before the error").to.equal(null);
    expectRpcError(seen.missing_error, "NOT_FOUND", "NotFoundError", seen.registry);
    expect(seen.snapshot).to.deep.equal([
      { type: "TOOL_CHANGE_TYPE_SNAPSHOT", name: seen.name, version: 1 },
      { type: "TOOL_CHANGE_TYPE_SNAPSHOT_END", name: null, version: 1 },
    ]);
  });
});
