import type http2 from "node:http2";
import type { Server } from "@grpc/grpc-js";
import { ChurnMap } from "../collections/churn-map.js";

/** The part of an HTTP/2 session's internal state that holds its streams by id. */
interface StreamsState {
  streams: unknown;
  pendingStreams: unknown;
}

function isEmptyMapLike(value: unknown): boolean {
  const map = value as Partial<Map<unknown, unknown>> | null;
  return (
    typeof map === "object" &&
    map !== null &&
    map.size === 0 &&
    typeof map.get === "function" &&
    typeof map.set === "function" &&
    typeof map.delete === "function" &&
    typeof map.forEach === "function"
  );
}

/**
 * Gives a new HTTP/2 session a {@link ChurnMap} for the streams Node keeps by id, so that a
 * session's stream after stream does not keep every call's objects alive through the young
 * collections (see churn-map.ts). Node keeps that Map in the session's internal state, an object
 * under a symbol with `streams` and `pendingStreams`; it is found by that shape. Returns false, and
 * leaves the session as it is, when Node's internals differ (a test holds the Node in use to true).
 * Call it when the session is created, before its first stream.
 */
export function useChurnMapForStreams(session: http2.Http2Session): boolean {
  for (const key of Object.getOwnPropertySymbols(session)) {
    const state = (session as unknown as Record<symbol, unknown>)[key] as Partial<StreamsState> | null;
    if (typeof state !== "object" || state === null || !("pendingStreams" in state)) continue;
    if (!isEmptyMapLike(state.streams)) return false;
    state.streams = new ChurnMap();
    return true;
  }
  return false;
}

/**
 * Calls `onSession` with every HTTP/2 session of the connection injectors that grpc-js `server`
 * creates from now on. grpc-js does not expose its HTTP/2 servers; it makes each one with its
 * `createHttp2Server` method, which is wrapped here. Returns false when that method is missing
 * (another grpc-js): sessions are then not seen.
 */
export function watchGrpcSessions(server: Server, onSession: (session: http2.ServerHttp2Session) => void): boolean {
  const internals = server as unknown as { createHttp2Server?: (...args: unknown[]) => http2.Http2Server };
  const create = internals.createHttp2Server;
  if (typeof create !== "function") return false;
  internals.createHttp2Server = (...args: unknown[]) => {
    const http2Server = create.apply(server, args);
    http2Server.on("session", onSession);
    return http2Server;
  };
  return true;
}
