import type { JsonObject } from "@bufbuild/protobuf";
import { defaultJsonLimits } from "./check-json.js";
import {
  buildSchemaGraph,
  type EdgeGroup,
  type SchemaEdge,
  type SchemaGraph,
  type SchemaNode,
} from "./schema-graph.js";
import { countText } from "./count-text.js";
import { showValue } from "./schema-errors.js";

/**
 * Most units of work (see `work-units.ts`) a schema may take to check any one value of the inputs:
 * about 10,000 subschemas applied to one place of the value, a fraction of a millisecond. Real
 * schemas take tens to hundreds; those over it apply the same subschemas again and again (a chain
 * of `$ref`s where each level refers twice to the next doubles the work at each level).
 */
export const maxUnitsPerValue = 10_000;

/** Why a schema is refused: it is too costly to check, or it is not a schema that can be checked. */
export interface SchemaCostProblem {
  readonly kind: "costly" | "invalid";
  readonly message: string;
}

/** Values above this are shown as "more than" it: the sums can pass any number a float holds exactly. */
const largestShown = 1e15;

/**
 * Refuses, before it is compiled, a schema that may take more than {@link maxUnitsPerValue} units
 * to check one value, at any depth of the value up to the inputs' depth limit: an upper bound of
 * the work computed over the graph of its subschemas (see `buildSchemaGraph`), where everything
 * applied to a value counts (every branch of `anyOf` and `oneOf`, the larger of `then` and `else`,
 * every reference), and every subschema that may apply to one part of it (the one property schema,
 * or `additionalProperties`, plus every pattern's, of a property; the one item schema plus
 * `contains` of an item; objects and arrays told apart). Also refuses what the graph refuses, and a
 * loop of references that never descends into the value (which the compiled check would follow
 * until the stack ran out). Returns undefined for a schema it accepts: a few microseconds for a
 * schema of 1 KiB, proportional to its subschemas (times the depth they can reach when they
 * refer to one another).
 */
export function checkSchemaCost(schema: JsonObject): SchemaCostProblem | undefined {
  const graph = buildSchemaGraph(schema);
  if ("problem" in graph) return { kind: graph.kind, message: graph.problem };
  // In a tree each subschema applies at most once to one place of a value: the sum of all bounds
  // the work there. Most schemas hold no reference and end here.
  if (graph.tree && graph.totalUnits <= maxUnitsPerValue) return undefined;
  const order = sameValueOrder(graph);
  if ("loop" in order) return { kind: "invalid", message: describeLoop(order.loop) };
  const levels = computeLevels(graph, order.nodes, false);
  if (levels.failedAt === undefined) return undefined;
  const kept = computeLevels(graph, order.nodes, true);
  return { kind: "costly", message: explain(graph, kept.levels, levels.failedAt) };
}

/** The work at one depth below a value, for each node (by index): for either kind of value, and the larger. */
interface Level {
  readonly work: number[];
  readonly objectWork: number[];
  readonly arrayWork: number[];
}

// Plain arrays of numbers: a schema has tens of subschemas, for which a typed array costs more to make.
function newLevel(count: number): Level {
  return {
    work: new Array<number>(count).fill(0),
    objectWork: new Array<number>(count).fill(0),
    arrayWork: new Array<number>(count).fill(0),
  };
}

/**
 * Level 0: the work a node takes on the value it applies to. Level d: the most work it takes on
 * one place d levels inside that value, over the places and the subschemas that may apply there.
 * With `keep`, every level is returned; else only the first (two others are reused in turn).
 */
