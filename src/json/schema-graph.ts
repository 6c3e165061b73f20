import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { chargeKeyword } from "./budget-keyword.js";
import { countText } from "./count-text.js";
import { showValue } from "./schema-errors.js";
import { subschemaShapes } from "./schema-keywords.js";
import { maxPatternProperties, patternTestUnits, schemaUnits } from "./work-units.js";

/** What a subschema applies to: the same value, all of them or one of them (`then`, `else`), or a property, its name or an item. */
export type EdgeGroup =
  "same" | "branches" | "oneForProperty" | "allForProperty" | "forName" | "oneForItem" | "allForItem";

/** How one subschema applies another: by which keyword, to what, and through which reference if any. */
export interface SchemaEdge {
  readonly node: SchemaNode;
  readonly keyword: string;
  /**
   * same: applied to the same value, all of them (allOf, anyOf, oneOf, not, if, dependentSchemas,
   * references); branches: one of them (then, else). oneForProperty: applied to a property, one of
   * them (the one `properties` names it by, or additionalProperties); allForProperty: all of them
   * (patternProperties, each may match, and unevaluatedProperties); forName: to its name
   * (propertyNames). oneForItem: applied to an item, one of them (its own prefixItems, or items);
   * allForItem: all of them (contains, unevaluatedItems).
   */
  readonly group: EdgeGroup;
  readonly reference?: string | undefined;
}

/** A subschema, and the subschemas it applies. */
export class SchemaNode {
  /** What it applies, in the order of its keywords, references last. */
  readonly edges: SchemaEdge[] = [];
  /** Units one application takes by itself (see `applicationUnits`), a test of its pattern included. */
  readonly units: number;
  /** Units it takes per property of an object value besides subschemas (see `propertyUnits`). */
  readonly propertyUnits: number;
  /** Units it takes per item of an array value besides subschemas (see `itemUnits`). */
  readonly itemUnits: number;

  /**
   * @param index its place in {@link SchemaGraph.nodes}
   * @param parent the node it was first found in, under `keyword` (and `name`, an index or a key, for
   *   an array or a map of subschemas)
   */
  constructor(
    readonly index: number,
    readonly schema: JsonObject,
    private readonly parent: SchemaNode | undefined,
    private readonly keyword: string,
    private readonly name: string | undefined,
  ) {
    const units = schemaUnits(schema);
    this.units = units.units + (typeof schema["pattern"] === "string" ? patternTestUnits : 0);
    this.propertyUnits = units.propertyUnits;
    this.itemUnits = units.itemUnits;
  }

  /** Where it is in the document, as a JSON pointer ("#", "#/$defs/a"); made only for messages. */
  get pointer(): string {
    if (!this.parent) return "#";
    const steps = this.name === undefined ? [this.keyword] : [this.keyword, this.name];
    return `${this.parent.pointer}${steps.map((step) => `/${step.replaceAll("~", "~0").replaceAll("/", "~1")}`).join("")}`;
  }
}

/** Every subschema of a document, and the root's node. */
export interface SchemaGraph {
  readonly root: SchemaNode;
  readonly nodes: readonly SchemaNode[];
  /**
   * Whether the subschemas form a tree: no reference leads anywhere and no object is a subschema
   * twice. Each subschema then applies at most once to any one place of a value.
   */
  readonly tree: boolean;
  /** The sum of every subschema's units, per application, per property and per item. */
  readonly totalUnits: number;
}

/** Why a schema is refused: too costly to check (too many patterns), or not a schema a check can use. */
export interface SchemaGraphProblem {
  readonly problem: string;
  readonly kind: "costly" | "invalid";
}

