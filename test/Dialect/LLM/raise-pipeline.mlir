// RUN: pimc-opt %s --split-input-file --llm-raise | FileCheck %s

// The pipeline leaves what it cannot prove alone and never fails on it:
// unranked and dynamically shaped element-wise graphs, a dynamic sequence
// length in an RMS norm (the fused op takes the static feature size only).
// CHECK-LABEL: func.func @unranked_and_dynamic
// CHECK: llm.mul %arg0, %arg0 : tensor<*xf32>
// CHECK: llm.rms_norm %arg1, %{{.*}} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
func.func @unranked_and_dynamic(%u: tensor<*xf32>, %x: tensor<?x8xf32>, %r: tensor<?x1xf32>) -> (tensor<*xf32>, tensor<?x8xf32>) {
  %sq = llm.mul %u, %u : tensor<*xf32>
  %w = llm.weight "w" : tensor<8xf32>
  %xx = llm.mul %x, %x : tensor<?x8xf32>
  %m = llm.reduce mean %xx {axis = 1 : i64, keep_dim = true} : tensor<?x8xf32> -> tensor<?x1xf32>
  %eps = arith.constant dense<1.0e-5> : tensor<f32>
  %epsb = llm.broadcast %eps : tensor<f32> -> tensor<?x1xf32>
  %v = llm.add %m, %epsb : tensor<?x1xf32>
  %rs = llm.rsqrt %v : tensor<?x1xf32>
  %rb = llm.broadcast %rs : tensor<?x1xf32> -> tensor<?x8xf32>
  %n = llm.mul %x, %rb : tensor<?x8xf32>
  %wb = llm.broadcast %w : tensor<8xf32> -> tensor<?x8xf32>
  %y = llm.mul %n, %wb : tensor<?x8xf32>
  return %sq, %y : tensor<*xf32>, tensor<?x8xf32>
}

// -----

// Dynamic attention shapes are not raised (the mask could not be checked).
// CHECK-LABEL: func.func @dynamic_attention
// CHECK-NOT: llm.attention
// CHECK: llm.softmax
func.func @dynamic_attention(%q: tensor<2x?x8xf32>, %kt: tensor<2x8x?xf32>, %v: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
  %s = llm.matmul %q, %kt : (tensor<2x?x8xf32>, tensor<2x8x?xf32>) -> tensor<2x?x?xf32>
  %p = llm.softmax %s {axis = 2 : i64} : tensor<2x?x?xf32>
  %o = llm.matmul %p, %v : (tensor<2x?x?xf32>, tensor<2x?x8xf32>) -> tensor<2x?x8xf32>
  return %o : tensor<2x?x8xf32>
}

// -----

// Already fused ops (SDPA imported as llm.attention, native layer norm)
// pass through unchanged.
// CHECK-LABEL: func.func @already_fused
// CHECK: llm.layer_norm
// CHECK: llm.attention
func.func @already_fused(%x: tensor<4x2x8xf32>) -> tensor<4x2x8xf32> {
  %w = llm.weight "ln.weight" : tensor<8xf32>
  %n = llm.layer_norm %x weight %w {epsilon = 1.0e-5 : f32} : (tensor<4x2x8xf32>, tensor<8xf32>) -> tensor<4x2x8xf32>
  %a = llm.attention %n, %n, %n {scale = 0.35355 : f32} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
  return %a : tensor<4x2x8xf32>
}
