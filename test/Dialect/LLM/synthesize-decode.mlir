// RUN: pimc-opt %s -split-input-file --llm-synthesize-decode=max-context=64 -verify-diagnostics | FileCheck %s

// A causal LM traced over 4 tokens becomes a one-token step: tokens and
// offset in, a KV cache per attention, rope at the offset, the head as
// llm.lm_head, the learned position table indexed by llm.positions (and the
// cache capacity capped at its 16 rows).
// CHECK: module attributes {llm.max_context = 16 : i64}
// CHECK: func.func @forward(%[[TOK:.*]]: tensor<1xi64>, %[[OFF:.*]]: index, %[[C:.*]]: !llm.kv_cache<max_length = 16, kv_heads = 1, head_dim = 8, element_type = f32>)
// CHECK-SAME: -> (tensor<1x1x32xf32>, !llm.kv_cache<max_length = 16, kv_heads = 1, head_dim = 8, element_type = f32>)
// CHECK: llm.positions %[[OFF]] : tensor<1xi64>
// CHECK: llm.rope %{{.*}}, %[[OFF]] {{.*}} : tensor<1x2x8xf32>
// CHECK: %[[A:.*]] = llm.kv_cache_append %[[C]], %{{.*}}, %{{.*}}, %[[OFF]]
// CHECK: %[[L:.*]] = arith.addi %[[OFF]], %{{.*}} : index
// CHECK: %[[K:.*]], %[[V:.*]] = llm.kv_cache_read %[[A]], %[[L]] {{.*}} -> tensor<?x1x8xf32>, tensor<?x1x8xf32>
// CHECK: llm.attention %{{.*}}, %[[K]], %[[V]] {scale = 0.353553385 : f32} : (tensor<1x2x8xf32>, tensor<?x1x8xf32>, tensor<?x1x8xf32>) -> tensor<1x2x8xf32>
// CHECK: llm.lm_head {{.*}} -> tensor<1x32xf32>
// CHECK: llm.reshape {{.*}} -> tensor<1x1x32xf32>
// CHECK: return %{{.*}}, %[[A]]
func.func @forward(%ids: tensor<1x4xi64>) -> tensor<1x4x32xf32> {
  %c0 = arith.constant 0 : index
  %pos = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %emb = llm.weight "wte" : tensor<32x16xf32>
  %wpe = llm.weight "wpe" : tensor<16x16xf32>
  %wq = llm.weight "q" : tensor<16x16xf32>
  %wk = llm.weight "k" : tensor<8x16xf32>
  %wv = llm.weight "v" : tensor<8x16xf32>
  %ids1 = llm.reshape %ids : tensor<1x4xi64> -> tensor<4xi64>
  %x = llm.embedding %emb, %ids1 : (tensor<32x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  %p = llm.embedding %wpe, %pos : (tensor<16x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  %h = llm.add %x, %p : tensor<4x16xf32>
  %q = llm.linear %h, %wq : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %k = llm.linear %h, %wk : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %v = llm.linear %h, %wv : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %q3 = llm.reshape %q : tensor<4x16xf32> -> tensor<4x2x8xf32>
  %k3 = llm.reshape %k : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %v3 = llm.reshape %v : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %qr = llm.rope %q3, %c0 {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, rotary_dim = 8 : i64, theta = 1.000000e+04 : f64} : tensor<4x2x8xf32>
  %kr = llm.rope %k3, %c0 {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, rotary_dim = 8 : i64, theta = 1.000000e+04 : f64} : tensor<4x1x8xf32>
  %a = llm.attention %qr, %kr, %v3 {scale = 0.353553385 : f32} : (tensor<4x2x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>) -> tensor<4x2x8xf32>
  %a2 = llm.reshape %a : tensor<4x2x8xf32> -> tensor<4x16xf32>
  %logits = llm.linear %a2, %emb : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %out = llm.reshape %logits : tensor<4x32xf32> -> tensor<1x4x32xf32>
  return %out : tensor<1x4x32xf32>
}

// -----

// The last-token slice is the step's only token.
// CHECK: func.func @forward(%{{.*}}: tensor<1xi64>, %{{.*}}: index) -> tensor<1x32xf32>
// CHECK-NOT: llm.slice
// CHECK: llm.lm_head {{.*}} -> tensor<1x32xf32>
func.func @forward(%ids: tensor<4xi64>) -> tensor<1x32xf32> {
  %emb = llm.weight "wte" : tensor<32x16xf32>
  %x = llm.embedding %emb, %ids : (tensor<32x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  %last = llm.slice %x {axis = 0 : i64, start = -1 : i64, size = 1 : i64} : tensor<4x16xf32> -> tensor<1x16xf32>
  %logits = llm.linear %last, %emb : (tensor<1x16xf32>, tensor<32x16xf32>) -> tensor<1x32xf32>
  return %logits : tensor<1x32xf32>
}

// -----

// A reduction over the sequence mixes positions.
func.func @forward(%ids: tensor<4xi64>) -> tensor<1x16xf32> {
  %emb = llm.weight "wte" : tensor<32x16xf32>
  %x = llm.embedding %emb, %ids : (tensor<32x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  // expected-error @+1 {{cannot synthesize a decode step: the reduction runs along the sequence dimension (mixes positions)}}
  %m = llm.reduce mean %x {axis = 0 : i64, keep_dim = true} : tensor<4x16xf32> -> tensor<1x16xf32>
  return %m : tensor<1x16xf32>
}

// -----

// Non-causal attention: a later token changes an earlier one's output.
func.func @forward(%ids: tensor<4xi64>) -> tensor<4x1x16xf32> {
  %emb = llm.weight "wte" : tensor<32x16xf32>
  %x = llm.embedding %emb, %ids : (tensor<32x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  %x3 = llm.reshape %x : tensor<4x16xf32> -> tensor<4x1x16xf32>
  // expected-error @+1 {{the attention is not causal}}
  %a = llm.attention %x3, %x3, %x3 {scale = 0.25 : f32, causal = false} : (tensor<4x1x16xf32>, tensor<4x1x16xf32>, tensor<4x1x16xf32>) -> tensor<4x1x16xf32>
  return %a : tensor<4x1x16xf32>
}

// -----

// A table laid out along the traced positions (an exporter's folded
// position embedding) cannot be moved to another position.
func.func @forward(%ids: tensor<4xi64>) -> tensor<4x16xf32> {
  %emb = llm.weight "wte" : tensor<32x16xf32>
  %folded = llm.weight "pos_folded" : tensor<4x16xf32>
  %x = llm.embedding %emb, %ids : (tensor<32x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  // expected-error @+1 {{an operand that does not depend on the tokens is laid out along the sequence (a constant traced at 4 positions)}}
  %h = llm.add %x, %folded : tensor<4x16xf32>
  return %h : tensor<4x16xf32>
}

// -----

// The prompt slice that is not the last token.
func.func @forward(%ids: tensor<4xi64>) -> tensor<1x16xf32> {
  %emb = llm.weight "wte" : tensor<32x16xf32>
  %x = llm.embedding %emb, %ids : (tensor<32x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  // expected-error @+1 {{only the last token may be sliced along the sequence}}
  %first = llm.slice %x {axis = 0 : i64, start = 0 : i64, size = 1 : i64} : tensor<4x16xf32> -> tensor<1x16xf32>
  return %first : tensor<1x16xf32>
}

// -----

// Extra graph inputs (a mask, position ids, static caches) are not
// synthesized: the graph is left to the backend's contract check.
// CHECK: func.func @forward(%{{.*}}: tensor<4xi64>, %{{.*}}: tensor<4xf32>) -> tensor<4x16xf32>
func.func @forward(%ids: tensor<4xi64>, %mask: tensor<4xf32>) -> tensor<4x16xf32> {
  %emb = llm.weight "wte" : tensor<32x16xf32>
  %x = llm.embedding %emb, %ids : (tensor<32x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  return %x : tensor<4x16xf32>
}

// -----

// As ONNX exports write it: the position table read with llm.gather, the
// tied head as x @ transpose(W), which becomes llm.lm_head on W.
// CHECK: func.func @forward(%{{.*}}: tensor<1xi64>, %[[O:.*]]: index) -> tensor<1x32xf32>
// CHECK: llm.positions %[[O]]
// CHECK: llm.gather %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<16x16xf32>, tensor<1xi64>) -> tensor<1x16xf32>
// CHECK-NOT: llm.transpose
// CHECK: llm.lm_head %{{.*}}, %{{.*}} : (tensor<1x16xf32>, tensor<32x16xf32>) -> tensor<1x32xf32>
func.func @forward(%ids: tensor<4xi64>) -> tensor<4x32xf32> {
  %pos = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %emb = llm.weight "wte" : tensor<32x16xf32>
  %wpe = llm.weight "wpe" : tensor<16x16xf32>
  %x = llm.embedding %emb, %ids : (tensor<32x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  %p = llm.gather %wpe, %pos {axis = 0 : i64} : (tensor<16x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  %h = llm.add %x, %p : tensor<4x16xf32>
  %t = llm.transpose %emb {permutation = array<i64: 1, 0>} : tensor<32x16xf32> -> tensor<16x32xf32>
  %l = llm.matmul %h, %t : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  return %l : tensor<4x32xf32>
}

// -----

// A splat constant laid out along the sequence (GPT-2's exported GELU adds a
// `1` of the activation's shape) is the same at every position: it is made
// again at one. The head is found under a scaling by a splat and a softcap
// (Cohere's logit_scale, Gemma 2's final tanh), which stay after it.
// CHECK: func.func @forward(%{{.*}}: tensor<1xi64>, %{{.*}}: index) -> tensor<1x1x32xf32>
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<1x1x16xf32>
// CHECK: llm.add %{{.*}}, %[[ONE]] : tensor<1x1x16xf32>
// CHECK: %[[H:.*]] = llm.lm_head {{.*}} -> tensor<1x32xf32>
// CHECK: %[[R:.*]] = llm.reshape %[[H]] : tensor<1x32xf32> -> tensor<1x1x32xf32>
// CHECK: %[[S:.*]] = llm.mul %[[R]], %{{.*}} : tensor<1x1x32xf32>
// CHECK: %[[T:.*]] = llm.tanh %[[S]]
// CHECK: llm.scale %[[T]] {factor = 3.000000e+01 : f32}
func.func @forward(%ids: tensor<1x4xi64>) -> tensor<1x4x32xf32> {
  %one = arith.constant dense<1.0> : tensor<1x4x16xf32>
  %cap = arith.constant dense<0.0625> : tensor<1x4x32xf32>
  %emb = llm.weight "wte" : tensor<32x16xf32>
  %ids1 = llm.reshape %ids : tensor<1x4xi64> -> tensor<4xi64>
  %x = llm.embedding %emb, %ids1 : (tensor<32x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  %x3 = llm.reshape %x : tensor<4x16xf32> -> tensor<1x4x16xf32>
  %t = llm.tanh %x3 : tensor<1x4x16xf32>
  %g = llm.add %t, %one : tensor<1x4x16xf32>
  %g2 = llm.reshape %g : tensor<1x4x16xf32> -> tensor<4x16xf32>
  %l = llm.linear %g2, %emb : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %l3 = llm.reshape %l : tensor<4x32xf32> -> tensor<1x4x32xf32>
  %s = llm.mul %l3, %cap : tensor<1x4x32xf32>
  %th = llm.tanh %s : tensor<1x4x32xf32>
  %out = llm.scale %th {factor = 30.0 : f32} : tensor<1x4x32xf32>
  return %out : tensor<1x4x32xf32>
}

// -----

// A constant along the sequence that is not a splat (a folded position
// table) is still refused.
func.func @forward(%ids: tensor<1x2xi64>) -> tensor<1x2x4xf32> {
  %tab = arith.constant dense<[[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]]> : tensor<1x2x4xf32>
  %emb = llm.weight "wte" : tensor<4x4xf32>
  %ids1 = llm.reshape %ids : tensor<1x2xi64> -> tensor<2xi64>
  %x = llm.embedding %emb, %ids1 : (tensor<4x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %x3 = llm.reshape %x : tensor<2x4xf32> -> tensor<1x2x4xf32>
  // expected-error@+1 {{cannot synthesize a decode step: an operand that does not depend on the tokens is laid out along the sequence (a constant traced at 2 positions)}}
  %h = llm.add %x3, %tab : tensor<1x2x4xf32>
  %h2 = llm.reshape %h : tensor<1x2x4xf32> -> tensor<2x4xf32>
  %l = llm.linear %h2, %emb : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %l3 = llm.reshape %l : tensor<2x4xf32> -> tensor<1x2x4xf32>
  return %l3 : tensor<1x2x4xf32>
}
