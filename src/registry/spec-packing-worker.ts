import { Worker } from "node:worker_threads";
import type { PackReply, PackRequest } from "./spec-packing-messages.js";

/** What packing one spec elsewhere needs: its protobuf bytes and its registry's dictionary. */
export interface PackingJob {
  readonly dictionary: Uint8Array;
  readonly bytes: Uint8Array;
}

/** Packs specs away from the event loop (see BackgroundPacking). */
export interface OffThreadPacker {
  /** The jobs' packed forms, in their order; rejects when the packing thread failed or was stopped. */
  packAll(jobs: readonly PackingJob[]): Promise<string[]>;
  /** Set once packing there stopped for good: every batch is refused from then on. */
  readonly failure: Error | undefined;
}

export interface SpecPackingWorkerOptions {
  /** The thread's script; the packing thread's by default (another in tests of its failures). */
  readonly script?: URL;
  /** How long the thread outlives its last batch, in milliseconds (default 2,000). */
  readonly idleMs?: number;
}

interface Waiter {
  readonly resolve: (packed: string[]) => void;
  readonly reject: (error: Error) => void;
}

const packingThreadScript = new URL("./spec-packing-thread.js", import.meta.url);

/**
 * Deflates batches of specs on a worker thread, so that packing a large registry (about 29 µs a
 * spec, mostly zlib's setup per call) takes no time from the event loop: during a long import past
 * the bound on waiting specs, and after any burst of registrations. The thread starts with the first
 * batch and ends when it has had none for a while (its isolate holds about 10 MB); it keeps the
 * process alive only while a batch is at it, as any pending I/O would. Should it fail (it could not
 * start, or died), every batch in flight and every later one is refused with the reason, once warned
 * of, and the registries pack on the event loop again.
 */
export class SpecPackingWorker implements OffThreadPacker {
  readonly #script: URL;
  readonly #idleMs: number;
  #worker: Worker | undefined;
  #nextId = 1;
  readonly #waiting = new Map<number, Waiter>();
  #idleTimer: NodeJS.Timeout | undefined;
  #failure: Error | undefined;

  constructor(options: SpecPackingWorkerOptions = {}) {
    this.#script = options.script ?? packingThreadScript;
    this.#idleMs = options.idleMs ?? 2000;
  }

  /** Whether the thread is up (it starts with a batch and ends when idle). */
  get running(): boolean {
    return this.#worker !== undefined;
  }

  /** Why packing here stopped for good, if it did. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  packAll(jobs: readonly PackingJob[]): Promise<string[]> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (jobs.length === 0) return Promise.resolve([]);
    const { request, transfer } = this.#requestFor(jobs);
    let worker: Worker;
    try {
      worker = this.#started();
    } catch (error) {
      return Promise.reject(this.#fail(error));
    }
    this.#cancelIdleEnd();
    if (this.#waiting.size === 0) worker.ref();
    return new Promise<string[]>((resolve, reject) => {
      this.#waiting.set(request.id, { resolve, reject });
      worker.postMessage(request, transfer);
    });
  }

  /** Ends the thread now; a later batch starts another. Batches in flight are refused. */
  async stop(): Promise<void> {
    const worker = this.#letGoOfWorker();
    this.#rejectAll(new Error("the spec packing thread was stopped"));
    await worker?.terminate();
  }

  /** The batch's request, and the buffers moved to the thread with it. */
  #requestFor(jobs: readonly PackingJob[]): { request: PackRequest; transfer: ArrayBuffer[] } {
    const dictionaries: Uint8Array[] = [];
    const dictionaryOf = new Uint16Array(jobs.length);
    const endsBuffer = new ArrayBuffer(jobs.length * Uint32Array.BYTES_PER_ELEMENT);
    const ends = new Uint32Array(endsBuffer);
    let size = 0;
    for (const [index, job] of jobs.entries()) {
      let dictionary = dictionaries.indexOf(job.dictionary);
      if (dictionary < 0) dictionary = dictionaries.push(job.dictionary) - 1;
      dictionaryOf[index] = dictionary;
      size += job.bytes.byteLength;
      ends[index] = size;
    }
    // One buffer for the batch, moved to the thread rather than copied.
    const bytesBuffer = new ArrayBuffer(size);
    const bytes = new Uint8Array(bytesBuffer);
    for (const [index, job] of jobs.entries()) bytes.set(job.bytes, index === 0 ? 0 : ends[index - 1]);
    return {
      request: { id: this.#nextId++, dictionaries, dictionaryOf, bytes, ends },
      transfer: [bytesBuffer, endsBuffer],
    };
  }

  #started(): Worker {
    if (this.#worker) return this.#worker;
    // None of the process's own Node options: the thread needs none, and some refuse to start a
    // worker (--input-type, say, for a process started with -e).
    const worker = new Worker(this.#script, { execArgv: [] });
    worker.on("message", (reply: PackReply) => this.#answer(reply));
    worker.on("error", (error) => {
      if (this.#worker === worker) this.#fail(error);
    });
    worker.on("exit", (code) => {
      // An exit of our own making (idle, stop) has already let go of the worker.
      if (this.#worker === worker) this.#fail(new Error(`the spec packing thread exited with code ${code}`));
    });
    // Unreferenced once its listeners are on (a "message" listener references it again); packAll
    // references it while a batch is at it.
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  #answer(reply: PackReply): void {
    const waiter = this.#waiting.get(reply.id);
    this.#waiting.delete(reply.id);
    waiter?.resolve(reply.packed);
    if (this.#waiting.size === 0) {
      this.#worker?.unref();
      this.#idleTimer = setTimeout(this.#endIdle, this.#idleMs).unref();
    }
  }

  readonly #endIdle = (): void => {
    if (this.#waiting.size === 0) void this.#letGoOfWorker()?.terminate();
  };

  /** Stops packing on the thread for good; returns the error every batch is refused with. */
  #fail(cause: unknown): Error {
    const reason = cause instanceof Error ? cause.message : String(cause);
    const failure = new Error(`packing specs on a worker thread failed: ${reason}`, { cause });
    this.#failure = failure;
    process.emitWarning(`${failure.message}; registries pack on the event loop from now on`, "ToolruntimeWarning");
    const worker = this.#letGoOfWorker();
    this.#rejectAll(failure);
    void worker?.terminate();
    return failure;
  }

  /** Forgets the thread (its exit is then none of our concern) and the idle timer; returns the thread to end. */
  #letGoOfWorker(): Worker | undefined {
    const worker = this.#worker;
    this.#worker = undefined;
    this.#cancelIdleEnd();
    return worker;
  }

  #cancelIdleEnd(): void {
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
  }

  #rejectAll(error: Error): void {
    const waiting = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const waiter of waiting) waiter.reject(error);
  }
}

/** The process's packing thread, shared by its registries. */
export const specPackingWorker = new SpecPackingWorker();