function computeLevels(
  graph: SchemaGraph,
  order: readonly SchemaNode[],
  keep: boolean,
): { levels: Level[]; failedAt: number | undefined } {
  const count = graph.nodes.length;
  const rootIndex = graph.root.index;
  const first = new Array<number>(count).fill(0);
  for (const node of order) {
    let work = node.units;
    let branch = 0;
    for (const edge of node.edges) {
      if (edge.group === "same") work += first[edge.node.index] as number;
      else if (edge.group === "branches") branch = Math.max(branch, first[edge.node.index] as number);
    }
    first[node.index] = Math.min(work + branch, largestShown);
  }
  const levels: Level[] = [{ work: first, objectWork: first, arrayWork: first }];
  if ((first[rootIndex] as number) > maxUnitsPerValue) return { levels, failedAt: 0 };
  let below = first;
  const reused = keep ? [] : [newLevel(count), newLevel(count)];
  // A value of the inputs is at most 64 levels deep, the top-level object included.
  for (let depth = 1; depth < defaultJsonLimits.maxDepth; depth++) {
    const level = keep ? newLevel(count) : (reused[depth % 2] as Level);
    const { work, objectWork, arrayWork } = level;
    let changed = false;
    for (const node of order) {
      let object = 0;
      let array = 0;
      let oneProperty = 0;
      let oneItem = 0;
      let objectBranch = 0;
      let arrayBranch = 0;
      for (const edge of node.edges) {
        const index = edge.node.index;
        switch (edge.group) {
          case "same":
            object += objectWork[index] as number;
            array += arrayWork[index] as number;
            break;
          case "branches":
            objectBranch = Math.max(objectBranch, objectWork[index] as number);
            arrayBranch = Math.max(arrayBranch, arrayWork[index] as number);
            break;
          case "oneForProperty":
            oneProperty = Math.max(oneProperty, below[index] as number);
            break;
          case "allForProperty":
            object += below[index] as number;
            break;
          case "forName":
            // A property's name is a string: it has no parts, the work on it is all at depth 1.
            if (depth === 1) object += first[index] as number;
            break;
          case "oneForItem":
            oneItem = Math.max(oneItem, below[index] as number);
            break;
          case "allForItem":
            array += below[index] as number;
            break;
        }
      }
      object += oneProperty + objectBranch + (depth === 1 ? node.propertyUnits : 0);
      array += oneItem + arrayBranch + (depth === 1 ? node.itemUnits : 0);
      const index = node.index;
      objectWork[index] = Math.min(object, largestShown);
      arrayWork[index] = Math.min(array, largestShown);
      work[index] = Math.max(objectWork[index], arrayWork[index]);
      if (work[index] !== below[index]) changed = true;
    }
    if (keep) levels.push(level);
    if ((work[rootIndex] as number) > maxUnitsPerValue) return { levels, failedAt: depth };
    // Once a level repeats the one before, so do all below it (level 1 alone adds the work on
    // property names and items themselves).
    if (!changed && depth > 1) break;
    below = work;
  }
  return { levels, failedAt: undefined };
}

/**
 * The nodes reachable from the root, each after every node it applies to the same value (its
 * `same` and `branches` edges), or the edge that closes a loop of such edges.
 */
function sameValueOrder(
  graph: SchemaGraph,
): { nodes: SchemaNode[] } | { loop: { from: SchemaNode; edge: SchemaEdge } } {
  const state = new Uint8Array(graph.nodes.length); // 0 unseen, 1 on the path, 2 done
  const queued = new Uint8Array(graph.nodes.length);
  const nodes: SchemaNode[] = [];
  const starts: SchemaNode[] = [graph.root];
  queued[graph.root.index] = 1;
  // Depth-first over same-value edges, with an explicit stack: a chain of references can be long.
  for (let s = 0; s < starts.length; s++) {
    const start = starts[s] as SchemaNode;
    if (state[start.index] === 2) continue;
    const stack: { node: SchemaNode; next: number }[] = [{ node: start, next: 0 }];
    state[start.index] = 1;
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as { node: SchemaNode; next: number };
      const { node } = top;
      const edge = node.edges[top.next++];
      if (edge === undefined) {
        stack.pop();
        state[node.index] = 2;
        nodes.push(node);
        continue;
      }
      if (!isSameValue(edge)) {
        if (queued[edge.node.index] === 0) {
          queued[edge.node.index] = 1;
          starts.push(edge.node);
        }
        continue;
      }
      const seen = state[edge.node.index];
      if (seen === 1) return { loop: { from: node, edge } };
      if (seen === 0) {
        state[edge.node.index] = 1;
        stack.push({ node: edge.node, next: 0 });
      }
    }
  }
  return { nodes };
}

function isSameValue(edge: SchemaEdge): boolean {
  return edge.group === "same" || edge.group === "branches";
}

/** The refusal of a loop of references that never descends into the value, naming the step that closes it. */
function describeLoop({ from, edge }: { from: SchemaNode; edge: SchemaEdge }): string {
  const step =
    edge.reference === undefined
      ? `${showValue(edge.keyword)} at ${showValue(from.pointer)}`
      : `${showValue(edge.keyword)}: ${showValue(edge.reference)}`;
  return `its ${step} leads back to a schema that checks the same value without descending into it, so checking any value would never end: refer back only from within "properties", "items" or another keyword that checks a part of the value`;
}

interface Contribution {
  readonly edge: SchemaEdge;
  readonly work: number;
  /** The depth the subschema's own work is counted at: the same, or one less once it descends. */
  readonly depth: number;
}

/**
 * The refusal's message: the work at the root, then the construct that makes it, found by
 * following from the root the subschema that carries most of the work while it carries more than
 * half, and naming the keyword that carries most of it there.
 */
