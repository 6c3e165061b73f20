import { create, type JsonObject } from "@bufbuild/protobuf";
import { Code, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { once } from "node:events";
import { ConnectRequestSchema, ProviderService } from "../../gen/toolruntime/v1/provider_pb.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { expectToolError, uniqueName } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";

/** Schemas an author got wrong, and what RegisterTool answers (with "%s" for the tool's name). */
const mistakes: readonly (readonly [string, JsonObject, string])[] = [
  [
    "an unknown keyword",
    { type: "object", requried: ["path"] },
    'input_schema of "%s" is not a valid JSON Schema (draft 2020-12): it uses the unknown keyword "requried": did you mean "required"?',
  ],
  [
    "a root that refuses objects",
    { type: "string" },
    'input_schema of "%s" must accept a JSON object at its root (inputs and outputs are always objects), but its "type" is "string": use "type": "object"',
  ],
  [
    "a misspelt type",
    { type: "object", properties: { path: { type: "strin" } } },
    'input_schema of "%s" is not a valid JSON Schema (draft 2020-12): /properties/path/type is "strin": must be one of "array", "boolean", "integer", "null", "number", "object", "string": did you mean "string"?',
  ],
];

describe("Strict definitions over the wire", () => {
  let server: RunningServer;
  let stacks: ClientStack[];

  before(async () => {
    server = await startTestServer();
    stacks = clientStackNames.map((name) => createClientStack(name, server));
  });
  after(async () => {
    for (const stack of stacks) stack.close();
    await server.close(0);
  });

  for (const [index, stackName] of clientStackNames.entries()) {
    describe(`RegisterTool over ${stackName}`, () => {
      for (const [label, inputSchema, message] of mistakes) {
        it(`refuses an input schema with ${label} with INVALID_ARGUMENT and registers nothing`, async () => {
          const client = stacks[index] as ClientStack;
          const name = `${uniqueName("strict")}.tool`;
          const error = await expectToolError(
            client.registry.registerTool({ spec: { name, inputSchema } }),
            Code.InvalidArgument,
            "RegistrationError",
          );
          expect(error.details).to.equal(message.replace("%s", name));
          expect(error.toolName).to.equal(name);
          await expectToolError(client.registry.getTool({ name }), Code.NotFound, "NotFoundError");
        });
      }

      it("refuses an unknown keyword deep in an output schema", async () => {
        const client = stacks[index] as ClientStack;
        const name = `${uniqueName("strict")}.tool`;
        await expectToolError(
          client.registry.registerTool({
            spec: { name, outputSchema: { type: "object", properties: { n: { type: "number", minimun: 0 } } } },
          }),
          Code.InvalidArgument,
          "RegistrationError",
          `output_schema of "${name}" is not a valid JSON Schema (draft 2020-12): it uses the unknown keyword "minimun": did you mean "minimum"?`,
        );
      });
    });
  }

  const providerPorts: readonly (readonly [string, () => Transport])[] = [
    ["the gRPC port", () => createGrpcTransport({ baseUrl: `http://${server.grpcAddress}` })],
    ["the HTTP port", () => createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "2" })],
  ];
  for (const [port, transport] of providerPorts) {
    it(`refuses a provider hello whose tool has an unknown schema keyword on ${port}, before the welcome`, async () => {
      const name = `${uniqueName("hello")}.tool`;
      const hello = create(ConnectRequestSchema, {
        message: {
          case: "hello",
          value: {
            providerName: uniqueName("typo"),
            tools: [{ name, inputSchema: { type: "object", requried: ["x"] } }],
          },
        },
      });
      const abort = new AbortController();
      const requests = (async function* () {
        yield hello;
        // Nothing more is sent: the stream stays open until the test ends it.
        await once(abort.signal, "abort");
      })();
      const responses = createClient(ProviderService, transport()).connect(requests, { signal: abort.signal });
      const stream = responses[Symbol.asyncIterator]();
      try {
        await expectToolError(
          stream.next(),
          Code.InvalidArgument,
          "RegistrationError",
          `input_schema of "${name}" is not a valid JSON Schema (draft 2020-12): it uses the unknown keyword "requried": did you mean "required"?`,
        );
        await expectToolError((stacks[0] as ClientStack).registry.getTool({ name }), Code.NotFound, "NotFoundError");
      } finally {
        abort.abort();
      }
    });
  }
});
