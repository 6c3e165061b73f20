import { Code, ConnectError } from "@connectrpc/connect";

/** A sentence for a failed call, naming its status and saying what to do where it can. */
export function describeError(error: unknown): string {
  const connectError = ConnectError.from(error);
  switch (connectError.code) {
    case Code.Unauthenticated:
      return `Not signed in (UNAUTHENTICATED): the server did not accept the token. Enter a valid bearer token above. (${connectError.rawMessage})`;
    case Code.PermissionDenied:
      return `Permission denied (PERMISSION_DENIED): ${connectError.rawMessage}`;
    case Code.Unavailable:
      return `The server is unavailable (UNAVAILABLE): ${connectError.rawMessage}`;
    default:
      return `${codeName(connectError.code)}: ${connectError.rawMessage}`;
  }
}

/** Whether the call failed because it was aborted by the console itself (the view was left). */
export function isAbort(error: unknown): boolean {
  return ConnectError.from(error).code === Code.Canceled;
}

/** The canonical name of a status code, such as NOT_FOUND. */
export function codeName(code: Code): string {
  return (Code[code] ?? "UNKNOWN").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}
