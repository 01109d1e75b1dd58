// SPDX-License-Identifier: GPL-2.0-only
// nodewait: node blocking in named JavaScript functions, for the check of
// JIT code named through /tmp/perf-PID.map (tests/integration/test_node_frames.sh).
//
//   node --perf-basic-prof --interpreted-frames-native-stack nodewait.js MS
//
// jsTimerWait waits MS ms on a timer (Atomics.wait with a timeout: the
// thread blocks inside the function, where setTimeout would return to the
// event loop); jsChildWait runs `sleep` for MS ms and waits for it
// (spawnSync). Prints "PID" first.
'use strict';
const { spawnSync } = require('child_process');

const ms = Number(process.argv[2] || 300);

function jsTimerWait(t) {
	Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, t);
}

function jsChildWait(t) {
	spawnSync('sleep', [String(t / 1000)]);
}

process.stdout.write(`${process.pid}\n`);
jsTimerWait(ms);
jsChildWait(ms);
