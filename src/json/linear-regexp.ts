import { RegExpParser, visitRegExpAST, type AST } from "@eslint-community/regexpp";
import type { CodeOptions } from "ajv/dist/2020.js";
import { RE2JS } from "re2js";
import { quote } from "../registry/names.js";
import { spendCheckBudget } from "./check-budget.js";
import { patternUnits } from "./work-units.js";

/** What ajv needs of a compiled pattern. */
export interface LinearRegExp {
  /**
   * Whether the pattern matches anywhere in `value`, like `RegExp.prototype.test`. Charged to the
   * budget of the schema check under way, if any, by the length of `value` (see `patternUnits`).
   */
  test(value: string): boolean;
  /** `/pattern/u`: ajv keys compiled patterns by it, so it must differ between patterns. */
  toString(): string;
  /** What compiling it took from a pattern budget (see {@link withPatternBudget}). */
  readonly size: number;
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
  const size = expandedSize(ast);
  spendPatternBudget(pattern, size);
  const ecmaMeaning = withEcmaCharacterSets(ast, pattern);
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(ecmaMeaning));
  } catch (error) {
    throw new UnsupportedPatternError(
      pattern,
      `cannot be evaluated by the linear-time regular expression engine (${(error as Error).message}): simplify it`,
    );
  }
  const text = `/${pattern}/u`;
  const test = (value: string): boolean => {
    spendCheckBudget(patternUnits(value.length));
    return compiled.test(value);
  };
  return { test, toString: () => text, size };
}

/**
 * What the patterns compiled within {@link withPatternBudget} may still take. Compiling for RE2
 * costs about a microsecond per repetition of each element (`(\p{L}|\p{N}){999}` about 1.7 ms), all
 * of it on the event loop: one schema of 64 KiB with 1,900 such patterns held the server for 2.4 s.
 */
let budget: { readonly units: number; left: number } | undefined;

/** Patterns' repetitions one schema may take together: tens of milliseconds of compiling at most. */
export const schemaPatternBudget = 32_768;

/**
 * Runs `check` with at most `units` repetitions (see {@link expandedSize}) for the patterns it
 * compiles: past them, compileLinearRegExp refuses with an {@link UnsupportedPatternError}.
 */
export function withPatternBudget<T>(units: number, check: () => T): T {
  const outer = budget;
  budget = { units, left: units };
  try {
    return check();
  } finally {
    budget = outer;
  }
}

/**
 * Takes `size` (a pattern's {@link LinearRegExp.size}) from the budget of the check under way, if
 * any: a pattern compiled already is charged as well, since the schema's compiler, when it runs,
 * compiles every occurrence of every pattern. Throws an {@link UnsupportedPatternError} past it.
 */
export function spendPatternBudget(pattern: string, size: number): void {
  if (!budget) return;
  if (size > budget.left) {
    throw new UnsupportedPatternError(
      pattern,
      `repeats about ${size} times, more than is left of the ${budget.units} repetitions one schema's patterns may take together (compiling them holds the server): use fewer or smaller repetitions`,
    );
  }
  budget.left -= size;
}

/**
 * About how many elements the pattern's program holds once its repetitions are written out: a
 * bounded quantifier repeats its element `max` times, an unbounded one `min + 1`.
 */
function expandedSize(node: AST.Node): number {
  switch (node.type) {
    case "Pattern":
    case "Group":
    case "CapturingGroup":
      return node.alternatives.reduce((sum, alternative) => sum + expandedSize(alternative), 0);
    case "Alternative":
      return Math.max(
        1,
        node.elements.reduce((sum: number, element: AST.Node) => sum + expandedSize(element), 0),
      );
    case "Quantifier": {
      const times = Number.isFinite(node.max) ? node.max : node.min + 1;
      return Math.max(1, times) * expandedSize(node.element);
    }
    // A set of many ranges (`.`, `\s` and `\S` written out as ECMA-262's sets, a Unicode property)
    // takes longer to read and compile than a character, though less so when repeated.
    case "CharacterSet":
      return node.kind === "property" || node.kind === "any" || node.kind === "space" ? 4 : 1;
    default:
      return 1;
  }
}

