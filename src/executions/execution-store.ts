import { ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import { ChurnMap } from "../collections/churn-map.js";
import { FifoIndex } from "../collections/fifo-index.js";
import { invalidRequest } from "../errors/tool-runtime-error.js";
import { resolvePageSize } from "../registry/page-token.js";
import type { ExecutionRecord } from "./execution-record.js";

/** Bounds on the records kept after their runs end. */
export interface RetentionOptions {
  /** Most finished records kept. Default 10,000. */
  readonly maxRetained?: number;
  /** Longest a finished record is kept, in milliseconds. Default 3,600,000 (one hour). */
  readonly retentionMs?: number;
  /** Most bytes of events kept across finished records. Default 256 MiB. */
  readonly maxRetainedBytes?: number;
}

/** Filter and page of {@link ExecutionStore.list}. */
export interface ListExecutionsQuery {
  readonly toolName: string;
  readonly state: ExecutionState;
  readonly pageSize: number;
  readonly pageToken: string;
  /** Only records this predicate accepts (what the caller may see); pages stay full. */
  readonly include?: ((record: ExecutionRecord) => boolean) | undefined;
}

/**
 * The records of live runs and, within the retention bounds, of finished ones. Live runs are never
 * evicted; finished ones leave oldest first when a bound is exceeded, and with them their
 * idempotency keys. Memory therefore stays within the bounds however many runs go through.
 */
export class ExecutionStore {
  readonly maxRetained: number;
  readonly retentionMs: number;
  readonly maxRetainedBytes: number;
  /** Records of runs not yet finished (a small table: the runs in flight). */
  readonly #live = new ChurnMap<string, ExecutionRecord>();
  /** Finished records in the order they finished, which is the order they are evicted in. */
  readonly #finished: FifoIndex<ExecutionRecord>;
  readonly #byIdempotencyKey = new ChurnMap<string, ExecutionRecord>();
  readonly #addListeners = new Set<(record: ExecutionRecord) => void>();
  #finishedBytes = 0;
  #evicted = 0;
  #peakLive = 0;

  constructor(options: RetentionOptions = {}) {
    this.maxRetained = options.maxRetained ?? 10_000;
    this.retentionMs = options.retentionMs ?? 3_600_000;
    this.maxRetainedBytes = options.maxRetainedBytes ?? 256 * 1024 * 1024;
    this.#finished = new FifoIndex(chunkSizeFor(this.maxRetained));
  }

  /** Records held now, live and finished. */
  get size(): number {
    return this.#live.size + this.#finished.size;
  }

  /** Finished records held now. */
  get finishedCount(): number {
    return this.#finished.size;
  }

  /** Bytes of events of the finished records held now. */
  get finishedBytes(): number {
    return this.#finishedBytes;
  }

  /** Records evicted so far. */
  get evicted(): number {
    return this.#evicted;
  }

  /**
   * The most runs live at once (awaiting approval, queued or running) since the previous call, or
   * since the start: at least as many as now. Each call starts a new span from the runs now.
   */
  takePeakLive(): number {
    const now = this.#live.size;
    const peak = Math.max(this.#peakLive, now);
    this.#peakLive = now;
    return peak;
  }

  /** Adds the record of a new run, and tells the listeners of {@link onAdd}. */
  add(record: ExecutionRecord): void {
    this.#live.set(record.id, record);
    if (this.#live.size > this.#peakLive) this.#peakLive = this.#live.size;
    if (record.init.idempotencyKey !== "") this.#byIdempotencyKey.set(idempotencyIndex(record), record);
    // Most servers have no listener (a WatchExecutions feed): no iterator is made for none.
    if (this.#addListeners.size > 0) for (const listener of this.#addListeners) listener(record);
  }

  /** Calls `listener` with each record added from now on, until the returned function is called. */
  onAdd(listener: (record: ExecutionRecord) => void): () => void {
    this.#addListeners.add(listener);
    return () => this.#addListeners.delete(listener);
  }

  /** The record of that id, or undefined when unknown or evicted. */
  get(id: string): ExecutionRecord | undefined {
    return this.#live.get(id) ?? this.#finished.get(id);
  }

  /** The retained record started by `caller` for `toolName` with that idempotency key. */
  findByIdempotencyKey(caller: string, toolName: string, key: string): ExecutionRecord | undefined {
    return this.#byIdempotencyKey.get(`${caller}\u0000${toolName}\u0000${key}`);
  }

  /** Records that a run ended, then evicts what the bounds no longer allow. */
  finished(record: ExecutionRecord): void {
    // Once finished (or superseded by a record of the same id), a record is no longer the live one.
    if (this.#live.get(record.id) !== record) return;
    this.#live.delete(record.id);
    this.#finished.push(record);
    record.compact();
    this.#finishedBytes += record.bytes;
    this.evict();
  }

  /** Evicts finished records past any bound: count, bytes, then age. */
  evict(now = Date.now()): void {
    for (let record = this.#finished.oldest(); record !== undefined; record = this.#finished.oldest()) {
      const tooMany = this.#finished.size > this.maxRetained;
      const tooLarge = this.#finishedBytes > this.maxRetainedBytes;
      const tooOld = now - (record.finishedAtMs ?? now) > this.retentionMs;
      if (!tooMany && !tooLarge && !tooOld) break;
      this.#finished.shift();
      this.#remove(record);
    }
  }

  /** Every live record. */
  live(): ExecutionRecord[] {
    return [...this.#live.values()].filter((record) => record.isLive);
  }

  /**
   * A page of records, newest first, filtered by tool and state. Throws INVALID_ARGUMENT for an
   * invalid page size or token.
   */
  list(query: ListExecutionsQuery): { records: ExecutionRecord[]; nextPageToken: string } {
    const pageSize = resolvePageSize(query.pageSize);
    const before = decodeToken(query.pageToken);
    const matches = [...this.#live.values(), ...this.#finished.values()]
      .filter((record) => record.init.ordinal < before)
      .filter((record) => query.toolName === "" || record.init.toolName === query.toolName)
      .filter((record) => query.state === ExecutionState.UNSPECIFIED || record.state === query.state)
      .filter((record) => query.include?.(record) ?? true)
      .sort((a, b) => b.init.ordinal - a.init.ordinal);
    const records = matches.slice(0, pageSize);
    const last = records.at(-1);
    const nextPageToken = matches.length > pageSize && last ? encodeToken(last.init.ordinal) : "";
    return { records, nextPageToken };
  }

  /** The page token that continues a listing after `record` (for pages cut short by size). */
  pageTokenAfter(record: ExecutionRecord): string {
    return encodeToken(record.init.ordinal);
  }

  #remove(record: ExecutionRecord): void {
    this.#finishedBytes -= record.bytes;
    this.#evicted += 1;
    if (record.init.idempotencyKey !== "" && this.#byIdempotencyKey.get(idempotencyIndex(record)) === record) {
      this.#byIdempotencyKey.delete(idempotencyIndex(record));
    }
  }
}

/**
 * Chunk size of the finished records' index: a sixteenth of the count bound, at least 64 and at
 * most 65,536. A lookup that finds nothing tries every chunk: about 17 up to a million retained
 * runs, 153 at the largest bound the command line accepts (10,000,000). At most a chunk's worth of
 * evicted ids linger (see FifoIndex). A bound that is not a number (NaN) gets the smallest chunks.
 */
function chunkSizeFor(maxRetained: number): number {
  const sixteenth = Math.ceil(maxRetained / 16);
  return sixteenth > 64 ? Math.min(sixteenth, 65_536) : 64;
}

function idempotencyIndex(record: ExecutionRecord): string {
  return `${record.init.caller}\u0000${record.init.toolName}\u0000${record.init.idempotencyKey}`;
}

const tokenPrefix = "before:";

/** The page token of a listing that continues before `ordinal` (newest first). */
export function encodeToken(ordinal: number): string {
  return Buffer.from(`${tokenPrefix}${ordinal}`).toString("base64url");
}

/** The ordinal a page token continues before; +Infinity for "". Throws INVALID_ARGUMENT. */
export function decodeToken(token: string): number {
  if (token === "") return Number.POSITIVE_INFINITY;
  const text = token.length <= 64 ? Buffer.from(token, "base64url").toString() : "";
  const ordinal = Number(text.slice(tokenPrefix.length));
  // Only a token encodeToken wrote: Buffer skips characters that are not base64url.
  if (!text.startsWith(tokenPrefix) || !Number.isSafeInteger(ordinal) || encodeToken(ordinal) !== token) {
    throw invalidRequest("page_token is invalid: pass the next_page_token of a previous response, or nothing");
  }
  return ordinal;
}
