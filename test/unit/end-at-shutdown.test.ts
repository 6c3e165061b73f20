import { Code, ConnectError, createContextValues, createHandlerContext } from "@connectrpc/connect";
import { expect } from "chai";
import { once } from "node:events";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { endAtShutdown, endedByShutdown } from "../../src/server/end-at-shutdown.js";
import { ShutdownNotice } from "../../src/server/shutdown-notice.js";
import { ToolRuntimeError } from "../../src/errors/tool-runtime-error.js";

const watchTools = RegistryService.method.watchTools;

/** A handler context of a WatchTools call whose client leaves when `client` aborts. */
function contextOf(client: AbortController) {
  return createHandlerContext({
    service: RegistryService,
    method: watchTools,
    protocolName: "connect",
    requestMethod: "POST",
    url: "/toolruntime.v1.RegistryService/WatchTools",
    contextValues: createContextValues(),
    requestSignal: client.signal,
  });
}

/** A watch that yields "first", then waits until its signal aborts and ends quietly. */
async function* quietWatch(signal: AbortSignal): AsyncGenerator<string> {
  yield "first";
  if (!signal.aborted) await once(signal, "abort");
}

/** Reads `stream` to its end: the messages, and the error it ended with. */
async function drain(stream: AsyncIterable<string>, onFirst: () => void) {
  const messages: string[] = [];
  try {
    for await (const message of stream) {
      messages.push(message);
      if (messages.length === 1) onFirst();
    }
    return { messages, error: undefined };
  } catch (error) {
    return { messages, error };
  }
}

describe("ShutdownNotice", () => {
  it("calls each listener once when shutdown begins, and at once for one added after", () => {
    const notice = new ShutdownNotice();
    const heard: string[] = [];
    notice.onBegin(() => heard.push("a"));
    const stopB = notice.onBegin(() => heard.push("b"));
    stopB();
    expect(notice.begun).to.equal(false);
    notice.begin();
    notice.begin();
    notice.onBegin(() => heard.push("late"));
    expect(notice.begun).to.equal(true);
    expect(heard).to.deep.equal(["a", "late"]);
  });
});

describe("endAtShutdown()", () => {
  const retry = "watch again elsewhere";

  it("ends a quiet stream with UNAVAILABLE naming the shutdown once shutdown begins", async () => {
    const notice = new ShutdownNotice();
    const result = await drain(endAtShutdown(notice, contextOf(new AbortController()), retry, quietWatch), () =>
      notice.begin(),
    );
    expect(result.messages).to.deep.equal(["first"]);
    expect(result.error).to.be.instanceOf(ToolRuntimeError);
    const error = result.error as ToolRuntimeError;
    expect([error.code, error.errorType, error.details]).to.deep.equal([
      "UNAVAILABLE",
      "UnavailableError",
      "the server is shutting down: watch again elsewhere",
    ]);
    expect(endedByShutdown(retry).details).to.equal(error.details);
  });

  it("ends quietly when its client left, even once shutdown began", async () => {
    const notice = new ShutdownNotice();
    const client = new AbortController();
    const result = await drain(endAtShutdown(notice, contextOf(client), retry, quietWatch), () => {
      client.abort(new ConnectError("gone", Code.Canceled));
      notice.begin();
    });
    expect(result).to.deep.equal({ messages: ["first"], error: undefined });
  });

  it("passes on the stream's own error", async () => {
    const notice = new ShutdownNotice();
    const own = new ConnectError("behind", Code.ResourceExhausted);
    const result = await drain(
      endAtShutdown(notice, contextOf(new AbortController()), retry, async function* () {
        yield await Promise.resolve("first");
        throw own;
      }),
      () => undefined,
    );
    expect(result.error).to.equal(own);
  });
});
