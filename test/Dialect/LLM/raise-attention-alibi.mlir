// RUN: pimc-opt %s --split-input-file --llm-raise-attention | FileCheck %s

// ALiBi as transformers' sdpa path for Falcon-RW / BLOOM writes it: the bias
// folded into the mask, select(hidden, finfo.min, alibi / sqrt(hd)), with
// alibi = bf16(bf16 slopes * bf16(positions)). It becomes llm.attention's
// alibi_slopes (ref::alibiSlopes(4): 2^-2, 2^-4, 2^-6, 2^-8) after the bias
// is checked with the positions moved up to 2^20.
// CHECK-LABEL: func.func @alibi_sdpa
// CHECK: llm.attention {{.*}}alibi_slopes = array<f32: 2.500000e-01, 6.250000e-02, 1.562500e-02, 3.906250e-03>, scale = 2.500000e-01 : f32}
// CHECK-NOT: llm.softmax

func.func @alibi_sdpa(%q: tensor<1x4x4x16xf32>, %k: tensor<1x4x4x16xf32>, %v: tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32> {
  %pos = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %posf = llm.convert %pos : tensor<4xi64> -> tensor<4xf32>
  %posb = llm.cast %posf : tensor<4xf32> to tensor<4xbf16>
  %posw = llm.cast %posb : tensor<4xbf16> to tensor<4xf32>
  %pb = llm.broadcast %posw : tensor<4xf32> -> tensor<4x4xf32>
  %slopes = arith.constant dense<[[0.25], [0.0625], [0.015625], [0.00390625]]> : tensor<4x1xf32>
  %sb = llm.broadcast %slopes : tensor<4x1xf32> -> tensor<4x4xf32>
  %prod = llm.mul %pb, %sb : tensor<4x4xf32>
  %pr = llm.cast %prod : tensor<4x4xf32> to tensor<4x4xbf16>
  %pw = llm.cast %pr : tensor<4x4xbf16> to tensor<4x4xf32>
  %d = arith.constant dense<4.0> : tensor<4x4xf32>
  %div = llm.div %pw, %d : tensor<4x4xf32>
  %b4 = llm.reshape %div : tensor<4x4xf32> -> tensor<1x4x1x4xf32>
  %bb = llm.broadcast %b4 : tensor<1x4x1x4xf32> -> tensor<1x4x4x4xf32>
  %hide = arith.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %hb = llm.broadcast %hide : tensor<4x4xi1> -> tensor<1x4x4x4xi1>
  %min = arith.constant dense<-3.40282347E+38> : tensor<1x4x4x4xf32>
  %mask = llm.select %hb, %min, %bb : tensor<1x4x4x4xi1>, tensor<1x4x4x4xf32>
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x4x16xf32> -> tensor<1x4x16x4xf32>
  %s = llm.matmul %q, %kt : (tensor<1x4x4x16xf32>, tensor<1x4x16x4xf32>) -> tensor<1x4x4x4xf32>
  %ss = llm.scale %s {factor = 0.25 : f32} : tensor<1x4x4x4xf32>
  %z = llm.add %ss, %mask : tensor<1x4x4x4xf32>
  %p = llm.softmax %z {axis = 3 : i64} : tensor<1x4x4x4xf32>
  %o = llm.matmul %p, %v : (tensor<1x4x4x4xf32>, tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  return %o : tensor<1x4x4x16xf32>
}

// -----

// The same bias with the positions and the product in f32: equal to ALiBi
// at the traced keys 0..3, but not from key 257 on, where bf16 rounds the
// position (257 -> 256). It must not fire.
// CHECK-LABEL: func.func @alibi_f32_positions
// CHECK-NOT: llm.attention
// CHECK: llm.softmax

func.func @alibi_f32_positions(%q: tensor<1x4x4x16xf32>, %k: tensor<1x4x4x16xf32>, %v: tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32> {
  %pos = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %posf = llm.convert %pos : tensor<4xi64> -> tensor<4xf32>
  %pb = llm.broadcast %posf : tensor<4xf32> -> tensor<4x4xf32>
  %slopes = arith.constant dense<[[0.25], [0.0625], [0.015625], [0.00390625]]> : tensor<4x1xf32>
  %sb = llm.broadcast %slopes : tensor<4x1xf32> -> tensor<4x4xf32>
  %prod = llm.mul %pb, %sb : tensor<4x4xf32>
  %pw = llm.scale %prod {factor = 1.0 : f32} : tensor<4x4xf32>
  %d = arith.constant dense<4.0> : tensor<4x4xf32>
  %div = llm.div %pw, %d : tensor<4x4xf32>
  %b4 = llm.reshape %div : tensor<4x4xf32> -> tensor<1x4x1x4xf32>
  %bb = llm.broadcast %b4 : tensor<1x4x1x4xf32> -> tensor<1x4x4x4xf32>
  %hide = arith.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %hb = llm.broadcast %hide : tensor<4x4xi1> -> tensor<1x4x4x4xi1>
  %min = arith.constant dense<-3.40282347E+38> : tensor<1x4x4x4xf32>
  %mask = llm.select %hb, %min, %bb : tensor<1x4x4x4xi1>, tensor<1x4x4x4xf32>
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x4x16xf32> -> tensor<1x4x16x4xf32>
  %s = llm.matmul %q, %kt : (tensor<1x4x4x16xf32>, tensor<1x4x16x4xf32>) -> tensor<1x4x4x4xf32>
  %ss = llm.scale %s {factor = 0.25 : f32} : tensor<1x4x4x4xf32>
  %z = llm.add %ss, %mask : tensor<1x4x4x4xf32>
  %p = llm.softmax %z {axis = 3 : i64} : tensor<1x4x4x4xf32>
  %o = llm.matmul %p, %v : (tensor<1x4x4x4xf32>, tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  return %o : tensor<1x4x4x16xf32>
}

// -----

// The ALiBi values as a fixed table: nothing says what later keys get, so
// it must not fire.
// CHECK-LABEL: func.func @alibi_fixed_table
// CHECK-NOT: llm.attention
// CHECK: llm.softmax

func.func @alibi_fixed_table(%q: tensor<1x4x4x16xf32>, %k: tensor<1x4x4x16xf32>, %v: tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32> {
  %pw = arith.constant dense<[[0.0, 0.25, 0.5, 0.75], [0.0, 0.0625, 0.125, 0.1875], [0.0, 0.015625, 0.03125, 0.046875], [0.0, 0.00390625, 0.0078125, 0.01171875]]> : tensor<4x4xf32>
  %d = arith.constant dense<4.0> : tensor<4x4xf32>
  %div = llm.div %pw, %d : tensor<4x4xf32>
  %b4 = llm.reshape %div : tensor<4x4xf32> -> tensor<1x4x1x4xf32>
  %bb = llm.broadcast %b4 : tensor<1x4x1x4xf32> -> tensor<1x4x4x4xf32>
  %hide = arith.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %hb = llm.broadcast %hide : tensor<4x4xi1> -> tensor<1x4x4x4xi1>
  %min = arith.constant dense<-3.40282347E+38> : tensor<1x4x4x4xf32>
  %mask = llm.select %hb, %min, %bb : tensor<1x4x4x4xi1>, tensor<1x4x4x4xf32>
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x4x16xf32> -> tensor<1x4x16x4xf32>
  %s = llm.matmul %q, %kt : (tensor<1x4x4x16xf32>, tensor<1x4x16x4xf32>) -> tensor<1x4x4x4xf32>
  %ss = llm.scale %s {factor = 0.25 : f32} : tensor<1x4x4x4xf32>
  %z = llm.add %ss, %mask : tensor<1x4x4x4xf32>
  %p = llm.softmax %z {axis = 3 : i64} : tensor<1x4x4x4xf32>
  %o = llm.matmul %p, %v : (tensor<1x4x4x4xf32>, tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  return %o : tensor<1x4x4x16xf32>
}

// -----

// A bias scaled by 1/2, not by the scores' 1/4: not (q.k + alibi) * scale.
// CHECK-LABEL: func.func @alibi_wrong_scale
// CHECK-NOT: llm.attention
// CHECK: llm.softmax

func.func @alibi_wrong_scale(%q: tensor<1x4x4x16xf32>, %k: tensor<1x4x4x16xf32>, %v: tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32> {
  %pos = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %posf = llm.convert %pos : tensor<4xi64> -> tensor<4xf32>
  %posb = llm.cast %posf : tensor<4xf32> to tensor<4xbf16>
  %posw = llm.cast %posb : tensor<4xbf16> to tensor<4xf32>
  %pb = llm.broadcast %posw : tensor<4xf32> -> tensor<4x4xf32>
  %slopes = arith.constant dense<[[0.25], [0.0625], [0.015625], [0.00390625]]> : tensor<4x1xf32>
  %sb = llm.broadcast %slopes : tensor<4x1xf32> -> tensor<4x4xf32>
  %prod = llm.mul %pb, %sb : tensor<4x4xf32>
  %pr = llm.cast %prod : tensor<4x4xf32> to tensor<4x4xbf16>
  %pw = llm.cast %pr : tensor<4x4xbf16> to tensor<4x4xf32>
  %d = arith.constant dense<2.0> : tensor<4x4xf32>
  %div = llm.div %pw, %d : tensor<4x4xf32>
  %b4 = llm.reshape %div : tensor<4x4xf32> -> tensor<1x4x1x4xf32>
  %bb = llm.broadcast %b4 : tensor<1x4x1x4xf32> -> tensor<1x4x4x4xf32>
  %hide = arith.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %hb = llm.broadcast %hide : tensor<4x4xi1> -> tensor<1x4x4x4xi1>
  %min = arith.constant dense<-3.40282347E+38> : tensor<1x4x4x4xf32>
  %mask = llm.select %hb, %min, %bb : tensor<1x4x4x4xi1>, tensor<1x4x4x4xf32>
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x4x16xf32> -> tensor<1x4x16x4xf32>
  %s = llm.matmul %q, %kt : (tensor<1x4x4x16xf32>, tensor<1x4x16x4xf32>) -> tensor<1x4x4x4xf32>
  %ss = llm.scale %s {factor = 0.25 : f32} : tensor<1x4x4x4xf32>
  %z = llm.add %ss, %mask : tensor<1x4x4x4xf32>
  %p = llm.softmax %z {axis = 3 : i64} : tensor<1x4x4x4xf32>
  %o = llm.matmul %p, %v : (tensor<1x4x4x4xf32>, tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  return %o : tensor<1x4x4x16xf32>
}

// -----

// Relative positions (m * (s - 3)): the same softmax at one query, but not
// llm.attention's absolute bf16 bias. It must not fire.
// CHECK-LABEL: func.func @alibi_relative
// CHECK-NOT: llm.attention
// CHECK: llm.softmax

func.func @alibi_relative(%q: tensor<1x4x4x16xf32>, %k: tensor<1x4x4x16xf32>, %v: tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32> {
  %pos = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %posf = llm.convert %pos : tensor<4xi64> -> tensor<4xf32>
  %last = arith.constant dense<3.0> : tensor<4xf32>
  %rel = llm.sub %posf, %last : tensor<4xf32>
  %pb = llm.broadcast %rel : tensor<4xf32> -> tensor<4x4xf32>
  %slopes = arith.constant dense<[[0.25], [0.0625], [0.015625], [0.00390625]]> : tensor<4x1xf32>
  %sb = llm.broadcast %slopes : tensor<4x1xf32> -> tensor<4x4xf32>
  %prod = llm.mul %pb, %sb : tensor<4x4xf32>
  %pw = llm.scale %prod {factor = 1.0 : f32} : tensor<4x4xf32>
  %d = arith.constant dense<4.0> : tensor<4x4xf32>
  %div = llm.div %pw, %d : tensor<4x4xf32>
  %b4 = llm.reshape %div : tensor<4x4xf32> -> tensor<1x4x1x4xf32>
  %bb = llm.broadcast %b4 : tensor<1x4x1x4xf32> -> tensor<1x4x4x4xf32>
  %hide = arith.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %hb = llm.broadcast %hide : tensor<4x4xi1> -> tensor<1x4x4x4xi1>
  %min = arith.constant dense<-3.40282347E+38> : tensor<1x4x4x4xf32>
  %mask = llm.select %hb, %min, %bb : tensor<1x4x4x4xi1>, tensor<1x4x4x4xf32>
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x4x16xf32> -> tensor<1x4x16x4xf32>
  %s = llm.matmul %q, %kt : (tensor<1x4x4x16xf32>, tensor<1x4x16x4xf32>) -> tensor<1x4x4x4xf32>
  %ss = llm.scale %s {factor = 0.25 : f32} : tensor<1x4x4x4xf32>
  %z = llm.add %ss, %mask : tensor<1x4x4x4xf32>
  %p = llm.softmax %z {axis = 3 : i64} : tensor<1x4x4x4xf32>
  %o = llm.matmul %p, %v : (tensor<1x4x4x4xf32>, tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  return %o : tensor<1x4x4x16xf32>
}
