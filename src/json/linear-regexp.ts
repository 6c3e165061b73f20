import { RegExpParser, visitRegExpAST, type AST } from "@eslint-community/regexpp";
import type { CodeOptions } from "ajv/dist/2020.js";
import { RE2JS } from "re2js";
import { quote } from "../registry/names.js";

/** What ajv needs of a compiled pattern. */
export interface LinearRegExp {
  /** Whether the pattern matches anywhere in `value`, like `RegExp.prototype.test`. */
  test(value: string): boolean;
  /** `/pattern/u`: ajv keys compiled patterns by it, so it must differ between patterns. */
  toString(): string;
}

/**
 * A pattern of a JSON Schema that the linear-time engine refuses: not an ECMA-262 regular
 * expression, or one that needs backtracking (backreferences, lookahead, lookbehind).
 */
export class UnsupportedPatternError extends Error {
  override readonly name = "UnsupportedPatternError";

  constructor(
    readonly pattern: string,
    readonly reason: string,
  ) {
    super(`pattern ${quote(pattern)} ${reason}`);
  }
}

const parser = new RegExpParser({ ecmaVersion: 2025 });

/**
 * Compiles a JSON Schema `pattern` (ECMA-262 syntax, unicode mode, as ajv would) for the RE2
 * engine of `re2js`, whose matching time is linear in the input's length whatever the pattern:
 * no input can make a check stall the event loop. `test` searches anywhere in the string, like
 * `RegExp.prototype.test`. Throws an {@link UnsupportedPatternError} saying why for a pattern that
 * is not valid ECMA-262, or that uses a backreference or a lookaround (they need backtracking).
 */
export function compileLinearRegExp(pattern: string): LinearRegExp {
  let ast: AST.Pattern;
  try {
    ast = parser.parsePattern(pattern, 0, pattern.length, { unicode: true });
  } catch (error) {
    throw new UnsupportedPatternError(
      pattern,
      `is not a valid ECMA-262 regular expression (${(error as Error).message}): fix its syntax`,
    );
  }
  const needsBacktracking = findBacktrackingConstruct(ast);
  if (needsBacktracking) {
    throw new UnsupportedPatternError(
      pattern,
      `uses ${needsBacktracking}, which the linear-time regular expression engine cannot evaluate: rewrite it without backreferences or lookaround`,
    );
  }
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (error) {
    throw new UnsupportedPatternError(
      pattern,
      `cannot be evaluated by the linear-time regular expression engine (${(error as Error).message}): simplify it`,
    );
  }
  const text = `/${pattern}/u`;
  return { test: (value: string) => compiled.test(value), toString: () => text };
}

/** The linear-time engine in the shape ajv's `code.regExp` option takes. */
export const linearRegExpEngine: NonNullable<CodeOptions["regExp"]> = Object.assign(
  (pattern: string) => compileLinearRegExp(pattern),
  {
    code: "compileLinearRegExp",
  },
);

function findBacktrackingConstruct(ast: AST.Pattern): string | undefined {
  let found: string | undefined;
  visitRegExpAST(ast, {
    onBackreferenceEnter: (node) => {
      found ??= `the backreference ${quote(node.raw)}`;
    },
    onAssertionEnter: (node) => {
      if (node.kind === "lookahead" || node.kind === "lookbehind") {
        found ??= `the ${node.negate ? "negative " : ""}${node.kind} ${quote(node.raw)}`;
      }
    },
  });
  return found;
}
