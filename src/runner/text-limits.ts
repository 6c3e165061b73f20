/**
 * How much text of a run's progress and logs the runtime keeps, in characters: the server cuts
 * what a handler reports to these, and the provider SDK cuts before sending, so that a handler's
 * megabyte of log cannot make a provider message over the stream's limit (which would end the
 * stream and every run on it).
 */

/** Longest progress message kept, in characters. */
export const maxProgressMessageLength = 1024;

/** Longest log line kept, in characters. */
export const maxLogMessageLength = 4096;
