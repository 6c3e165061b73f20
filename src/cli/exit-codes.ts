/** The exit codes of the `toolruntime` client commands. */
export const ExitCode = {
  /** The command did what was asked; for `run` and `executions watch`, the run succeeded. */
  ok: 0,
  /**
   * The run failed, was cancelled or rejected (its result has `success` false); the execution is
   * not in a state the command applies to; or something unexpected went wrong.
   */
  failed: 1,
  /** The command line is wrong: an unknown flag, a missing argument, invalid JSON in `--input`. */
  usage: 2,
  /** The server answered with an RPC error, or could not be reached. */
  rpcError: 3,
  /** A confirmation was answered with anything but "y" or "yes": nothing was sent. */
  declined: 4,
  /** Interrupted by Ctrl-C (SIGINT) or by the caller's abort signal. */
  interrupted: 130,
} as const;

/** One of the values of {@link ExitCode}. */
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];
