import type { DescService } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import { toConnectError } from "./to-connect-error.js";

type AnyMethod = (request: unknown, context: HandlerContext) => unknown;

/**
 * Wraps every method of a service implementation so that whatever it throws, synchronously, as a
 * rejection, or from inside a stream, leaves it as a ConnectError made by toConnectError. Both
 * transports mount the wrapped implementation, so both answer with the same statuses.
 */
export function mapServiceErrors<S extends DescService>(
  service: S,
  implementation: ServiceImpl<S>,
  logger: Logger,
): ServiceImpl<S> {
  const wrapped: Record<string, AnyMethod> = {};
  for (const method of service.methods) {
    const original = (implementation as unknown as Record<string, AnyMethod>)[method.localName];
    if (!original) continue;
    const name = method.localName;
    wrapped[name] =
      method.methodKind === "server_streaming"
        ? async function* (request, context) {
            try {
              yield* original(request, context) as AsyncIterable<unknown>;
            } catch (error) {
              throw toConnectError(error, logger);
            }
          }
        : async (request, context) => {
            try {
              return await original(request, context);
            } catch (error) {
              throw toConnectError(error, logger);
            }
          };
  }
  return wrapped as unknown as ServiceImpl<S>;
}
