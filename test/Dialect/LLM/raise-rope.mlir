// RUN: pimc-opt %s --split-input-file --llm-raise-rope | FileCheck %s
// The llm.weight tables of @weight_tables, written as torch computes them:
// RUN: %python -c "import sys, torch; sys.path.insert(0, '%pimc_src/python'); from pimc_testgen.safetensors_io import write_file; inv = 1.0 / (1e4 ** (torch.arange(0, 8, 2).float() / 8)); e = torch.outer(torch.arange(4).float(), inv); e = torch.cat((e, e), -1); write_file('%t.safetensors', {'rope.cos': e.cos(), 'rope.sin': e.sin()})"
// RUN: pimc-opt %s --split-input-file --llm-raise-rope="weights=%t.safetensors" | FileCheck %s --check-prefix=WEIGHTS

// HF apply_rotary_pos_emb on [B = 1, heads, T, d] with the tables computed
// in the graph from a constant inv_freq (theta = 1e4, d = 8) and arange
// positions: freqs = inv_freq[:, None] @ pos[None, :], emb = cat(freqs,
// freqs), cos/sin of it unsqueezed to [1, 1, T, d].
// CHECK-LABEL: func.func @hf_half_split
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x4x8xf32>)
// CHECK: %[[OFF:.*]] = arith.constant 0 : index
// CHECK: %[[T:.*]] = llm.transpose %[[Q]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x2x4x8xf32> -> tensor<1x4x2x8xf32>
// CHECK: %[[R:.*]] = llm.reshape %[[T]] : tensor<1x4x2x8xf32> -> tensor<4x2x8xf32>
// CHECK: %[[ROPE:.*]] = llm.rope %[[R]], %[[OFF]] {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, rotary_dim = 8 : i64, theta = 1.000000e+04 : f64} : tensor<4x2x8xf32>
// CHECK: %[[B:.*]] = llm.reshape %[[ROPE]] : tensor<4x2x8xf32> -> tensor<1x4x2x8xf32>
// CHECK: %[[OUT:.*]] = llm.transpose %[[B]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
// CHECK: return %[[OUT]]
func.func @hf_half_split(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %inv = arith.constant dense<[1.0, 0.1, 0.01, 0.001]> : tensor<4xf32>
  %pos = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %posf = llm.convert %pos : tensor<4xi64> -> tensor<4xf32>
  %invr = llm.reshape %inv : tensor<4xf32> -> tensor<4x1xf32>
  %posr = llm.reshape %posf : tensor<4xf32> -> tensor<1x4xf32>
  %fr = llm.matmul %invr, %posr : (tensor<4x1xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
  %frt = llm.transpose %fr {permutation = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
  %emb = llm.concat %frt, %frt {axis = 1 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  %cos = llm.cos %emb : tensor<4x8xf32>
  %sin = llm.sin %emb : tensor<4x8xf32>
  %cosr = llm.reshape %cos : tensor<4x8xf32> -> tensor<1x1x4x8xf32>
  %sinr = llm.reshape %sin : tensor<4x8xf32> -> tensor<1x1x4x8xf32>
  %cosb = llm.broadcast %cosr : tensor<1x1x4x8xf32> -> tensor<1x2x4x8xf32>
  %sinb = llm.broadcast %sinr : tensor<1x1x4x8xf32> -> tensor<1x2x4x8xf32>
  %qc = llm.mul %q, %cosb : tensor<1x2x4x8xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %qs = llm.mul %rot, %sinb : tensor<1x2x4x8xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x8xf32>
  return %out : tensor<1x2x4x8xf32>
}

// -----

// inv_freq computed in the graph, 1 / (theta ** (arange(0, d, 2) / d)) with
// theta = 500000, positions arange(3, 3 + T) (decode-style offset), operand
// in [T, heads, d] layout, the sum and the products in the other order.
// CHECK-LABEL: func.func @computed_inv_freq_offset
// CHECK: %[[OFF:.*]] = arith.constant 3 : index
// CHECK: %[[ROPE:.*]] = llm.rope %arg0, %[[OFF]] {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, rotary_dim = 8 : i64, theta = 5.000000e+05 : f64} : tensor<2x2x8xf32>
// CHECK: return %[[ROPE]]
func.func @computed_inv_freq_offset(%q: tensor<2x2x8xf32>) -> tensor<2x2x8xf32> {
  %ar = arith.constant dense<[0, 2, 4, 6]> : tensor<4xi64>
  %arf = llm.convert %ar : tensor<4xi64> -> tensor<4xf32>
  %d = arith.constant dense<8.0> : tensor<4xf32>
  %e = llm.div %arf, %d : tensor<4xf32>
  %base = arith.constant dense<500000.0> : tensor<4xf32>
  %pw = llm.pow %base, %e : tensor<4xf32>
  %inv = llm.reciprocal %pw : tensor<4xf32>
  %pos = arith.constant dense<[3, 4]> : tensor<2xi64>
  %posf = llm.convert %pos : tensor<2xi64> -> tensor<2xf32>
  %posr = llm.reshape %posf : tensor<2xf32> -> tensor<2x1xf32>
  %posb = llm.broadcast %posr : tensor<2x1xf32> -> tensor<2x4xf32>
  %invb = llm.broadcast %inv : tensor<4xf32> -> tensor<2x4xf32>
  %fr = llm.mul %posb, %invb : tensor<2x4xf32>
  %emb = llm.concat %fr, %fr {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %cos = llm.cos %emb : tensor<2x8xf32>
  %sin = llm.sin %emb : tensor<2x8xf32>
  %cosr = llm.reshape %cos : tensor<2x8xf32> -> tensor<2x1x8xf32>
  %sinr = llm.reshape %sin : tensor<2x8xf32> -> tensor<2x1x8xf32>
  %cosb = llm.broadcast %cosr : tensor<2x1x8xf32> -> tensor<2x2x8xf32>
  %sinb = llm.broadcast %sinr : tensor<2x1x8xf32> -> tensor<2x2x8xf32>
  %x1 = llm.slice %q {axis = 2 : i64, start = 0 : i64, size = 4 : i64} : tensor<2x2x8xf32> -> tensor<2x2x4xf32>
  %x2 = llm.slice %q {axis = 2 : i64, start = -4 : i64, size = 4 : i64} : tensor<2x2x8xf32> -> tensor<2x2x4xf32>
  %nx2 = llm.neg %x2 : tensor<2x2x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 2 : i64} : (tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x8xf32>
  %qs = llm.mul %sinb, %rot : tensor<2x2x8xf32>
  %qc = llm.mul %cosb, %q : tensor<2x2x8xf32>
  %out = llm.add %qs, %qc : tensor<2x2x8xf32>
  return %out : tensor<2x2x8xf32>
}

// -----

// Negative: the frequencies are not a geometric series (0.02 instead of
// 0.01), so no theta explains them.
// CHECK-LABEL: func.func @not_geometric
// CHECK-NOT: llm.rope
// CHECK: llm.cos
func.func @not_geometric(%q: tensor<4x1x8xf32>) -> tensor<4x1x8xf32> {
  %inv = arith.constant dense<[[1.0, 0.1, 0.02, 0.001]]> : tensor<1x4xf32>
  %pos = arith.constant dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>
  %fr = llm.matmul %pos, %inv : (tensor<4x1xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
  %emb = llm.concat %fr, %fr {axis = 1 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  %cos = llm.cos %emb : tensor<4x8xf32>
  %sin = llm.sin %emb : tensor<4x8xf32>
  %cosr = llm.reshape %cos : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %sinr = llm.reshape %sin : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %qc = llm.mul %q, %cosr : tensor<4x1x8xf32>
  %x1 = llm.slice %q {axis = 2 : i64, start = 0 : i64, size = 4 : i64} : tensor<4x1x8xf32> -> tensor<4x1x4xf32>
  %x2 = llm.slice %q {axis = 2 : i64, start = 4 : i64, size = 4 : i64} : tensor<4x1x8xf32> -> tensor<4x1x4xf32>
  %nx2 = llm.neg %x2 : tensor<4x1x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 2 : i64} : (tensor<4x1x4xf32>, tensor<4x1x4xf32>) -> tensor<4x1x8xf32>
  %qs = llm.mul %rot, %sinr : tensor<4x1x8xf32>
  %out = llm.add %qc, %qs : tensor<4x1x8xf32>
  return %out : tensor<4x1x8xf32>
}

// -----

// Negatives: positions are a function argument (not a compile-time offset);
// the rotation is cat(x1, -x2) (the inverse rotation); sin and cos swapped.
// CHECK-LABEL: func.func @not_rope
// CHECK-NOT: llm.rope
func.func @not_rope(%q: tensor<4x1x8xf32>, %pos: tensor<4x1xf32>) -> (tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>) {
  %inv = arith.constant dense<[[1.0, 0.1, 0.01, 0.001]]> : tensor<1x4xf32>
  %fr = llm.matmul %pos, %inv : (tensor<4x1xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
  %emb = llm.concat %fr, %fr {axis = 1 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  %cos = llm.cos %emb : tensor<4x8xf32>
  %sin = llm.sin %emb : tensor<4x8xf32>
  %cosr = llm.reshape %cos : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %sinr = llm.reshape %sin : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %x1 = llm.slice %q {axis = 2 : i64, start = 0 : i64, size = 4 : i64} : tensor<4x1x8xf32> -> tensor<4x1x4xf32>
  %x2 = llm.slice %q {axis = 2 : i64, start = 4 : i64, size = 4 : i64} : tensor<4x1x8xf32> -> tensor<4x1x4xf32>
  %nx2 = llm.neg %x2 : tensor<4x1x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 2 : i64} : (tensor<4x1x4xf32>, tensor<4x1x4xf32>) -> tensor<4x1x8xf32>
  %qc = llm.mul %q, %cosr : tensor<4x1x8xf32>
  %qs = llm.mul %rot, %sinr : tensor<4x1x8xf32>
  %out = llm.add %qc, %qs : tensor<4x1x8xf32>

  %cpos = arith.constant dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>
  %fr2 = llm.matmul %cpos, %inv : (tensor<4x1xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
  %emb2 = llm.concat %fr2, %fr2 {axis = 1 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  %cos2 = llm.cos %emb2 : tensor<4x8xf32>
  %sin2 = llm.sin %emb2 : tensor<4x8xf32>
  %cos2r = llm.reshape %cos2 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %sin2r = llm.reshape %sin2 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %nx2b = llm.neg %x2 : tensor<4x1x4xf32>
  %inv_rot = llm.concat %x1, %nx2b {axis = 2 : i64} : (tensor<4x1x4xf32>, tensor<4x1x4xf32>) -> tensor<4x1x8xf32>
  %qc2 = llm.mul %q, %cos2r : tensor<4x1x8xf32>
  %qs2 = llm.mul %inv_rot, %sin2r : tensor<4x1x8xf32>
  %out2 = llm.add %qc2, %qs2 : tensor<4x1x8xf32>

  %qc3 = llm.mul %q, %sin2r : tensor<4x1x8xf32>
  %rot3 = llm.concat %nx2, %x1 {axis = 2 : i64} : (tensor<4x1x4xf32>, tensor<4x1x4xf32>) -> tensor<4x1x8xf32>
  %qs3 = llm.mul %rot3, %cos2r : tensor<4x1x8xf32>
  %out3 = llm.add %qc3, %qs3 : tensor<4x1x8xf32>
  return %out, %out2, %out3 : tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>
}

// -----

// Interleaved pairs (GPT-J's rotate_every_two, Meta's Llama) as the FX
// importer spells them: strided slices are gathers of constant positions,
// stack is a concat of [..., d/2, 1] views, flatten a reshape; the tables
// are duplicate_interleave(cos) (repeat as reshape + broadcast + reshape)
// of freqs = inv_freq @ positions kept in a [1, T, d/2] table.
// CHECK-LABEL: func.func @interleaved
// CHECK: %[[OFF:.*]] = arith.constant 0 : index
// CHECK: llm.rope %{{.*}}, %[[OFF]] {kind = #llm<rope_kind default>, layout = #llm<rope_layout interleaved>, rotary_dim = 8 : i64, theta = 1.000000e+04 : f64} : tensor<4x2x8xf32>
// CHECK-NOT: llm.gather
func.func @interleaved(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %inv = arith.constant dense<[[[1.0], [0.1], [0.01], [0.001]]]> : tensor<1x4x1xf32>
  %pos = arith.constant dense<[[[0.0, 1.0, 2.0, 3.0]]]> : tensor<1x1x4xf32>
  %fr = llm.matmul %inv, %pos : (tensor<1x4x1xf32>, tensor<1x1x4xf32>) -> tensor<1x4x4xf32>
  %frt = llm.transpose %fr {permutation = array<i64: 0, 2, 1>} : tensor<1x4x4xf32> -> tensor<1x4x4xf32>
  %cos = llm.cos %frt : tensor<1x4x4xf32>
  %sin = llm.sin %frt : tensor<1x4x4xf32>
  %c1 = llm.reshape %cos : tensor<1x4x4xf32> -> tensor<16x1x1xf32>
  %c2 = llm.broadcast %c1 : tensor<16x1x1xf32> -> tensor<16x2x1xf32>
  %c3 = llm.reshape %c2 : tensor<16x2x1xf32> -> tensor<1x1x4x8xf32>
  %cb = llm.broadcast %c3 : tensor<1x1x4x8xf32> -> tensor<1x2x4x8xf32>
  %s1 = llm.reshape %sin : tensor<1x4x4xf32> -> tensor<16x1x1xf32>
  %s2 = llm.broadcast %s1 : tensor<16x1x1xf32> -> tensor<16x2x1xf32>
  %s3 = llm.reshape %s2 : tensor<16x2x1xf32> -> tensor<1x1x4x8xf32>
  %sb = llm.broadcast %s3 : tensor<1x1x4x8xf32> -> tensor<1x2x4x8xf32>
  %even = arith.constant dense<[0, 2, 4, 6]> : tensor<4xi64>
  %odd = arith.constant dense<[1, 3, 5, 7]> : tensor<4xi64>
  %x1 = llm.gather %q, %even {axis = 3 : i64} : (tensor<1x2x4x8xf32>, tensor<4xi64>) -> tensor<1x2x4x4xf32>
  %x2 = llm.gather %q, %odd {axis = 3 : i64} : (tensor<1x2x4x8xf32>, tensor<4xi64>) -> tensor<1x2x4x4xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x4xf32>
  %a = llm.reshape %nx2 : tensor<1x2x4x4xf32> -> tensor<1x2x4x4x1xf32>
  %b = llm.reshape %x1 : tensor<1x2x4x4xf32> -> tensor<1x2x4x4x1xf32>
  %st = llm.concat %a, %b {axis = 4 : i64} : (tensor<1x2x4x4x1xf32>, tensor<1x2x4x4x1xf32>) -> tensor<1x2x4x4x2xf32>
  %rot = llm.reshape %st : tensor<1x2x4x4x2xf32> -> tensor<1x2x4x8xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x8xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x8xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x8xf32>
  return %out : tensor<1x2x4x8xf32>
}

// -----

// Negatives: interleaved rotation with the even/odd roles swapped
// (stack(-x1, x2)), and a half-split rotation paired with interleaved
// tables (the table check fails).
// CHECK-LABEL: func.func @interleaved_not_rope
// CHECK-NOT: llm.rope
func.func @interleaved_not_rope(%q: tensor<1x1x4x8xf32>) -> (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) {
  %inv = arith.constant dense<[[[1.0], [0.1], [0.01], [0.001]]]> : tensor<1x4x1xf32>
  %pos = arith.constant dense<[[[0.0, 1.0, 2.0, 3.0]]]> : tensor<1x1x4xf32>
  %fr = llm.matmul %inv, %pos : (tensor<1x4x1xf32>, tensor<1x1x4xf32>) -> tensor<1x4x4xf32>
  %frt = llm.transpose %fr {permutation = array<i64: 0, 2, 1>} : tensor<1x4x4xf32> -> tensor<1x4x4xf32>
  %cos = llm.cos %frt : tensor<1x4x4xf32>
  %sin = llm.sin %frt : tensor<1x4x4xf32>
  %c1 = llm.reshape %cos : tensor<1x4x4xf32> -> tensor<16x1x1xf32>
  %c2 = llm.broadcast %c1 : tensor<16x1x1xf32> -> tensor<16x2x1xf32>
  %cb = llm.reshape %c2 : tensor<16x2x1xf32> -> tensor<1x1x4x8xf32>
  %s1 = llm.reshape %sin : tensor<1x4x4xf32> -> tensor<16x1x1xf32>
  %s2 = llm.broadcast %s1 : tensor<16x1x1xf32> -> tensor<16x2x1xf32>
  %sb = llm.reshape %s2 : tensor<16x2x1xf32> -> tensor<1x1x4x8xf32>
  %even = arith.constant dense<[0, 2, 4, 6]> : tensor<4xi64>
  %odd = arith.constant dense<[1, 3, 5, 7]> : tensor<4xi64>
  %x1 = llm.gather %q, %even {axis = 3 : i64} : (tensor<1x1x4x8xf32>, tensor<4xi64>) -> tensor<1x1x4x4xf32>
  %x2 = llm.gather %q, %odd {axis = 3 : i64} : (tensor<1x1x4x8xf32>, tensor<4xi64>) -> tensor<1x1x4x4xf32>
  %nx1 = llm.neg %x1 : tensor<1x1x4x4xf32>
  %a = llm.reshape %nx1 : tensor<1x1x4x4xf32> -> tensor<1x1x4x4x1xf32>
  %b = llm.reshape %x2 : tensor<1x1x4x4xf32> -> tensor<1x1x4x4x1xf32>
  %st = llm.concat %a, %b {axis = 4 : i64} : (tensor<1x1x4x4x1xf32>, tensor<1x1x4x4x1xf32>) -> tensor<1x1x4x4x2xf32>
  %rot = llm.reshape %st : tensor<1x1x4x4x2xf32> -> tensor<1x1x4x8xf32>
  %qc = llm.mul %q, %cb : tensor<1x1x4x8xf32>
  %qs = llm.mul %rot, %sb : tensor<1x1x4x8xf32>
  %out = llm.add %qc, %qs : tensor<1x1x4x8xf32>
  %h1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x1x4x8xf32> -> tensor<1x1x4x4xf32>
  %h2 = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x1x4x8xf32> -> tensor<1x1x4x4xf32>
  %nh2 = llm.neg %h2 : tensor<1x1x4x4xf32>
  %half = llm.concat %nh2, %h1 {axis = 3 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x8xf32>
  %qc2 = llm.mul %q, %cb : tensor<1x1x4x8xf32>
  %qs2 = llm.mul %half, %sb : tensor<1x1x4x8xf32>
  %out2 = llm.add %qc2, %qs2 : tensor<1x1x4x8xf32>
  return %out, %out2 : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>
}

// -----

// Negative: one angle row broadcast over all T tokens (every token rotated
// as position 0) is not a rope of T positions.
// CHECK-LABEL: func.func @table_broadcast_over_tokens
// CHECK-NOT: llm.rope
func.func @table_broadcast_over_tokens(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %emb = arith.constant dense<[[[[1.0, 0.1, 0.01, 0.001, 1.0, 0.1, 0.01, 0.001]]]]> : tensor<1x1x1x8xf32>
  %cos = llm.cos %emb : tensor<1x1x1x8xf32>
  %sin = llm.sin %emb : tensor<1x1x1x8xf32>
  %cosb = llm.broadcast %cos : tensor<1x1x1x8xf32> -> tensor<1x2x4x8xf32>
  %sinb = llm.broadcast %sin : tensor<1x1x1x8xf32> -> tensor<1x2x4x8xf32>
  %qc = llm.mul %q, %cosb : tensor<1x2x4x8xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %qs = llm.mul %rot, %sinb : tensor<1x2x4x8xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x8xf32>
  return %out : tensor<1x2x4x8xf32>
}

// -----

// Partial rotary (GPT-NeoX, Phi): rope on q[..., :4] of an 8-wide head,
// then cat with the pass-through q[..., 4:] -> llm.rope rotary_dim 4
// (frequencies over the rotary dim: 1e4^(-2i/4)).
// CHECK-LABEL: func.func @partial_rotary
// CHECK: %[[R:.*]] = llm.rope %{{.*}}, %{{.*}} {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, rotary_dim = 4 : i64, theta = 1.000000e+04 : f64} : tensor<4x2x8xf32>
// CHECK-NOT: llm.concat
func.func @partial_rotary(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %emb = arith.constant dense<[[0.0, 0.0, 0.0, 0.0], [1.0, 0.01, 1.0, 0.01], [2.0, 0.02, 2.0, 0.02], [3.0, 0.03, 3.0, 0.03]]> : tensor<4x4xf32>
  %cos = llm.cos %emb : tensor<4x4xf32>
  %sin = llm.sin %emb : tensor<4x4xf32>
  %cosb = llm.broadcast %cos : tensor<4x4xf32> -> tensor<1x2x4x4xf32>
  %sinb = llm.broadcast %sin : tensor<4x4xf32> -> tensor<1x2x4x4xf32>
  %xr = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %xp = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %x1 = llm.slice %xr {axis = 3 : i64, start = 0 : i64, size = 2 : i64} : tensor<1x2x4x4xf32> -> tensor<1x2x4x2xf32>
  %x2 = llm.slice %xr {axis = 3 : i64, start = 2 : i64, size = 2 : i64} : tensor<1x2x4x4xf32> -> tensor<1x2x4x2xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x2xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %qc = llm.mul %xr, %cosb : tensor<1x2x4x4xf32>
  %qs = llm.mul %rot, %sinb : tensor<1x2x4x4xf32>
  %re = llm.add %qc, %qs : tensor<1x2x4x4xf32>
  %out = llm.concat %re, %xp {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  return %out : tensor<1x2x4x8xf32>
}

// -----

// Linear position scaling (rope_scaling {"type": "linear", "factor": 2}):
// inv_freq / 2, recovered from the step of the first column.
// CHECK-LABEL: func.func @linear_scaling
// CHECK: llm.rope %arg0, %{{.*}} {factor = 2.000000e+00 : f64, kind = #llm<rope_kind linear>, layout = #llm<rope_layout half_split>, rotary_dim = 8 : i64, theta = 1.000000e+04 : f64} : tensor<4x1x8xf32>
func.func @linear_scaling(%q: tensor<4x1x8xf32>) -> tensor<4x1x8xf32> {
  %inv = arith.constant dense<[[0.5, 0.05, 0.005, 0.0005]]> : tensor<1x4xf32>
  %pos = arith.constant dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>
  %fr = llm.matmul %pos, %inv : (tensor<4x1xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
  %emb = llm.concat %fr, %fr {axis = 1 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  %cos = llm.cos %emb : tensor<4x8xf32>
  %sin = llm.sin %emb : tensor<4x8xf32>
  %cosr = llm.reshape %cos : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %sinr = llm.reshape %sin : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %qc = llm.mul %q, %cosr : tensor<4x1x8xf32>
  %x1 = llm.slice %q {axis = 2 : i64, start = 0 : i64, size = 4 : i64} : tensor<4x1x8xf32> -> tensor<4x1x4xf32>
  %x2 = llm.slice %q {axis = 2 : i64, start = 4 : i64, size = 4 : i64} : tensor<4x1x8xf32> -> tensor<4x1x4xf32>
  %nx2 = llm.neg %x2 : tensor<4x1x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 2 : i64} : (tensor<4x1x4xf32>, tensor<4x1x4xf32>) -> tensor<4x1x8xf32>
  %qs = llm.mul %rot, %sinr : tensor<4x1x8xf32>
  %out = llm.add %qc, %qs : tensor<4x1x8xf32>
  return %out : tensor<4x1x8xf32>
}

// -----

// Llama 3.1 frequency scaling (factor 8, low/high_freq_factor 1/4, original
// context 8192, theta 5e5, d = 16): the inv_freq buffer HF computes, read
// back into llm.rope's llama3 parameters and checked against the reference
// kernel's frequencies.
// CHECK-LABEL: func.func @llama3_scaling
// CHECK: llm.rope %{{.*}}, %{{.*}} {factor = 8.000000e+00 : f64, high_freq_factor = 4.000000e+00 : f64, kind = #llm<rope_kind llama3>, layout = #llm<rope_layout half_split>, low_freq_factor = 1.000000e+00 : f64, original_max_position_embeddings = 8192 : i64, rotary_dim = 16 : i64, theta = 5.000000e+05 : f64} : tensor<4x2x16xf32>
func.func @llama3_scaling(%q: tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32> {
  %inv = arith.constant dense<[[[1.0], [0.193922758], [0.0376060307], [0.00729266508], [0.000524846022], [3.42810235e-05], [6.64786967e-06], [1.28917316e-06]]]> : tensor<1x8x1xf32>
  %pos = arith.constant dense<[[[0.0, 1.0, 2.0, 3.0]]]> : tensor<1x1x4xf32>
  %fr = llm.matmul %inv, %pos : (tensor<1x8x1xf32>, tensor<1x1x4xf32>) -> tensor<1x8x4xf32>
  %frt = llm.transpose %fr {permutation = array<i64: 0, 2, 1>} : tensor<1x8x4xf32> -> tensor<1x4x8xf32>
  %cos = llm.cos %frt : tensor<1x4x8xf32>
  %sin = llm.sin %frt : tensor<1x4x8xf32>
  %cc = llm.concat %cos, %cos {axis = 2 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x16xf32>
  %sc = llm.concat %sin, %sin {axis = 2 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x16xf32>
  %cu = llm.reshape %cc : tensor<1x4x16xf32> -> tensor<1x1x4x16xf32>
  %su = llm.reshape %sc : tensor<1x4x16xf32> -> tensor<1x1x4x16xf32>
  %cb = llm.broadcast %cu : tensor<1x1x4x16xf32> -> tensor<1x2x4x16xf32>
  %sb = llm.broadcast %su : tensor<1x1x4x16xf32> -> tensor<1x2x4x16xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x16xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 8 : i64} : tensor<1x2x4x16xf32> -> tensor<1x2x4x8xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 8 : i64, size = 8 : i64} : tensor<1x2x4x16xf32> -> tensor<1x2x4x8xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x8xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x16xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x16xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x16xf32>
  return %out : tensor<1x2x4x16xf32>
}

// -----

// Negative: one low frequency divided by 6 instead of the factor 8 fits no
// llama3 parameters.
// CHECK-LABEL: func.func @not_llama3
// CHECK-NOT: llm.rope
func.func @not_llama3(%q: tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32> {
  %inv = arith.constant dense<[[[1.0], [0.193922758], [0.0376060307], [0.00729266508], [0.000524846022], [4.57080313e-05], [6.64786967e-06], [1.28917316e-06]]]> : tensor<1x8x1xf32>
  %pos = arith.constant dense<[[[0.0, 1.0, 2.0, 3.0]]]> : tensor<1x1x4xf32>
  %fr = llm.matmul %inv, %pos : (tensor<1x8x1xf32>, tensor<1x1x4xf32>) -> tensor<1x8x4xf32>
  %frt = llm.transpose %fr {permutation = array<i64: 0, 2, 1>} : tensor<1x8x4xf32> -> tensor<1x4x8xf32>
  %cos = llm.cos %frt : tensor<1x4x8xf32>
  %sin = llm.sin %frt : tensor<1x4x8xf32>
  %cc = llm.concat %cos, %cos {axis = 2 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x16xf32>
  %sc = llm.concat %sin, %sin {axis = 2 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x16xf32>
  %cu = llm.reshape %cc : tensor<1x4x16xf32> -> tensor<1x1x4x16xf32>
  %su = llm.reshape %sc : tensor<1x4x16xf32> -> tensor<1x1x4x16xf32>
  %cb = llm.broadcast %cu : tensor<1x1x4x16xf32> -> tensor<1x2x4x16xf32>
  %sb = llm.broadcast %su : tensor<1x1x4x16xf32> -> tensor<1x2x4x16xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x16xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 8 : i64} : tensor<1x2x4x16xf32> -> tensor<1x2x4x8xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 8 : i64, size = 8 : i64} : tensor<1x2x4x16xf32> -> tensor<1x2x4x8xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x8xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x16xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x16xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x16xf32>
  return %out : tensor<1x2x4x16xf32>
}

// -----

// torch.onnx.export folds registered cos/sin buffers into initializers: the
// tables arrive as [T, d] constants broadcast straight onto [1, h, T, d],
// with no llm.cos in the graph. theta and the offset come from the angles
// atan2(sin, cos) advances by per position, then every entry is checked.
// CHECK-LABEL: func.func @stored_tables
// CHECK: %[[OFF:.*]] = arith.constant 0 : index
// CHECK: llm.rope %{{.*}}, %[[OFF]] {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, rotary_dim = 8 : i64, theta = 1.000000e+04 : f64} : tensor<4x2x8xf32>
// CHECK-NOT: llm.neg
func.func @stored_tables(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %cos = arith.constant dense<[[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0.540302336, 0.995004177, 0.999949992, 0.999999523, 0.540302336, 0.995004177, 0.999949992, 0.999999523], [-0.416146845, 0.980066597, 0.999800026, 0.999998033, -0.416146845, 0.980066597, 0.999800026, 0.999998033], [-0.989992499, 0.955336511, 0.999550045, 0.99999553, -0.989992499, 0.955336511, 0.999550045, 0.99999553]]> : tensor<4x8xf32>
  %sin = arith.constant dense<[[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.841470957, 0.0998334214, 0.00999983307, 0.000999999931, 0.841470957, 0.0998334214, 0.00999983307, 0.000999999931], [0.909297407, 0.198669329, 0.0199986659, 0.0019999987, 0.909297407, 0.198669329, 0.0199986659, 0.0019999987], [0.141120002, 0.295520216, 0.0299954992, 0.0029999956, 0.141120002, 0.295520216, 0.0299954992, 0.0029999956]]> : tensor<4x8xf32>
  %cb = llm.broadcast %cos : tensor<4x8xf32> -> tensor<1x2x4x8xf32>
  %sb = llm.broadcast %sin : tensor<4x8xf32> -> tensor<1x2x4x8xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x8xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x8xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x8xf32>
  return %out : tensor<1x2x4x8xf32>
}

// -----

// Stored interleaved tables (duplicate_interleave) on [T, h, d] for
// positions 5..7 with theta = 5e5: offset 5 is read off the lowest
// frequency's first angle.
// CHECK-LABEL: func.func @stored_tables_interleaved_offset
// CHECK: %[[OFF:.*]] = arith.constant 5 : index
// CHECK: llm.rope %arg0, %[[OFF]] {kind = #llm<rope_kind default>, layout = #llm<rope_layout interleaved>, rotary_dim = 8 : i64, theta = 5.000000e+05 : f64} : tensor<3x2x8xf32>
func.func @stored_tables_interleaved_offset(%q: tensor<3x2x8xf32>) -> tensor<3x2x8xf32> {
  %cos = arith.constant dense<[[[0.2836622, 0.2836622, 0.98237437, 0.98237437, 0.999975026, 0.999975026, 1.0, 1.0]], [[0.960170269, 0.960170269, 0.974651992, 0.974651992, 0.999963999, 0.999963999, 0.99999994, 0.99999994]], [[0.753902256, 0.753902256, 0.965551376, 0.965551376, 0.999951005, 0.999951005, 0.99999994, 0.99999994]]]> : tensor<3x1x8xf32>
  %sin = arith.constant dense<[[[-0.958924294, -0.958924294, 0.18692413, 0.18692413, 0.00707100797, 0.00707100797, 0.000265914772, 0.000265914772]], [[-0.279415488, -0.279415488, 0.223726466, 0.223726466, 0.00848517939, 0.00848517939, 0.000319097744, 0.000319097744]], [[0.656986594, 0.656986594, 0.260212451, 0.260212451, 0.00989933219, 0.00989933219, 0.000372280716, 0.000372280716]]]> : tensor<3x1x8xf32>
  %cb = llm.broadcast %cos : tensor<3x1x8xf32> -> tensor<3x2x8xf32>
  %sb = llm.broadcast %sin : tensor<3x1x8xf32> -> tensor<3x2x8xf32>
  %even = arith.constant dense<[0, 2, 4, 6]> : tensor<4xi64>
  %odd = arith.constant dense<[1, 3, 5, 7]> : tensor<4xi64>
  %x1 = llm.gather %q, %even {axis = 2 : i64} : (tensor<3x2x8xf32>, tensor<4xi64>) -> tensor<3x2x4xf32>
  %x2 = llm.gather %q, %odd {axis = 2 : i64} : (tensor<3x2x8xf32>, tensor<4xi64>) -> tensor<3x2x4xf32>
  %nx2 = llm.neg %x2 : tensor<3x2x4xf32>
  %a = llm.reshape %nx2 : tensor<3x2x4xf32> -> tensor<3x2x4x1xf32>
  %b = llm.reshape %x1 : tensor<3x2x4xf32> -> tensor<3x2x4x1xf32>
  %st = llm.concat %a, %b {axis = 3 : i64} : (tensor<3x2x4x1xf32>, tensor<3x2x4x1xf32>) -> tensor<3x2x4x2xf32>
  %rot = llm.reshape %st : tensor<3x2x4x2xf32> -> tensor<3x2x8xf32>
  %qc = llm.mul %q, %cb : tensor<3x2x8xf32>
  %qs = llm.mul %rot, %sb : tensor<3x2x8xf32>
  %out = llm.add %qc, %qs : tensor<3x2x8xf32>
  return %out : tensor<3x2x8xf32>
}

// -----

// Stored Llama 3 tables (theta 5e5, factor 8, original context 8192):
// recovered as kind = llama3 from the stored values alone.
// CHECK-LABEL: func.func @stored_tables_llama3
// CHECK: llm.rope %{{.*}}, %{{.*}} {factor = 8.000000e+00 : f64, high_freq_factor = 4.000000e+00 : f64, kind = #llm<rope_kind llama3>, layout = #llm<rope_layout half_split>, low_freq_factor = 1.000000e+00 : f64, original_max_position_embeddings = 8192 : i64, rotary_dim = 16 : i64, theta = 5.000000e+05 : f64} : tensor<4x2x16xf32>
func.func @stored_tables_llama3(%q: tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32> {
  %cos = arith.constant dense<[[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0.540302336, 0.981255829, 0.99929297, 0.999973416, 0.999999881, 1.0, 1.0, 1.0, 0.540302336, 0.981255829, 0.99929297, 0.999973416, 0.999999881, 1.0, 1.0, 1.0], [-0.416146845, 0.925726056, 0.997172892, 0.999893665, 0.999999464, 1.0, 1.0, 1.0, -0.416146845, 0.925726056, 0.997172892, 0.999893665, 0.999999464, 1.0, 1.0, 1.0], [-0.989992499, 0.835492313, 0.993642807, 0.999760687, 0.999998748, 1.0, 1.0, 1.0, -0.989992499, 0.835492313, 0.993642807, 0.999760687, 0.999998748, 1.0, 1.0, 1.0]]> : tensor<4x16xf32>
  %sin = arith.constant dense<[[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.841470957, 0.192709595, 0.0375971682, 0.00729260035, 0.00052484608, 3.42810235e-05, 6.64786967e-06, 1.28917316e-06, 0.841470957, 0.192709595, 0.0375971682, 0.00729260035, 0.00052484608, 3.42810235e-05, 6.64786967e-06, 1.28917316e-06], [0.909297407, 0.378194839, 0.0751411691, 0.0145848133, 0.00104969193, 6.85620471e-05, 1.32957393e-05, 2.57834631e-06, 0.909297407, 0.378194839, 0.0751411691, 0.0145848133, 0.00104969193, 6.85620471e-05, 1.32957393e-05, 2.57834631e-06], [0.141120002, 0.549502194, 0.112578921, 0.0218762495, 0.00157453748, 0.000102843071, 1.9943609e-05, 3.86751935e-06, 0.141120002, 0.549502194, 0.112578921, 0.0218762495, 0.00157453748, 0.000102843071, 1.9943609e-05, 3.86751935e-06]]> : tensor<4x16xf32>
  %cb = llm.broadcast %cos : tensor<4x16xf32> -> tensor<1x2x4x16xf32>
  %sb = llm.broadcast %sin : tensor<4x16xf32> -> tensor<1x2x4x16xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x16xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 8 : i64} : tensor<1x2x4x16xf32> -> tensor<1x2x4x8xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 8 : i64, size = 8 : i64} : tensor<1x2x4x16xf32> -> tensor<1x2x4x8xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x8xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x16xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x16xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x16xf32>
  return %out : tensor<1x2x4x16xf32>
}

// -----

// Negative: stored tables of frequencies that are not a geometric series
// (0.02 instead of 0.01).
// CHECK-LABEL: func.func @stored_tables_not_geometric
// CHECK-NOT: llm.rope
func.func @stored_tables_not_geometric(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %cos = arith.constant dense<[[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0.540302336, 0.995004177, 0.999800026, 0.999999523, 0.540302336, 0.995004177, 0.999800026, 0.999999523], [-0.416146845, 0.980066597, 0.999200106, 0.999998033, -0.416146845, 0.980066597, 0.999200106, 0.999998033], [-0.989992499, 0.955336511, 0.998200536, 0.99999553, -0.989992499, 0.955336511, 0.998200536, 0.99999553]]> : tensor<4x8xf32>
  %sin = arith.constant dense<[[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.841470957, 0.0998334214, 0.0199986659, 0.000999999931, 0.841470957, 0.0998334214, 0.0199986659, 0.000999999931], [0.909297407, 0.198669329, 0.0399893336, 0.0019999987, 0.909297407, 0.198669329, 0.0399893336, 0.0019999987], [0.141120002, 0.295520216, 0.0599640049, 0.0029999956, 0.141120002, 0.295520216, 0.0599640049, 0.0029999956]]> : tensor<4x8xf32>
  %cb = llm.broadcast %cos : tensor<4x8xf32> -> tensor<1x2x4x8xf32>
  %sb = llm.broadcast %sin : tensor<4x8xf32> -> tensor<1x2x4x8xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x8xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x8xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x8xf32>
  return %out : tensor<1x2x4x8xf32>
}

// -----

// Negative: rotary tables scaled by 0.5 (cos^2 + sin^2 != 1): the angles
// are a rope's, the values are not.
// CHECK-LABEL: func.func @stored_tables_scaled
// CHECK-NOT: llm.rope
func.func @stored_tables_scaled(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %cos = arith.constant dense<[[0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], [0.270151168, 0.497502089, 0.499974996, 0.499999762, 0.270151168, 0.497502089, 0.499974996, 0.499999762], [-0.208073422, 0.490033299, 0.499900013, 0.499999017, -0.208073422, 0.490033299, 0.499900013, 0.499999017], [-0.49499625, 0.477668256, 0.499775022, 0.499997765, -0.49499625, 0.477668256, 0.499775022, 0.499997765]]> : tensor<4x8xf32>
  %sin = arith.constant dense<[[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.420735478, 0.0499167107, 0.00499991653, 0.000499999966, 0.420735478, 0.0499167107, 0.00499991653, 0.000499999966], [0.454648703, 0.0993346646, 0.00999933295, 0.000999999349, 0.454648703, 0.0993346646, 0.00999933295, 0.000999999349], [0.0705600008, 0.147760108, 0.0149977496, 0.0014999978, 0.0705600008, 0.147760108, 0.0149977496, 0.0014999978]]> : tensor<4x8xf32>
  %cb = llm.broadcast %cos : tensor<4x8xf32> -> tensor<1x2x4x8xf32>
  %sb = llm.broadcast %sin : tensor<4x8xf32> -> tensor<1x2x4x8xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x8xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x8xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x8xf32>
  return %out : tensor<1x2x4x8xf32>
}

// -----

// Negative: the stored cos and sin tables swapped.
// CHECK-LABEL: func.func @stored_tables_swapped
// CHECK-NOT: llm.rope
func.func @stored_tables_swapped(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %sin = arith.constant dense<[[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0.540302336, 0.995004177, 0.999949992, 0.999999523, 0.540302336, 0.995004177, 0.999949992, 0.999999523], [-0.416146845, 0.980066597, 0.999800026, 0.999998033, -0.416146845, 0.980066597, 0.999800026, 0.999998033], [-0.989992499, 0.955336511, 0.999550045, 0.99999553, -0.989992499, 0.955336511, 0.999550045, 0.99999553]]> : tensor<4x8xf32>
  %cos = arith.constant dense<[[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.841470957, 0.0998334214, 0.00999983307, 0.000999999931, 0.841470957, 0.0998334214, 0.00999983307, 0.000999999931], [0.909297407, 0.198669329, 0.0199986659, 0.0019999987, 0.909297407, 0.198669329, 0.0199986659, 0.0019999987], [0.141120002, 0.295520216, 0.0299954992, 0.0029999956, 0.141120002, 0.295520216, 0.0299954992, 0.0029999956]]> : tensor<4x8xf32>
  %cb = llm.broadcast %cos : tensor<4x8xf32> -> tensor<1x2x4x8xf32>
  %sb = llm.broadcast %sin : tensor<4x8xf32> -> tensor<1x2x4x8xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x8xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x8xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x8xf32>
  return %out : tensor<1x2x4x8xf32>
}

// -----

// Stored tables as initializers kept as llm.weight: read through the
// weights file (WEIGHTS run); without it (the default run) they cannot be
// checked and stay decomposed.
// CHECK-LABEL: func.func @weight_tables
// CHECK-NOT: llm.rope
// WEIGHTS-LABEL: func.func @weight_tables
// WEIGHTS: llm.rope %{{.*}}, %{{.*}} {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, rotary_dim = 8 : i64, theta = 1.000000e+04 : f64} : tensor<4x2x8xf32>
// WEIGHTS-NOT: llm.neg
func.func @weight_tables(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %cos = llm.weight "rope.cos" : tensor<4x8xf32>
  %sin = llm.weight "rope.sin" : tensor<4x8xf32>
  %cb = llm.broadcast %cos : tensor<4x8xf32> -> tensor<1x2x4x8xf32>
  %sb = llm.broadcast %sin : tensor<4x8xf32> -> tensor<1x2x4x8xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x8xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x8xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x8xf32>
  return %out : tensor<1x2x4x8xf32>
}

// -----

// Negative: one stored row (position 1) broadcast over all four tokens:
// the tables do not vary along the sequence, so no per-position angle step.
// CHECK-LABEL: func.func @stored_row_over_tokens
// WEIGHTS-LABEL: func.func @stored_row_over_tokens
// CHECK-NOT: llm.rope
func.func @stored_row_over_tokens(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %cos = arith.constant dense<[[0.540302336, 0.995004177, 0.999949992, 0.999999523, 0.540302336, 0.995004177, 0.999949992, 0.999999523]]> : tensor<1x8xf32>
  %sin = arith.constant dense<[[0.841470957, 0.0998334214, 0.00999983307, 0.000999999931, 0.841470957, 0.0998334214, 0.00999983307, 0.000999999931]]> : tensor<1x8xf32>
  %cb = llm.broadcast %cos : tensor<1x8xf32> -> tensor<1x2x4x8xf32>
  %sb = llm.broadcast %sin : tensor<1x8xf32> -> tensor<1x2x4x8xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x8xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x8xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x8xf32>
  return %out : tensor<1x2x4x8xf32>
}

// -----

// Stored tables of a linearly scaled rope (inv_freq / 4): the first
// column advances by 1/4 per position -> kind = linear, factor 4.
// CHECK-LABEL: func.func @stored_tables_linear
// CHECK: llm.rope %{{.*}}, %{{.*}} {factor = 4.000000e+00 : f64, kind = #llm<rope_kind linear>, layout = #llm<rope_layout half_split>, rotary_dim = 8 : i64, theta = 1.000000e+04 : f64} : tensor<4x2x8xf32>
// WEIGHTS-LABEL: func.func @stored_tables_linear
func.func @stored_tables_linear(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %cos = arith.constant dense<[[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0.968912423, 0.999687552, 0.999996901, 1.0, 0.968912423, 0.999687552, 0.999996901, 1.0], [0.87758255, 0.998750269, 0.999987543, 0.999999881, 0.87758255, 0.998750269, 0.999987543, 0.999999881], [0.731688857, 0.997188807, 0.999971867, 0.999999702, 0.731688857, 0.997188807, 0.999971867, 0.999999702]]> : tensor<4x8xf32>
  %sin = arith.constant dense<[[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.247403964, 0.0249973964, 0.00249999738, 0.000250000012, 0.247403964, 0.0249973964, 0.00249999738, 0.000250000012], [0.47942555, 0.0499791689, 0.00499997893, 0.000500000024, 0.47942555, 0.0499791689, 0.00499997893, 0.000500000024], [0.681638777, 0.0749297068, 0.00749992952, 0.000749999948, 0.681638777, 0.0749297068, 0.00749992952, 0.000749999948]]> : tensor<4x8xf32>
  %cb = llm.broadcast %cos : tensor<4x8xf32> -> tensor<1x2x4x8xf32>
  %sb = llm.broadcast %sin : tensor<4x8xf32> -> tensor<1x2x4x8xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x8xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x8xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x8xf32>
  return %out : tensor<1x2x4x8xf32>
}