/** The group of the edges each applicator makes; `$defs`, `definitions` and `contentSchema` make none. */
const edgeGroups = new Map<string, EdgeGroup>([
  ["allOf", "same"],
  ["anyOf", "same"],
  ["oneOf", "same"],
  ["not", "same"],
  ["if", "same"],
  ["dependentSchemas", "same"],
  ["dependencies", "same"],
  ["then", "branches"],
  ["else", "branches"],
  ["properties", "oneForProperty"],
  ["additionalProperties", "oneForProperty"],
  ["patternProperties", "allForProperty"],
  ["unevaluatedProperties", "allForProperty"],
  ["propertyNames", "forName"],
  ["prefixItems", "oneForItem"],
  ["items", "oneForItem"],
  ["contains", "allForItem"],
  ["unevaluatedItems", "allForItem"],
]);

/** What the walk does with each keyword it does not skip: one lookup per key. */
const keywordRoles = new Map<
  string,
  "reference" | "charge" | { shape: "one" | "array" | "map"; group: EdgeGroup | undefined }
>([
  ...[...subschemaShapes].map(([keyword, shape]) => [keyword, { shape, group: edgeGroups.get(keyword) }] as const),
  ["$ref", "reference"],
  ["$dynamicRef", "reference"],
  ["$recursiveRef", "reference"],
  [chargeKeyword, "charge"],
]);

/** The base URI of a document without `$id`; any URI that cannot name a real document would do. */
const documentBase = "toolruntime:/schema";

/**
 * The graph of the subschemas of `schema` (draft 2020-12, already checked against the
 * meta-schema): every subschema where the meta-schema puts one, and what each applies to which
 * part of the value, `$ref`, `$dynamicRef` and `$recursiveRef` resolved as ajv resolves them (base
 * URIs from `$id`, anchors, JSON pointers). A dynamic reference leads to every `$dynamicAnchor` of
 * its name (where it resolves depends on the value's path: all of them bound it), a recursive one
 * to every `$recursiveAnchor`. A reference this cannot resolve leads nowhere: the compiler either
 * resolves it to a meta-schema it holds or refuses the schema.
 *
 * Refuses (returns a problem for) a reference whose JSON pointer passes through data (a `default`,
 * a `const`) or ends on a map or array of subschemas rather than on one, a `patternProperties` of
 * more than {@link maxPatternProperties} patterns, and a subschema using the keyword that the
 * compiled copy of a schema uses to charge its budget.
 */
export function buildSchemaGraph(schema: JsonObject): SchemaGraph | SchemaGraphProblem {
  const builder = new GraphBuilder();
  try {
    const root = builder.walk(schema, undefined, "", undefined, documentBase) as SchemaNode;
    const references = builder.resolveReferences(root);
    return { root, nodes: builder.nodes, tree: references === 0 && !builder.shared, totalUnits: builder.totalUnits };
  } catch (error) {
    if (error instanceof Refusal) return { problem: error.message, kind: error.kind };
    throw error;
  }
}

class Refusal extends Error {
  constructor(
    message: string,
    readonly kind: "costly" | "invalid" = "invalid",
  ) {
    super(message);
  }
}

interface PendingReference {
  readonly node: SchemaNode;
  readonly keyword: string;
  readonly reference: string;
  readonly base: string;
}

class GraphBuilder {
  readonly nodes: SchemaNode[] = [];
  /** Whether an object was found as a subschema twice. */
  shared = false;
  totalUnits = 0;
  readonly #byObject = new Map<JsonObject, SchemaNode>();
  readonly #references: PendingReference[] = [];
  /** Whether any subschema sets a base URI or an anchor: references are then resolved as URIs. */
  #scoped = false;
  readonly #resources = new Map<string, JsonObject>();
  readonly #anchors = new Map<string, JsonObject>();
  readonly #dynamicAnchors = new Map<string, JsonObject[]>();
  readonly #recursiveAnchors: JsonObject[] = [];

