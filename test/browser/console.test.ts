import { expect } from "chai";
import { createHash } from "node:crypto";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { BrowserContext, Page } from "playwright-core";
import { ExecutionService, ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import type { IdentityConfig } from "../../src/auth/authenticator.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { launchChromium, screenshotDir } from "../support/chromium.js";
import { createGrpcJsClient } from "../support/grpc-js-client.js";
import { startMainProcess, type MainProcess } from "../support/main-process.js";
import { generatePythonStubs, python, repoRoot, uuidPattern } from "../support/python-harness.js";
import { startTestServer } from "../support/test-server.js";
import { testTools } from "../support/test-tools.js";

const execFileAsync = promisify(execFile);

/** Longest wait for anything the page shows; far above what a loaded machine needs. */
const waitMs = 20_000;

/** A tool whose input schema uses every kind of control the run form generates; it echoes its inputs. */
const formTool = defineTool({
  name: "forms.everything",
  description: "Echoes its inputs under echo.",
  inputSchema: {
    type: "object",
    required: ["title"],
    properties: {
      title: { type: "string", maxLength: 80, description: "What to call it" },
      count: { type: "number" },
      mode: { enum: ["fast", "safe"] },
      dry_run: { type: "boolean" },
      target: {
        type: "object",
        properties: { host: { type: "string", maxLength: 100 }, port: { type: "integer", minimum: 1 } },
      },
      tags: { type: "array", items: { type: "string", maxLength: 20 } },
      extra: { anyOf: [{ type: "object" }, { type: "array" }] },
    },
    additionalProperties: false,
  },
  handler: (inputs) => ({ echo: inputs }),
});

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

/** A pattern matching exactly `text`, for locators' hasText. */
function exactly(text: string): RegExp {
  return new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);
}

/** Waits until the element `selector` shows `text` (exactly, for a string). */
async function waitForText(page: Page, selector: string, text: string | RegExp): Promise<void> {
  await page
    .locator(selector)
    .filter({ hasText: typeof text === "string" ? exactly(text) : text })
    .first()
    .waitFor({ timeout: waitMs });
}

/** The texts of the run view's timeline, without their times. */
function timelineTexts(page: Page): Promise<string[]> {
  return page.locator("#run-timeline li > span").allTextContents();
}

/** The tools the Tools view lists, in its order. */
async function listedTools(page: Page): Promise<(string | null)[]> {
  const items = await page.locator("#tool-list > li").all();
  return Promise.all(items.map((item) => item.getAttribute("data-tool")));
}

async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(screenshotDir, `console-${name}.png`), fullPage: true });
}

