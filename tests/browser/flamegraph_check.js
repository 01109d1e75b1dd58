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
//   5. the icicle variant (--inverted) has its root at the top;
//   6. the first screen of a graph taller than the window (a deepstack
//      recording: a 127-frame stack of ~1 % and a wide 6-frame tower),
//      opened in a 1400x900 window as a user's browser would, as a flame
//      graph, an icicle and --per-thread: the root and the tower's six
//      frames are inside the viewport and on top there (elementFromPoint
//      hits them, not the pinned title band), the title, Search and the
//      details line are in view, hover, zoom, Reset Zoom and search work
//      from there, and scrolling to the top reaches the deep stack.
// Screenshots are kept in ARTIFACTS. Prints '# ' figure lines and 'FAIL: '
// lines; exit status 1 on any failure.
//
//   node flamegraph_check.js SVG INVERTED_SVG WAITMIX.json PERF_TOTAL_NS ARTIFACTS \
//        DEEP_SVG DEEP_INVERTED_SVG DEEP_PER_THREAD_SVG
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const [svgPath, icePath, jsonPath, perfTotalArg, artifacts, deepPath, deepIcePath, deepThreadPath] =
	process.argv.slice(2);
const WIN = { width: 1400, height: 900 }; // the window of check 6
const TOWER = ["wl_tower_1", "wl_tower_2", "wl_tower_3", "wl_tower_4", "wl_tower_5", "wl_tower_6"];
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

// Where the frame g's rect is on screen, and whether it is the topmost
// element at its centre (a frame under the pinned head band is in the
// viewport but not seen).
async function on_screen(page, i) {
	return page.evaluate((i) => {
		const g = document.getElementById("frames").children[i], b = g.children[1].getBoundingClientRect();
		const hit = document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2);
		return { x: b.x, y: b.y, w: b.width, h: b.height, top: !!hit && hit.closest("#frames > g") === g };
	}, i);
}

function inside(b) {
	return b.x >= 0 && b.y >= 0 && b.x + b.w <= WIN.width + 0.5 && b.y + b.h <= WIN.height + 0.5;
}

async function box_of(page, sel) {
	return page.evaluate((sel) => {
		const b = document.querySelector(sel).getBoundingClientRect();
		return { x: b.x, y: b.y, w: b.width, h: b.height };
	}, sel);
}

// Scroll the window to y, as a user would, and wait for the scroll event
// that pins the head there (scroll events come with the next frame).
async function scroll_to(page, y) {
	await page.evaluate((y) => window.scrollTo(0, y), y);
	try {
		await page.waitForFunction((y) => window.scrollY === y &&
			document.getElementById("head").getAttribute("transform") === `translate(0,${y})`, y,
		{ timeout: 5000 });
	} catch (e) {
		check(false, `scrolled to ${y}: the head was not pinned there (${e.message.split("\n")[0]})`);
	}
}