  /** The node of `value`, made (with those of its subschemas) on first sight; undefined for a boolean. */
  walk(
    value: JsonValue | undefined,
    parent: SchemaNode | undefined,
    keyword: string,
    name: string | undefined,
    base: string,
  ): SchemaNode | undefined {
    if (!isObject(value)) return undefined;
    const known = this.#byObject.get(value);
    if (known) {
      this.shared = true;
      return known;
    }
    const ownBase = this.#noteScope(value, base);
    const node = new SchemaNode(this.nodes.length, value, parent, keyword, name);
    this.nodes.push(node);
    this.#byObject.set(value, node);
    this.totalUnits += node.units + node.propertyUnits + node.itemUnits;
    for (const key of Object.keys(value)) {
      const role = keywordRoles.get(key);
      if (role === undefined) continue;
      const child = value[key] as JsonValue;
      if (role === "charge") {
        throw new Refusal(`it uses the unknown keyword ${showValue(key)}: use only draft 2020-12 keywords`);
      }
      if (role === "reference") {
        if (typeof child === "string") this.#references.push({ node, keyword: key, reference: child, base: ownBase });
      } else if (role.shape === "one") {
        this.#add(node, key, role.group, child, undefined, ownBase);
      } else if (role.shape === "array") {
        if (!Array.isArray(child)) continue;
        for (let index = 0; index < child.length; index++) {
          this.#add(node, key, role.group, child[index], String(index), ownBase);
        }
      } else if (isObject(child)) {
        const names = Object.keys(child);
        if (key === "patternProperties" && names.length > maxPatternProperties) {
          throw new Refusal(
            `its "patternProperties" at ${showValue(node.pointer)} has ${countText(names.length)} patterns, more than the ${maxPatternProperties} allowed: every property name is tested against each of them, so merge them into fewer patterns (an alternation such as "^(?:a|b)$" is one test)`,
            "costly",
          );
        }
        for (const name of names) this.#add(node, key, role.group, child[name], name, ownBase);
      }
    }
    return node;
  }

