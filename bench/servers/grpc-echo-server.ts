import {
  Server,
  ServerCredentials,
  type ServerWritableStream,
  type ServiceDefinition,
  type UntypedServiceImplementation,
  type sendUnaryData,
} from "@grpc/grpc-js";
import { announceReady, exitOnSignals, readServerArgs } from "./server-args.js";

/**
 * The bare @grpc/grpc-js baseline: one unary method at `--path` (default RunnerService.ExecuteTool)
 * that answers every call with the same bytes (`--response-base64`: a real response of the
 * toolruntime to the same request, e.g. an ExecuteToolResponse of the no-op tool), with no decoding,
 * no encoding and no service logic. The registration and admission cases point it at
 * RegistryService.RegisterTool and ExecutionService.StartExecution. Given `--stream-responses-base64`,
 * it also answers one server-streaming method at `--stream-path` (default RunnerService.RunTool) by
 * writing those messages (a real RunTool stream's six events) with `call.write`, one by one as
 * grpc-js offers, and ending the call: what the transport alone costs for a lifecycle stream.
 */
async function main(): Promise<void> {
  const args = readServerArgs();
  const identity = (bytes: Buffer): Buffer => bytes;
  const definition: ServiceDefinition = {
    ...(args.streamResponses.length > 0
      ? {
          RunTool: {
            path: args.streamPath,
            requestStream: false,
            responseStream: true,
            originalName: "runTool",
            requestSerialize: identity,
            requestDeserialize: identity,
            responseSerialize: identity,
            responseDeserialize: identity,
          },
        }
      : {}),
    ExecuteTool: {
      path: args.path,
      requestStream: false,
      responseStream: false,
      originalName: "executeTool",
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  };
  const server = new Server();
  const implementation: UntypedServiceImplementation = {
    ExecuteTool: (_call: unknown, callback: sendUnaryData<Buffer>) => callback(null, args.response),
    RunTool: (call: ServerWritableStream<Buffer, Buffer>) => {
      for (const message of args.streamResponses) call.write(message);
      call.end();
    },
  };
  server.addService(definition, implementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${args.host}:${args.port}`, ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  exitOnSignals(() => server.forceShutdown());
  announceReady(port);
}

main().catch((error: unknown) => {
  process.stderr.write(`grpc-echo-server: ${String(error)}\n`);
  process.exit(1);
});
