#!/usr/bin/env node
// ONNX Runtime peer of kiln-bench (onnxruntime-node, CPU execution provider): VGG11 forward on
// the models torch_peer.py exports (bench/results/vgg11_<shape>.onnx), one JSON record per
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

const shapes = quick ? [] : [[1, 3, 224, 224], [8, 3, 32, 32]]; // --quick: no VGG
const budget = quick ? 0.05 : 0.5, minReps = quick ? 3 : 5, maxReps = 21;

async function main() {
  for (const s of shapes) {
    const caseName = 'VGG11 ' + s.join('x');
    if (filter && !('vgg ' + caseName).toLowerCase().includes(filter.toLowerCase())) continue;
    const file = path.join(onnxDir, 'vgg11_' + s.join('x') + '.onnx');
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
    const n = s.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = Math.sin(i);
    const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', data, s) };
    for (let w = 0; w < 2; w++) await session.run(feeds);
    const times = [];
    let spent = 0;
    while (times.length < maxReps && (times.length < minReps || spent < budget)) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      const dt = Number(process.hrtime.bigint() - t0) * 1e-9;
      times.push(dt);
      spent += dt;
    }
    times.sort((a, b) => a - b);
    const k = times.length;
    console.log(JSON.stringify({
      suite: 'vgg', case: caseName, impl: 'ort', metric: 'time',
      median: times[k >> 1] * 1e3, p10: times[Math.floor(k / 10)] * 1e3,
      p90: times[Math.floor((9 * k) / 10)] * 1e3, unit: 'ms', reps: k, threads,
    }));
    if (session.release) await session.release();
  }
}
main().catch((e) => { console.error('ort: ' + e); process.exit(1); });
