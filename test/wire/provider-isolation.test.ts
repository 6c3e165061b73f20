// One run cannot take a provider's stream down with it: inputs that would make an assignment over
// the stream's message limit, an output chunk over what the server forwards, or a log line,
// progress message or error too large for a message fail (or are cut in) that run alone, with a
// precise error and a line in the server's log; the connection and the other runs go on.
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { EventEmitter, once } from "node:events";
import { pino } from "pino";
import {
  ConnectRequestSchema,
  ProviderService,
  type ConnectRequest,
  type ConnectResponse,
} from "../../gen/toolruntime/v1/provider_pb.js";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import { createProvider, type Provider } from "../../src/providers/create-provider.js";
import { EventQueue } from "../../src/runner/event-queue.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { createClientStack, type ClientStack } from "../support/client-stacks.js";
import { collect } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";

/** What the provider's handlers tell the test: "holding" when the held run started, "echoed". */
const handlerEvents = new EventEmitter();
/** More than a 4 MiB message can carry, as text. */
const fiveMegabytes = "x".repeat(5 * 1024 * 1024);

const isolatedTools = [
  defineTool({
    name: "iso.echo",
    handler: (inputs) => {
      handlerEvents.emit("echoed");
      return { items: Array.isArray(inputs["list"]) ? inputs["list"].length : 0 };
    },
  }),
  defineTool({
    name: "iso.hold",
    handler: async () => {
      const released = once(handlerEvents, "release");
      handlerEvents.emit("holding");
      await released;
      return { held: true };
    },
  }),
  defineTool({
    name: "iso.loud",
    handler: (_inputs, context) => {
      context.log("info", fiveMegabytes);
      context.reportProgress({ fraction: 0.5, message: fiveMegabytes });
      return { loud: true };
    },
  }),
  defineTool({
    name: "iso.shout",
    handler: () => {
      throw new Error(fiveMegabytes);
    },
  }),
];

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly [key: string]: unknown;
}

/** The terminal result of a run's events. */
function resultOf(events: readonly RunEvent[]): ToolResult {
  const last = events.at(-1)?.event;
  if (last?.case !== "completed" || !last.value.result) throw new Error("no result");
  return last.value.result;
}

