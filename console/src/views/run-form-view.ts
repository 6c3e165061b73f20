import type { JsonObject } from "@bufbuild/protobuf";
import type { ToolSpec } from "../../../gen/toolruntime/v1/tool_pb.js";
import { describeError, isAbort } from "../describe-error.js";
import { append, h, replaceChildren } from "../dom.js";
import { capabilityBadges, toJsonText } from "../format.js";
import { fieldFor, isFormable, type Field } from "../schema-form.js";
import type { ViewContext } from "../view.js";

/** Reads the inputs from the JSON editor: a JSON object, or an Error saying what is wrong. */
function readJsonInputs(text: string): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(text === "" ? "{}" : text);
  } catch (error) {
    throw new Error(`The inputs are not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error("The inputs must be a JSON object, such as {}");
  }
  return value as JsonObject;
}

function optionalNumber(input: HTMLInputElement, label: string): number {
  if (input.value.trim() === "") return 0;
  const value = Number(input.value);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${label}: enter a whole number of milliseconds`);
  return value;
}

/**
 * A form generated from the tool's input schema (a raw JSON editor when the schema is beyond the
 * form, and on request), with the timeout and options; starting the run opens its run view.
 */
export function runFormView({ clients, signal, main }: ViewContext, toolName: string): void {
  document.title = `Run ${toolName} · toolruntime`;
  const error = h("p", { id: "run-form-error", class: "error", role: "alert" });
  append(main, h("h1", { tabindex: -1 }, `Run ${toolName}`), error);
  clients.registry.getTool({ name: toolName }, { signal }).then(
    ({ spec }) => {
      // The view may have been left meanwhile: `main` then belongs to another view.
      if (spec && !signal.aborted) drawForm(spec);
    },
    (reason: unknown) => {
      if (!isAbort(reason)) error.textContent = describeError(reason);
    },
  );

  const drawForm = (spec: ToolSpec): void => {
    const formable = isFormable(spec.inputSchema);
    const inputsField: Field | undefined = formable ? fieldFor(spec.inputSchema, "Inputs", true) : undefined;
    const json = h("textarea", { id: "run-inputs-json", rows: 8, spellcheck: false, class: "json" }, "{}");
    const jsonBlock = h(
      "div",
      { class: "field", hidden: formable },
      h("label", { for: "run-inputs-json" }, "Inputs (JSON object)"),
      json,
    );
    const toggle = h("button", { type: "button", id: "run-json-toggle", "aria-pressed": "false" }, "Edit as JSON");
    toggle.addEventListener("click", () => {
      const toJson = jsonBlock.hidden;
      if (toJson && inputsField) {
        try {
          json.value = toJsonText(inputsField.read() ?? {});
        } catch {
          json.value = "{}";
        }
      }
      jsonBlock.hidden = !toJson;
      if (inputsField) inputsField.element.hidden = toJson;
      toggle.setAttribute("aria-pressed", String(toJson));
      toggle.textContent = toJson ? "Use the form" : "Edit as JSON";
    });
    const maxTimeout = spec.maxTimeoutMs > 0 ? spec.maxTimeoutMs : 86_400_000;
    const timeout = h("input", {
      id: "run-timeout",
      type: "number",
      inputmode: "numeric",
      min: 0,
      max: maxTimeout,
      step: 1,
      "aria-describedby": "run-timeout-hint",
    });
    const key = h("input", {
      id: "run-idempotency-key",
      type: "text",
      maxlength: 128,
      "aria-describedby": "run-key-hint",
    });
    const unsafe = h("input", { id: "run-acknowledge-unsafe", type: "checkbox", disabled: !spec.capabilities?.unsafe });
    const submit = h("button", { type: "submit", class: "primary", id: "run-start" }, "Start run");
    const form = h(
      "form",
      { id: "run-form", novalidate: true },
      h(
        "fieldset",
        {},
        h("legend", {}, "Inputs"),
        inputsField ? inputsField.element : h("p", { class: "hint" }, "The input schema is edited as JSON."),
        jsonBlock,
        inputsField ? toggle : null,
      ),
      h(
        "fieldset",
        {},
        h("legend", {}, "Options"),
        h(
          "div",
          { class: "field" },
          h("label", { for: "run-timeout" }, "Timeout (ms)"),
          timeout,
          h(
            "p",
            { class: "hint", id: "run-timeout-hint" },
            `Empty for the tool's default (${spec.defaultTimeoutMs > 0 ? `${spec.defaultTimeoutMs} ms` : "the server's"}); at most ${maxTimeout} ms.`,
          ),
        ),
        h(
          "div",
          { class: "field" },
          h("label", { for: "run-idempotency-key" }, "Idempotency key"),
          key,
          h("p", { class: "hint", id: "run-key-hint" }, "Optional: the same key and inputs return the earlier run."),
        ),
        h(
          "div",
          { class: "field check" },
          unsafe,
          h("label", { for: "run-acknowledge-unsafe" }, "Acknowledge that this tool is unsafe"),
        ),
      ),
      h("div", { class: "actions" }, submit),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      error.textContent = "";
      let inputs: JsonObject;
      let timeoutMs: number;
      try {
        inputs =
          inputsField && jsonBlock.hidden ? ((inputsField.read() ?? {}) as JsonObject) : readJsonInputs(json.value);
        timeoutMs = optionalNumber(timeout, "Timeout");
      } catch (problem) {
        error.textContent = (problem as Error).message;
        return;
      }
      submit.disabled = true;
      clients.executions
        .startExecution(
          {
            toolName: spec.name,
            inputs,
            timeoutMs,
            options: { idempotencyKey: key.value.trim(), acknowledgeUnsafe: unsafe.checked },
          },
          { signal },
        )
        .then(
          ({ execution }) => {
            if (execution) location.hash = `#/runs/${encodeURIComponent(execution.executionId)}`;
          },
          (reason: unknown) => {
            submit.disabled = false;
            if (!isAbort(reason)) error.textContent = describeError(reason);
          },
        );
    });
    const badges = capabilityBadges(spec.capabilities).map(({ label, warn }) =>
      h("li", { class: warn ? "badge warn" : "badge" }, label),
    );
    replaceChildren(
      main,
      h("h1", { tabindex: -1 }, `Run ${spec.name}`),
      spec.description ? h("p", {}, spec.description) : null,
      badges.length > 0 ? h("ul", { class: "badges", "aria-label": "Capabilities" }, ...badges) : null,
      error,
      form,
    );
    main.querySelector("h1")?.focus();
  };
}
