#!/usr/bin/env node
// Run an ONNX model with onnxruntime-node (CPU) on inputs from a safetensors file and write its
// outputs, the oracle for the ONNX importer (docs/torch-bridge.md).
//
//   node scripts/ort-run.mjs MODEL.onnx INPUTS.safetensors OUT.safetensors|OUT.json
//
// Inputs are matched by position: input_0 feeds the model's first graph input, and so on.
// Outputs are written in the model's output order as output_0, output_1, ... (safetensors, or
// JSON {name: {dtype, shape, data}}). onnxruntime-node is looked up in $PIMC_NODE_MODULES, else
// <repo>/build/npm/node_modules (install: see docs/torch-bridge.md).

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

function fail(msg) {
  process.stderr.write(`error: ${msg}\n`);
  process.exit(1);
}

function loadOrt() {
  const dir = process.env.PIMC_NODE_MODULES || path.join(here, '..', 'build', 'npm', 'node_modules');
  const req = createRequire(path.join(dir, 'index.js'));
  try {
    return req('onnxruntime-node');
  } catch (e) {
    fail(`onnxruntime-node not found under ${dir} (${e.code || e.message}); install it with ` +
         `ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.30.0 (docs/torch-bridge.md)`);
  }
}

// safetensors dtype <-> onnxruntime tensor type and typed array.
const DTYPES = {
  F32: ['float32', Float32Array, 4],
  F64: ['float64', Float64Array, 8],
  I64: ['int64', BigInt64Array, 8],
  I32: ['int32', Int32Array, 4],
  I8: ['int8', Int8Array, 1],
  U8: ['uint8', Uint8Array, 1],
  BOOL: ['bool', Uint8Array, 1],
};
const FROM_ORT = Object.fromEntries(Object.entries(DTYPES).map(([k, v]) => [v[0], k]));

function readSafetensors(file) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    fail(`${file}: cannot read: ${e.code}`);
  }
  if (buf.length < 8) fail(`${file}: shorter than 8 bytes`);
  const n = Number(buf.readBigUInt64LE(0));
  if (8 + n > buf.length) fail(`${file}: header length ${n} exceeds the file size ${buf.length}`);
  let header;
  try {
    header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  } catch (e) {
    fail(`${file}: header is not JSON: ${e.message}`);
  }
  const out = {};
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const dt = DTYPES[info.dtype];
    if (!dt) fail(`${file}: tensor '${name}' has dtype ${info.dtype}, not supported here`);
    const [b, e] = info.data_offsets;
    const numel = info.shape.reduce((a, d) => a * d, 1);
    if (e - b !== numel * dt[2] || 8 + n + e > buf.length) {
      fail(`${file}: tensor '${name}' data_offsets [${b}, ${e}) do not fit shape/dtype/file`);
    }
    // Copy: typed arrays need aligned storage.
    const bytes = Uint8Array.prototype.slice.call(buf, 8 + n + b, 8 + n + e);
    out[name] = { dtype: info.dtype, shape: info.shape, data: new dt[1](bytes.buffer) };
  }
  return out;
}

function writeOutputs(file, tensors) {
  if (file.endsWith('.json')) {
    const obj = {};
    for (const [name, t] of tensors) {
      obj[name] = { dtype: t.dtype, shape: t.shape, data: Array.from(t.data, (x) => (typeof x === 'bigint' ? Number(x) : x)) };
    }
    fs.writeFileSync(file, JSON.stringify(obj) + '\n');
    return;
  }
  const header = { __metadata__: { format: 'pt' } };
  const blobs = [];
  let off = 0;
  for (const [name, t] of tensors) {
    const bytes = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + bytes.length] };
    blobs.push(bytes);
    off += bytes.length;
  }
  let json = Buffer.from(JSON.stringify(header), 'utf8');
  const padded = Math.ceil(json.length / 8) * 8;
  json = Buffer.concat([json, Buffer.alloc(padded - json.length, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const tmp = `${file}.tmp${process.pid}`;
  fs.writeFileSync(tmp, Buffer.concat([len, json, ...blobs]));
  fs.renameSync(tmp, file);
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length !== 3 || args[0] === '--help') {
    process.stderr.write('usage: node scripts/ort-run.mjs MODEL.onnx INPUTS.safetensors OUT.safetensors|OUT.json\n');
    process.exit(args[0] === '--help' ? 0 : 2);
  }
  const [model, inputsFile, outFile] = args;
  if (!fs.existsSync(model)) fail(`${model}: no such file`);
  const ort = loadOrt();
  const inputs = readSafetensors(inputsFile);
  let session;
  try {
    session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'] });
  } catch (e) {
    fail(`${model}: onnxruntime cannot load it: ${e.message.split('\n')[0]}`);
  }
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    const t = inputs[`input_${i}`];
    if (!t) fail(`${inputsFile}: no input_${i} for graph input '${name}'`);
    feeds[name] = new ort.Tensor(DTYPES[t.dtype][0], t.data, t.shape);
  });
  const extra = Object.keys(inputs).length - session.inputNames.length;
  if (extra > 0) fail(`${inputsFile}: ${extra} more tensor(s) than the model's ${session.inputNames.length} input(s)`);
  let results;
  try {
    results = await session.run(feeds);
  } catch (e) {
    fail(`${model}: onnxruntime run failed: ${e.message.split('\n')[0]}`);
  }
  const outs = session.outputNames.map((name, i) => {
    const r = results[name];
    const dtype = FROM_ORT[r.type];
    if (!dtype) fail(`${model}: output '${name}' has type ${r.type}, not supported here`);
    return [`output_${i}`, { dtype, shape: r.dims.map(Number), data: r.data }];
  });
  writeOutputs(outFile, outs);
  process.stdout.write(`${path.basename(model)}: ${outs.length} output(s) -> ${outFile}\n`);
}

main();
