// SPDX-License-Identifier: GPL-2.0-only
// Opens an `offcpu timeline --format speedscope` file of a tlorder recording
// (tests/workloads/tlorder.c, recorded with every wait timed) in speedscope's
// offline page (the npm package's dist/release/index.html, loaded the way
// its own command line loads a file: index.html#localProfilePath=JS) in
// headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core),
// and checks what a user sees there:
//   1. the profile list (DOM) names a profile per thread, "comm tid":
//      tl-sleeper, tl-writer, tl-spinner with their tids;
//   2. tl-sleeper's profile in the Time Order view: hovering along the
//      top row finds, left to right, [off-cpu S] as long as the thread's
//      pipe wait (its read call to the writer's write call, within 2 %),
//      then [runnable (woken)] as long as its wait for the CPU (within
//      2 %), then [on-cpu]; hovering down the [off-cpu S] column finds
//      the workload's tl_wait_pipe above the kernel's pipe read, each with
//      the wait's duration in its tooltip;
//   3. the Sandwich view's table (DOM) gives tl_call_read (tl_wait_pipe's
//      call of read) the time from the read call to its return (within
//      2 %) and tl_run_after the CPU
//      time the thread measured there (within 10 %: 999 Hz samples);
//   4. the page loads nothing but files, and throws nothing.
// Screenshots of the sleeper's Time Order and Sandwich views are kept in
// ARTIFACTS. Prints '# ' figure lines and 'FAIL: ' lines; exit status 1 on
// any failure.
//
//   node speedscope_check.js SPEEDSCOPE.json TLORDER.json INDEX_HTML ARTIFACTS
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const [ssPath, wlPath, indexHtml, artifacts] = process.argv.slice(2);
const WIN = { width: 1400, height: 900 };
let failures = 0;

function measure(s) { console.log("# " + s); }
function check(ok, msg) {
	if (!ok) {
		failures++;
		console.log("FAIL: " + msg);
	}
	return ok;
}
function near(got, want, tol, what) {
	return check(Math.abs(got - want) <= tol * want,
		`${what}: ${(got / 1e6).toFixed(3)} ms, want ${(want / 1e6).toFixed(3)} ms +- ${(100 * tol).toFixed(0)} %`);
}

// "176.25ms" -> ns
function ns(text) {
	const m = /([\d.]+)\s*(ns|µs|us|ms|s)\b/.exec(text || "");
	if (!m)
		return NaN;
	return Number(m[1]) * { ns: 1, "µs": 1e3, us: 1e3, ms: 1e6, s: 1e9 }[m[2]];
}

// The hover tooltip at (x, y): { dur, name } or null.
async function hover(page, x, y) {
	await page.mouse.move(x, y);
	return page.evaluate(() => {
		for (const d of document.querySelectorAll("div")) {
			if (!d.style || !d.style.left || !d.style.top || !d.innerText)
				continue;
			const t = d.innerText.replace(/\s+/g, " ").trim();
			// "176.25ms (36%) tl_wait_pipe /path/to/dso:"; markers have no file
			const m = /^([\d.]+\s*(?:ns|µs|us|ms|s)) \([^)]*\) (.*?)(?: (\/\S*|\[[^\]]*\]):)?$/.exec(t);
			if (m)
				return { dur: m[1], name: m[2], text: t };
		}
		return null;
	});
}

const t0 = Date.now();
function lap(what) {
	if (process.env.SPEEDSCOPE_CHECK_TIMES)
		console.log(`${what}: ${Date.now() - t0} ms`);
}

