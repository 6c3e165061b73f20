import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from "@modelcontextprotocol/client";
import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as V1Transport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema as V1ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

/** The MCP client lines every gateway test runs with. */
export const mcpClientLines = ["v2 default", "v2 pinned 2026-07-28", "v1 sdk"] as const;
export type McpClientLine = (typeof mcpClientLines)[number];

/** A tool as tools/list gives it (the fields the tests read). */
export interface ListedTool {
  readonly name: string;
  readonly title?: string | undefined;
  readonly description?: string | undefined;
  readonly inputSchema: Record<string, unknown>;
  readonly outputSchema?: Record<string, unknown> | undefined;
  readonly annotations?: Record<string, unknown> | undefined;
  readonly _meta?: Record<string, unknown> | undefined;
}

/** A tools/call result (the fields the tests read). */
export interface CallResult {
  readonly content: ReadonlyArray<{ readonly type: string; readonly text?: string }>;
  readonly structuredContent?: Record<string, unknown> | undefined;
  readonly isError?: boolean | undefined;
  readonly _meta?: Record<string, unknown> | undefined;
}

/** A progress notification as a client reports it. */
export interface ProgressReport {
  readonly progress: number;
  readonly total?: number | undefined;
  readonly message?: string | undefined;
}

/** Options of one call. */
export interface CallOptions {
  readonly meta?: Record<string, unknown>;
  readonly onprogress?: (progress: ProgressReport) => void;
  readonly signal?: AbortSignal;
}

/** A form-mode elicitation as a client receives it (the fields the tests read). */
export interface ElicitationAsked {
  readonly message: string;
  readonly requestedSchema?: Record<string, unknown> | undefined;
}

/** A client's answer to an elicitation. */
export interface ElicitationAnswer {
  readonly action: "accept" | "decline" | "cancel";
  readonly content?: Record<string, string | number | boolean>;
}

/** Options of {@link connectMcpClient}. */
export interface ConnectOptions {
  /** `authorization: Bearer` token. */
  readonly token?: string;
  /** Declares form elicitation and answers each elicitation with this. */
  readonly onElicit?: (asked: ElicitationAsked) => Promise<ElicitationAnswer>;
}

/** One connected client of either SDK line, behind one shape. */
export interface McpTestClient {
  readonly line: McpClientLine;
  /** The protocol revision the connection speaks. */
  readonly protocolVersion: string | undefined;
  /** One page of tools/list. */
  listPage(cursor?: string): Promise<{ tools: ListedTool[]; nextCursor?: string | undefined }>;
  callTool(name: string, args?: Record<string, unknown>, options?: CallOptions): Promise<CallResult>;
  /** Resolves when the client's list_changed stream (GET, or subscriptions/listen) is open. */
  readonly listening: Promise<void>;
  /** Resolves at the next notifications/tools/list_changed. */
  nextListChanged(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Connects a client of `line` to `url`. `token` (a string, or `options.token`) goes in
 * `authorization: Bearer`; with `options.onElicit` the client declares form elicitation and
 * answers with it. The fetch each transport uses is wrapped to see when the notification stream
 * opens, so tests order on it.
 */
export async function connectMcpClient(
  line: McpClientLine,
  url: URL,
  tokenOrOptions?: string | ConnectOptions,
): Promise<McpTestClient> {
  const options: ConnectOptions =
    typeof tokenOrOptions === "string" ? { token: tokenOrOptions } : (tokenOrOptions ?? {});
  const { token, onElicit } = options;
  let markListening: () => void = () => undefined;
  const listening = new Promise<void>((resolve) => (markListening = resolve));
  const fetchWatchingStreams = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    const method = init?.method ?? "GET";
    const body = typeof init?.body === "string" ? init.body : "";
    if (response.ok && (method === "GET" || body.includes('"subscriptions/listen"'))) markListening();
    return response;
  };
  let changed: (() => void)[] = [];
  const onChanged = (): void => {
    const waiting = changed;
    changed = [];
    for (const resolve of waiting) resolve();
  };
  const listChanged = { tools: { autoRefresh: false, debounceMs: 0, onChanged } };
  const requestInit = token === undefined ? {} : { requestInit: { headers: { authorization: `Bearer ${token}` } } };
  const nextListChanged = () => new Promise<void>((resolve) => changed.push(resolve));

  if (line === "v1 sdk") {
    const client = new V1Client(
      { name: "gateway-test", version: "1.0.0" },
      { listChanged, ...(onElicit ? { capabilities: { elicitation: {} } } : {}) },
    );
    if (onElicit) {
      client.setRequestHandler(V1ElicitRequestSchema, async (request) => ({
        ...(await onElicit(request.params as ElicitationAsked)),
      }));
    }
    const transport = new V1Transport(url, { fetch: fetchWatchingStreams, ...requestInit });
    await client.connect(transport);
    return {
      line,
      protocolVersion: transport.protocolVersion,
      listPage: async (cursor) => await client.listTools(cursor === undefined ? {} : { cursor }),
      callTool: async (name, args, options = {}) =>
        (await client.callTool(
          { name, arguments: args ?? {}, ...(options.meta ? { _meta: options.meta } : {}) },
          undefined,
          {
            ...(options.onprogress ? { onprogress: options.onprogress } : {}),
            ...(options.signal ? { signal: options.signal } : {}),
          },
        )) as never,
      listening,
      nextListChanged,
      close: () => client.close(),
    };
  }
  const client = new V2Client(
    { name: "gateway-test", version: "1.0.0" },
    {
      listChanged,
      ...(line === "v2 pinned 2026-07-28" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}),
      ...(onElicit ? { capabilities: { elicitation: { form: {} } } } : {}),
    },
  );
  if (onElicit) {
    client.setRequestHandler("elicitation/create", async (request) => ({
      ...(await onElicit(request.params as ElicitationAsked)),
    }));
  }
  const transport = new V2Transport(url, { fetch: fetchWatchingStreams, ...requestInit });
  await client.connect(transport);
  return {
    line,
    protocolVersion: client.getNegotiatedProtocolVersion(),
    listPage: async (cursor) =>
      await client.request({ method: "tools/list", params: cursor === undefined ? {} : { cursor } }),
    callTool: async (name, args, options = {}) =>
      (await client.callTool(
        { name, arguments: args ?? {}, ...(options.meta ? { _meta: options.meta } : {}) },
        {
          ...(options.onprogress ? { onprogress: options.onprogress } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
        },
      )) as never,
    listening,
    nextListChanged,
    close: () => client.close(),
  };
}
