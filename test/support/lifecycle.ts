/** The events of a run on a private runner that succeeded at its first attempt, in order. */
export const plainLifecycle = [
  "discovered",
  "activated",
  "executionStarted",
  "executionFinished",
  "deactivated",
  "completed",
] as const;
