import { parentPort } from "node:worker_threads";
import { deflateOptions, deflateSpec } from "./spec-deflate.js";
import type { PackReply, PackRequest } from "./spec-packing-messages.js";

// The body of the packing worker thread (see SpecPackingWorker): deflates each spec of a request
// against its dictionary and answers with the packed strings, in order. It holds no state between
// requests, so a request needs nothing sent before it.

const port = parentPort;
if (!port) throw new Error("spec-packing-thread.js runs as a worker thread (see SpecPackingWorker)");

port.on("message", (request: PackRequest) => {
  const options = request.dictionaries.map(deflateOptions);
  const packed = new Array<string>(request.ends.length);
  let start = 0;
  for (let index = 0; index < request.ends.length; index++) {
    const end = request.ends[index] as number;
    const dictionary = options[request.dictionaryOf[index] as number];
    if (!dictionary) throw new RangeError(`spec ${index} of request ${request.id} names no dictionary of the request`);
    packed[index] = deflateSpec(request.bytes.subarray(start, end), dictionary);
    start = end;
  }
  port.postMessage({ id: request.id, packed } satisfies PackReply);
});