function explain(graph: SchemaGraph, levels: readonly Level[], failedAt: number): string {
  const total = (levels[failedAt] as Level).work[graph.root.index] as number;
  const head = `checking one value${failedAt > 0 ? ` at depth ${failedAt}` : ""} can take ${units(total)} units of work (about one per subschema applied to it), more than the ${units(maxUnitsPerValue)} allowed`;
  let node = graph.root;
  let depth = failedAt;
  for (let steps = 0; steps < graph.nodes.length * (failedAt + 1); steps++) {
    const { contributions, whole } = contributionsAt(node, depth, levels);
    let best: Contribution | undefined;
    for (const contribution of contributions) if (!best || contribution.work > best.work) best = contribution;
    if (best && best.work * 2 > whole && best.work > maxUnitsPerValue) {
      node = best.edge.node;
      depth = best.depth;
      continue;
    }
    return `${head}: ${culprit(node, depth, contributions, whole)}`;
  }
  return `${head}: simplify the schema`;
}

/** What each subschema of `node` adds to its work at `depth`, and that work. */
function contributionsAt(
  node: SchemaNode,
  depth: number,
  levels: readonly Level[],
): { contributions: Contribution[]; whole: number } {
  const here = levels[depth] as Level;
  const objects = (here.objectWork[node.index] as number) >= (here.arrayWork[node.index] as number);
  const sameWork = depth === 0 ? here.work : objects ? here.objectWork : here.arrayWork;
  const below = depth === 0 ? undefined : (levels[depth - 1] as Level).work;
  const contributions: Contribution[] = [];
  const largest: Partial<Record<EdgeGroup, Contribution>> = {};
  for (const edge of node.edges) {
    const index = edge.node.index;
    let contribution: Contribution | undefined;
    switch (edge.group) {
      case "same":
        contribution = { edge, work: sameWork[index] as number, depth };
        break;
      case "branches":
        keepLargest({ edge, work: sameWork[index] as number, depth });
        break;
      case "oneForProperty":
      case "oneForItem":
        if (below && objects === (edge.group === "oneForProperty")) {
          keepLargest({ edge, work: below[index] as number, depth: depth - 1 });
        }
        break;
      case "allForProperty":
      case "allForItem":
        if (below && objects === (edge.group === "allForProperty")) {
          contribution = { edge, work: below[index] as number, depth: depth - 1 };
        }
        break;
      case "forName":
        break;
    }
    if (contribution) contributions.push(contribution);
  }
  for (const contribution of Object.values(largest)) contributions.push(contribution);
  return { contributions, whole: sameWork[node.index] as number };

  function keepLargest(contribution: Contribution): void {
    const group = contribution.edge.group;
    const kept = largest[group];
    if (!kept || contribution.work > kept.work) largest[group] = contribution;
  }
}

/** Names the keyword of `node` that carries most of its work, where it is, and what to change. */
function culprit(node: SchemaNode, depth: number, contributions: readonly Contribution[], whole: number): string {
  const byKeyword = new Map<string, { work: number; group: EdgeGroup }>();
  for (const { edge, work } of contributions) {
    const entry = byKeyword.get(edge.keyword);
    if (entry) entry.work += work;
    else byKeyword.set(edge.keyword, { work, group: edge.group });
  }
  let keyword: string | undefined;
  let carried = 0;
  let group: EdgeGroup = "same";
  let shared = 0;
  for (const [name, entry] of byKeyword) {
    shared += entry.work;
    if (entry.work > carried) [keyword, carried, group] = [name, entry.work, entry.group];
  }
  const at = `at ${showValue(node.pointer)}`;
  // What the subschemas do not carry is the node's own work: its keywords, or its tests of names.
  const own = whole - shared;
  if (keyword === undefined || own > carried) {
    const patterns = Object.keys((node.schema["patternProperties"] as object | undefined) ?? {}).length;
    if (depth === 1 && patterns > 0 && node.propertyUnits * 2 > own) {
      return `its "patternProperties" ${at} tests every property name against each of its ${patterns} patterns: merge them into fewer patterns (an alternation such as "^(?:a|b)$" is one test)`;
    }
    return `the subschema ${at} takes ${units(node.units)} units each time it applies: make its "const", "enum" or lists of properties smaller`;
  }
  if (group !== "same" && group !== "branches") {
    return `its ${showValue(keyword)} ${at} applies several schemas to each part of the value, again at every level: refer to one schema for each part`;
  }
  if (depth === 0) {
    return `its ${showValue(keyword)} ${at} applies subschemas that reach the same schemas again, and so on down the chain: refer to each schema from one place rather than from several subschemas`;
  }
  const count = node.edges.filter((edge) => edge.keyword === keyword).length;
  const levels = depth > 1 ? ", level after level" : "";
  return `its ${showValue(keyword)} ${at} applies ${countText(count)} subschemas that each work through the parts of the value${levels}: let one of them look into the value, or merge them`;
}

function units(count: number): string {
  return count >= largestShown ? `more than ${countText(largestShown)}` : countText(count);
}
