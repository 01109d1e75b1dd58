// SPDX-License-Identifier: GPL-2.0-only
// Opens offcpu flame graphs of a waitmix recording in headless Chromium
// (Debian's /usr/bin/chromium, driven by playwright-core) and checks them
// through the DOM, as a user would see them:
//   1. frames of the workload's functions exist, and their widths, at the
//      scale of the whole graph (root width / total ns that Linux perf
//      reads from the same file), equal the times waitmix measured around
//      its own calls: off-CPU functions within 5 % (of the record check's
//      band: asleep .. asleep + run-queue wait after wake-ups), wl_spin's
//      CPU time within 10 % (999 Hz sampling of 0.5 s: ~4.5 % noise alone);
//   2. on-CPU frames are warm (red > blue) and off-CPU frames cool
//      (blue > red), split under each comm by [on-cpu] / [off-cpu];
//   3. hovering a frame shows its name, time, share and DSO below the graph;
//      clicking it zooms: it spans the width, its subtree is scaled by
//      the same ratio, its ancestors are faded, everything else is hidden;
//      Reset Zoom restores every width;
//   4. Ctrl-F opens the search prompt: the frames whose names match are
//      highlighted, and "Matched:" shows their share; a second search
//      button click clears it;
//   5. the icicle variant (--inverted) has its root at the top.
// Screenshots are kept in ARTIFACTS. Prints '# ' figure lines and 'FAIL: '
// lines; exit status 1 on any failure.
//
//   node flamegraph_check.js SVG INVERTED_SVG WAITMIX.json PERF_TOTAL_NS ARTIFACTS
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const [svgPath, icePath, jsonPath, perfTotalArg, artifacts] = process.argv.slice(2);
const OFF_FUNCS = ["wl_nanosleep_loop", "wl_pipe_read", "wl_pipe_write", "wl_mutex_hold",
	"wl_mutex_wait", "wl_fsync", "wl_vfork_wait", "wl_child_sleep"];
const OFF_TOL = 0.05, SPIN_TOL = 0.10;
let failures = 0;

function measure(s) { console.log("# " + s); }
function check(ok, msg) {
	if (!ok) {
		failures++;
		console.log("FAIL: " + msg);
	}
	return ok;
}
function rgb(fill) {
	const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(fill || "");
	return m ? m.slice(1).map((h) => parseInt(h, 16)) : null;
}

// Every frame as drawn: name (first tooltip line), box, fill, classes, and
// the names on its path from the root (from pre-order and depth).
async function frames(page) {
	return page.evaluate(() => {
		const out = [], stack = [];
		const gs = document.getElementById("frames").children;
		const frameh = +document.documentElement.getAttribute("data-frameh");
		let rooty = null;
		for (let i = 0; i < gs.length; i++) {
			const g = gs[i], r = g.children[1], b = r.getBoundingClientRect();
			const y = +r.getAttribute("y");
			if (rooty === null)
				rooty = y;
			const depth = Math.round(Math.abs(y - rooty) / frameh);
			const name = g.children[0].textContent.split("\n")[0];
			stack.length = depth;
			stack.push(name);
			out.push({ i, name, depth, x: b.x, y: b.y, w: b.width, fill: r.getAttribute("fill"),
				hidden: g.classList.contains("hide"), parent: g.classList.contains("parent"),
				path: stack.slice() });
		}
		return out;
	});
}

// The viewport sized to the SVG: fullPage screenshots never finish on a bare
// SVG document (it has no HTML body to measure).
async function open(page, file) {
	await page.goto("file://" + path.resolve(file));
	const size = await page.evaluate(() => ({
		width: Math.ceil(+document.documentElement.getAttribute("width")),
		height: Math.ceil(+document.documentElement.getAttribute("height")),
	}));
	await page.setViewportSize({ width: size.width, height: Math.min(size.height, 4000) });
}