describe("Isolation of a provider's runs", () => {
  let server: RunningServer;
  let client: ClientStack;
  let provider: Provider;
  let disconnections = 0;
  const log: LogLine[] = [];

  before(async () => {
    const logger = pino({ level: "info" }, { write: (line: string) => void log.push(JSON.parse(line) as LogLine) });
    server = await startTestServer({ logger, providers: { heartbeatIntervalMs: 100, failureTimeoutMs: 2000 } });
    client = createClientStack("grpc-js", server);
    provider = createProvider({
      address: server.grpcAddress,
      providerName: "iso",
      tools: isolatedTools,
      onEvent: (event) => {
        if (event.kind === "disconnected") disconnections += 1;
      },
    });
    await provider.connected;
  });
  after(async () => {
    provider.close();
    await provider.closed;
    client.close();
    await server.close(0);
  });

  /** Starts iso.hold and resolves once its handler runs in the provider; `finish` releases it. */
  async function holdRun(): Promise<{ finish(): Promise<ToolResult> }> {
    const holding = once(handlerEvents, "holding");
    const started = await client.executions.startExecution({ toolName: "iso.hold" });
    const executionId = started.execution?.executionId ?? "";
    await holding;
    return {
      finish: async () => {
        handlerEvents.emit("release");
        const events = await collect(client.executions.watchExecution({ executionId }));
        return resultOf(events.map((response) => response.event as RunEvent));
      },
    };
  }

  it("fails a run whose assignment would be over the message limit alone, before sending it", async () => {
    const held = await holdRun();
    const connectionId = provider.connectionId;
    let echoed = 0;
    const countEcho = (): void => void (echoed += 1);
    handlerEvents.on("echoed", countEcho);
    // 780 KB of JSON, within the message limit as JSON; 4.29 MB as protobuf (11 bytes per item).
    const list = new Array<number>(390_000).fill(1);
    // Sent as a curl user would: Connect JSON on the HTTP port.
    const started = await fetch(`${server.httpUrl}/toolruntime.v1.ExecutionService/StartExecution`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ toolName: "iso.echo", inputs: { list } }),
    });
    expect(started.status).to.equal(200);
    const { execution } = (await started.json()) as { execution: { executionId: string } };
    const events = await collect(client.executions.watchExecution({ executionId: execution.executionId }));
    handlerEvents.off("echoed", countEcho);
    const result = resultOf(events.map((response) => response.event as RunEvent));
    expect(result.success).to.equal(false);
    expect(result.error?.errorType).to.equal("InputValidationError");
    expect(result.error?.details).to.match(
      /^inputs of "iso\.echo" cannot be delivered to provider "iso": its assignment would be 429\d{4} bytes once encoded, over the provider stream's message limit of 4194304 bytes: send smaller inputs$/,
    );
    expect(echoed).to.equal(0);

    const heldResult = await held.finish();
    expect(heldResult.success, heldResult.error?.details).to.equal(true);
    expect(provider.connectionId).to.equal(connectionId);
    expect(disconnections).to.equal(0);
    const line = log.find((entry) => entry.msg.startsWith("run not assigned to provider"));
    expect(line?.level).to.equal(40);
    expect(line?.["toolName"]).to.equal("iso.echo");
    expect(line?.["limitBytes"]).to.equal(4194304);
    // Small inputs still go through the same connection.
    const small = await collect(client.runner.runTool({ toolName: "iso.echo", inputs: { list: [1, 2] } }));
    expect(resultOf(small.map((response) => response.event as RunEvent)).output?.["items"]).to.equal(2);
  });

  it("keeps the stream when a handler logs, reports progress or throws more than a message carries", async () => {
    const held = await holdRun();
    const connectionId = provider.connectionId;
    const loud = resultOf(
      (await collect(client.runner.runTool({ toolName: "iso.loud" }))).map((response) => response.event as RunEvent),
    );
    expect(loud.success, loud.error?.details).to.equal(true);
    const shout = resultOf(
      (await collect(client.runner.runTool({ toolName: "iso.shout" }))).map((response) => response.event as RunEvent),
    );
    expect(shout.error?.errorType).to.equal("HandlerError");
    expect(shout.error?.details).to.equal(`handler of "iso.shout" failed: ${"x".repeat(997)}...`);
    const heldResult = await held.finish();
    expect(heldResult.success, heldResult.error?.details).to.equal(true);
    expect(provider.connectionId).to.equal(connectionId);
    expect(disconnections).to.equal(0);
  });

  it("fails a run alone whose output chunk from the provider is over what the server forwards", async () => {
    const raw = createClient(ProviderService, createGrpcTransport({ baseUrl: `http://${server.grpcAddress}` }));
    const requests = new EventQueue<ConnectRequest>();
    const abort = new AbortController();
    // Read in the background, answering heartbeats, so that the provider never looks dead.
    const received = new EventEmitter();
    void (async () => {
      for await (const response of raw.connect(requests, { signal: abort.signal })) {
        if (response.message.case === "heartbeat") {
          requests.push(create(ConnectRequestSchema, { message: { case: "heartbeat", value: {} } }));
        }
        received.emit(response.message.case ?? "", response);
      }
    })().catch(() => undefined);
    const next = async (kind: ConnectResponse["message"]["case"] & string): Promise<ConnectResponse> =>
      ((await once(received, kind)) as [ConnectResponse])[0];
    const welcome = next("welcome");
    requests.push(
      create(ConnectRequestSchema, {
        message: { case: "hello", value: { providerName: "rawiso", tools: [{ name: "rawiso.chunky" }] } },
      }),
    );
    await welcome;
    const assignedId = async (): Promise<string> => {
      const assigned = next("assign");
      const started = await client.executions.startExecution({ toolName: "rawiso.chunky" });
      const response = await assigned;
      const executionId = response.message.case === "assign" ? response.message.value.executionId : "";
      expect(started.execution?.executionId).to.equal(executionId);
      return executionId;
    };
    const firstId = await assignedId();
    const secondId = await assignedId();
    const cancelled = next("cancel");
    // 2 MB of text: within the stream's 4 MiB, over the 1 MiB a chunk of partial output may take.
    requests.push(
      create(ConnectRequestSchema, {
        message: {
          case: "output",
          value: {
            executionId: firstId,
            chunk: { kind: { case: "stringValue", value: "y".repeat(2_000_000) } },
          },
        },
      }),
    );
    const cancel = await cancelled;
    expect(cancel.message.case === "cancel" && cancel.message.value.executionId).to.equal(firstId);
    requests.push(
      create(ConnectRequestSchema, {
        message: { case: "result", value: { executionId: secondId, output: { fine: true } } },
      }),
    );
    const results = await Promise.all(
      [firstId, secondId].map(async (executionId) =>
        resultOf(
          (await collect(client.executions.watchExecution({ executionId }))).map(
            (response) => response.event as RunEvent,
          ),
        ),
      ),
    );
    expect(results[0]?.error?.errorType).to.equal("OutputValidationError");
    expect(results[0]?.error?.details).to.equal(
      'output of "rawiso.chunky" from provider "rawiso" cannot be forwarded: output chunk.chunk is larger than the limit of 1048576 bytes',
    );
    expect(results[1]?.success, results[1]?.error?.details).to.equal(true);
    expect(results[1]?.output).to.deep.equal({ fine: true });
    const line = log.find((entry) => entry.msg.startsWith("run failed: its provider sent"));
    expect(line?.level).to.equal(40);
    expect(line?.["executionId"]).to.equal(firstId);
    requests.end();
    abort.abort();
  });
});
