// RUN: pimc-opt %s --split-input-file --llm-raise-rope | FileCheck %s
//
// Longrope (Phi-3, Phi-3.5, Phi-4-mini) as transformers traces it: the
// inverse frequencies are select(max(position) + 1 > L0, long, short), with
// both divisor lists in the graph, and cos and sin are scaled by
// sqrt(1 + ln(factor) / ln(L0)). The pattern evaluates both branches, reads
// L0 off the compare and checks the condition at shifted positions (densely
// around L0 and far beyond), recovers factor from the scale and the divisors
// under theta 1e4, and checks the traced table and the other branch against
// the reference kernels. Here: d = 8, short [1, 1.5, 2, 3], long
// [1, 4, 8, 16], L0 = 16, factor 64 / 16 = 4 (scale sqrt(1.5)).

// CHECK-LABEL: func.func @longrope
// CHECK: llm.rope %{{.*}}, %{{.*}} {factor = 4.000000e+00 : f64, kind = #llm<rope_kind longrope>, layout = #llm<rope_layout half_split>, long_factor = array<f64: 1.000000e+00, 4.000000e+00, 8.000000e+00, 1.600000e+01>, original_max_position_embeddings = 16 : i64, rotary_dim = 8 : i64, short_factor = array<f64: 1.000000e+00, 1.500000e+00, 2.000000e+00, 3.000000e+00>, theta = 1.000000e+04 : f64} : tensor<4x2x8xf32>
// CHECK-NOT: llm.cos
func.func @longrope(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %pos = arith.constant dense<[0.0, 1.0, 2.0, 3.0]> : tensor<4xf32>
  %posc = arith.constant dense<[[[0.0], [1.0], [2.0], [3.0]]]> : tensor<1x4x1xf32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %l0 = arith.constant dense<16> : tensor<i64>
  %short = arith.constant dense<[1.0, 0.0666666701, 0.00499999989, 0.00033333333]> : tensor<4xf32>
  %long = arith.constant dense<[1.0, 0.0250000004, 0.00124999997, 6.2500003e-05]> : tensor<4xf32>
  %m = llm.reduce max %pos {axis = 0 : i64} : tensor<4xf32> -> tensor<f32>
  %m1 = llm.add %m, %one : tensor<f32>
  %mi = llm.convert %m1 : tensor<f32> -> tensor<i64>
  %gt = llm.compare gt %mi, %l0 : tensor<i64> -> tensor<i1>
  %gb = llm.broadcast %gt : tensor<i1> -> tensor<4xi1>
  %inv = llm.select %gb, %long, %short : tensor<4xi1>, tensor<4xf32>
  %ib = llm.broadcast %inv : tensor<4xf32> -> tensor<1x4x4xf32>
  %pb = llm.broadcast %posc : tensor<1x4x1xf32> -> tensor<1x4x4xf32>
  %fr = llm.mul %ib, %pb : tensor<1x4x4xf32>
  %emb = llm.concat %fr, %fr {axis = 2 : i64} : (tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x8xf32>
  %c = llm.cos %emb : tensor<1x4x8xf32>
  %s = llm.sin %emb : tensor<1x4x8xf32>
  %cs = llm.scale %c {factor = 1.22474487 : f32} : tensor<1x4x8xf32>
  %ss = llm.scale %s {factor = 1.22474487 : f32} : tensor<1x4x8xf32>
  %cu = llm.reshape %cs : tensor<1x4x8xf32> -> tensor<1x1x4x8xf32>
  %su = llm.reshape %ss : tensor<1x4x8xf32> -> tensor<1x1x4x8xf32>
  %cb = llm.broadcast %cu : tensor<1x1x4x8xf32> -> tensor<1x2x4x8xf32>
  %sb = llm.broadcast %su : tensor<1x1x4x8xf32> -> tensor<1x2x4x8xf32>
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

// Negative: the switch is max(position) + 2 > 16, so the long factors would
// start one position early; the shifted-position check sees it and nothing
// is raised (the short table alone is no rope kind).
// CHECK-LABEL: func.func @switch_off_by_one
// CHECK-NOT: llm.rope
// CHECK: llm.cos
func.func @switch_off_by_one(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %pos = arith.constant dense<[0.0, 1.0, 2.0, 3.0]> : tensor<4xf32>
  %posc = arith.constant dense<[[[0.0], [1.0], [2.0], [3.0]]]> : tensor<1x4x1xf32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %l0 = arith.constant dense<16> : tensor<i64>
  %short = arith.constant dense<[1.0, 0.0666666701, 0.00499999989, 0.00033333333]> : tensor<4xf32>
  %long = arith.constant dense<[1.0, 0.0250000004, 0.00124999997, 6.2500003e-05]> : tensor<4xf32>
  %m = llm.reduce max %pos {axis = 0 : i64} : tensor<4xf32> -> tensor<f32>
  %m1 = llm.add %m, %two : tensor<f32>
  %mi = llm.convert %m1 : tensor<f32> -> tensor<i64>
  %gt = llm.compare gt %mi, %l0 : tensor<i64> -> tensor<i1>
  %gb = llm.broadcast %gt : tensor<i1> -> tensor<4xi1>
  %inv = llm.select %gb, %long, %short : tensor<4xi1>, tensor<4xf32>
  %ib = llm.broadcast %inv : tensor<4xf32> -> tensor<1x4x4xf32>
  %pb = llm.broadcast %posc : tensor<1x4x1xf32> -> tensor<1x4x4xf32>
  %fr = llm.mul %ib, %pb : tensor<1x4x4xf32>
  %emb = llm.concat %fr, %fr {axis = 2 : i64} : (tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x8xf32>
  %c = llm.cos %emb : tensor<1x4x8xf32>
  %s = llm.sin %emb : tensor<1x4x8xf32>
  %cs = llm.scale %c {factor = 1.22474487 : f32} : tensor<1x4x8xf32>
  %ss = llm.scale %s {factor = 1.22474487 : f32} : tensor<1x4x8xf32>
  %cu = llm.reshape %cs : tensor<1x4x8xf32> -> tensor<1x1x4x8xf32>
  %su = llm.reshape %ss : tensor<1x4x8xf32> -> tensor<1x1x4x8xf32>
  %cb = llm.broadcast %cu : tensor<1x1x4x8xf32> -> tensor<1x2x4x8xf32>
  %sb = llm.broadcast %su : tensor<1x1x4x8xf32> -> tensor<1x2x4x8xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x8xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x8xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x8xf32>
  return %out : tensor<1x2x4x8xf32>
}
