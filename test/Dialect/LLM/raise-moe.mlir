// RUN: pimc-opt %s --split-input-file --llm-raise-moe | FileCheck %s
// Dense MoE blocks as the FX importer lowers MixtralSparseMoeBlock(dispatch=
// "dense"): scatter becomes a one-hot compare, a max for the hit mask and a
// sum of one-hot * src.

// Mixtral: softmax router, top-2, renormalised, scattered into a [T, E]
// routing matrix, every expert on every token, weighted sum over the experts.
// CHECK-LABEL: func.func @mixtral_dense
// CHECK: %[[WR:.*]] = llm.weight "gate.weight"
// CHECK: %[[Y:.*]] = llm.moe %arg0 router %[[WR]] experts gate[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] up[{{.*}}] down[{{.*}}] {renormalize = true, top_k = 2 : i64}
// CHECK-NOT: llm.gated_mlp
// CHECK-NOT: llm.topk
// CHECK: return %[[Y]]
func.func @mixtral_dense(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<4x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x4xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %idxc = llm.reshape %idx : tensor<4x2xi64> -> tensor<4x2x1xi64>
  %idxb = llm.broadcast %idxc : tensor<4x2x1xi64> -> tensor<4x2x4xi64>
  %range = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %rangeb = llm.broadcast %range : tensor<4xi64> -> tensor<4x2x4xi64>
  %eq = llm.compare eq %idxb, %rangeb : tensor<4x2x4xi64> -> tensor<4x2x4xi1>
  %hot = llm.convert %eq : tensor<4x2x4xi1> -> tensor<4x2x4xf32>
  %hit = llm.reduce max %hot {axis = 1 : i64} : tensor<4x2x4xf32> -> tensor<4x4xf32>
  %zero = arith.constant dense<0.0> : tensor<4x4xf32>
  %mask = llm.compare ne %hit, %zero : tensor<4x4xf32> -> tensor<4x4xi1>
  %wc = llm.reshape %w : tensor<4x2xf32> -> tensor<4x2x1xf32>
  %wb = llm.broadcast %wc : tensor<4x2x1xf32> -> tensor<4x2x4xf32>
  %prod = llm.mul %hot, %wb : tensor<4x2x4xf32>
  %val = llm.reduce sum %prod {axis = 1 : i64} : tensor<4x2x4xf32> -> tensor<4x4xf32>
  %routing = llm.select %mask, %val, %zero : tensor<4x4xi1>, tensor<4x4xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %g1 = llm.weight "e.1.w1" : tensor<16x8xf32>
  %u1 = llm.weight "e.1.w3" : tensor<16x8xf32>
  %d1 = llm.weight "e.1.w2" : tensor<8x16xf32>
  %g2 = llm.weight "e.2.w1" : tensor<16x8xf32>
  %u2 = llm.weight "e.2.w3" : tensor<16x8xf32>
  %d2 = llm.weight "e.2.w2" : tensor<8x16xf32>
  %g3 = llm.weight "e.3.w1" : tensor<16x8xf32>
  %u3 = llm.weight "e.3.w3" : tensor<16x8xf32>
  %d3 = llm.weight "e.3.w2" : tensor<8x16xf32>
  %e0 = llm.gated_mlp %x, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r0 = llm.reshape %e0 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e1 = llm.gated_mlp %x, %g1, %u1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r1 = llm.reshape %e1 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e2 = llm.gated_mlp %x, %g2, %u2, %d2 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r2 = llm.reshape %e2 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e3 = llm.gated_mlp %x, %g3, %u3, %d3 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r3 = llm.reshape %e3 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %stk = llm.concat %r0, %r1, %r2, %r3 {axis = 1 : i64} : (tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>) -> tensor<4x4x8xf32>
  %rc = llm.reshape %routing : tensor<4x4xf32> -> tensor<4x4x1xf32>
  %rb = llm.broadcast %rc : tensor<4x4x1xf32> -> tensor<4x4x8xf32>
  %m = llm.mul %rb, %stk : tensor<4x4x8xf32>
  %y = llm.reduce sum %m {axis = 1 : i64} : tensor<4x4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Sigmoid scores, no renormalisation, a routed scaling factor of 2.5
// (DeepSeek-style routing) and GeGLU experts.
// CHECK-LABEL: func.func @sigmoid_scaled
// CHECK: llm.moe {{.*}}{activation = #llm<activation gelu_tanh>, routed_scaling_factor = 2.500000e+00 : f32, scoring = #llm<moe_scoring sigmoid>, top_k = 2 : i64}
func.func @sigmoid_scaled(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<4x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %probs = llm.sigmoid %logits : tensor<4x4xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %c = arith.constant dense<2.5> : tensor<4x2xf32>
  %w = llm.mul %vals, %c : tensor<4x2xf32>
  %idxc = llm.reshape %idx : tensor<4x2xi64> -> tensor<4x2x1xi64>
  %idxb = llm.broadcast %idxc : tensor<4x2x1xi64> -> tensor<4x2x4xi64>
  %range = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %rangeb = llm.broadcast %range : tensor<4xi64> -> tensor<4x2x4xi64>
  %eq = llm.compare eq %idxb, %rangeb : tensor<4x2x4xi64> -> tensor<4x2x4xi1>
  %hot = llm.convert %eq : tensor<4x2x4xi1> -> tensor<4x2x4xf32>
  %hit = llm.reduce max %hot {axis = 1 : i64} : tensor<4x2x4xf32> -> tensor<4x4xf32>
  %zero = arith.constant dense<0.0> : tensor<4x4xf32>
  %mask = llm.compare ne %hit, %zero : tensor<4x4xf32> -> tensor<4x4xi1>
  %wc = llm.reshape %w : tensor<4x2xf32> -> tensor<4x2x1xf32>
  %wb = llm.broadcast %wc : tensor<4x2x1xf32> -> tensor<4x2x4xf32>
  %prod = llm.mul %hot, %wb : tensor<4x2x4xf32>
  %val = llm.reduce sum %prod {axis = 1 : i64} : tensor<4x2x4xf32> -> tensor<4x4xf32>
  %routing = llm.select %mask, %val, %zero : tensor<4x4xi1>, tensor<4x4xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %g1 = llm.weight "e.1.w1" : tensor<16x8xf32>
  %u1 = llm.weight "e.1.w3" : tensor<16x8xf32>
  %d1 = llm.weight "e.1.w2" : tensor<8x16xf32>
  %g2 = llm.weight "e.2.w1" : tensor<16x8xf32>
  %u2 = llm.weight "e.2.w3" : tensor<16x8xf32>
  %d2 = llm.weight "e.2.w2" : tensor<8x16xf32>
  %g3 = llm.weight "e.3.w1" : tensor<16x8xf32>
  %u3 = llm.weight "e.3.w3" : tensor<16x8xf32>
  %d3 = llm.weight "e.3.w2" : tensor<8x16xf32>
  %e0 = llm.gated_mlp %x, %g0, %u0, %d0 {activation = #llm<activation gelu_tanh>} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r0 = llm.reshape %e0 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e1 = llm.gated_mlp %x, %g1, %u1, %d1 {activation = #llm<activation gelu_tanh>} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r1 = llm.reshape %e1 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e2 = llm.gated_mlp %x, %g2, %u2, %d2 {activation = #llm<activation gelu_tanh>} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r2 = llm.reshape %e2 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e3 = llm.gated_mlp %x, %g3, %u3, %d3 {activation = #llm<activation gelu_tanh>} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r3 = llm.reshape %e3 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %stk = llm.concat %r0, %r1, %r2, %r3 {axis = 1 : i64} : (tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>) -> tensor<4x4x8xf32>
  %rc = llm.reshape %routing : tensor<4x4xf32> -> tensor<4x4x1xf32>
  %rb = llm.broadcast %rc : tensor<4x4x1xf32> -> tensor<4x4x8xf32>
  %m = llm.mul %rb, %stk : tensor<4x4x8xf32>
  %y = llm.reduce sum %m {axis = 1 : i64} : tensor<4x4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Negative: the router softmax runs over the tokens (axis 0), which is no
// llm.moe routing; the experts stay.
// CHECK-LABEL: func.func @softmax_over_tokens
// CHECK-NOT: llm.moe
// CHECK: llm.gated_mlp
func.func @softmax_over_tokens(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<4x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %probs = llm.softmax %logits {axis = 0 : i64} : tensor<4x4xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %idxc = llm.reshape %idx : tensor<4x2xi64> -> tensor<4x2x1xi64>
  %idxb = llm.broadcast %idxc : tensor<4x2x1xi64> -> tensor<4x2x4xi64>
  %range = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %rangeb = llm.broadcast %range : tensor<4xi64> -> tensor<4x2x4xi64>
  %eq = llm.compare eq %idxb, %rangeb : tensor<4x2x4xi64> -> tensor<4x2x4xi1>
  %hot = llm.convert %eq : tensor<4x2x4xi1> -> tensor<4x2x4xf32>
  %hit = llm.reduce max %hot {axis = 1 : i64} : tensor<4x2x4xf32> -> tensor<4x4xf32>
  %zero = arith.constant dense<0.0> : tensor<4x4xf32>
  %mask = llm.compare ne %hit, %zero : tensor<4x4xf32> -> tensor<4x4xi1>
  %wc = llm.reshape %w : tensor<4x2xf32> -> tensor<4x2x1xf32>
  %wb = llm.broadcast %wc : tensor<4x2x1xf32> -> tensor<4x2x4xf32>
  %prod = llm.mul %hot, %wb : tensor<4x2x4xf32>
  %val = llm.reduce sum %prod {axis = 1 : i64} : tensor<4x2x4xf32> -> tensor<4x4xf32>
  %routing = llm.select %mask, %val, %zero : tensor<4x4xi1>, tensor<4x4xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %g1 = llm.weight "e.1.w1" : tensor<16x8xf32>
  %u1 = llm.weight "e.1.w3" : tensor<16x8xf32>
  %d1 = llm.weight "e.1.w2" : tensor<8x16xf32>
  %g2 = llm.weight "e.2.w1" : tensor<16x8xf32>
  %u2 = llm.weight "e.2.w3" : tensor<16x8xf32>
  %d2 = llm.weight "e.2.w2" : tensor<8x16xf32>
  %g3 = llm.weight "e.3.w1" : tensor<16x8xf32>
  %u3 = llm.weight "e.3.w3" : tensor<16x8xf32>
  %d3 = llm.weight "e.3.w2" : tensor<8x16xf32>
  %e0 = llm.gated_mlp %x, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r0 = llm.reshape %e0 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e1 = llm.gated_mlp %x, %g1, %u1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r1 = llm.reshape %e1 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e2 = llm.gated_mlp %x, %g2, %u2, %d2 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r2 = llm.reshape %e2 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e3 = llm.gated_mlp %x, %g3, %u3, %d3 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r3 = llm.reshape %e3 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %stk = llm.concat %r0, %r1, %r2, %r3 {axis = 1 : i64} : (tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>) -> tensor<4x4x8xf32>
  %rc = llm.reshape %routing : tensor<4x4xf32> -> tensor<4x4x1xf32>
  %rb = llm.broadcast %rc : tensor<4x4x1xf32> -> tensor<4x4x8xf32>
  %m = llm.mul %rb, %stk : tensor<4x4x8xf32>
  %y = llm.reduce sum %m {axis = 1 : i64} : tensor<4x4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Negative: the weights scattered are 1 - p (not a routing function), and
// the experts read another tensor than the router.
// CHECK-LABEL: func.func @not_a_router
// CHECK-NOT: llm.moe
func.func @not_a_router(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %wr = llm.weight "gate.weight" : tensor<4x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x4xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %one = arith.constant dense<1.0> : tensor<4x2xf32>
  %w = llm.sub %one, %vals : tensor<4x2xf32>
  %idxc = llm.reshape %idx : tensor<4x2xi64> -> tensor<4x2x1xi64>
  %idxb = llm.broadcast %idxc : tensor<4x2x1xi64> -> tensor<4x2x4xi64>
  %range = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %rangeb = llm.broadcast %range : tensor<4xi64> -> tensor<4x2x4xi64>
  %eq = llm.compare eq %idxb, %rangeb : tensor<4x2x4xi64> -> tensor<4x2x4xi1>
  %hot = llm.convert %eq : tensor<4x2x4xi1> -> tensor<4x2x4xf32>
  %hit = llm.reduce max %hot {axis = 1 : i64} : tensor<4x2x4xf32> -> tensor<4x4xf32>
  %zero = arith.constant dense<0.0> : tensor<4x4xf32>
  %mask = llm.compare ne %hit, %zero : tensor<4x4xf32> -> tensor<4x4xi1>
  %wc = llm.reshape %w : tensor<4x2xf32> -> tensor<4x2x1xf32>
  %wb = llm.broadcast %wc : tensor<4x2x1xf32> -> tensor<4x2x4xf32>
  %prod = llm.mul %hot, %wb : tensor<4x2x4xf32>
  %val = llm.reduce sum %prod {axis = 1 : i64} : tensor<4x2x4xf32> -> tensor<4x4xf32>
  %routing = llm.select %mask, %val, %zero : tensor<4x4xi1>, tensor<4x4xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %g1 = llm.weight "e.1.w1" : tensor<16x8xf32>
  %u1 = llm.weight "e.1.w3" : tensor<16x8xf32>
  %d1 = llm.weight "e.1.w2" : tensor<8x16xf32>
  %g2 = llm.weight "e.2.w1" : tensor<16x8xf32>
  %u2 = llm.weight "e.2.w3" : tensor<16x8xf32>
  %d2 = llm.weight "e.2.w2" : tensor<8x16xf32>
  %g3 = llm.weight "e.3.w1" : tensor<16x8xf32>
  %u3 = llm.weight "e.3.w3" : tensor<16x8xf32>
  %d3 = llm.weight "e.3.w2" : tensor<8x16xf32>
  %e0 = llm.gated_mlp %x, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r0 = llm.reshape %e0 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e1 = llm.gated_mlp %x, %g1, %u1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r1 = llm.reshape %e1 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e2 = llm.gated_mlp %x, %g2, %u2, %d2 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r2 = llm.reshape %e2 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e3 = llm.gated_mlp %x, %g3, %u3, %d3 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r3 = llm.reshape %e3 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %stk = llm.concat %r0, %r1, %r2, %r3 {axis = 1 : i64} : (tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>) -> tensor<4x4x8xf32>
  %rc = llm.reshape %routing : tensor<4x4xf32> -> tensor<4x4x1xf32>
  %rb = llm.broadcast %rc : tensor<4x4x1xf32> -> tensor<4x4x8xf32>
  %m = llm.mul %rb, %stk : tensor<4x4x8xf32>
  %y = llm.reduce sum %m {axis = 1 : i64} : tensor<4x4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @experts_on_other_input
// CHECK-NOT: llm.moe
func.func @experts_on_other_input(%z: tensor<4x8xf32>, %x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %wr = llm.weight "gate.weight" : tensor<4x8xf32>
  %logits = llm.linear %z, %wr : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x4xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %idxc = llm.reshape %idx : tensor<4x2xi64> -> tensor<4x2x1xi64>
  %idxb = llm.broadcast %idxc : tensor<4x2x1xi64> -> tensor<4x2x4xi64>
  %range = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %rangeb = llm.broadcast %range : tensor<4xi64> -> tensor<4x2x4xi64>
  %eq = llm.compare eq %idxb, %rangeb : tensor<4x2x4xi64> -> tensor<4x2x4xi1>
  %hot = llm.convert %eq : tensor<4x2x4xi1> -> tensor<4x2x4xf32>
  %hit = llm.reduce max %hot {axis = 1 : i64} : tensor<4x2x4xf32> -> tensor<4x4xf32>
  %zero = arith.constant dense<0.0> : tensor<4x4xf32>
  %mask = llm.compare ne %hit, %zero : tensor<4x4xf32> -> tensor<4x4xi1>
  %wc = llm.reshape %w : tensor<4x2xf32> -> tensor<4x2x1xf32>
  %wb = llm.broadcast %wc : tensor<4x2x1xf32> -> tensor<4x2x4xf32>
  %prod = llm.mul %hot, %wb : tensor<4x2x4xf32>
  %val = llm.reduce sum %prod {axis = 1 : i64} : tensor<4x2x4xf32> -> tensor<4x4xf32>
  %routing = llm.select %mask, %val, %zero : tensor<4x4xi1>, tensor<4x4xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %g1 = llm.weight "e.1.w1" : tensor<16x8xf32>
  %u1 = llm.weight "e.1.w3" : tensor<16x8xf32>
  %d1 = llm.weight "e.1.w2" : tensor<8x16xf32>
  %g2 = llm.weight "e.2.w1" : tensor<16x8xf32>
  %u2 = llm.weight "e.2.w3" : tensor<16x8xf32>
  %d2 = llm.weight "e.2.w2" : tensor<8x16xf32>
  %g3 = llm.weight "e.3.w1" : tensor<16x8xf32>
  %u3 = llm.weight "e.3.w3" : tensor<16x8xf32>
  %d3 = llm.weight "e.3.w2" : tensor<8x16xf32>
  %e0 = llm.gated_mlp %x, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r0 = llm.reshape %e0 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e1 = llm.gated_mlp %x, %g1, %u1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r1 = llm.reshape %e1 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e2 = llm.gated_mlp %x, %g2, %u2, %d2 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r2 = llm.reshape %e2 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e3 = llm.gated_mlp %x, %g3, %u3, %d3 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r3 = llm.reshape %e3 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %stk = llm.concat %r0, %r1, %r2, %r3 {axis = 1 : i64} : (tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>) -> tensor<4x4x8xf32>
  %rc = llm.reshape %routing : tensor<4x4xf32> -> tensor<4x4x1xf32>
  %rb = llm.broadcast %rc : tensor<4x4x1xf32> -> tensor<4x4x8xf32>
  %m = llm.mul %rb, %stk : tensor<4x4x8xf32>
  %y = llm.reduce sum %m {axis = 1 : i64} : tensor<4x4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A shared expert added to the routed output (DeepSeek) folds into llm.moe;
// one with another activation or on another input does not.
// CHECK-LABEL: func.func @shared_expert
// CHECK: %[[M:.*]] = llm.moe %arg0 router %{{.*}} experts gate[%{{.*}}] up[%{{.*}}] down[%{{.*}}] shared(%{{.*}}, %{{.*}}, %{{.*}}) {top_k = 1 : i64}
// CHECK: %[[N:.*]] = llm.moe %arg0 router
// CHECK-NOT: shared
// CHECK: llm.add
// CHECK: return %[[M]]
func.func @shared_expert(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %wr = llm.weight "router" : tensor<2x8xf32>
  %g0 = llm.weight "g0" : tensor<16x8xf32>
  %g1 = llm.weight "g1" : tensor<16x8xf32>
  %d0 = llm.weight "d0" : tensor<8x16xf32>
  %d1 = llm.weight "d1" : tensor<8x16xf32>
  %m = llm.moe %x router %wr experts gate[%g0, %g1] up[%g1, %g0] down[%d0, %d1] {top_k = 1 : i64} : (tensor<4x8xf32>, tensor<2x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %s = llm.gated_mlp %x, %g0, %g1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %y = llm.add %m, %s : tensor<4x8xf32>
  %s2 = llm.gated_mlp %z, %g0, %g1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %m2 = llm.moe %x router %wr experts gate[%g0, %g1] up[%g1, %g0] down[%d0, %d1] {top_k = 1 : i64, activation = #llm<activation gelu>} : (tensor<4x8xf32>, tensor<2x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %y2 = llm.add %s2, %m2 : tensor<4x8xf32>
  return %y, %y2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Mixtral dense as the ONNX importer emits torch.onnx's export: the scatter
// is ScatterElements' one-hot contraction ([T, E target, k source], run-time
// indices matched against t and t - E), and ReduceSum keeps the expert axis
// ([T, 1, H]): llm.moe, viewed back as [T, 1, H].
// CHECK-LABEL: func.func @onnx_scatter_keepdim
// CHECK: %[[WR:.*]] = llm.weight "gate.weight"
// CHECK: %[[Y:.*]] = llm.moe %arg0 router %[[WR]] experts gate[{{.*}}] up[{{.*}}] down[{{.*}}] {renormalize = true, top_k = 2 : i64}
// CHECK: %[[R:.*]] = llm.reshape %[[Y]] : tensor<4x8xf32> -> tensor<4x1x8xf32>
// CHECK-NOT: llm.gated_mlp
// CHECK: return %[[R]]
func.func @onnx_scatter_keepdim(%x: tensor<4x8xf32>) -> tensor<4x1x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<4x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x4xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %ir = llm.reshape %idx : tensor<4x2xi64> -> tensor<4x1x2xi64>
  %ib = llm.broadcast %ir : tensor<4x1x2xi64> -> tensor<4x4x2xi64>
  %pos = arith.constant dense<[[[0], [1], [2], [3]]]> : tensor<1x4x1xi64>
  %posb = llm.broadcast %pos : tensor<1x4x1xi64> -> tensor<4x4x2xi64>
  %hitp = llm.compare eq %ib, %posb : tensor<4x4x2xi64> -> tensor<4x4x2xi1>
  %neg = arith.constant dense<[[[-4], [-3], [-2], [-1]]]> : tensor<1x4x1xi64>
  %negb = llm.broadcast %neg : tensor<1x4x1xi64> -> tensor<4x4x2xi64>
  %hitn = llm.compare eq %ib, %negb : tensor<4x4x2xi64> -> tensor<4x4x2xi1>
  %hit = llm.select %hitp, %hitp, %hitn : tensor<4x4x2xi1>, tensor<4x4x2xi1>
  %wr3 = llm.reshape %w : tensor<4x2xf32> -> tensor<4x1x2xf32>
  %wb = llm.broadcast %wr3 : tensor<4x1x2xf32> -> tensor<4x4x2xf32>
  %zero3 = arith.constant dense<0.0> : tensor<4x4x2xf32>
  %one3 = arith.constant dense<1.0> : tensor<4x4x2xf32>
  %sel = llm.select %hit, %wb, %zero3 : tensor<4x4x2xi1>, tensor<4x4x2xf32>
  %sum3 = llm.reduce sum %sel {axis = 2 : i64, keep_dim = true} : tensor<4x4x2xf32> -> tensor<4x4x1xf32>
  %written = llm.reshape %sum3 : tensor<4x4x1xf32> -> tensor<4x4xf32>
  %cnt = llm.select %hit, %one3, %zero3 : tensor<4x4x2xi1>, tensor<4x4x2xf32>
  %cnt3 = llm.reduce sum %cnt {axis = 2 : i64, keep_dim = true} : tensor<4x4x2xf32> -> tensor<4x4x1xf32>
  %cnt2 = llm.reshape %cnt3 : tensor<4x4x1xf32> -> tensor<4x4xf32>
  %zero = arith.constant dense<0.0> : tensor<4x4xf32>
  %cov = llm.compare gt %cnt2, %zero : tensor<4x4xf32> -> tensor<4x4xi1>
  %routing = llm.select %cov, %written, %zero : tensor<4x4xi1>, tensor<4x4xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %g1 = llm.weight "e.1.w1" : tensor<16x8xf32>
  %u1 = llm.weight "e.1.w3" : tensor<16x8xf32>
  %d1 = llm.weight "e.1.w2" : tensor<8x16xf32>
  %g2 = llm.weight "e.2.w1" : tensor<16x8xf32>
  %u2 = llm.weight "e.2.w3" : tensor<16x8xf32>
  %d2 = llm.weight "e.2.w2" : tensor<8x16xf32>
  %g3 = llm.weight "e.3.w1" : tensor<16x8xf32>
  %u3 = llm.weight "e.3.w3" : tensor<16x8xf32>
  %d3 = llm.weight "e.3.w2" : tensor<8x16xf32>
  %e0 = llm.gated_mlp %x, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r0 = llm.reshape %e0 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e1 = llm.gated_mlp %x, %g1, %u1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r1 = llm.reshape %e1 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e2 = llm.gated_mlp %x, %g2, %u2, %d2 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r2 = llm.reshape %e2 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %e3 = llm.gated_mlp %x, %g3, %u3, %d3 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r3 = llm.reshape %e3 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %stk = llm.concat %r0, %r1, %r2, %r3 {axis = 1 : i64} : (tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>) -> tensor<4x4x8xf32>
  %rc = llm.reshape %routing : tensor<4x4xf32> -> tensor<4x4x1xf32>
  %rb = llm.broadcast %rc : tensor<4x4x1xf32> -> tensor<4x4x8xf32>
  %m = llm.mul %rb, %stk : tensor<4x4x8xf32>
  %y = llm.reduce sum %m {axis = 1 : i64, keep_dim = true} : tensor<4x4x8xf32> -> tensor<4x1x8xf32>
  return %y : tensor<4x1x8xf32>
}

// -----

// The per-expert accumulation of a hand-written MoE loop as torch.onnx
// exports it (test/Frontend/ONNX/Inputs/torch_export.py `moe`): out = 0;
// out = out + (w * (idx == e)).sum(-1, keepdim) * expert_e(x). The e-th
// term's gate is routing column e; checked by evaluation as above.
// CHECK-LABEL: func.func @expert_sum
// CHECK: %[[WR:.*]] = llm.weight "gate.weight"
// CHECK: %[[G0:.*]] = llm.weight "e.0.w1"
// CHECK: %[[G3:.*]] = llm.weight "e.3.w1"
// CHECK: %[[Y:.*]] = llm.moe %arg0 router %[[WR]] experts gate[%[[G0]], %{{.*}}, %{{.*}}, %[[G3]]] up[{{.*}}] down[{{.*}}] {renormalize = true, top_k = 2 : i64}
// CHECK-NOT: llm.gated_mlp
// CHECK-NOT: llm.add
// CHECK: return %[[Y]]
func.func @expert_sum(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<4x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x4xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %g1 = llm.weight "e.1.w1" : tensor<16x8xf32>
  %u1 = llm.weight "e.1.w3" : tensor<16x8xf32>
  %d1 = llm.weight "e.1.w2" : tensor<8x16xf32>
  %g2 = llm.weight "e.2.w1" : tensor<16x8xf32>
  %u2 = llm.weight "e.2.w3" : tensor<16x8xf32>
  %d2 = llm.weight "e.2.w2" : tensor<8x16xf32>
  %g3 = llm.weight "e.3.w1" : tensor<16x8xf32>
  %u3 = llm.weight "e.3.w3" : tensor<16x8xf32>
  %d3 = llm.weight "e.3.w2" : tensor<8x16xf32>
  %acc0 = arith.constant dense<0.0> : tensor<4x8xf32>
  %c0 = arith.constant dense<0> : tensor<4x2xi64>
  %eq0 = llm.compare eq %idx, %c0 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot0 = llm.convert %eq0 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh0 = llm.mul %w, %hot0 : tensor<4x2xf32>
  %gate0 = llm.reduce sum %wh0 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex0 = llm.gated_mlp %x, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb0 = llm.broadcast %gate0 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t0 = llm.mul %gb0, %ex0 : tensor<4x8xf32>
  %acc1 = llm.add %acc0, %t0 : tensor<4x8xf32>
  %c1 = arith.constant dense<1> : tensor<4x2xi64>
  %eq1 = llm.compare eq %idx, %c1 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot1 = llm.convert %eq1 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh1 = llm.mul %w, %hot1 : tensor<4x2xf32>
  %gate1 = llm.reduce sum %wh1 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex1 = llm.gated_mlp %x, %g1, %u1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb1 = llm.broadcast %gate1 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t1 = llm.mul %gb1, %ex1 : tensor<4x8xf32>
  %acc2 = llm.add %acc1, %t1 : tensor<4x8xf32>
  %c2 = arith.constant dense<2> : tensor<4x2xi64>
  %eq2 = llm.compare eq %idx, %c2 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot2 = llm.convert %eq2 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh2 = llm.mul %w, %hot2 : tensor<4x2xf32>
  %gate2 = llm.reduce sum %wh2 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex2 = llm.gated_mlp %x, %g2, %u2, %d2 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb2 = llm.broadcast %gate2 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t2 = llm.mul %gb2, %ex2 : tensor<4x8xf32>
  %acc3 = llm.add %acc2, %t2 : tensor<4x8xf32>
  %c3 = arith.constant dense<3> : tensor<4x2xi64>
  %eq3 = llm.compare eq %idx, %c3 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot3 = llm.convert %eq3 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh3 = llm.mul %w, %hot3 : tensor<4x2xf32>
  %gate3 = llm.reduce sum %wh3 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex3 = llm.gated_mlp %x, %g3, %u3, %d3 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb3 = llm.broadcast %gate3 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t3 = llm.mul %gb3, %ex3 : tensor<4x8xf32>
  %acc4 = llm.add %acc3, %t3 : tensor<4x8xf32>
  return %acc4 : tensor<4x8xf32>
}

// -----

// Negative: the accumulated gates are (1 - w) of the top-k weights, not a
// routing function.
// CHECK-LABEL: func.func @expert_sum_not_a_router
// CHECK-NOT: llm.moe
func.func @expert_sum_not_a_router(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<4x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x4xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %one = arith.constant dense<1.0> : tensor<4x2xf32>
  %om = llm.sub %one, %w : tensor<4x2xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %g1 = llm.weight "e.1.w1" : tensor<16x8xf32>
  %u1 = llm.weight "e.1.w3" : tensor<16x8xf32>
  %d1 = llm.weight "e.1.w2" : tensor<8x16xf32>
  %g2 = llm.weight "e.2.w1" : tensor<16x8xf32>
  %u2 = llm.weight "e.2.w3" : tensor<16x8xf32>
  %d2 = llm.weight "e.2.w2" : tensor<8x16xf32>
  %g3 = llm.weight "e.3.w1" : tensor<16x8xf32>
  %u3 = llm.weight "e.3.w3" : tensor<16x8xf32>
  %d3 = llm.weight "e.3.w2" : tensor<8x16xf32>
  %acc0 = arith.constant dense<0.0> : tensor<4x8xf32>
  %c0 = arith.constant dense<0> : tensor<4x2xi64>
  %eq0 = llm.compare eq %idx, %c0 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot0 = llm.convert %eq0 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh0 = llm.mul %om, %hot0 : tensor<4x2xf32>
  %gate0 = llm.reduce sum %wh0 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex0 = llm.gated_mlp %x, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb0 = llm.broadcast %gate0 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t0 = llm.mul %gb0, %ex0 : tensor<4x8xf32>
  %acc1 = llm.add %acc0, %t0 : tensor<4x8xf32>
  %c1 = arith.constant dense<1> : tensor<4x2xi64>
  %eq1 = llm.compare eq %idx, %c1 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot1 = llm.convert %eq1 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh1 = llm.mul %om, %hot1 : tensor<4x2xf32>
  %gate1 = llm.reduce sum %wh1 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex1 = llm.gated_mlp %x, %g1, %u1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb1 = llm.broadcast %gate1 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t1 = llm.mul %gb1, %ex1 : tensor<4x8xf32>
  %acc2 = llm.add %acc1, %t1 : tensor<4x8xf32>
  %c2 = arith.constant dense<2> : tensor<4x2xi64>
  %eq2 = llm.compare eq %idx, %c2 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot2 = llm.convert %eq2 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh2 = llm.mul %om, %hot2 : tensor<4x2xf32>
  %gate2 = llm.reduce sum %wh2 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex2 = llm.gated_mlp %x, %g2, %u2, %d2 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb2 = llm.broadcast %gate2 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t2 = llm.mul %gb2, %ex2 : tensor<4x8xf32>
  %acc3 = llm.add %acc2, %t2 : tensor<4x8xf32>
  %c3 = arith.constant dense<3> : tensor<4x2xi64>
  %eq3 = llm.compare eq %idx, %c3 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot3 = llm.convert %eq3 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh3 = llm.mul %om, %hot3 : tensor<4x2xf32>
  %gate3 = llm.reduce sum %wh3 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex3 = llm.gated_mlp %x, %g3, %u3, %d3 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb3 = llm.broadcast %gate3 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t3 = llm.mul %gb3, %ex3 : tensor<4x8xf32>
  %acc4 = llm.add %acc3, %t3 : tensor<4x8xf32>
  return %acc4 : tensor<4x8xf32>
}

// -----

// Negative: one expert has another activation (llm.moe has one for all).
// CHECK-LABEL: func.func @expert_sum_mixed_activation
// CHECK-NOT: llm.moe
func.func @expert_sum_mixed_activation(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<4x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x4xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %g1 = llm.weight "e.1.w1" : tensor<16x8xf32>
  %u1 = llm.weight "e.1.w3" : tensor<16x8xf32>
  %d1 = llm.weight "e.1.w2" : tensor<8x16xf32>
  %g2 = llm.weight "e.2.w1" : tensor<16x8xf32>
  %u2 = llm.weight "e.2.w3" : tensor<16x8xf32>
  %d2 = llm.weight "e.2.w2" : tensor<8x16xf32>
  %g3 = llm.weight "e.3.w1" : tensor<16x8xf32>
  %u3 = llm.weight "e.3.w3" : tensor<16x8xf32>
  %d3 = llm.weight "e.3.w2" : tensor<8x16xf32>
  %acc0 = arith.constant dense<0.0> : tensor<4x8xf32>
  %c0 = arith.constant dense<0> : tensor<4x2xi64>
  %eq0 = llm.compare eq %idx, %c0 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot0 = llm.convert %eq0 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh0 = llm.mul %w, %hot0 : tensor<4x2xf32>
  %gate0 = llm.reduce sum %wh0 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex0 = llm.gated_mlp %x, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb0 = llm.broadcast %gate0 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t0 = llm.mul %gb0, %ex0 : tensor<4x8xf32>
  %acc1 = llm.add %acc0, %t0 : tensor<4x8xf32>
  %c1 = arith.constant dense<1> : tensor<4x2xi64>
  %eq1 = llm.compare eq %idx, %c1 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot1 = llm.convert %eq1 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh1 = llm.mul %w, %hot1 : tensor<4x2xf32>
  %gate1 = llm.reduce sum %wh1 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex1 = llm.gated_mlp %x, %g1, %u1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb1 = llm.broadcast %gate1 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t1 = llm.mul %gb1, %ex1 : tensor<4x8xf32>
  %acc2 = llm.add %acc1, %t1 : tensor<4x8xf32>
  %c2 = arith.constant dense<2> : tensor<4x2xi64>
  %eq2 = llm.compare eq %idx, %c2 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot2 = llm.convert %eq2 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh2 = llm.mul %w, %hot2 : tensor<4x2xf32>
  %gate2 = llm.reduce sum %wh2 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex2 = llm.gated_mlp %x, %g2, %u2, %d2 {activation = #llm<activation gelu_tanh>} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb2 = llm.broadcast %gate2 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t2 = llm.mul %gb2, %ex2 : tensor<4x8xf32>
  %acc3 = llm.add %acc2, %t2 : tensor<4x8xf32>
  %c3 = arith.constant dense<3> : tensor<4x2xi64>
  %eq3 = llm.compare eq %idx, %c3 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot3 = llm.convert %eq3 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh3 = llm.mul %w, %hot3 : tensor<4x2xf32>
  %gate3 = llm.reduce sum %wh3 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex3 = llm.gated_mlp %x, %g3, %u3, %d3 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb3 = llm.broadcast %gate3 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t3 = llm.mul %gb3, %ex3 : tensor<4x8xf32>
  %acc4 = llm.add %acc3, %t3 : tensor<4x8xf32>
  return %acc4 : tensor<4x8xf32>
}

// -----

// Negative: only three of the router's four experts are summed (the
// router is [4, H]; no 3-expert router exists).
// CHECK-LABEL: func.func @expert_sum_three_of_four
// CHECK-NOT: llm.moe
func.func @expert_sum_three_of_four(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<4x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x4xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %g1 = llm.weight "e.1.w1" : tensor<16x8xf32>
  %u1 = llm.weight "e.1.w3" : tensor<16x8xf32>
  %d1 = llm.weight "e.1.w2" : tensor<8x16xf32>
  %g2 = llm.weight "e.2.w1" : tensor<16x8xf32>
  %u2 = llm.weight "e.2.w3" : tensor<16x8xf32>
  %d2 = llm.weight "e.2.w2" : tensor<8x16xf32>
  %acc0 = arith.constant dense<0.0> : tensor<4x8xf32>
  %c0 = arith.constant dense<0> : tensor<4x2xi64>
  %eq0 = llm.compare eq %idx, %c0 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot0 = llm.convert %eq0 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh0 = llm.mul %w, %hot0 : tensor<4x2xf32>
  %gate0 = llm.reduce sum %wh0 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex0 = llm.gated_mlp %x, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb0 = llm.broadcast %gate0 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t0 = llm.mul %gb0, %ex0 : tensor<4x8xf32>
  %acc1 = llm.add %acc0, %t0 : tensor<4x8xf32>
  %c1 = arith.constant dense<1> : tensor<4x2xi64>
  %eq1 = llm.compare eq %idx, %c1 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot1 = llm.convert %eq1 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh1 = llm.mul %w, %hot1 : tensor<4x2xf32>
  %gate1 = llm.reduce sum %wh1 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex1 = llm.gated_mlp %x, %g1, %u1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb1 = llm.broadcast %gate1 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t1 = llm.mul %gb1, %ex1 : tensor<4x8xf32>
  %acc2 = llm.add %acc1, %t1 : tensor<4x8xf32>
  %c2 = arith.constant dense<2> : tensor<4x2xi64>
  %eq2 = llm.compare eq %idx, %c2 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot2 = llm.convert %eq2 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh2 = llm.mul %w, %hot2 : tensor<4x2xf32>
  %gate2 = llm.reduce sum %wh2 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex2 = llm.gated_mlp %x, %g2, %u2, %d2 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb2 = llm.broadcast %gate2 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t2 = llm.mul %gb2, %ex2 : tensor<4x8xf32>
  %acc3 = llm.add %acc2, %t2 : tensor<4x8xf32>
  return %acc3 : tensor<4x8xf32>
}

// -----

// Negative: the experts read another tensor than the router.
// CHECK-LABEL: func.func @expert_sum_other_input
// CHECK-NOT: llm.moe
func.func @expert_sum_other_input(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<4x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x4xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %g1 = llm.weight "e.1.w1" : tensor<16x8xf32>
  %u1 = llm.weight "e.1.w3" : tensor<16x8xf32>
  %d1 = llm.weight "e.1.w2" : tensor<8x16xf32>
  %g2 = llm.weight "e.2.w1" : tensor<16x8xf32>
  %u2 = llm.weight "e.2.w3" : tensor<16x8xf32>
  %d2 = llm.weight "e.2.w2" : tensor<8x16xf32>
  %g3 = llm.weight "e.3.w1" : tensor<16x8xf32>
  %u3 = llm.weight "e.3.w3" : tensor<16x8xf32>
  %d3 = llm.weight "e.3.w2" : tensor<8x16xf32>
  %acc0 = arith.constant dense<0.0> : tensor<4x8xf32>
  %c0 = arith.constant dense<0> : tensor<4x2xi64>
  %eq0 = llm.compare eq %idx, %c0 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot0 = llm.convert %eq0 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh0 = llm.mul %w, %hot0 : tensor<4x2xf32>
  %gate0 = llm.reduce sum %wh0 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex0 = llm.gated_mlp %z, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb0 = llm.broadcast %gate0 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t0 = llm.mul %gb0, %ex0 : tensor<4x8xf32>
  %acc1 = llm.add %acc0, %t0 : tensor<4x8xf32>
  %c1 = arith.constant dense<1> : tensor<4x2xi64>
  %eq1 = llm.compare eq %idx, %c1 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot1 = llm.convert %eq1 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh1 = llm.mul %w, %hot1 : tensor<4x2xf32>
  %gate1 = llm.reduce sum %wh1 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex1 = llm.gated_mlp %z, %g1, %u1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb1 = llm.broadcast %gate1 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t1 = llm.mul %gb1, %ex1 : tensor<4x8xf32>
  %acc2 = llm.add %acc1, %t1 : tensor<4x8xf32>
  %c2 = arith.constant dense<2> : tensor<4x2xi64>
  %eq2 = llm.compare eq %idx, %c2 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot2 = llm.convert %eq2 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh2 = llm.mul %w, %hot2 : tensor<4x2xf32>
  %gate2 = llm.reduce sum %wh2 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex2 = llm.gated_mlp %z, %g2, %u2, %d2 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb2 = llm.broadcast %gate2 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t2 = llm.mul %gb2, %ex2 : tensor<4x8xf32>
  %acc3 = llm.add %acc2, %t2 : tensor<4x8xf32>
  %c3 = arith.constant dense<3> : tensor<4x2xi64>
  %eq3 = llm.compare eq %idx, %c3 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot3 = llm.convert %eq3 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh3 = llm.mul %w, %hot3 : tensor<4x2xf32>
  %gate3 = llm.reduce sum %wh3 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex3 = llm.gated_mlp %z, %g3, %u3, %d3 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb3 = llm.broadcast %gate3 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t3 = llm.mul %gb3, %ex3 : tensor<4x8xf32>
  %acc4 = llm.add %acc3, %t3 : tensor<4x8xf32>
  return %acc4 : tensor<4x8xf32>
}

// -----

// The accumulation feeding the residual add directly: the chain's last
// partial sum is the MoE, the residual stays an add of it.
// CHECK-LABEL: func.func @expert_sum_residual
// CHECK: %[[Y:.*]] = llm.moe %arg0 router
// CHECK: %[[R:.*]] = llm.add %arg0, %[[Y]] : tensor<4x8xf32>
// CHECK: return %[[R]]
func.func @expert_sum_residual(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<4x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x4xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %g1 = llm.weight "e.1.w1" : tensor<16x8xf32>
  %u1 = llm.weight "e.1.w3" : tensor<16x8xf32>
  %d1 = llm.weight "e.1.w2" : tensor<8x16xf32>
  %g2 = llm.weight "e.2.w1" : tensor<16x8xf32>
  %u2 = llm.weight "e.2.w3" : tensor<16x8xf32>
  %d2 = llm.weight "e.2.w2" : tensor<8x16xf32>
  %g3 = llm.weight "e.3.w1" : tensor<16x8xf32>
  %u3 = llm.weight "e.3.w3" : tensor<16x8xf32>
  %d3 = llm.weight "e.3.w2" : tensor<8x16xf32>
  %acc0 = arith.constant dense<0.0> : tensor<4x8xf32>
  %c0 = arith.constant dense<0> : tensor<4x2xi64>
  %eq0 = llm.compare eq %idx, %c0 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot0 = llm.convert %eq0 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh0 = llm.mul %w, %hot0 : tensor<4x2xf32>
  %gate0 = llm.reduce sum %wh0 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex0 = llm.gated_mlp %x, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb0 = llm.broadcast %gate0 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t0 = llm.mul %gb0, %ex0 : tensor<4x8xf32>
  %acc1 = llm.add %acc0, %t0 : tensor<4x8xf32>
  %c1 = arith.constant dense<1> : tensor<4x2xi64>
  %eq1 = llm.compare eq %idx, %c1 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot1 = llm.convert %eq1 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh1 = llm.mul %w, %hot1 : tensor<4x2xf32>
  %gate1 = llm.reduce sum %wh1 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex1 = llm.gated_mlp %x, %g1, %u1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb1 = llm.broadcast %gate1 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t1 = llm.mul %gb1, %ex1 : tensor<4x8xf32>
  %acc2 = llm.add %acc1, %t1 : tensor<4x8xf32>
  %c2 = arith.constant dense<2> : tensor<4x2xi64>
  %eq2 = llm.compare eq %idx, %c2 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot2 = llm.convert %eq2 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh2 = llm.mul %w, %hot2 : tensor<4x2xf32>
  %gate2 = llm.reduce sum %wh2 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex2 = llm.gated_mlp %x, %g2, %u2, %d2 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb2 = llm.broadcast %gate2 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t2 = llm.mul %gb2, %ex2 : tensor<4x8xf32>
  %acc3 = llm.add %acc2, %t2 : tensor<4x8xf32>
  %c3 = arith.constant dense<3> : tensor<4x2xi64>
  %eq3 = llm.compare eq %idx, %c3 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot3 = llm.convert %eq3 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh3 = llm.mul %w, %hot3 : tensor<4x2xf32>
  %gate3 = llm.reduce sum %wh3 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex3 = llm.gated_mlp %x, %g3, %u3, %d3 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb3 = llm.broadcast %gate3 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t3 = llm.mul %gb3, %ex3 : tensor<4x8xf32>
  %acc4 = llm.add %acc3, %t3 : tensor<4x8xf32>
  %res = llm.add %x, %acc4 : tensor<4x8xf32>
  return %res : tensor<4x8xf32>
}

// -----

// The experts summed in the order 2, 0, 3, 1: llm.moe lists them in
// router-row order (found by evaluating the gates).
// CHECK-LABEL: func.func @expert_sum_out_of_order
// CHECK-DAG: %[[G0:.*]] = llm.weight "e.0.w1"
// CHECK-DAG: %[[G1:.*]] = llm.weight "e.1.w1"
// CHECK-DAG: %[[G2:.*]] = llm.weight "e.2.w1"
// CHECK-DAG: %[[G3:.*]] = llm.weight "e.3.w1"
// CHECK-DAG: %[[D0:.*]] = llm.weight "e.0.w2"
// CHECK-DAG: %[[D3:.*]] = llm.weight "e.3.w2"
// CHECK: llm.moe %arg0 router %{{.*}} experts gate[%[[G0]], %[[G1]], %[[G2]], %[[G3]]] up[{{.*}}] down[%[[D0]], %{{.*}}, %{{.*}}, %[[D3]]] {renormalize = true, top_k = 2 : i64}
// CHECK-NOT: llm.gated_mlp
func.func @expert_sum_out_of_order(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<4x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x4xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %g1 = llm.weight "e.1.w1" : tensor<16x8xf32>
  %u1 = llm.weight "e.1.w3" : tensor<16x8xf32>
  %d1 = llm.weight "e.1.w2" : tensor<8x16xf32>
  %g2 = llm.weight "e.2.w1" : tensor<16x8xf32>
  %u2 = llm.weight "e.2.w3" : tensor<16x8xf32>
  %d2 = llm.weight "e.2.w2" : tensor<8x16xf32>
  %g3 = llm.weight "e.3.w1" : tensor<16x8xf32>
  %u3 = llm.weight "e.3.w3" : tensor<16x8xf32>
  %d3 = llm.weight "e.3.w2" : tensor<8x16xf32>
  %acc0 = arith.constant dense<0.0> : tensor<4x8xf32>
  %c2 = arith.constant dense<2> : tensor<4x2xi64>
  %eq2 = llm.compare eq %idx, %c2 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot2 = llm.convert %eq2 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh2 = llm.mul %w, %hot2 : tensor<4x2xf32>
  %gate2 = llm.reduce sum %wh2 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex2 = llm.gated_mlp %x, %g2, %u2, %d2 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb2 = llm.broadcast %gate2 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t2 = llm.mul %gb2, %ex2 : tensor<4x8xf32>
  %acc1 = llm.add %acc0, %t2 : tensor<4x8xf32>
  %c0 = arith.constant dense<0> : tensor<4x2xi64>
  %eq0 = llm.compare eq %idx, %c0 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot0 = llm.convert %eq0 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh0 = llm.mul %w, %hot0 : tensor<4x2xf32>
  %gate0 = llm.reduce sum %wh0 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex0 = llm.gated_mlp %x, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb0 = llm.broadcast %gate0 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t0 = llm.mul %gb0, %ex0 : tensor<4x8xf32>
  %acc2 = llm.add %acc1, %t0 : tensor<4x8xf32>
  %c3 = arith.constant dense<3> : tensor<4x2xi64>
  %eq3 = llm.compare eq %idx, %c3 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot3 = llm.convert %eq3 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh3 = llm.mul %w, %hot3 : tensor<4x2xf32>
  %gate3 = llm.reduce sum %wh3 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex3 = llm.gated_mlp %x, %g3, %u3, %d3 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb3 = llm.broadcast %gate3 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t3 = llm.mul %gb3, %ex3 : tensor<4x8xf32>
  %acc3 = llm.add %acc2, %t3 : tensor<4x8xf32>
  %c1 = arith.constant dense<1> : tensor<4x2xi64>
  %eq1 = llm.compare eq %idx, %c1 : tensor<4x2xi64> -> tensor<4x2xi1>
  %hot1 = llm.convert %eq1 : tensor<4x2xi1> -> tensor<4x2xf32>
  %wh1 = llm.mul %w, %hot1 : tensor<4x2xf32>
  %gate1 = llm.reduce sum %wh1 {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %ex1 = llm.gated_mlp %x, %g1, %u1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %gb1 = llm.broadcast %gate1 : tensor<4x1xf32> -> tensor<4x8xf32>
  %t1 = llm.mul %gb1, %ex1 : tensor<4x8xf32>
  %acc4 = llm.add %acc3, %t1 : tensor<4x8xf32>
  return %acc4 : tensor<4x8xf32>
}

// -----

// Qwen2-MoE: the shared expert gated per token by
// sigmoid(shared_expert_gate(x)), g [1, H], folds into llm.moe with the
// gate; the product in either order, the gate linear on a row view of x.
// CHECK-LABEL: func.func @shared_expert_gated
// CHECK: %[[WG:.*]] = llm.weight "shared_expert_gate"
// CHECK: %[[M:.*]] = llm.moe %arg0 router %{{.*}} experts gate[%{{.*}}, %{{.*}}] up[%{{.*}}, %{{.*}}] down[%{{.*}}, %{{.*}}] shared(%{{.*}}, %{{.*}}, %{{.*}}) shared_expert_gate %[[WG]] {top_k = 1 : i64}
// CHECK: %[[N:.*]] = llm.moe %arg0 router %{{.*}} shared(%{{.*}}, %{{.*}}, %{{.*}}) shared_expert_gate %[[WG]] {top_k = 1 : i64}
// CHECK-NOT: llm.sigmoid
// CHECK-NOT: llm.gated_mlp
// CHECK: return %[[M]], %[[N]]
func.func @shared_expert_gated(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %wr = llm.weight "router" : tensor<2x8xf32>
  %g0 = llm.weight "g0" : tensor<16x8xf32>
  %g1 = llm.weight "g1" : tensor<16x8xf32>
  %d0 = llm.weight "d0" : tensor<8x16xf32>
  %d1 = llm.weight "d1" : tensor<8x16xf32>
  %wg = llm.weight "shared_expert_gate" : tensor<1x8xf32>
  %m = llm.moe %x router %wr experts gate[%g0, %g1] up[%g1, %g0] down[%d0, %d1] {top_k = 1 : i64} : (tensor<4x8xf32>, tensor<2x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %s = llm.gated_mlp %x, %g0, %g1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %l = llm.linear %x, %wg : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x1xf32>
  %sig = llm.sigmoid %l : tensor<4x1xf32>
  %b = llm.broadcast %sig : tensor<4x1xf32> -> tensor<4x8xf32>
  %gs = llm.mul %b, %s : tensor<4x8xf32>
  %y = llm.add %m, %gs : tensor<4x8xf32>
  // Row view: linear on [1, 4, 8], the gate viewed back as [4, 1]; the
  // shared output first in the product, the MoE second in the sum.
  %m2 = llm.moe %x router %wr experts gate[%g0, %g1] up[%g1, %g0] down[%d0, %d1] {top_k = 1 : i64} : (tensor<4x8xf32>, tensor<2x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %s2 = llm.gated_mlp %x, %g1, %g0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %x3 = llm.reshape %x : tensor<4x8xf32> -> tensor<1x4x8xf32>
  %l2 = llm.linear %x3, %wg : (tensor<1x4x8xf32>, tensor<1x8xf32>) -> tensor<1x4x1xf32>
  %l2r = llm.reshape %l2 : tensor<1x4x1xf32> -> tensor<4x1xf32>
  %sig2 = llm.sigmoid %l2r : tensor<4x1xf32>
  %b2 = llm.broadcast %sig2 : tensor<4x1xf32> -> tensor<4x8xf32>
  %gs2 = llm.mul %s2, %b2 : tensor<4x8xf32>
  %y2 = llm.add %gs2, %m2 : tensor<4x8xf32>
  return %y, %y2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Negatives: the gate on another input than x, a tanh gate: the MoE and
// the gated shared expert stay apart.
// CHECK-LABEL: func.func @shared_expert_gated_negative
// CHECK-NOT: shared
// CHECK: llm.sigmoid
// CHECK: llm.add
// CHECK: llm.tanh
// CHECK: llm.add
// CHECK: return
func.func @shared_expert_gated_negative(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %wr = llm.weight "router" : tensor<2x8xf32>
  %g0 = llm.weight "g0" : tensor<16x8xf32>
  %g1 = llm.weight "g1" : tensor<16x8xf32>
  %d0 = llm.weight "d0" : tensor<8x16xf32>
  %d1 = llm.weight "d1" : tensor<8x16xf32>
  %wg = llm.weight "sg_weight" : tensor<1x8xf32>
  %m = llm.moe %x router %wr experts gate[%g0, %g1] up[%g1, %g0] down[%d0, %d1] {top_k = 1 : i64} : (tensor<4x8xf32>, tensor<2x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %s = llm.gated_mlp %x, %g0, %g1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %l = llm.linear %z, %wg : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x1xf32>
  %sig = llm.sigmoid %l : tensor<4x1xf32>
  %b = llm.broadcast %sig : tensor<4x1xf32> -> tensor<4x8xf32>
  %gs = llm.mul %b, %s : tensor<4x8xf32>
  %y = llm.add %m, %gs : tensor<4x8xf32>
  %m2 = llm.moe %x router %wr experts gate[%g0, %g1] up[%g1, %g0] down[%d0, %d1] {top_k = 1 : i64} : (tensor<4x8xf32>, tensor<2x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %s2 = llm.gated_mlp %x, %g0, %g1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %l2 = llm.linear %x, %wg : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x1xf32>
  %t2 = llm.tanh %l2 : tensor<4x1xf32>
  %b2 = llm.broadcast %t2 : tensor<4x1xf32> -> tensor<4x8xf32>
  %gs2 = llm.mul %b2, %s2 : tensor<4x8xf32>
  %y2 = llm.add %m2, %gs2 : tensor<4x8xf32>
  return %y, %y2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Negative: a gate weight [2, H] (H = 2) gates each element, not each
// token: not llm.moe's shared expert gate.
// CHECK-LABEL: func.func @shared_expert_gate_rows
// CHECK-NOT: shared
// CHECK: llm.sigmoid
// CHECK: llm.mul
// CHECK: llm.add
func.func @shared_expert_gate_rows(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %wr = llm.weight "router" : tensor<2x2xf32>
  %g0 = llm.weight "g0" : tensor<16x2xf32>
  %g1 = llm.weight "g1" : tensor<16x2xf32>
  %d0 = llm.weight "d0" : tensor<2x16xf32>
  %d1 = llm.weight "d1" : tensor<2x16xf32>
  %wg = llm.weight "sg_weight" : tensor<2x2xf32>
  %m = llm.moe %x router %wr experts gate[%g0, %g1] up[%g1, %g0] down[%d0, %d1] {top_k = 1 : i64} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<16x2xf32>, tensor<16x2xf32>, tensor<16x2xf32>, tensor<16x2xf32>, tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<4x2xf32>
  %s = llm.gated_mlp %x, %g0, %g1, %d1 : (tensor<4x2xf32>, tensor<16x2xf32>, tensor<16x2xf32>, tensor<2x16xf32>) -> tensor<4x2xf32>
  %l = llm.linear %x, %wg : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %sig = llm.sigmoid %l : tensor<4x2xf32>
  %gs = llm.mul %sig, %s : tensor<4x2xf32>
  %y = llm.add %m, %gs : tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// As the FX importer gives HF's block: x is the [T, H] view of the
// [1, T, H] hidden states and the gate linear reads that view.
// CHECK-LABEL: func.func @shared_expert_gated_view
// CHECK: llm.moe %{{.*}} router %{{.*}} shared(%{{.*}}, %{{.*}}, %{{.*}}) shared_expert_gate %{{.*}} {top_k = 1 : i64}
// CHECK-NOT: llm.sigmoid
func.func @shared_expert_gated_view(%h: tensor<1x4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "router" : tensor<2x8xf32>
  %g0 = llm.weight "g0" : tensor<16x8xf32>
  %g1 = llm.weight "g1" : tensor<16x8xf32>
  %d0 = llm.weight "d0" : tensor<8x16xf32>
  %d1 = llm.weight "d1" : tensor<8x16xf32>
  %wg = llm.weight "shared_expert_gate" : tensor<1x8xf32>
  %x = llm.reshape %h : tensor<1x4x8xf32> -> tensor<4x8xf32>
  %m = llm.moe %x router %wr experts gate[%g0, %g1] up[%g1, %g0] down[%d0, %d1] {top_k = 1 : i64} : (tensor<4x8xf32>, tensor<2x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %s = llm.gated_mlp %x, %g0, %g1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %l = llm.linear %x, %wg : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x1xf32>
  %sig = llm.sigmoid %l : tensor<4x1xf32>
  %b = llm.broadcast %sig : tensor<4x1xf32> -> tensor<4x8xf32>
  %gs = llm.mul %b, %s : tensor<4x8xf32>
  %y = llm.add %m, %gs : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
