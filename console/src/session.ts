import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { ExecutionService } from "../../gen/toolruntime/v1/execution_pb.js";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";

/** Where the token lives: the tab's session storage, so it goes with the tab and not beyond. */
const tokenKey = "toolruntime.token";

/** The bearer token entered in this tab, or "" for none. */
export function readToken(): string {
  try {
    return sessionStorage.getItem(tokenKey) ?? "";
  } catch {
    return "";
  }
}

/** Keeps `token` for this tab; "" forgets it. */
export function writeToken(token: string): void {
  if (token === "") sessionStorage.removeItem(tokenKey);
  else sessionStorage.setItem(tokenKey, token);
}

/** The clients every view uses. */
export interface Clients {
  readonly registry: Client<typeof RegistryService>;
  readonly executions: Client<typeof ExecutionService>;
}

/**
 * The API's base URL: the console is served at `<base>/console/`, so a reverse proxy that mounts the
 * server under a prefix keeps working.
 */
function apiBaseUrl(): string {
  const path = location.pathname;
  const at = path.lastIndexOf("/console/");
  return location.origin + (at >= 0 ? path.slice(0, at) : "");
}

/**
 * Makes the clients: the Connect protocol with JSON over fetch (HTTP/1.1 is enough, server streams
 * included, so a plain reverse proxy suffices), sending the current token with every call.
 */
export function createClients(): Clients {
  const bearer: Interceptor = (next) => (request) => {
    const token = readToken();
    if (token !== "") request.header.set("Authorization", `Bearer ${token}`);
    return next(request);
  };
  const transport = createConnectTransport({ baseUrl: apiBaseUrl(), interceptors: [bearer] });
  return {
    registry: createClient(RegistryService, transport),
    executions: createClient(ExecutionService, transport),
  };
}
