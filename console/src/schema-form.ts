import { append, h } from "./dom.js";

/** A JSON Schema as the form reads it: only the keywords it knows are looked at. */
type Schema = Readonly<Record<string, unknown>>;

/** One generated control: its markup, and how to read its value (undefined: leave it out). */
export interface Field {
  readonly element: HTMLElement;
  /** The value entered; throws an Error whose message names the field when it is not valid. */
  read(): unknown;
}

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The one type a schema declares, or undefined (several, none, or combinators). */
function typeOf(schema: Schema): string | undefined {
  if (schema["oneOf"] || schema["anyOf"] || schema["allOf"] || schema["not"] || schema["$ref"]) return undefined;
  const type = schema["type"];
  if (typeof type === "string") return type;
  if (schema["properties"] !== undefined) return "object";
  return undefined;
}

/** Whether the form can draw `schema` as controls; otherwise the raw JSON editor is used. */
export function isFormable(schema: unknown): boolean {
  return isSchema(schema) && typeOf(schema) === "object" && isSchema(schema["properties"]);
}

let lastId = 0;
const nextId = (): string => `field-${++lastId}`;

function labelFor(id: string, title: string, required: boolean): HTMLLabelElement {
  return h("label", { for: id }, title, required ? h("span", { class: "required" }, " (required)") : null);
}

function hintFor(schema: Schema, id: string): { hint: HTMLElement | null; describedBy: string | undefined } {
  const parts: string[] = [];
  if (typeof schema["description"] === "string") parts.push(schema["description"]);
  if (typeof schema["minimum"] === "number") parts.push(`at least ${schema["minimum"]}`);
  if (typeof schema["maximum"] === "number") parts.push(`at most ${schema["maximum"]}`);
  if (schema["default"] !== undefined) parts.push(`default ${JSON.stringify(schema["default"])}`);
  if (parts.length === 0) return { hint: null, describedBy: undefined };
  return { hint: h("p", { class: "hint", id: `${id}-hint` }, parts.join("; ")), describedBy: `${id}-hint` };
}

/**
 * Makes the control for one value of `schema`: a select for an enum, a text box for a string, a
 * number box for numbers and integers, a check box for a boolean, a fieldset for an object with
 * properties, a list with Add and Remove for an array, and a JSON text area for anything else.
 */
