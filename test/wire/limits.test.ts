import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "chai";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { uniqueName } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";

describe("Limits and concurrency over the wire", () => {
  let server: RunningServer;
  let stacks: ClientStack[];

  before(async () => {
    server = await startTestServer({ maxMessageBytes: 1024 * 1024 });
    stacks = clientStackNames.map((name) => createClientStack(name, server));
  });
  after(async () => {
    for (const stack of stacks) stack.close();
    await server.close(0);
  });

  it("leaves exactly one winner of 1,000 concurrent registrations of one name from four client stacks", async () => {
    const name = `${uniqueName("race")}.tool`;
    const attempts = Array.from({ length: 1000 }, (_, index) => {
      const stack = stacks[index % stacks.length] as ClientStack;
      return stack.registry.registerTool({ spec: { name, description: `attempt ${index}` } }).then(
        (response) => ({ ok: true as const, description: response.spec?.description ?? "" }),
        (error: unknown) => ({ ok: false as const, code: ConnectError.from(error).code }),
      );
    });
    const outcomes = await Promise.all(attempts);
    const winners = outcomes.filter((outcome) => outcome.ok);
    const losers = outcomes.filter((outcome) => !outcome.ok);
    expect(winners).to.have.length(1);
    expect(losers).to.have.length(999);
    expect(losers.every((outcome) => !outcome.ok && outcome.code === Code.AlreadyExists)).to.equal(true);
    const stored = await stacks[0]!.registry.getTool({ name });
    expect(stored.spec?.description).to.equal(winners[0]!.ok ? winners[0]!.description : "");
  });

  for (const [index, name] of clientStackNames.entries()) {
    // Over HTTP/1.1 the server answers before the upload ends, and Node's HTTP/1.1 client reports
    // the connection reset that follows instead of the answer (see README, limits); curl and
    // browsers read the answer. The HTTP/1.1 path is covered by the raw request test below.
    if (name === "connect-json-http1" || name === "grpc-web") continue;
    it(`answers RESOURCE_EXHAUSTED to a message over the size limit over ${name} and keeps serving`, async () => {
      const stack = stacks[index] as ClientStack;
      let failure: unknown;
      try {
        await stack.runner.executeTool({ toolName: "builtin.echo", inputs: { blob: "x".repeat(2 * 1024 * 1024) } });
      } catch (error) {
        failure = error;
      }
      expect(ConnectError.from(failure).code).to.equal(Code.ResourceExhausted);
      expect((await stack.registry.getTool({ name: "builtin.echo" })).spec?.name).to.equal("builtin.echo");
    });
  }

  it("answers an HTTP/1.1 upload over the size limit with resource_exhausted before reading it all", async () => {
    const body = JSON.stringify({ toolName: "builtin.echo", inputs: { blob: "x".repeat(2 * 1024 * 1024) } });
    const response = await fetch(`${server.httpUrl}/toolruntime.v1.RunnerService/ExecuteTool`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(response.status).to.equal(429);
    expect(((await response.json()) as { code: string }).code).to.equal("resource_exhausted");
  });

  for (const [index, name] of clientStackNames.entries()) {
    if (name === "connect-json-http1") continue; // JSON has no NaN: only binary clients can send one
    it(`turns NaN and Infinity inside inputs sent over ${name} into success=false with InputValidationError`, async () => {
      const stack = stacks[index] as ClientStack;
      const runner = uniqueName("nan");
      await stack.runner.activateTool({ runner, toolName: "builtin.echo" });
      for (const [value, shown] of [
        [Number.NaN, "NaN"],
        [Number.POSITIVE_INFINITY, "Infinity"],
        [Number.NEGATIVE_INFINITY, "-Infinity"],
      ] as const) {
        const response = await stack.runner.executeTool({
          runner,
          toolName: "builtin.echo",
          inputs: { nested: { value } },
        });
        expect(response.result?.success).to.equal(false);
        expect(response.result?.error?.errorType).to.equal("InputValidationError");
        expect(response.result?.error?.details).to.equal(
          `inputs.nested.value is ${shown}: JSON numbers must be finite`,
        );
      }
    });
  }
});
