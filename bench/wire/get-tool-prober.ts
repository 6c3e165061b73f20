// A child process that times GetTool calls one after another on its own gRPC connection, so that
// the latency a client sees during the admission burst is not skewed by the burst's own client (the
// parent's event loop is busy sending it). The parent sends {phase: "idle" | "burst"} to say which
// bucket the following calls go in, and {phase: "stop"} to get {idle: ms[], burst: ms[]} back.
import { create, toBinary } from "@bufbuild/protobuf";
import { GetToolRequestSchema, RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { callOnce, openBytesClients, pathOf } from "../lib/grpc-bytes-client.js";

type Phase = "idle" | "burst" | "stop";

const [address, toolName] = process.argv.slice(2);
if (!address || !toolName || !process.send)
  throw new Error("usage: get-tool-prober HOST:PORT TOOL (with an IPC channel)");
const send = process.send.bind(process);

const clients = await openBytesClients(address, 1);
const client = clients.connections[0];
if (!client) throw new Error("no connection");
const path = pathOf(RegistryService.method.getTool);
const body = Buffer.from(toBinary(GetToolRequestSchema, create(GetToolRequestSchema, { name: toolName })));
const latencies: Record<"idle" | "burst", number[]> = { idle: [], burst: [] };
const state: { phase: Phase } = { phase: "idle" };
let failures = 0;
process.on("message", (message: { phase: Phase }) => {
  state.phase = message.phase;
});
send({ ready: true });
while (state.phase !== "stop") {
  const bucket = state.phase;
  const started = performance.now();
  try {
    await callOnce(client, path, body);
    latencies[bucket].push(performance.now() - started);
  } catch {
    failures += 1;
  }
}
clients.close();
send({ ...latencies, failures }, () => process.exit(0));
