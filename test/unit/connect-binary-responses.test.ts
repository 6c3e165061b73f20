import { create, toBinary } from "@bufbuild/protobuf";
import type { StreamResponse, UnaryRequest, UnaryResponse } from "@connectrpc/connect";
import { expect } from "chai";
import { ExecuteToolResponseSchema, RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { binaryResponsesInterceptor } from "../../src/server/connect-binary-responses.js";

const method = RunnerService.method.executeTool;
const response = create(ExecuteToolResponseSchema, {
  executionId: "e-1",
  result: { success: true, output: { answer: 42 }, durationMs: 1.5, metadata: { tool_name: "t.x", nested: [1, null] } },
});

/** Runs the interceptor around a handler that answers `response`, for a request of that content type. */
async function intercept(contentType: string | undefined, stream = false): Promise<UnaryResponse | StreamResponse> {
  const header = new Headers(contentType ? { "content-type": contentType } : {});
  const request = { stream: false, method, header, message: {} } as unknown as UnaryRequest;
  const answer = stream
    ? {
        stream: true,
        method,
        header: new Headers(),
        trailer: new Headers(),
        message: toAsync([response, response]),
      }
    : { stream: false, method, header: new Headers(), trailer: new Headers(), message: response };
  const next = binaryResponsesInterceptor()(() => Promise.resolve(answer as unknown as UnaryResponse | StreamResponse));
  return next(request);
}

async function* toAsync<T>(items: readonly T[]): AsyncGenerator<T> {
  for (const item of items) yield await Promise.resolve(item);
}

describe("binaryResponsesInterceptor()", () => {
  const expected = Buffer.from(toBinary(ExecuteToolResponseSchema, response)).toString("hex");

  for (const contentType of [
    "application/proto",
    "application/grpc",
    "application/grpc-web+proto",
    "application/connect+proto; charset=x",
  ]) {
    it(`replaces a ${contentType} response by one protobuf-es writes as the same bytes`, async () => {
      const intercepted = (await intercept(contentType)) as UnaryResponse;
      expect(intercepted.message).to.not.equal(response);
      const written = Buffer.from(toBinary(ExecuteToolResponseSchema, intercepted.message as never)).toString("hex");
      expect(written).to.equal(expected);
    });
  }

  for (const contentType of ["application/json", "application/connect+json", "application/grpc-web+json", undefined]) {
    it(`leaves a ${contentType ?? "GET (no content type)"} response as it is`, async () => {
      const intercepted = (await intercept(contentType)) as UnaryResponse;
      expect(intercepted.message).to.equal(response);
    });
  }

  it("replaces each message of a binary stream", async () => {
    const intercepted = (await intercept("application/grpc", true)) as StreamResponse;
    const written: string[] = [];
    for await (const message of intercepted.message) {
      written.push(Buffer.from(toBinary(ExecuteToolResponseSchema, message as never)).toString("hex"));
    }
    expect(written).to.deep.equal([expected, expected]);
  });
});
