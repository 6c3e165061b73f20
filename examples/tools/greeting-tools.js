// An example module of tools, loaded with: npm start -- --tools ./examples/tools/greeting-tools.js
import { defineTool } from "toolruntime";

/** Greets someone; shows input and output schemas. */
export const greet = defineTool({
  name: "examples.greet",
  description: 'Returns {"greeting": "Hello, <name>!"}.',
  capabilities: { readOnly: true, idempotent: true },
  inputSchema: {
    type: "object",
    required: ["name"],
    properties: { name: { type: "string", minLength: 1, maxLength: 100 } },
    additionalProperties: false,
  },
  outputSchema: { type: "object", required: ["greeting"], properties: { greeting: { type: "string" } } },
  handler: ({ name }) => ({ greeting: `Hello, ${name}!` }),
});

/** Counts words in a text, reporting progress every 1,000 words; stops when cancelled. */
export const countWords = defineTool({
  name: "examples.count_words",
  description: 'Counts the words of "text". Returns {"words": n}.',
  capabilities: { readOnly: true, idempotent: true },
  inputSchema: { type: "object", required: ["text"], properties: { text: { type: "string" } } },
  handler: async ({ text }, { signal, reportProgress }) => {
    const words = String(text).split(/\s+/).filter(Boolean);
    for (let index = 0; index < words.length; index += 1000) {
      signal.throwIfAborted();
      reportProgress({ fraction: index / words.length, message: `${index} words counted` });
      await new Promise((resolve) => setImmediate(resolve));
    }
    return { words: words.length };
  },
});