  /** Walks a subschema of `node` under `key`, and adds the edge it makes (if its keyword applies it). */
  #add(
    node: SchemaNode,
    key: string,
    group: EdgeGroup | undefined,
    value: JsonValue | undefined,
    name: string | undefined,
    base: string,
  ): void {
    if (!isObject(value)) return;
    const reached = this.walk(value, node, key, name, base);
    if (reached && group) node.edges.push({ node: reached, keyword: key, group });
  }

  /** Adds an edge for each reference, to each schema it may resolve to; returns how many. */
  resolveReferences(root: SchemaNode): number {
    let added = 0;
    for (const pending of this.#references) {
      for (const target of this.#resolve(pending, root.schema)) {
        const node = this.#byObject.get(target);
        if (!node) continue;
        pending.node.edges.push({ node, keyword: pending.keyword, group: "same", reference: pending.reference });
        added++;
      }
    }
    return added;
  }

  /** Records the base URI and the anchors `schema` sets; returns the base URI within it. */
  #noteScope(schema: JsonObject, base: string): string {
    let ownBase = base;
    const id = schema["$id"];
    if (typeof id === "string") {
      this.#scoped = true;
      ownBase = withoutFragment(resolveUri(id, base) ?? base);
      this.#resources.set(ownBase, schema);
    }
    const anchor = schema["$anchor"];
    if (typeof anchor === "string") {
      this.#scoped = true;
      this.#anchors.set(`${ownBase}#${anchor}`, schema);
    }
    const dynamicAnchor = schema["$dynamicAnchor"];
    if (typeof dynamicAnchor === "string") {
      this.#scoped = true;
      this.#anchors.set(`${ownBase}#${dynamicAnchor}`, schema);
      const named = this.#dynamicAnchors.get(dynamicAnchor);
      if (named) named.push(schema);
      else this.#dynamicAnchors.set(dynamicAnchor, [schema]);
    }
    if (schema["$recursiveAnchor"] === true) {
      this.#scoped = true;
      this.#recursiveAnchors.push(schema);
    }
    return ownBase;
  }

  /**
   * The schemas `pending` may resolve to (none when it names nothing: the compiler then refuses
   * the schema, naming it). Throws a Refusal for a reference to another document: the compiler
   * holds the draft 2020-12 meta-schemas, and would check values against them uncharged.
   */
  #resolve(pending: PendingReference, root: JsonObject): JsonObject[] {
    const { reference, keyword } = pending;
    if (!this.#scoped) {
      if (reference === "#" || reference === "#/") return [root];
      if (reference.startsWith("#/")) return this.#follow(root, reference.slice(1), pending);
      if (reference.startsWith("#")) return [];
      throw this.#elsewhere(pending);
    }
    const targets: JsonObject[] = [];
    const uri = resolveUri(reference, pending.base);
    if (uri !== undefined) {
      const hash = uri.indexOf("#");
      const document = hash < 0 ? uri : uri.slice(0, hash);
      const resource = document === documentBase ? root : this.#resources.get(document);
      if (!resource) throw this.#elsewhere(pending);
      let fragment = hash < 0 ? "" : uri.slice(hash + 1);
      try {
        fragment = decodeURIComponent(fragment);
      } catch {
        fragment = "\0";
      }
      if (fragment === "" || fragment === "/") {
        targets.push(resource);
      } else if (fragment.startsWith("/")) {
        targets.push(...this.#follow(resource, fragment, pending));
      } else {
        const anchored = this.#anchors.get(`${document}#${fragment}`);
        if (anchored) targets.push(anchored);
        if (keyword === "$dynamicRef") targets.push(...(this.#dynamicAnchors.get(fragment) ?? []));
      }
    }
    if (keyword === "$recursiveRef") targets.push(...this.#recursiveAnchors);
    // A reference applies each schema it may resolve to once, however many ways lead there.
    return [...new Set(targets)];
  }

  #elsewhere(pending: PendingReference): Refusal {
    return new Refusal(
      `its ${showValue(pending.keyword)}: ${showValue(pending.reference)} refers to a document other than this schema: copy what it refers to under "$defs" and refer to it there`,
    );
  }

  /**
   * The schema a JSON pointer names from `start`, a schema, or none when it names nothing. Throws
   * a Refusal when it passes through data or ends on a map or array of subschemas.
   */
  #follow(start: JsonObject, pointer: string, pending: PendingReference): JsonObject[] {
    let target: JsonValue | undefined = start;
    let expect: "keyword" | "index" | "name" = "keyword";
    let keyword = "";
    for (const raw of pointer.slice(1).split("/")) {
      let part: string;
      try {
        part = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~");
      } catch {
        return [];
      }
      if (expect === "index") {
        if (!Array.isArray(target) || !/^(?:0|[1-9]\d*)$/.test(part)) return [];
        target = target[Number(part)];
        expect = "keyword";
      } else {
        if (!isObject(target) || !Object.prototype.hasOwnProperty.call(target, part)) return [];
        target = target[part];
        if (expect === "name") {
          expect = "keyword";
        } else {
          keyword = part;
          const shape = subschemaShapes.get(part);
          if (shape === undefined) {
            throw new Refusal(
              `its ${showValue(pending.keyword)}: ${showValue(pending.reference)} points into ${showValue(part)}, which holds data, not a schema: refer to a subschema (one under "$defs", say)`,
            );
          }
          expect = shape === "one" ? "keyword" : shape === "array" ? "index" : "name";
        }
      }
      if (target === undefined) return [];
    }
    if (expect !== "keyword") {
      throw new Refusal(
        `its ${showValue(pending.keyword)}: ${showValue(pending.reference)} points at the whole of ${showValue(keyword)}, not at one of its subschemas: refer to a subschema (one under "$defs", say)`,
      );
    }
    return isObject(target) ? [target] : [];
  }
}

/** `reference` resolved against `base`, or undefined when it is not a URI this can resolve. */
function resolveUri(reference: string, base: string): string | undefined {
  try {
    return new URL(reference, base).href;
  } catch {
    return undefined;
  }
}

function withoutFragment(uri: string): string {
  const hash = uri.indexOf("#");
  return hash < 0 ? uri : uri.slice(0, hash);
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
