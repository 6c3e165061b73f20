import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { expect } from "chai";
import { pino, type Logger } from "pino";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { withOperationalEndpoints } from "../../src/server/http-endpoints.js";
import type { NodeRequestHandler } from "../../src/server/http-listener.js";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { ToolErrorSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { createToolRuntime } from "../../src/runtime.js";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { wrapService, type CallPipelineOptions } from "../../src/server/call-pipeline.js";
import { createRegistryService } from "../../src/server/registry-service.js";
import { createRunnerService } from "../../src/server/runner-service.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";

/** A logger whose lines are kept for the test to read. */
function capturingLogger() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: pino(stream), lines };
}

/** The call pipeline with authentication off and no observers. */
function pipeline(logger: Logger): CallPipelineOptions {
  return { logger, isClosing: () => false, authenticate: createAuthenticator([]), observers: [] };
}

describe("Services in memory", () => {
  it("answers a bug with INTERNAL, a generic message and a reference, and logs the cause", async () => {
    const { logger, lines } = capturingLogger();
    const runtime = createToolRuntime({ tools: builtinTools });
    const broken = {
      ...createRegistryService(runtime),
      getTool() {
        throw new TypeError("secret database password is hunter2");
      },
    };
    const transport = createRouterTransport((router) => {
      router.service(RegistryService, wrapService(RegistryService, broken, pipeline(logger)));
    });
    const client = createClient(RegistryService, transport);
    let caught: unknown;
    try {
      await client.getTool({ name: "builtin.echo" });
    } catch (error) {
      caught = error;
    }
    const error = ConnectError.from(caught);
    expect(error.code).to.equal(Code.Internal);
    expect(error.rawMessage).to.match(/^internal error \(reference [0-9a-f-]{36}\): see the server log$/);
    expect(error.rawMessage).to.not.contain("hunter2");
    expect(error.findDetails(ToolErrorSchema)[0]?.errorType).to.equal("InternalError");
    const reference = /reference ([0-9a-f-]{36})/.exec(error.rawMessage)?.[1] ?? "missing";
    const logged = lines.find((line) => line.includes(reference)) ?? "";
    expect(logged).to.contain("hunter2");
    runtime.close();
  });

  it("runs the whole lifecycle through the in-memory transport", async () => {
    const { logger } = capturingLogger();
    const runtime = createToolRuntime({ tools: builtinTools });
    const transport = createRouterTransport((router) => {
      router.service(RunnerService, wrapService(RunnerService, createRunnerService(runtime), pipeline(logger)));
    });
    const runner = createClient(RunnerService, transport);
    const discovered = await runner.discoverTools({ namespace: "builtin" });
    expect(discovered.tools.map((tool) => tool.name)).to.include("builtin.json_pointer");
    await runner.activateTool({ toolName: "builtin.json_pointer" });
    const { result } = await runner.executeTool({
      toolName: "builtin.json_pointer",
      inputs: {
        document: { items: [{ id: 7 }], "a/b": { "~k": 1 } },
        pointers: { id: "/items/0/id", odd: "/a~1b/~0k", none: "/x" },
      },
    });
    expect(result?.success).to.equal(true);
    expect(result?.output).to.deep.equal({ values: { id: 7, odd: 1 }, missing: ["none"] });
    expect((await runner.deactivateTool({ toolName: "builtin.json_pointer" })).wasActive).to.equal(true);
    expect(runtime.runners.size).to.equal(0);
    runtime.close();
  });

  it("refuses new calls with UNAVAILABLE and a ToolError once shutdown has begun", async () => {
    const { logger } = capturingLogger();
    const runtime = createToolRuntime({ tools: builtinTools });
    const closing = { ...pipeline(logger), isClosing: () => true };
    const transport = createRouterTransport((router) => {
      router.service(RegistryService, wrapService(RegistryService, createRegistryService(runtime), closing));
    });
    let caught: unknown;
    try {
      await createClient(RegistryService, transport).getTool({ name: "builtin.echo" });
    } catch (error) {
      caught = error;
    }
    const error = ConnectError.from(caught);
    expect(error.code).to.equal(Code.Unavailable);
    expect(error.findDetails(ToolErrorSchema)[0]?.errorType).to.equal("UnavailableError");
    expect(error.rawMessage).to.contain("the server is shutting down");
    runtime.close();
  });
});

describe("Operational HTTP endpoints", () => {
  it("answer /readyz with 503 once health is not serving, and pass RPCs through", async () => {
    let isServing = true;
    const health = {
      serving: () => undefined,
      notServing: () => undefined,
      get isServing() {
        return isServing;
      },
    };
    const rpc: NodeRequestHandler = (_request, response) => {
      response.writeHead(204);
      response.end();
    };
    const server = http.createServer(withOperationalEndpoints(rpc, health, undefined) as http.RequestListener);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      expect((await fetch(`${base}/readyz`)).status).to.equal(200);
      isServing = false;
      const notReady = await fetch(`${base}/readyz`);
      expect(notReady.status).to.equal(503);
      expect(await notReady.text()).to.equal("shutting down\n");
      expect((await fetch(`${base}/healthz`)).status).to.equal(200);
      expect((await fetch(`${base}/toolruntime.v1.RegistryService/GetTool`, { method: "POST" })).status).to.equal(204);
    } finally {
      server.close();
    }
  });
});