async function main() {
	const wl = {};
	for (const t of JSON.parse(fs.readFileSync(jsonPath, "utf8")).threads)
		wl[t.func] = t;
	const perfTotal = Number(perfTotalArg);
	const profile = fs.mkdtempSync(path.join(os.tmpdir(), "offcpu-chromium-"));
	const ctx = await chromium.launchPersistentContext(profile, {
		executablePath: "/usr/bin/chromium",
		headless: true,
		args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync"],
	});
	try {
		const page = await ctx.newPage();
		const errors = [];
		page.on("pageerror", (e) => errors.push(String(e)));
		// The test's network is closed and the SVG must not need it: any request
		// other than the file itself is a failure.
		const requests = [];
		page.on("request", (r) => { if (!r.url().startsWith("file://")) requests.push(r.url()); });
		await open(page, svgPath);
		const shot = path.join(artifacts, "flamegraph-waitmix.png");
		await page.screenshot({ path: shot });
		measure("screenshot " + shot);

		// 1. widths against the workload's own measurements
		let fr = await frames(page);
		const root = fr[0];
		const fullw = await page.evaluate(() => +document.documentElement.getAttribute("width") -
			2 * +document.documentElement.getAttribute("data-xpad"));
		check(root && root.name === "all", "first frame is not the root 'all'");
		check(Math.abs(root.w - fullw) < 0.5, `root is ${root.w} px wide, not the full ${fullw} px`);
		const pxPerNs = root.w / perfTotal;
		measure(`${fr.length} frames; root ${root.w.toFixed(2)} px = perf script total ` +
			`${(perfTotal / 1e6).toFixed(3)} ms (on-CPU + off-CPU)`);
		// a function's frames under [off-cpu] (or [on-cpu] for wl_spin): a
		// waiting function also runs a little, and that is drawn apart
		const sumw = (name, split) => fr.filter((f) => f.name === name && f.path[2] === split)
			.reduce((a, f) => a + f.w, 0);
		for (const fn of OFF_FUNCS.concat(["wl_spin"])) {
			const t = wl[fn];
			if (!check(t, `${fn}: not in the workload's JSON`))
				continue;
			const spin = fn === "wl_spin";
			const ref = spin ? t.func_oncpu_ns : t.func_offcpu_ns, tol = spin ? SPIN_TOL : OFF_TOL;
			// off-CPU: the record check's band (asleep .. asleep + the run-queue
			// wait after wake-ups: an interval may end at either), widened by 5 %
			const lo = ref * (1 - tol);
			const hi = (spin ? ref : ref + t.func_rq_wake_ns + t.func_rq_mixed_ns) * (1 + tol);
			const w = sumw(fn, spin ? "[on-cpu]" : "[off-cpu]"), ns = w / pxPerNs, dev = (ns - ref) / ref;
			measure(`${fn.padEnd(18)} ${w.toFixed(2).padStart(8)} px = ${(ns / 1e6).toFixed(3).padStart(9)} ms; ` +
				`workload ${spin ? "on-CPU" : "asleep"} ${(ref / 1e6).toFixed(3).padStart(9)} ms ` +
				`(${(100 * dev).toFixed(2)} %), band [${(lo / 1e6).toFixed(3)}, ${(hi / 1e6).toFixed(3)}] ms`);
			check(w > 0, `${fn}: no frame drawn`);
			check(ns >= lo && ns <= hi, `${fn}: width ${ns.toFixed(0)} ns outside [${lo.toFixed(0)}, ` +
				`${hi.toFixed(0)}] (measured ${ref} ns, ${(100 * dev).toFixed(2)} %)`);
		}

		// 2. colours and the split
		for (const f of fr) {
			const c = rgb(f.fill), split = f.path[2];
			if (f.depth < 3 || !c)
				continue;
			if (split === "[on-cpu]")
				check(c[0] > c[2], `on-CPU frame ${f.name} is not warm (${f.fill})`);
			else if (split === "[off-cpu]")
				check(c[2] > c[0], `off-CPU frame ${f.name} is not cool (${f.fill})`);
			else
				check(false, `${f.name}: depth ${f.depth} frame not under [on-cpu] or [off-cpu] (${f.path.join(";")})`);
		}
		const splits = fr.filter((f) => f.depth === 2);
		check(splits.some((f) => f.name === "[on-cpu]") && splits.some((f) => f.name === "[off-cpu]"),
			"no [on-cpu] and [off-cpu] split frames under the comms");
		check(fr.filter((f) => f.name === "wl_spin").every((f) => f.path[2] === "[on-cpu]"),
			"wl_spin (never waits) drawn outside [on-cpu]");

		// 3. hover details, then click zoom
		const target = fr.filter((f) => f.name === "wl_nanosleep_loop").sort((a, b) => b.w - a.w)[0];
		if (check(target, "no wl_nanosleep_loop frame to click")) {
			await page.locator("#frames > g").nth(target.i).hover();
			const det = await page.locator("#details").textContent();
			measure(`hover: "${det}"`);
			check(/^wl_nanosleep_loop +\| +off-CPU \d+\.\d\d ms, \d+\.\d\d% +\| +waitmix$/.test(det),
				`hover over wl_nanosleep_loop shows "${det}"`);
			await page.locator("#frames > g").nth(target.i).click();
			const z = await frames(page);
			const ratio = fullw / target.w;
			const zt = z[target.i];
			measure(`zoom into wl_nanosleep_loop: ${target.w.toFixed(2)} px -> ${zt.w.toFixed(2)} px`);
			check(Math.abs(zt.w - fullw) < 0.5, `zoomed frame is ${zt.w} px, not the full ${fullw} px`);
			let desc = 0, anc = 0, hid = 0;
			for (const f of z) {
				const orig = fr[f.i];
				const inSub = f.i > target.i && f.path.length > target.path.length &&
					f.path.slice(0, target.path.length).join(";") === target.path.join(";") &&
					orig.x >= target.x - 0.01 && orig.x + orig.w <= target.x + target.w + 0.01;
				if (f.i === target.i)
					continue;
				if (inSub) {
					desc++;
					check(!f.hidden && Math.abs(f.w - orig.w * ratio) <= Math.max(0.5, 0.002 * f.w),
						`descendant ${f.name}: ${f.w} px after zoom, expected ${orig.w * ratio}`);
				} else if (f.depth < target.depth && target.path[f.depth] === f.name && !f.hidden) {
					anc++;
					check(f.parent && Math.abs(f.w - fullw) < 0.5, `ancestor ${f.name} not faded at full width`);
				} else {
					hid += f.hidden;
					check(f.hidden, `${f.name} (${f.path.join(";")}) still shown after zooming elsewhere`);
				}
			}
			measure(`zoom: ${desc} descendants scaled x${ratio.toFixed(2)}, ${anc} ancestors faded, ${hid} frames hidden`);
			check(anc === target.depth, `${anc} ancestors shown, expected ${target.depth}`);
			check(desc > 0 && hid > 0, "zoom showed no descendants or hid nothing");
			check(await page.locator("#unzoom").evaluate((e) => !e.classList.contains("hide")),
				"Reset Zoom not shown while zoomed");
			await page.screenshot({ path: path.join(artifacts, "flamegraph-waitmix-zoom.png") });
			await page.locator("#unzoom").click();
			const u = await frames(page);
			const moved = u.filter((f, k) => f.hidden || Math.abs(f.w - fr[k].w) > 0.01 || Math.abs(f.x - fr[k].x) > 0.01);
			check(moved.length === 0, `${moved.length} frames not restored by Reset Zoom`);
		}

		// 4. search through Ctrl-F and the prompt
		const term = "^wl_";
		page.once("dialog", (d) => d.accept(term));
		await page.keyboard.press("Control+F");
		const s = await page.evaluate(() => ({
			hl: Array.from(document.getElementById("frames").children)
				.filter((g) => g.children[1].getAttribute("fill") === "#e600e6").map((g) => g.children[0].textContent.split("\n")[0]),
			text: document.getElementById("matched").textContent,
		}));
		const want = fr.filter((f) => /^wl_/.test(f.name));
		measure(`search '${term}': ${s.hl.length} frames highlighted (${want.length} match), "${s.text}"`);
		check(s.hl.length === want.length && s.hl.length > 0 && s.hl.every((n) => /^wl_/.test(n)),
			`search highlighted ${s.hl.length} frames, ${want.length} names match`);
		// the share: matched frames not inside another matched frame
		let share = 0, until = -1;
		for (const f of fr) {
			if (until >= 0 && f.depth <= until)
				until = -1;
			if (/^wl_/.test(f.name) && until < 0) {
				share += f.w;
				until = f.depth;
			}
		}
		const m = /Matched: ([\d.]+)%/.exec(s.text);
		check(m && Math.abs(Number(m[1]) - 100 * share / fullw) < 0.02,
			`"${s.text}" vs ${(100 * share / fullw).toFixed(2)} % from the highlighted frames`);
		await page.screenshot({ path: path.join(artifacts, "flamegraph-waitmix-search.png") });
		await page.locator("#search").click();
		const cleared = await page.evaluate(() => Array.from(document.getElementById("frames").children)
			.filter((g) => g.children[1].getAttribute("fill") === "#e600e6").length);
		check(cleared === 0, `${cleared} frames still highlighted after Reset Search`);

		// 5. icicle
		await open(page, icePath);
		const ice = await frames(page);
		check(ice.length > 1 && ice[0].y < ice[1].y, "--inverted: root not above its children");
		const d1 = ice.filter((f) => f.depth === 1)[0];
		if (d1) {
			await page.locator("#frames > g").nth(d1.i).click();
			const iz = await frames(page);
			check(Math.abs(iz[d1.i].w - fullw) < 0.5, "--inverted: click did not zoom");
		}
		await page.screenshot({ path: path.join(artifacts, "flamegraph-waitmix-icicle.png") });
		check(errors.length === 0, "script errors in the page: " + errors.join("; "));
		check(requests.length === 0, "the SVG fetched: " + requests.join(", "));
	} finally {
		await ctx.close();
		fs.rmSync(profile, { recursive: true, force: true });
	}
}

main().then(() => process.exit(failures ? 1 : 0), (e) => {
	console.log("FAIL: " + (e && e.stack || e));
	process.exit(1);
});
