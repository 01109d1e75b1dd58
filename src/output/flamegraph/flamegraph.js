// offcpu flame graph: hover details, click zoom, search, reset, and where
// a graph taller than the window opens (show_root).
// Frames are the <g> children of #frames in pre-order (a frame's
// descendants follow it, deeper), so subtrees are found from the document
// order and the depth, never from rounded pixel geometry.
"use strict";
var svg = document.documentElement;
var frames, details, matched, unzoombtn, searchbtn, head, foot;
var xpad, fontw, fullw, total, rooty, frameh, inverted, height;
var all = [];      // frames in document order
var zoomed = null; // the frame zoomed into, or null
var term = null;   // the active search, or null

function el(id) { return document.getElementById(id); }

function init() {
	frames = el("frames");
	details = el("details").firstChild;
	matched = el("matched").firstChild;
	unzoombtn = el("unzoom");
	searchbtn = el("search");
	head = el("head");
	foot = el("foot");
	height = +svg.getAttribute("height");
	xpad = +svg.getAttribute("data-xpad");
	fontw = +svg.getAttribute("data-fontw");
	frameh = +svg.getAttribute("data-frameh");
	total = +svg.getAttribute("data-total");
	inverted = svg.getAttribute("data-inverted") === "1";
	fullw = +svg.getAttribute("width") - 2 * xpad;
	all = Array.prototype.slice.call(frames.children);
	if (all.length)
		rooty = +all[0].children[1].getAttribute("y");
	all.forEach(function (g) {
		var r = g.children[1];
		g._x = +r.getAttribute("x");
		g._w = +r.getAttribute("width");
		g._depth = Math.round(Math.abs(+r.getAttribute("y") - rooty) / frameh);
		g._fill = r.getAttribute("fill");
	});
	frames.addEventListener("click", function (e) {
		var g = frame_of(e.target);
		if (g)
			zoom(g);
	});
	frames.addEventListener("mouseover", function (e) {
		var g = frame_of(e.target);
		if (g)
			details.nodeValue = g.children[0].textContent.split("\n").join("  |  ");
	});
	frames.addEventListener("mouseout", function () { details.nodeValue = " "; });
	unzoombtn.addEventListener("click", unzoom);
	searchbtn.addEventListener("click", function () {
		if (term !== null)
			reset_search();
		else
			search_prompt();
	});
	window.addEventListener("keydown", function (e) {
		if (((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F")) || e.key === "F3") {
			e.preventDefault();
			search_prompt();
		} else if (e.key === "Escape") {
			reset_search();
		}
	});
	var m = /[?&]s=([^&]*)/.exec(window.location.search);
	if (m)
		search(decodeURIComponent(m[1]));
	window.addEventListener("scroll", pin);
	window.addEventListener("resize", pin);
	window.addEventListener("load", show_root);
	show_root();
}

// A flame graph stands on its root at the bottom, and its widest frames
// are the lowest. A graph taller than the window (one deep stack is
// enough, however narrow) would open at its top, where only that stack
// reaches, and show the title and an empty area: so it opens scrolled down
// to the root. The layout stays the one flame graph readers know (no frame
// is left out or cut for the sake of the first screen); an icicle graph
// (--inverted) has its root at the top and opens there.
function show_root() {
	if (!inverted)
		window.scrollTo(window.scrollX, height);
	pin();
}

// Keep the head (title, buttons, legend) at the top of the window and the
// foot (details line) at its bottom while a graph taller than the window
// scrolls: they are drawn after the frames, over them. At the top and the
// bottom of the graph they are where the SVG puts them.
function pin() {
	var y = window.scrollY, vh = document.documentElement.clientHeight || window.innerHeight;
	head.setAttribute("transform", "translate(0," + Math.max(0, y) + ")");
	foot.setAttribute("transform", "translate(0," + Math.min(0, y + vh - height) + ")");
}

function frame_of(node) {
	while (node && node !== frames) {
		if (node.parentNode === frames)
			return node;
		node = node.parentNode;
	}
	return null;
}

function name_of(g) { return g.children[0].textContent.split("\n")[0]; }

// The label that fits in w pixels, as the SVG writer does it.
function label(name, w) {
	var fit = Math.floor((w - 6) / fontw), chars = Array.from(name);
	if (fit < 3)
		return "";
	if (chars.length <= fit)
		return name;
	return chars.slice(0, fit - 2).join("") + "..";
}

function place(g, x, w) {
	var r = g.children[1], t = g.children[2], s;
	r.setAttribute("x", x.toFixed(2));
	r.setAttribute("width", w.toFixed(2));
	s = label(name_of(g), w);
	if (!t && s) {
		t = document.createElementNS("http://www.w3.org/2000/svg", "text");
		t.setAttribute("y", (+r.getAttribute("y") + 11).toString());
		g.appendChild(t);
	}
	if (t) {
		t.setAttribute("x", (x + 3).toFixed(2));
		t.textContent = s;
	}
}

// Zoom into g: its subtree fills the width, its ancestors span it (faded),
// everything else is hidden.
function zoom(g) {
	var i = all.indexOf(g), d = g._depth, ratio = fullw / g._w, j, k, need;
	zoomed = g;
	unzoombtn.classList.remove("hide");
	all.forEach(function (f) { f.classList.add("hide"); f.classList.remove("parent"); });
	g.classList.remove("hide");
	place(g, xpad, fullw);
	for (j = i + 1; j < all.length && all[j]._depth > d; j++) {
		var f = all[j];
		f.classList.remove("hide");
		place(f, xpad + (f._x - g._x) * ratio, f._w * ratio);
	}
	for (k = i - 1, need = d - 1; k >= 0 && need >= 0; k--) {
		if (all[k]._depth !== need)
			continue;
		all[k].classList.remove("hide");
		all[k].classList.add("parent");
		place(all[k], xpad, fullw);
		need--;
	}
}

function unzoom() {
	zoomed = null;
	unzoombtn.classList.add("hide");
	all.forEach(function (f) {
		f.classList.remove("hide");
		f.classList.remove("parent");
		place(f, f._x, f._w);
	});
}

function search_prompt() {
	var s = window.prompt("Search for (regular expression):", term === null ? "" : term);
	if (s !== null && s !== "")
		search(s);
}

function fmt_ns(ns) {
	if (ns >= 1e9) return (ns / 1e9).toFixed(2) + " s";
	if (ns >= 1e6) return (ns / 1e6).toFixed(2) + " ms";
	if (ns >= 1e3) return (ns / 1e3).toFixed(2) + " us";
	return Math.round(ns) + " ns";
}

// Highlight the frames whose name matches s (a regular expression, or the
// literal text when it is not one) and show their share of the whole
// graph: a match inside a matched frame's subtree is not counted twice.
function search(s) {
	var re, share = 0, until = -1, n = 0;
	try {
		re = new RegExp(s);
	} catch (e) {
		re = new RegExp(s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
	}
	reset_highlight();
	term = s;
	all.forEach(function (f) {
		if (until >= 0 && f._depth <= until)
			until = -1;
		if (!re.test(name_of(f)))
			return;
		f.children[1].setAttribute("fill", "#e600e6");
		f.classList.add("match");
		n++;
		if (until < 0) {
			share += f._w;
			until = f._depth;
		}
	});
	searchbtn.firstChild.nodeValue = "Reset Search";
	matched.nodeValue = n ? "Matched: " + (100 * share / fullw).toFixed(2) + "% (" +
		fmt_ns(total * share / fullw) + ", " + n + " frames)" : "Matched: none";
}

function reset_highlight() {
	all.forEach(function (f) {
		if (f.classList.contains("match")) {
			f.classList.remove("match");
			f.children[1].setAttribute("fill", f._fill);
		}
	});
}

function reset_search() {
	reset_highlight();
	term = null;
	searchbtn.firstChild.nodeValue = "Search";
	matched.nodeValue = " ";
}

init();
