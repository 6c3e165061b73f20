import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  ExecutionSchema,
  type Execution,
  type ListExecutionsRequest,
  type ListExecutionsResponseSchema,
} from "../../gen/toolruntime/v1/execution_pb.js";
import { ToolResultSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import type { ExecutionManager } from "../executions/execution-manager.js";
import type { ExecutionRecord } from "../executions/execution-record.js";
import { encodedItemBytes, fitPage, pageBudgetBytes } from "./bounded-page.js";

/** Largest output a listing carries, in bytes of JSON; larger ones are left out (`output_omitted`). */
export const maxListedOutputBytes = 64 * 1024;

/** Sizes of finished records as listed: they no longer change. */
const listedSizes = new WeakMap<ExecutionRecord, number>();

/**
 * One page of ListExecutions that fits the message limit: the runs the caller may see (`include`),
 * each without an output over {@link maxListedOutputBytes}, cut short with a next page token when
 * the next run would not fit in `maxMessageBytes`. Throws INVALID_ARGUMENT for a bad page size or
 * token (see ExecutionStore.list).
 */
export async function listExecutionsPage(
  executions: ExecutionManager,
  request: ListExecutionsRequest,
  include: (record: ExecutionRecord) => boolean,
  maxMessageBytes: number,
): Promise<MessageInitShape<typeof ListExecutionsResponseSchema>> {
  const page = await executions.listRuns({ ...request, include });
  const listed = page.records.map((record) => ({ record, execution: toListed(record) }));
  const fitted = fitPage(
    listed,
    ({ record, execution }) => {
      const known = listedSizes.get(record);
      if (known !== undefined) return known;
      const size = encodedItemBytes(ExecutionSchema, execution);
      if (!record.isLive) listedSizes.set(record, size);
      return size;
    },
    pageBudgetBytes(maxMessageBytes),
  );
  const last = fitted.items.at(-1);
  return {
    executions: fitted.items.map(({ execution }) => execution),
    nextPageToken: fitted.cut && last ? executions.store.pageTokenAfter(last.record) : page.nextPageToken,
  };
}

/** A record as listings show it: its output left out when over the listing limit. */
function toListed(record: ExecutionRecord): Execution {
  const execution = record.toProto();
  const result = execution.result;
  const outputBytes = result?.metadata?.["output_bytes"];
  if (!result || typeof outputBytes !== "number" || outputBytes <= maxListedOutputBytes) return execution;
  return create(ExecutionSchema, {
    ...execution,
    result: create(ToolResultSchema, { ...result, output: undefined }),
    outputOmitted: true,
  });
}
