import { ToolSpecSchema, type ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { encodePageToken } from "../registry/page-token.js";
import type { ToolPage } from "../registry/tool-registry.js";
import { encodedItemBytes, fitPage, pageBudgetBytes } from "./bounded-page.js";

/**
 * A page of tools (ListTools, DiscoverTools) cut short, with a token that continues after its last
 * tool, when its specs would not fit in `maxMessageBytes`; a page keeps at least one tool.
 */
export function fitToolPage(page: ToolPage, maxMessageBytes: number): { tools: ToolSpec[]; nextPageToken: string } {
  const fitted = fitPage(
    page.tools,
    (spec) => encodedItemBytes(ToolSpecSchema, spec, true),
    pageBudgetBytes(maxMessageBytes),
  );
  const last = fitted.items.at(-1);
  return {
    tools: fitted.items,
    nextPageToken: fitted.cut && last ? encodePageToken(last.name) : page.nextPageToken,
  };
}