// 6. A deepstack graph opened in a WIN-sized window: what the first screen
// shows, and that the controls work from there. kind: "flame", "icicle" or
// "thread" (--per-thread).
async function first_screen(page, file, kind) {
	await page.setViewportSize(WIN);
	await page.goto("file://" + path.resolve(file));
	const height = await page.evaluate(() => +document.documentElement.getAttribute("height"));
	const scrollY = await page.evaluate(() => window.scrollY);
	const fr = await frames(page);
	const svgw = await page.evaluate(() => +document.documentElement.getAttribute("width") -
		2 * +document.documentElement.getAttribute("data-xpad"));
	const shot = path.join(artifacts, `flamegraph-deep-${kind}.png`);
	await page.screenshot({ path: shot });

	// the case is real: a stack as deep as a sample holds, narrow, and a
	// graph taller than the window
	const deep = fr.filter((f) => f.name === "wl_deep");
	const deepest = deep.reduce((a, f) => (a && a.depth >= f.depth ? a : f), null);
	const deepShare = deep.filter((f) => f.path.indexOf("wl_deep") === f.depth)
		.reduce((a, f) => a + f.w, 0) / svgw;
	measure(`${kind}: ${WIN.width}x${WIN.height} window on a ${height} px graph, opened at scrollY ` +
		`${scrollY}; ${deep.length} wl_deep frames (deepest at depth ${deepest ? deepest.depth : "-"}), ` +
		`${(100 * deepShare).toFixed(2)} % of the width; screenshot ${shot}`);
	check(deep.length >= 100, `${kind}: ${deep.length} wl_deep frames drawn, not a deep stack`);
	check(deepShare > 0 && deepShare < 0.05, `${kind}: the deep stack is ${(100 * deepShare).toFixed(2)} % wide, not narrow`);
	check(height > 2 * WIN.height, `${kind}: the graph is ${height} px high, not taller than the window`);

	// the root and the tower: in the viewport, and seen
	const root = await on_screen(page, 0);
	check(inside(root) && root.top, `${kind}: the root 'all' is not on the first screen ` +
		`(${JSON.stringify(root)})`);
	const tower = [];
	for (const name of TOWER) {
		const f = fr.filter((x) => x.name === name).sort((a, b) => b.w - a.w)[0];
		if (!check(f, `${kind}: no ${name} frame`))
			continue;
		const b = await on_screen(page, f.i);
		tower.push({ f, b });
		check(inside(b), `${kind}: ${name} (${b.w.toFixed(0)} px wide) at y ${b.y.toFixed(0)}, ` +
			`outside the ${WIN.width}x${WIN.height} window`);
		check(b.top, `${kind}: ${name} is in the window but covered (elementFromPoint misses it)`);
	}
	if (tower.length === TOWER.length)
		measure(`${kind}: tower wl_tower_1..6 ${(100 * tower[0].f.w / svgw).toFixed(1)} % wide, on screen ` +
			`at y ${tower.map((t) => t.b.y.toFixed(0)).join(", ")} (window ${WIN.height} px)`);
	if (kind === "flame")
		check(deepest && !inside(await on_screen(page, deepest.i)),
			`${kind}: the deepest wl_deep frame is on the first screen too: the case shows nothing`);
	// the controls: title, Search and the details line (its band: the line
	// is empty until hover, and an empty text has no box) in view
	for (const sel of ["#title", "#search", "#foot > rect"]) {
		const b = await box_of(page, sel);
		check(b.y >= 0 && b.y + b.h <= WIN.height, `${kind}: ${sel} at y ${b.y.toFixed(0)}, not in the window`);
	}
	if (kind !== "flame" || tower.length !== TOWER.length)
		return;

	// hover, zoom, Reset Zoom and search from the first screen
	const t3 = tower[2].f, t1 = tower[0].f;
	await page.locator("#frames > g").nth(t3.i).hover();
	const det = await page.locator("#details").textContent();
	check(/^wl_tower_3 +\| +off-CPU /.test(det), `${kind}: hover over wl_tower_3 shows "${det}"`);
	await page.locator("#frames > g").nth(t1.i).click();
	const z = await on_screen(page, t1.i);
	check(Math.abs(z.w - svgw) < 0.5 && inside(z), `${kind}: zoom into wl_tower_1 gave ${JSON.stringify(z)}`);
	const ub = await box_of(page, "#unzoom");
	check(ub.w > 0 && ub.y >= 0 && ub.y + ub.h <= WIN.height, `${kind}: Reset Zoom not in the window`);
	await page.screenshot({ path: path.join(artifacts, "flamegraph-deep-zoom.png") });
	await page.locator("#unzoom").click();
	const u = await frames(page);
	check(u.every((f, k) => !f.hidden && Math.abs(f.w - fr[k].w) < 0.01), `${kind}: Reset Zoom did not restore the graph`);
	page.once("dialog", (d) => d.accept("^wl_deep$"));
	await page.keyboard.press("Control+F");
	const mt = await page.locator("#matched").textContent();
	const m = /Matched: ([\d.]+)%/.exec(mt);
	check(m && Math.abs(Number(m[1]) - 100 * deepShare) < 0.02, `${kind}: search ^wl_deep$ shows "${mt}", ` +
		`the stack is ${(100 * deepShare).toFixed(2)} %`);
	const mb = await box_of(page, "#matched");
	check(mb.y >= 0 && mb.y + mb.h <= WIN.height, `${kind}: "Matched:" not in the window`);
	await page.locator("#search").click();
	// the deep stack is reached by scrolling up; the head stays on top
	await scroll_to(page, 0);
	const top = await on_screen(page, deepest.i);
	check(inside(top) && top.top, `${kind}: the deepest wl_deep frame not reached at the top (${JSON.stringify(top)})`);
	await scroll_to(page, Math.round(height / 2));
	const tb = await box_of(page, "#title"), db = await box_of(page, "#foot > rect");
	check(tb.y >= 0 && tb.y < 40 && Math.abs(db.y + db.h - WIN.height) < 0.5,
		`${kind}: halfway down, the title (y ${tb.y.toFixed(0)}) or details line (y ${db.y.toFixed(0)}) left the window's edge`);
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
			// less the run's IRQ + steal time up to the calls' time on a CPU by
			// either clock, which waitmix counts asleep (OFFCPU_TEST_STOLEN_NS:
			// record_lib.sh; perfcheck.py's steal_bound)
			const oncpu = Math.max(t.func_oncpu_ns || 0, t.func_task_clock_ns || 0);
			const stolen = spin ? 0 : Math.min(Number(process.env.OFFCPU_TEST_STOLEN_NS || 0), oncpu);
			const lo = ref * (1 - tol) - stolen;
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

		// 6. the first screen of a deep graph
		await first_screen(page, deepPath, "flame");
		await first_screen(page, deepIcePath, "icicle");
		await first_screen(page, deepThreadPath, "thread");
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
