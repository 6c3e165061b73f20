import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type DescMethodUnary,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { Client, credentials, type ServiceError } from "@grpc/grpc-js";
import type { FailedCall, SendResult } from "./send-result.js";

/** Connections to one gRPC server, each its own HTTP/2 connection (a local subchannel pool each). */
export interface BytesClients {
  readonly connections: readonly Client[];
  readonly close: () => void;
}

const identity = (bytes: Buffer): Buffer => bytes;

/**
 * Opens `connections` grpc-js channels to `address` ("host:port") and waits until each is ready.
 * Each has its own subchannel pool, so each is a separate HTTP/2 connection, as separate clients'
 * would be. Messages go out as given (pre-encoded protobuf) and come back as bytes: the load
 * generator spends nothing on encoding inside a measured window.
 */
export async function openBytesClients(address: string, connections: number): Promise<BytesClients> {
  const clients = Array.from(
    { length: connections },
    () =>
      new Client(address, credentials.createInsecure(), {
        "grpc.use_local_subchannel_pool": 1,
        "grpc.max_receive_message_length": 64 * 1024 * 1024,
      }),
  );
  await Promise.all(
    clients.map(
      (client) =>
        new Promise<void>((resolve, reject) =>
          client.waitForReady(Date.now() + 10_000, (error) => (error ? reject(error) : resolve())),
        ),
    ),
  );
  return { connections: clients, close: () => clients.forEach((client) => client.close()) };
}

/** The gRPC path of a method, e.g. "/toolruntime.v1.RegistryService/RegisterTool". */
export function pathOf(method: DescMethodUnary): string {
  return `/${method.parent.typeName}/${method.name}`;
}

/** One unary call of pre-encoded `body` to `path`; resolves to the response's bytes. */
export function callOnce(client: Client, path: string, body: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(path, identity, identity, body, (error: ServiceError | null, response?: Buffer) =>
      error || response === undefined ? reject(error ?? new Error("no response")) : resolve(response),
    );
  });
}

/**
 * Sends every body as one unary call of `path`, keeping `inFlightPerConnection` calls in flight on
 * each connection (keep it under the server's HTTP/2 stream limit, 100 by default), and resolves
 * once every call has answered.
 */
export async function sendAll(
  clients: BytesClients,
  path: string,
  bodies: readonly Buffer[],
  inFlightPerConnection: number,
): Promise<SendResult> {
  const responses: (Buffer | undefined)[] = new Array<Buffer | undefined>(bodies.length);
  const failed: FailedCall[] = [];
  let next = 0;
  const worker = async (client: Client): Promise<void> => {
    while (next < bodies.length) {
      const index = next++;
      try {
        responses[index] = await callOnce(client, path, bodies[index] as Buffer);
      } catch (error) {
        const { code, details } = error as Partial<ServiceError>;
        failed.push({ index, code: code ?? -1, details: details ?? String(error) });
      }
    }
  };
  const workers = clients.connections.flatMap((client) =>
    Array.from({ length: inFlightPerConnection }, () => worker(client)),
  );
  const cpuBefore = process.cpuUsage();
  const began = performance.now();
  await Promise.all(workers);
  const elapsedMs = performance.now() - began;
  const cpu = process.cpuUsage(cpuBefore);
  return { responses, failed, elapsedMs, clientCpuMs: (cpu.user + cpu.system) / 1000 };
}

/**
 * One unary call of a protobuf-es method with a typed request and response (encoded and decoded
 * here, outside any measured window). Rejects with the grpc-js ServiceError of a non-OK status.
 */
export async function callMethod<I extends DescMessage, O extends DescMessage>(
  client: Client,
  method: DescMethodUnary<I, O>,
  request: MessageInitShape<I>,
): Promise<MessageShape<O>> {
  const body = Buffer.from(toBinary(method.input, create(method.input, request)));
  return fromBinary(method.output, await callOnce(client, pathOf(method), body));
}
