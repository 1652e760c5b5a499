#!/usr/bin/env node
// ONNX Runtime peer of kiln-bench (onnxruntime-node, CPU execution provider): the models
// torch_peer.py exports to bench/results (VGG11 forward per input shape, the EMLX functions,
// cos and exp(-x*x)*sin(x)+0.5x over 1e7 f32, the f32[4096,4096] sums), one JSON record per
// line on stdout, the same format as common.py. A missing model is reported on stderr and
// skipped. Usage: node ort_peer.js [--threads N|all] [--quick] [--filter S] [--onnx-dir DIR]
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const quick = argv.includes('--quick');
const threadsArg = opt('--threads', '1');
const threads = threadsArg === 'all' ? os.cpus().length : parseInt(threadsArg, 10);
const filter = opt('--filter', null);
const onnxDir = opt('--onnx-dir', path.join(__dirname, '..', 'results'));

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  console.error('ort: onnxruntime-node is not installed (cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci)');
  process.exit(0);
}

const budget = quick ? 0.05 : 0.5, minReps = quick ? 3 : 5;

// Inputs as kiln-bench makes them: iota / n^2 for EMLX, values in [-3, 3) and [0, 1) else.
const iota100 = () => Float32Array.from({ length: 100 }, (_, i) => i / 100);
const waves = (n, lo, hi) => Float32Array.from({ length: n }, (_, i) => lo + (hi - lo) * (0.5 + 0.5 * Math.sin(i)));
const CASES = [
  { suite: 'emlx', name: 'scalar f32[10,10]', file: 'emlx_scalar.onnx', inputs: () => [[iota100(), [10, 10]], [iota100(), [10, 10]]], unit: 'us', maxReps: 2001 },
  { suite: 'emlx', name: 'matmul f32[10,10]', file: 'emlx_matmul.onnx', inputs: () => [[iota100(), [10, 10]], [iota100(), [10, 10]]], unit: 'us', maxReps: 2001 },
  { suite: 'elementwise', name: 'cos 1e7', file: 'cos_1e7.onnx', inputs: () => [[waves(1e7, -3, 3), [1e7]]], unit: 'ms', maxReps: 21, big: true },
  { suite: 'elementwise', name: 'expsin 1e7', file: 'expsin_1e7.onnx', inputs: () => [[waves(1e7, -3, 3), [1e7]]], unit: 'ms', maxReps: 21, big: true },
  { suite: 'reduction', name: 'sum all 4096x4096', file: 'sum_all.onnx', inputs: () => [[waves(4096 * 4096, 0, 1), [4096, 4096]]], unit: 'ms', maxReps: 21, big: true },
  { suite: 'reduction', name: 'sum rows 4096x4096', file: 'sum_rows.onnx', inputs: () => [[waves(4096 * 4096, 0, 1), [4096, 4096]]], unit: 'ms', maxReps: 21, big: true },
  { suite: 'reduction', name: 'sum cols 4096x4096', file: 'sum_cols.onnx', inputs: () => [[waves(4096 * 4096, 0, 1), [4096, 4096]]], unit: 'ms', maxReps: 21, big: true },
];
for (const s of [[1, 3, 224, 224], [8, 3, 32, 32]]) {
  const n = s.reduce((a, b) => a * b, 1);
  CASES.push({ suite: 'vgg', name: 'VGG11 ' + s.join('x'), file: 'vgg11_' + s.join('x') + '.onnx', inputs: () => [[Float32Array.from({ length: n }, (_, i) => Math.sin(i)), s]], unit: 'ms', maxReps: 21, big: true });
}
const SCALE = { us: 1e6, ms: 1e3 };

async function main() {
  for (const c of CASES) {
    if (quick && c.big) continue; // --quick: the small cases only
    if (filter && !(c.suite + ' ' + c.name).toLowerCase().includes(filter.toLowerCase())) continue;
    const file = path.join(onnxDir, c.file);
    if (!fs.existsSync(file)) {
      console.error(`ort: ${file} missing (torch_peer.py --onnx-dir exports it); skipped`);
      continue;
    }
    const session = await ort.InferenceSession.create(file, {
      executionProviders: ['cpu'],
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
    });
    const feeds = {};
    c.inputs().forEach(([data, dims], i) => {
      feeds[session.inputNames[i]] = new ort.Tensor('float32', data, dims);
    });
    for (let w = 0; w < 2; w++) await session.run(feeds);
    const times = [];
    let spent = 0;
    while (times.length < c.maxReps && (times.length < minReps || spent < budget)) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      const dt = Number(process.hrtime.bigint() - t0) * 1e-9;
      times.push(dt);
      spent += dt;
    }
    times.sort((a, b) => a - b);
    const k = times.length, sc = SCALE[c.unit];
    console.log(JSON.stringify({
      suite: c.suite, case: c.name, impl: 'ort', metric: 'time',
      median: times[k >> 1] * sc, p10: times[Math.floor(k / 10)] * sc,
      p90: times[Math.floor((9 * k) / 10)] * sc, unit: c.unit, reps: k, threads,
    }));
    if (session.release) await session.release();
  }
}
main().catch((e) => { console.error('ort: ' + e); process.exit(1); });