describe("Console: the web console at /console/ in headless Chromium", function () {
  // Starting a browser and a server takes a few seconds on a loaded machine.
  this.timeout(120_000);
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let browser: BrowserContext;

  before(async () => {
    chromium = await launchChromium();
    browser = chromium.browser;
  });
  after(async () => {
    await chromium.close();
  });

  describe("on the server `npm start` runs (node dist/src/main.js, no options)", () => {
    let main: MainProcess;

    before(async () => {
      main = await startMainProcess([]);
    });
    after(async () => {
      main.child.kill("SIGTERM");
      await main.exited;
    });

    it("serves the page, its script and styles with a strict policy, and redirects /console", async () => {
      const page = await fetch(`${main.httpUrl}/console/`);
      expect(page.status).to.equal(200);
      expect(page.headers.get("content-type")).to.equal("text/html; charset=utf-8");
      expect(page.headers.get("content-security-policy")).to.contain("connect-src 'self'");
      expect(await page.text()).to.contain('<script type="module" src="app.js"></script>');
      const script = await fetch(`${main.httpUrl}/console/app.js`);
      expect(script.headers.get("content-type")).to.equal("text/javascript; charset=utf-8");
      const etag = script.headers.get("etag") ?? "";
      const again = await fetch(`${main.httpUrl}/console/app.js`, { headers: { "if-none-match": etag } });
      expect(again.status).to.equal(304);
      const redirect = await fetch(`${main.httpUrl}/console`, { redirect: "manual" });
      expect(redirect.status).to.equal(308);
      expect(redirect.headers.get("location")).to.equal("/console/");
      expect((await fetch(`${main.httpUrl}/console/nothing.js`)).status).to.equal(404);
      expect((await fetch(`${main.httpUrl}/console/`, { method: "POST" })).status).to.equal(405);
    });

    it("shows the built-in tools, and runs builtin.countdown from the generated form to the end with progress", async () => {
      const page = await browser.newPage();
      try {
        await page.goto(`${main.httpUrl}/console/`);
        await page.locator('#tool-list > li[data-tool="builtin.countdown"]').waitFor({ timeout: waitMs });
        const names = await listedTools(page);
        expect(names).to.deep.equal(builtinTools.map((tool) => tool.spec.name).sort());
        await waitForText(page, "#tools-count", `${builtinTools.length} tools`);
        const badges = await page.locator('li[data-tool="builtin.countdown"] .badges li').allTextContents();
        expect(badges).to.deep.equal(["read only", "idempotent"]);
        await screenshot(page, "tools");

        await page.getByRole("link", { name: "Run builtin.countdown", exact: true }).click();
        await page.locator("#run-form").waitFor({ timeout: waitMs });
        expect(await page.title()).to.equal("Run builtin.countdown · toolruntime");
        // Filled and submitted from the keyboard: type into the labelled fields, Enter submits.
        await page.getByLabel("from", { exact: true }).fill("3");
        await page.getByLabel("interval_ms", { exact: true }).fill("400");
        await screenshot(page, "run-form");
        // Every text the progress line shows, as it shows it: a locator's polling could miss one.
        await page.evaluate(`
          window.progressSeen = [];
          new MutationObserver(() => {
            const text = document.getElementById("run-progress-message")?.textContent ?? "";
            if (text !== "" && window.progressSeen.at(-1) !== text) window.progressSeen.push(text);
          }).observe(document.body, { subtree: true, childList: true, characterData: true });
        `);
        await page.getByLabel("interval_ms", { exact: true }).press("Enter");

        await page.waitForURL(/#\/runs\/[0-9a-f-]{36}$/, { timeout: waitMs });
        await waitForText(page, "#run-state", "RUNNING");
        expect(await page.locator("#run-cancel").isVisible()).to.equal(true);
        await waitForText(page, "#run-state", "SUCCEEDED");
        expect(await page.evaluate("window.progressSeen")).to.deep.equal([
          "0% · 3 to go",
          "33% · 2 to go",
          "67% · 1 to go",
          "100% · done",
        ]);
        await waitForText(page, "#run-result-summary", "Succeeded");
        expect(JSON.parse((await page.locator("#run-result-output").textContent()) ?? "")).to.deep.equal({
          counted: 3,
        });
        expect(await page.locator("#run-progress-message").textContent()).to.equal("100% · done");
        expect(
          await page.locator("#run-progress").evaluate((bar) => (bar as unknown as { value: number }).value),
        ).to.equal(1);
        expect(await page.locator("#run-cancel").isVisible()).to.equal(false);
        const timeline = await timelineTexts(page);
        expect(timeline.slice(0, 3)).to.deep.equal([
          "Discovered builtin.countdown",
          "Activated",
          "Attempt 1 started (timeout 600000 ms)",
        ]);
        expect(timeline[3]).to.match(/^Attempt 1 succeeded in [\d,]+ ms$/);
        expect(timeline.slice(4)).to.deep.equal(["Deactivated", "Completed: succeeded"]);
        expect(await page.locator("#run-caller").textContent()).to.equal("anonymous");
        expect(await page.locator("#run-attempts").textContent()).to.equal("1");
        await screenshot(page, "run");
      } finally {
        await page.close();
      }
    });
  });

  it("follows again when the server comes back after a restart, with what the new server has", async () => {
    const first = await startTestServer({ tools: builtinTools });
    const port = Number(new URL(first.httpUrl).port);
    const page = await browser.newPage();
    let second: RunningServer | undefined;
    try {
      await page.goto(`${first.httpUrl}/console/#/tools`);
      await waitForText(page, "#tools-count", `${builtinTools.length} tools`);
      await first.close(0);
      await waitForText(page, "#tools-error", /^Connection lost \(.+\); following again in \d+ s…$/);
      second = await startTestServer({ httpPort: port, tools: [...builtinTools, formTool] });
      await page.locator('#tool-list > li[data-tool="forms.everything"]').waitFor({ timeout: waitMs });
      await waitForText(page, "#tools-count", `${builtinTools.length + 1} tools`);
      expect(await page.locator("#tools-error").textContent()).to.equal("");
    } finally {
      await page.close();
      await second?.close(0);
    }
  });

  describe("on a server with bearer tokens", () => {
    const identities: IdentityConfig[] = [
      { name: "admin", tokenSha256: [sha256("admin-token")], grants: [{ actions: ["admin"], patterns: ["*"] }] },
      {
        name: "alice",
        tokenSha256: [sha256("alice-token")],
        grants: [{ actions: ["read", "execute", "register"], patterns: ["*"] }],
      },
      {
        name: "bob",
        tokenSha256: [sha256("bob-token")],
        grants: [{ actions: ["read", "execute"], patterns: ["builtin.*"] }],
      },
    ];
    let server: RunningServer;
    let stubsDir: string;
    let registry: ReturnType<typeof createGrpcJsClient<typeof RegistryService>>;
    let executions: ReturnType<typeof createGrpcJsClient<typeof ExecutionService>>;
    const as = (token: string): { headers: Record<string, string> } => ({
      headers: { authorization: `Bearer ${token}` },
    });

    before(async () => {
      server = await startTestServer({ identities, tools: [...builtinTools, ...testTools, formTool] });
      stubsDir = await mkdtemp(join(tmpdir(), "toolruntime-python-stubs-"));
      await generatePythonStubs(stubsDir);
      registry = createGrpcJsClient(RegistryService, server.grpcAddress);
      executions = createGrpcJsClient(ExecutionService, server.grpcAddress);
    });
    after(async () => {
      registry.close();
      executions.close();
      await server.close(0);
      await rm(stubsDir, { recursive: true, force: true });
    });

    /** A new tab on `view` (such as "#/runs") with `token` entered in the header's form. */
    async function open(view: string, token: string): Promise<Page> {
      const page = await browser.newPage();
      await page.goto(`${server.httpUrl}/console/${view}`);
      await page.getByLabel("Bearer token").fill(token);
      await page.getByRole("button", { name: "Use token" }).click();
      await waitForText(page, "#token-state", "A token is set for this tab.");
      return page;
    }

    it("shows UNAUTHENTICATED for a wrong token and no token, and the tools once the token is right", async () => {
      const page = await open("", "wrong-token");
      try {
        await waitForText(
          page,
          "#tools-error",
          "Not signed in (UNAUTHENTICATED): the server did not accept the token. Enter a valid bearer token above. (the bearer token is not recognised: check the token)",
        );
        expect(await page.locator("#tool-list > li").count()).to.equal(0);
        await screenshot(page, "wrong-token");
        await page.getByRole("button", { name: "Forget" }).click();
        await waitForText(page, "#tools-error", /^Not signed in \(UNAUTHENTICATED\).*carries no credentials/);
        await page.getByLabel("Bearer token").fill("admin-token");
        await page.getByLabel("Bearer token").press("Enter");
        await page.locator('#tool-list > li[data-tool="test.approval"]').waitFor({ timeout: waitMs });
        expect(await page.locator("#tools-error").textContent()).to.equal("");
      } finally {
        await page.close();
      }
    });

    it("generates the run form from the input schema: text, number, enum, boolean, nested object, array, JSON", async () => {
      const page = await open("#/run/forms.everything", "admin-token");
      try {
        await page.locator("#run-form").waitFor({ timeout: waitMs });
        await page.getByLabel("title (required)", { exact: true }).fill("Nightly");
        expect(await page.locator("#run-form .hint").first().textContent()).to.equal("What to call it");
        await page.getByLabel("count", { exact: true }).fill("2.5");
        await page.getByLabel("mode", { exact: true }).selectOption({ label: "safe" });
        await page.getByLabel("dry_run", { exact: true }).check();
        await page.getByLabel("host", { exact: true }).fill("example.org");
        await page.getByLabel("port", { exact: true }).fill("8443");
        await page.getByRole("button", { name: "Add tags item" }).click();
        await page.getByRole("button", { name: "Add tags item" }).click();
        await page.getByRole("button", { name: "Add tags item" }).click();
        await page.getByLabel("tags item 1 (required)", { exact: true }).fill("first");
        await page.getByLabel("tags item 2 (required)", { exact: true }).fill("second");
        await page.getByLabel("tags item 3 (required)", { exact: true }).fill("third");
        await page.getByRole("button", { name: "Remove tags item" }).first().click();
        await page.getByLabel("extra", { exact: true }).fill('{"k": [1, 2]}');
        const expected = {
          title: "Nightly",
          count: 2.5,
          mode: "safe",
          dry_run: true,
          target: { host: "example.org", port: 8443 },
          tags: ["second", "third"],
          extra: { k: [1, 2] },
        };

        await page.getByRole("button", { name: "Edit as JSON" }).click();
        const json = page.getByLabel("Inputs (JSON object)");
        expect(JSON.parse(await json.inputValue())).to.deep.equal(expected);
        await json.fill("{");
        await page.getByRole("button", { name: "Start run" }).click();
        await waitForText(page, "#run-form-error", /^The inputs are not valid JSON: /);
        await json.fill(JSON.stringify({ ...expected, title: "From JSON" }));
        await page.getByRole("button", { name: "Start run" }).click();
        await waitForText(page, "#run-state", "SUCCEEDED");
        expect(JSON.parse((await page.locator("#run-result-output").textContent()) ?? "")).to.deep.equal({
          echo: { ...expected, title: "From JSON" },
        });

        // Back on the form, its own values are sent; a value the schema refuses is the run's failure.
        await page.goBack();
        await page.locator("#run-form").waitFor({ timeout: waitMs });
        await page.getByLabel("title (required)", { exact: true }).fill("Form");
        await page.getByLabel("port", { exact: true }).fill("0");
        await page.getByRole("button", { name: "Start run" }).click();
        await waitForText(page, "#run-state", "FAILED");
        await waitForText(page, "#run-result-summary", "Failed: InputValidationError");
      } finally {
        await page.close();
      }
    });

    it("streams a run's logs and partial output, and shows retries with each attempt's failure", async () => {
      const page = await open("#/run/test.streaming", "admin-token");
      try {
        await page.locator("#run-form").waitFor({ timeout: waitMs });
        // No input schema: the inputs are edited as JSON.
        expect(await page.getByLabel("Inputs (JSON object)").inputValue()).to.equal("{}");
        await page.getByRole("button", { name: "Start run" }).click();
        await waitForText(page, "#run-state", "SUCCEEDED");
        expect(await page.locator("#run-logs .level").allTextContents()).to.deep.equal(["info", "warn"]);
        expect(await page.locator("#run-logs .message").allTextContents()).to.deep.equal(["starting", "almost done"]);
        const chunks = await page.locator("#run-output pre").allTextContents();
        expect(chunks.map((chunk) => JSON.parse(chunk) as unknown)).to.deep.equal([{ part: 1 }, "second"]);

        const { execution } = await executions.client.startExecution(
          {
            toolName: "test.flaky",
            inputs: { fail_times: 1 },
            options: { retryPolicy: { maxAttempts: 3, initialBackoffMs: 10 } },
          },
          as("admin-token"),
        );
        await page.goto(`${server.httpUrl}/console/#/runs/${execution!.executionId}`);
        await waitForText(page, "#run-state", "SUCCEEDED");
        await waitForText(page, "#run-attempts", "2");
        const timeline = await timelineTexts(page);
        expect(
          timeline
            .filter((line) => /^(Attempt|Retry)/.test(line))
            .map((line) => line.replace(/(failed after|succeeded in) [\d,]+ ms/, "$1 N ms")),
        ).to.deep.equal([
          "Attempt 1 started (timeout 30000 ms)",
          'Attempt 1 failed after N ms: HandlerError: handler of "test.flaky" failed: attempt 1 fails on purpose',
          "Retry: attempt 2 in 10 ms (after HandlerError)",
          "Attempt 2 started (timeout 30000 ms)",
          "Attempt 2 succeeded in N ms",
        ]);
      } finally {
        await page.close();
      }
    });

    it("refuses an unsafe tool until the form acknowledges it", async () => {
      const page = await open("#/run/test.unsafe", "admin-token");
      try {
        await page.locator("#run-form").waitFor({ timeout: waitMs });
        await page.getByRole("button", { name: "Start run" }).click();
        await waitForText(
          page,
          "#run-form-error",
          'FAILED_PRECONDITION: tool "test.unsafe" is flagged unsafe: set options.acknowledge_unsafe to run it',
        );
        await page.getByLabel("Acknowledge that this tool is unsafe").check();
        await page.getByRole("button", { name: "Start run" }).click();
        await waitForText(page, "#run-state", "SUCCEEDED");
      } finally {
        await page.close();
      }
    });

    it("shows only what the token's identity may see: tools it may read, its own runs", async () => {
      const started = await executions.client.startExecution(
        { toolName: "builtin.echo", inputs: { from: "alice" } },
        as("alice-token"),
      );
      const page = await open("", "bob-token");
      try {
        await waitForText(page, "#tools-count", `${builtinTools.length} tools`);
        const names = await listedTools(page);
        expect(names).to.deep.equal(builtinTools.map((tool) => tool.spec.name).sort());
        await page.goto(`${server.httpUrl}/console/#/runs`);
        await waitForText(page, "#runs-count", "0 runs");
        await page.goto(`${server.httpUrl}/console/#/runs/${started.execution!.executionId}`);
        await waitForText(page, "#run-error", /^Permission denied \(PERMISSION_DENIED\): identity "bob" may not read/);
      } finally {
        await page.close();
      }
    });

    it("adds a tool registered over gRPC to the list as it happens, filters by namespace, and drops it when removed", async () => {
      const page = await open("", "admin-token");
      try {
        await page.locator('#tool-list > li[data-tool="builtin.echo"]').waitFor({ timeout: waitMs });
        await registry.client.registerTool(
          {
            spec: {
              name: "console.added_tool",
              description: "Registered while the console watched.",
              capabilities: { writes: true, humanApprovalRequired: true },
              inputSchema: { type: "object", properties: { path: { type: "string" } } },
            },
          },
          as("alice-token"),
        );
        const card = page.locator('#tool-list > li[data-tool="console.added_tool"]');
        await card.waitFor({ timeout: waitMs });
        expect(await card.locator(".badges li").allTextContents()).to.deep.equal([
          "writes",
          "needs approval",
          "no handler",
        ]);
        expect(await card.locator("p").allTextContents()).to.deep.equal([
          "Namespace: console",
          "Registered while the console watched.",
        ]);
        await page.getByLabel("Namespace").selectOption("console");
        const total = await page.locator("#tool-list > li").count();
        expect(total).to.equal(1);
        await page.getByLabel("Namespace").selectOption("");
        await page.getByLabel("Filter").fill("while the console");
        expect(await listedTools(page)).to.deep.equal(["console.added_tool"]);
        await page.getByLabel("Filter").fill("");

        await registry.client.removeTool({ name: "console.added_tool" }, as("alice-token"));
        await card.waitFor({ state: "detached", timeout: waitMs });
      } finally {
        await page.close();
      }
    });

    it("shows a run a Python grpcio client started in Runs as it happens, and its end", async () => {
      const page = await open("#/runs", "admin-token");
      try {
        // The count is written once the live feed follows every run and the first page is listed.
        await waitForText(page, "#runs-count", /^\d+ runs?$/);
        const { stdout } = await execFileAsync(
          python,
          [
            join(repoRoot, "test/python/console_client.py"),
            stubsDir,
            server.grpcAddress,
            "alice-token",
            "builtin.countdown",
            JSON.stringify({ from: 2, interval_ms: 300 }),
          ],
          { timeout: 50_000 },
        );
        const started = JSON.parse(stdout) as { execution_id: string; caller: string };
        expect(started.execution_id).to.match(uuidPattern);
        const row = page.locator(`#run-rows tr[data-execution="${started.execution_id}"]`);
        await row.waitFor({ timeout: waitMs });
        expect(await row.locator('td[data-label="Tool"]').textContent()).to.equal("builtin.countdown");
        expect(await row.locator('td[data-label="Started by"]').textContent()).to.equal("alice");
        await row
          .locator('td[data-label="State"]')
          .filter({ hasText: exactly("SUCCEEDED") })
          .waitFor({ timeout: waitMs });
        await screenshot(page, "runs");

        await page.getByLabel("State").selectOption(String(ExecutionState.FAILED));
        await waitForText(page, "#runs-count", /^\d+ runs?$/);
        expect(await row.count()).to.equal(0);
      } finally {
        await page.close();
      }
    });

    it("reattaches to a run after a reload (its id is in the URL), and cancels it: the run ends CANCELLED", async () => {
      const { execution } = await executions.client.startExecution(
        { toolName: "builtin.countdown", inputs: { from: 1000, interval_ms: 1000 } },
        as("admin-token"),
      );
      const id = execution!.executionId;
      const page = await open(`#/runs/${id}`, "admin-token");
      try {
        await waitForText(page, "#run-timeline li:nth-child(3)", /Attempt 1 started \(timeout 600000 ms\)$/);
        await waitForText(page, "#run-state", "RUNNING");
        const before = await timelineTexts(page);
        await page.reload();
        await waitForText(page, "#run-timeline li:nth-child(3)", /Attempt 1 started \(timeout 600000 ms\)$/);
        expect(await timelineTexts(page)).to.deep.equal(before);
        await waitForText(page, "#run-state", "RUNNING");

        await page.getByRole("button", { name: "Cancel run" }).click();
        await waitForText(page, "#run-state", "CANCELLED");
        await waitForText(page, "#run-result-summary", "Failed: CancelledError");
        expect(await page.locator("#run-result-error").textContent()).to.contain("cancelled by admin");
        expect((await timelineTexts(page)).at(-1)).to.equal("Completed: cancelled");
        const record = await executions.client.getExecution({ executionId: id }, as("admin-token"));
        expect(record.execution?.state).to.equal(ExecutionState.CANCELLED);
      } finally {
        await page.close();
      }
    });

    it("lets another identity approve a run in Approvals: the run proceeds and its timeline shows the decision", async () => {
      const page = await open("#/approvals", "admin-token");
      try {
        await waitForText(page, "#approvals-count", "No run awaits approval.");
        const { execution } = await executions.client.startExecution(
          { toolName: "test.approval", inputs: { note: "ship it" } },
          as("alice-token"),
        );
        const id = execution!.executionId;
        const card = page.locator(`#approval-list li[data-execution="${id}"]`);
        await card.waitFor({ timeout: waitMs });
        expect(await card.locator("h2").textContent()).to.equal("test.approval");
        expect(await card.locator(".approval-caller").textContent()).to.equal("alice");
        expect(await card.locator(".approval-digest").textContent()).to.equal(execution!.inputsDigest);
        await card.locator(".approval-inputs").filter({ hasText: "ship it" }).waitFor({ timeout: waitMs });
        expect(JSON.parse((await card.locator(".approval-inputs").textContent()) ?? "")).to.deep.equal({
          note: "ship it",
        });
        await waitForText(page, "#approvals-count", "1 run awaits approval");
        await card.getByLabel("Comment").fill("looks right");
        await screenshot(page, "approvals");
        await card.getByRole("button", { name: "Approve" }).click();
        await card.waitFor({ state: "detached", timeout: waitMs });
        await waitForText(page, "#approvals-status", "test.approval: approved by admin. Open the run");

        await page.getByRole("link", { name: "Open the run" }).click();
        await waitForText(page, "#run-state", "SUCCEEDED");
        await waitForText(page, "#run-approval", "Approved by admin: “looks right”");
        const timeline = await timelineTexts(page);
        expect(timeline).to.include("Approved by admin");
        expect(timeline[timeline.indexOf("Approved by admin") - 1]).to.equal(
          `Awaiting approval of inputs digest ${execution!.inputsDigest}`,
        );
        expect(timeline.at(-1)).to.equal("Completed: succeeded");
      } finally {
        await page.close();
      }
    });

    it("is usable from the keyboard: links open views, focus moves to each view's heading, the nav marks it", async () => {
      const page = await open("", "admin-token");
      try {
        await page.locator("#tool-list > li").first().waitFor({ timeout: waitMs });
        for (const view of ["Runs", "Approvals", "Tools"]) {
          await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: view }).press("Enter");
          await waitForText(page, "main h1", view);
          expect(await page.evaluate<string>("document.activeElement.textContent"), view).to.equal(view);
          expect(await page.locator('nav a[aria-current="page"]').allTextContents()).to.deep.equal([view]);
        }
        await page.getByRole("link", { name: "Run builtin.echo", exact: true }).press("Enter");
        await waitForText(page, "main h1", "Run builtin.echo");
        expect(await page.evaluate<string>("document.activeElement.textContent")).to.equal("Run builtin.echo");
      } finally {
        await page.close();
      }
    });

    it("fits a narrow screen: no sideways scrolling on the tools, a run form and the runs", async () => {
      const page = await open("", "admin-token");
      try {
        await page.setViewportSize({ width: 360, height: 740 });
        for (const view of ["#/tools", "#/run/builtin.countdown", "#/runs"]) {
          await page.goto(`${server.httpUrl}/console/${view}`);
          await page.locator("main h1").waitFor({ timeout: waitMs });
          await page.locator("#tool-list > li, #run-form, #run-rows tr").first().waitFor({ timeout: waitMs });
          const overflow = await page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth");
          expect(overflow, view).to.be.at.most(0);
        }
        await page.goto(`${server.httpUrl}/console/#/tools`);
        await page.locator("#tool-list > li").first().waitFor({ timeout: waitMs });
        await screenshot(page, "narrow");
      } finally {
        await page.close();
      }
    });
  });
});
