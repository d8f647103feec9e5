// The VIZ page in headless Chromium, end to end: the demo program runs with VIZ=1 on a free port and
// serves at exit; the test opens the page, picks a kernel (its source shows), steps through one of
// its rewrites (the rule's file:line shows, node counts change, changed nodes are highlighted),
// collapses a node, searches, opens the schedule timeline, and saves a screenshot.
//   node viz_page.test.mjs <viz_demo binary> <screenshot.png>
// Exits 77 (skipped) when chromium or web/node_modules (npm ci in web/) is missing.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

const SKIP = 77;
const [demoPath, screenshotPath] = process.argv.slice(2);
const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../web");
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";

function skip(why) {
  console.log(`skipped: ${why}`);
  process.exit(SKIP);
}

function freePort() {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// Starts the demo; resolves with the page's URL once it serves.
function startDemo(port) {
  const demo = spawn(demoPath, [], { env: { ...process.env, VIZ: "1", VIZ_PORT: String(port) } });
  const url = new Promise((resolve, reject) => {
    let err = "";
    const timer = setTimeout(() => reject(new Error(`the demo did not serve within 60 s:\n${err}`)), 60000);
    demo.stderr.on("data", (d) => {
      err += d;
      const m = err.match(/VIZ: serving (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    demo.on("exit", (code) => reject(new Error(`the demo exited (${code}) before serving:\n${err}`)));
  });
  return { demo, url };
}

async function main() {
  if (!existsSync(chromium)) skip(`no browser at ${chromium} (apt-get install chromium)`);
  let puppeteer;
  try {
    puppeteer = createRequire(path.join(webDir, "package.json"))("puppeteer-core");
  } catch {
    skip("web/node_modules has no puppeteer-core (run npm ci in web/)");
  }
  const { demo, url } = startDemo(await freePort());
  const browser = await puppeteer.launch({ executablePath: chromium, headless: true, args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage();
    const pageErrors = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));
    await page.setViewport({ width: 1500, height: 950 });
    await page.goto(await url);
    await page.waitForSelector(".item.kernel");

    // the kernel with the busiest rewrite (small kernels, such as the random-number counter's
    // update, may have rewrites of a step or two): its source
    const kernelIndex = await page.$$eval(".item.kernel", (kernels) => {
      const steps = (el) => Number(el.querySelector(".count").textContent.split(" ")[0]);
      const busiest = (k) => Math.max(0, ...[...k.parentElement.querySelectorAll(".item.trace")].map(steps));
      return kernels.reduce((best, k, i) => (busiest(k) > busiest(kernels[best]) ? i : best), 0);
    });
    const kernel = await page.$$eval(
      ".item.kernel",
      (kernels, i) => {
        kernels[i].click();
        return kernels[i].textContent.replace("source: ", "");
      },
      kernelIndex,
    );
    await page.waitForFunction((k) => document.getElementById("kernel-source").textContent.includes(k), {}, kernel);

    // one of that kernel's rewrites with several steps, drawn step by step
    const traceId = await page.$$eval(".item.kernel", (kernels, i) => {
      const items = [...kernels[i].parentElement.querySelectorAll(".item.trace")];
      const steps = (el) => Number(el.querySelector(".count").textContent.split(" ")[0]);
      const best = items.reduce((a, b) => (steps(b) > steps(a) ? b : a));
      best.click();
      return best.dataset.key.split(":")[1];
    }, kernelIndex);
    const rendered = (step) => page.waitForSelector(`#graph[data-rendered="${traceId}:${step}"]`, { timeout: 20000 });
    await rendered(0);
    const lastStep = Number(await page.$eval("#step-slider", (s) => s.max));
    assert.ok(lastStep >= 2, `the busiest rewrite of ${kernel} has ${lastStep} steps`);
    const drawn = async () => page.$$eval("#graph g.node", (g) => g.length);
    const counts = [await drawn()];
    let highlighted = 0;
    for (let step = 1; step <= Math.min(lastStep, 25); step++) {
      await page.keyboard.press("ArrowRight");
      await rendered(step);
      counts.push(await drawn());
      highlighted += await page.$$eval("#graph g.node.changed, #graph g.node.current", (g) => g.length);
      const rule = await page.$eval("#step-rule", (el) => el.textContent);
      assert.match(rule, /^rule (src|include)\/[\w/]+\.(cpp|h):\d+$/, `step ${step} shows its rule`);
      assert.match(await page.$eval("#step-change", (el) => el.textContent), /→/);
    }
    await page.$eval("#step-slider", (s) => {
      s.value = s.max;
      s.dispatchEvent(new Event("input"));
    });
    await rendered(lastStep);
    counts.push(await drawn());
    assert.ok(new Set(counts).size > 1, `node counts change across steps: ${counts}`);
    assert.ok(highlighted > 0, "some step highlights the nodes it changed");
    assert.match(await page.$eval("#node-count", (el) => el.textContent), /^\d+ drawn of \d+ nodes$/);

    // double-clicking a STORE collapses what only it reads, and again expands it
    const collapseStore = () => page.$$eval("#graph g.node", (nodes) => {
      const store = nodes.find((g) => g.textContent.startsWith("STORE"));
      store.dispatchEvent(new MouseEvent("dblclick", { bubbles: true }));
    });
    const expanded = await drawn();
    await collapseStore();
    await page.waitForFunction((n) => document.querySelectorAll("#graph g.node").length < n, {}, expanded);
    assert.ok((await page.$eval("#graph", (svg) => svg.textContent)).includes("nodes collapsed]"));
    await collapseStore();
    await page.waitForFunction((n) => document.querySelectorAll("#graph g.node").length === n, {}, expanded);

    // search by op
    await page.type("#node-search", "STORE");
    await page.waitForFunction(() => /^[1-9]\d* found$/.test(document.getElementById("search-count").textContent));
    assert.ok((await page.$$("#graph g.node.match")).length > 0);
    await page.screenshot({ path: screenshotPath });

    // the schedule timeline
    await page.click("#show-schedule");
    await page.waitForSelector(".timeline .bar");
    assert.deepEqual(pageErrors, [], "the page threw no errors");
    console.log(`ok: kernel ${kernel}, trace ${traceId}: ${lastStep} steps, drawn nodes ${counts.join(" ")}; ` +
      `screenshot ${screenshotPath}`);
  } finally {
    await browser.close();
    demo.kill("SIGTERM");
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