export function fieldFor(schema: unknown, title: string, required: boolean): Field {
  const s: Schema = isSchema(schema) ? schema : {};
  const id = nextId();
  const { hint, describedBy } = hintFor(s, id);
  const enumValues = Array.isArray(s["enum"]) ? (s["enum"] as unknown[]) : undefined;
  const type = typeOf(s);
  const wrap = (control: HTMLElement, check = false): HTMLElement =>
    check
      ? h("div", { class: "field check" }, control, labelFor(id, title, false), hint)
      : h("div", { class: "field" }, labelFor(id, title, required), control, hint);

  if (enumValues) {
    const select = h(
      "select",
      { id, required, "aria-describedby": describedBy },
      required ? null : h("option", { value: "" }, "(not set)"),
      ...enumValues.map((value, index) =>
        h(
          "option",
          { value: String(index), selected: JSON.stringify(value) === JSON.stringify(s["default"]) },
          typeof value === "string" ? value : JSON.stringify(value),
        ),
      ),
    );
    return {
      element: wrap(select),
      read: () => (select.value === "" ? undefined : enumValues[Number(select.value)]),
    };
  }
  if (type === "string") {
    const long = typeof s["maxLength"] !== "number" || s["maxLength"] > 200;
    const initial = typeof s["default"] === "string" ? s["default"] : "";
    const input = long
      ? h("textarea", { id, rows: 2, required, "aria-describedby": describedBy }, initial)
      : h("input", { id, type: "text", value: initial, required, "aria-describedby": describedBy });
    return {
      element: wrap(input),
      read: () => (input.value === "" && !required ? undefined : input.value),
    };
  }
  if (type === "number" || type === "integer") {
    const input = h("input", {
      id,
      type: "number",
      inputmode: type === "integer" ? "numeric" : "decimal",
      step: type === "integer" ? 1 : "any",
      min: typeof s["minimum"] === "number" ? s["minimum"] : undefined,
      max: typeof s["maximum"] === "number" ? s["maximum"] : undefined,
      value: typeof s["default"] === "number" ? s["default"] : undefined,
      required,
      "aria-describedby": describedBy,
    });
    return {
      element: wrap(input),
      read: () => {
        if (input.value.trim() === "") {
          if (required) throw new Error(`${title}: enter a number`);
          return undefined;
        }
        const value = Number(input.value);
        if (!Number.isFinite(value) || (type === "integer" && !Number.isInteger(value))) {
          throw new Error(`${title}: enter ${type === "integer" ? "a whole number" : "a number"}`);
        }
        return value;
      },
    };
  }
  if (type === "boolean") {
    const input = h("input", { id, type: "checkbox", checked: s["default"] === true, "aria-describedby": describedBy });
    // An optional flag the person never touched stays out of the inputs, as the tool's default.
    let touched = required || typeof s["default"] === "boolean";
    input.addEventListener("change", () => (touched = true));
    return { element: wrap(input, true), read: () => (touched ? input.checked : undefined) };
  }
  if (type === "object" && isSchema(s["properties"])) {
    const requiredNames = new Set(Array.isArray(s["required"]) ? (s["required"] as unknown[]) : []);
    const fields = Object.entries(s["properties"]).map(
      ([name, property]) => [name, fieldFor(property, name, requiredNames.has(name))] as const,
    );
    const fieldset = h("fieldset", { "aria-describedby": describedBy }, h("legend", {}, title), hint);
    append(fieldset, ...fields.map(([, field]) => field.element));
    return {
      element: fieldset,
      read: () => {
        const value: Record<string, unknown> = {};
        for (const [name, field] of fields) {
          const item = field.read();
          if (item !== undefined) value[name] = item;
        }
        return Object.keys(value).length === 0 && !required ? undefined : value;
      },
    };
  }
  if (type === "array" && isSchema(s["items"])) {
    const items: { field: Field; row: HTMLElement }[] = [];
    const list = h("ol", { class: "array-items" });
    const add = (): void => {
      const field = fieldFor(s["items"], `${title} item ${items.length + 1}`, true);
      const entry = {
        field,
        row: h("li", {}, field.element),
      };
      entry.row.appendChild(
        h(
          "button",
          {
            type: "button",
            class: "danger",
            onclick: () => {
              items.splice(items.indexOf(entry), 1);
              entry.row.remove();
            },
          },
          `Remove ${title} item`,
        ),
      );
      items.push(entry);
      list.appendChild(entry.row);
    };
    const fieldset = h(
      "fieldset",
      { "aria-describedby": describedBy },
      h("legend", {}, title),
      hint,
      list,
      h("button", { type: "button", onclick: add }, `Add ${title} item`),
    );
    return {
      element: fieldset,
      read: () => {
        const value = items.map(({ field }) => field.read());
        return value.length === 0 && !required ? undefined : value;
      },
    };
  }
  // Anything else (several types, combinators, references): JSON typed by hand.
  const area = h(
    "textarea",
    { id, rows: 3, required, "aria-describedby": describedBy, spellcheck: false, class: "json" },
    s["default"] === undefined ? "" : JSON.stringify(s["default"]),
  );
  return {
    element: wrap(area),
    read: () => {
      if (area.value.trim() === "") {
        if (required) throw new Error(`${title}: enter a JSON value`);
        return undefined;
      }
      try {
        return JSON.parse(area.value) as unknown;
      } catch (error) {
        throw new Error(`${title} is not valid JSON: ${(error as Error).message}`, { cause: error });
      }
    },
  };
}