/** The linear-time engine in the shape ajv's `code.regExp` option takes. */
export const linearRegExpEngine: NonNullable<CodeOptions["regExp"]> = Object.assign(
  (pattern: string) => {
    // ajv asks for every occurrence of a pattern in a schema; a pattern is immutable once compiled,
    // so the latest ones are kept (each occurrence is still charged to the budget).
    const cached = recentlyCompiled.get(pattern);
    if (cached) {
      spendPatternBudget(pattern, cached.size);
      return cached;
    }
    const compiled = compileLinearRegExp(pattern);
    if (recentlyCompiled.size >= maxRecentlyCompiled) recentlyCompiled.clear();
    recentlyCompiled.set(pattern, compiled);
    return compiled;
  },
  {
    code: "compileLinearRegExp",
  },
);

/** Patterns compiled for ajv lately, by their source; see {@link linearRegExpEngine}. */
const recentlyCompiled = new Map<string, LinearRegExp>();
/** Kept at most: compiled programs are up to a few hundred kilobytes each (a repetition of 1,000). */
const maxRecentlyCompiled = 64;

/**
 * ECMA-262's white space and line terminators, which its `\s` matches: RE2's `\s` is ASCII only
 * (`[\t\n\f\r ]`), so a pattern such as `^\S+$` would let a no-break space through.
 */
const ecmaSpace = "\\t\\n\\x0B\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff";
/** ECMA-262's `.` without the s flag: any character but a line terminator (RE2's excludes only \n). */
const ecmaDot = "[^\\n\\r\\u2028\\u2029]";

/**
 * `pattern` with the character sets whose meaning differs between ECMA-262 (the dialect of JSON
 * Schema's `pattern`) and RE2 written out as ECMA-262 means them: `.`, `\s` and `\S`, in and
 * outside classes. A class that holds `\S` becomes an alternation (`[a\S]` is `(?:[a]|[^…])`); a
 * negated one that holds it (`[^a\S]`: white space but "a") is refused, as RE2 has no class
 * difference. Other sets (`\d`, `\w`, `\b`, `\p{…}`) mean the same in both without flags.
 */
function withEcmaCharacterSets(ast: AST.Pattern, pattern: string): string {
  const edits: { start: number; end: number; text: string }[] = [];
  const spaceSet = (negate: boolean): string => `[${negate ? "^" : ""}${ecmaSpace}]`;
  visitRegExpAST(ast, {
    onCharacterClassEnter: (node) => {
      const elements = node.elements as readonly AST.Node[];
      const isSpace = (element: AST.Node, negate: boolean): boolean =>
        element.type === "CharacterSet" && element.kind === "space" && element.negate === negate;
      const inline = (element: AST.Node): string => (isSpace(element, false) ? ecmaSpace : element.raw);
      if (!elements.some((element) => isSpace(element, true))) {
        for (const element of elements) {
          if (isSpace(element, false)) edits.push({ start: element.start, end: element.end, text: ecmaSpace });
        }
        return;
      }
      if (node.negate) {
        throw new UnsupportedPatternError(
          pattern,
          `uses \\S in the negated class ${quote(node.raw)}, which the linear-time regular expression engine cannot evaluate: list the characters instead`,
        );
      }
      const kept = elements
        .filter((element) => !isSpace(element, true))
        .map(inline)
        .join("");
      // A caret first in the class written anew would negate it: `[\S^]` holds a caret.
      const rest = kept.startsWith("^") ? `\\${kept}` : kept;
      const text = rest === "" ? spaceSet(true) : `(?:[${rest}]|${spaceSet(true)})`;
      edits.push({ start: node.start, end: node.end, text });
    },
    onCharacterSetEnter: (node) => {
      if (node.parent.type === "CharacterClass") return;
      if (node.kind === "any") edits.push({ start: node.start, end: node.end, text: ecmaDot });
      else if (node.kind === "space") edits.push({ start: node.start, end: node.end, text: spaceSet(node.negate) });
    },
  });
  if (edits.length === 0) return pattern;
  edits.sort((a, b) => a.start - b.start);
  let rewritten = "";
  let at = 0;
  for (const edit of edits) {
    rewritten += pattern.slice(at, edit.start) + edit.text;
    at = edit.end;
  }
  return rewritten + pattern.slice(at);
}

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
