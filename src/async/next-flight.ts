/**
 * Runs `task` for many callers with few executions, without ever answering a caller with a run
 * that started before it asked: a caller joins the run that has not started yet, or schedules one
 * after the run in progress. So after `await flight.run()` the task has run entirely after the
 * call began — what a read-your-writes refresh needs — while a burst of callers costs two runs.
 */
export class NextFlight {
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;

  constructor(private readonly task: () => Promise<void>) {}

  /** Resolves once a run of the task that started after this call has finished. */
  run(): Promise<void> {
    if (this.#queued) return this.#queued;
    if (!this.#running) return this.#start();
    const after = this.#running;
    this.#queued = after.then(
      () => this.#start(),
      () => this.#start(),
    );
    return this.#queued;
  }

  #start(): Promise<void> {
    this.#queued = undefined;
    const running = this.task().finally(() => {
      if (this.#running === running) this.#running = undefined;
    });
    this.#running = running;
    return running;
  }
}
