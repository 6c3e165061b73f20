/** Attributes and event handlers of an element made by {@link h}. */
export type Props = Record<string, string | number | boolean | undefined | ((event: Event) => void)>;

/** A child of {@link h}: a node, text, or nothing. */
export type Child = Node | string | undefined | null | false;

/**
 * Makes an element: `h("button", { type: "button", onclick: go }, "Run")`. Keys starting with "on"
 * are event listeners; `true` sets an empty attribute, `false` and undefined set none. Text is
 * always text (never parsed as HTML), so values from the server cannot inject markup.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (typeof value === "function") element.addEventListener(key.slice(2), value);
    else if (value === true) element.setAttribute(key, "");
    else if (value !== undefined && value !== false) element.setAttribute(key, String(value));
  }
  append(element, ...children);
  return element;
}

/** Appends children (text becomes a text node; empty ones are skipped). */
export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
}

/** Replaces every child of `parent`. */
export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

/** An element of the page that must exist (the fixed skeleton of index.html). */
export function byId<T extends HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element as T;
}