async function main() {
	const wl = JSON.parse(fs.readFileSync(wlPath, "utf8"));
	const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "offcpu-speedscope-"));
	// what speedscope's own command line writes: a script handing the file to the page
	const loader = path.join(tmp, "load.js");
	fs.writeFileSync(loader, `speedscope.loadFileFromBase64(${JSON.stringify(path.basename(ssPath))}, ` +
		`${JSON.stringify(fs.readFileSync(ssPath).toString("base64"))})`);
	const ctx = await chromium.launchPersistentContext(path.join(tmp, "profile"), {
		executablePath: "/usr/bin/chromium",
		headless: true,
		viewport: WIN,
		args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync"],
	});
	try {
		const page = await ctx.newPage();
		const errors = [], requests = [];
		page.on("pageerror", (e) => errors.push(String(e)));
		page.on("request", (r) => { if (!r.url().startsWith("file://")) requests.push(r.url()); });
		await page.goto("file://" + path.resolve(indexHtml) + "#localProfilePath=" + loader);
		await page.waitForFunction(() => document.querySelector("tbody tr[title]"), null, { timeout: 30000 });
		lap("loaded");

		// 1. a profile per thread
		const profiles = await page.evaluate(() =>
			[...document.querySelectorAll("tbody tr[title]")].map((r) => r.getAttribute("title")));
		for (const role of ["sleeper", "writer", "spinner"])
			check(profiles.includes(`tl-${role} ${wl[role]}`), `no profile 'tl-${role} ${wl[role]}' in ${profiles}`);
		measure(`speedscope: ${profiles.length} profiles: ${profiles.join(", ")}`);

		// 2. the sleeper's time order
		const sleeper = `tl-sleeper ${wl.sleeper}`;
		await page.click(`text=/\\(\\d+\\/${profiles.length}\\)/`);
		await page.click(`tr[title='${sleeper}']`);
		await page.waitForFunction((s) => document.body.innerText.includes(s + " ("), sleeper);
		// the top row of the flame chart: the first y below the minimap where hovering names a marker
		let top = null;
		for (let y = 100; y < 300 && top === null; y += 5) {
			const h = await hover(page, WIN.width / 2, y);
			if (h && h.name.startsWith("["))
				top = y;
		}
		if (!check(top !== null, "no marker frame ([...]) in the sleeper's time order"))
			return;
		lap("top row found");
		const along = [];
		for (let x = 5; x < WIN.width; x += 25) {
			const h = await hover(page, x, top);
			if (h && (!along.length || along[along.length - 1].text !== h.text))
				along.push({ x, ...h });
		}
		const byName = (n) => along.filter((h) => h.name === n);
		const off = byName("[off-cpu S]").sort((a, b) => ns(b.dur) - ns(a.dur))[0];
		const woken = byName("[runnable (woken)]").sort((a, b) => ns(b.dur) - ns(a.dur))[0];
		const oncpu = byName("[on-cpu]").filter((h) => woken && h.x > woken.x);
		if (check(off && woken, `top row: ${along.map((h) => h.text).join(" | ")}`)) {
			near(ns(off.dur), wl.write - wl.block, 0.02, "[off-cpu S] (the pipe wait)");
			near(ns(woken.dur), wl.run - wl.write, 0.02, "[runnable (woken)] (the wait for CPU)");
			check(off.x < woken.x && oncpu.length > 0,
				`order along the top row: [off-cpu S] at x ${off.x}, [runnable (woken)] at ${woken.x}, ` +
				`[on-cpu] after it ${oncpu.length ? oncpu[0].x : "none"}`);
			measure(`time order, left to right: [off-cpu S] ${off.dur} at x ${off.x}, [runnable (woken)] ` +
				`${woken.dur} at x ${woken.x}, [on-cpu] from x ${oncpu.length ? oncpu[0].x : "-"}`);
			// down the wait's column: the workload's function above the kernel's
			const col = [];
			for (let y = top, misses = 0; y < WIN.height && misses < 3; y += 10) {
				const h = await hover(page, off.x + 8, y);

				misses = h ? 0 : misses + 1;
				if (h && (!col.length || col[col.length - 1].name !== h.name))
					col.push(h);
			}
			const names = col.map((h) => h.name);
			const wp = names.indexOf("tl_wait_pipe"), kr = names.findIndex((n) => /pipe_read$/.test(n));
			check(wp > 0 && kr > wp, `down the [off-cpu S] column: ${names.join(" > ")}`);
			check(col.every((h) => h.dur === off.dur), "the column's frames do not all last the wait");
			measure(`down the wait: ${names.join(" > ")}, each ${off.dur}`);
		}
		const shot = path.join(artifacts, "timeline-speedscope-sleeper.png");
		await page.mouse.move(off ? off.x + 8 : 10, top + 80);
		await page.screenshot({ path: shot });
		measure("screenshot " + shot);

		lap("time order checked");
		// 3. the sandwich table: speedscope renders only the rows in view, so
		// the page is made tall enough for every row of the profile
		await page.setViewportSize({ width: WIN.width, height: 4000 });
		await page.click("text=Sandwich");
		await page.waitForFunction(() => document.body.innerText.includes("Symbol Name"));
		// the rows come after the header: wait until they are there and stay as many
		await page.waitForFunction(() => {
			const n = [...document.querySelectorAll("tr")].filter((r) => r.querySelectorAll("td").length >= 3).length;
			const same = n >= 8 && n === window.__sandwichRows;
			window.__sandwichRows = n;
			return same;
		}, null, { polling: 200 });
		const rows = await page.evaluate(() => [...document.querySelectorAll("tr")].map((r) =>
			[...r.querySelectorAll("td")].map((td) => td.innerText.trim())).filter((c) => c.length >= 3));
		const total = (name) => {
			const r = rows.find((c) => c[c.length - 1] === name);
			return r ? ns(r[0]) : NaN;
		};
		near(total("tl_call_read"), wl.run - wl.block, 0.02, "sandwich: tl_call_read (read called .. returned)");
		near(total("[on-cpu]"), wl.cpu_end, 0.02, "sandwich: [on-cpu] (the thread's CPU time)");
		// tl_run_after: its samples' stacks, each over the period before it (the
		// stretch from a switch-in to the first sample and after the last one
		// carry [on-cpu] alone), and its waits for the CPU: its CPU time, less up
		// to a period per stretch on CPU, plus those waits; at most its wall time
		const after = total("tl_run_after"), cpu = wl.cpu_end - wl.cpu_run, wall = wl.end - wl.run;
		check(after >= 0.5 * cpu && after <= 1.02 * wall,
			`sandwich: tl_run_after ${(after / 1e6).toFixed(2)} ms, want at least half its CPU time ` +
			`(${(cpu / 1e6).toFixed(2)} ms) and at most its wall time (${(wall / 1e6).toFixed(2)} ms)`);
		// the wait for CPU c; on a busy machine also what the thread waited
		// for a CPU after a wakeup before tl_run_before (after its move to
		// CPU c and each nap: at most that stretch's time off the CPU less
		// the naps' 10 ms asleep) and in tl_run_after (at most its wall time
		// less its CPU time)
		const rqWoken = total("[runnable (woken)]"), pipe = wl.run - wl.write;
		const early = Math.max(0, wl.settled - wl.created - wl.cpu_settled - 5 * 2e6);
		check(rqWoken >= 0.98 * pipe && rqWoken <= 1.02 * pipe + Math.max(0, wall - cpu) + early,
			`sandwich: [runnable (woken)] ${(rqWoken / 1e6).toFixed(3)} ms, want the pipe wait's (write ` +
			`called .. read returned) ${(pipe / 1e6).toFixed(3)} ms - 2 %, + 2 %, up to tl_run_after's ` +
			`time off the CPU (${((wall - cpu) / 1e6).toFixed(3)} ms) and up to the time off the CPU ` +
			`before tl_run_before less the naps (${(early / 1e6).toFixed(3)} ms)`);
		measure(`sandwich: tl_call_read ${(total("tl_call_read") / 1e6).toFixed(2)} ms (measured ` +
			`${((wl.run - wl.block) / 1e6).toFixed(2)}), [on-cpu] ${(total("[on-cpu]") / 1e6).toFixed(2)} ms ` +
			`(CPU time ${(wl.cpu_end / 1e6).toFixed(2)}), tl_run_after ${(after / 1e6).toFixed(2)} ms ` +
			`(CPU time ${(cpu / 1e6).toFixed(2)}, wall ${(wall / 1e6).toFixed(2)}), [runnable (woken)] ` +
			`${(rqWoken / 1e6).toFixed(3)} ms (the pipe's ${(pipe / 1e6).toFixed(3)}; off the CPU before ` +
			`tl_run_before less the naps ${(early / 1e6).toFixed(3)})`);
		await page.screenshot({ path: path.join(artifacts, "timeline-speedscope-sandwich.png") });

		check(!errors.length, "page errors: " + errors.join("; "));
		check(!requests.length, "the page asked the network: " + requests.join(" "));
	} finally {
		await ctx.close();
		fs.rmSync(tmp, { recursive: true, force: true });
	}
}

main().then(() => process.exit(failures ? 1 : 0), (e) => {
	console.log("FAIL: " + (e && e.stack || e));
	process.exit(1);
});
