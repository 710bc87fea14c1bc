// RUN: pimc-opt %s --split-input-file --llm-raise-attention | FileCheck %s

// Llama eager attention with GQA (repeat_kv: unsqueeze, expand, reshape;
// 4 query heads, 2 kv heads), scores * 1/sqrt(hd), a constant causal -inf
// mask, softmax over the keys.
// CHECK-LABEL: func.func @llama_gqa_causal
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x4x8xf32>, %[[K:.*]]: tensor<1x2x4x8xf32>, %[[V:.*]]: tensor<1x2x4x8xf32>)
// CHECK-DAG: %[[QT:.*]] = llm.transpose %[[Q]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK-DAG: %[[QS:.*]] = llm.reshape %[[QT]] : tensor<1x4x4x8xf32> -> tensor<4x4x8xf32>
// CHECK-DAG: %[[KT:.*]] = llm.transpose %[[K]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK-DAG: %[[KS:.*]] = llm.reshape %[[KT]] : tensor<1x4x2x8xf32> -> tensor<4x2x8xf32>
// CHECK-DAG: %[[VT:.*]] = llm.transpose %[[V]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK-DAG: %[[VS:.*]] = llm.reshape %[[VT]] : tensor<1x4x2x8xf32> -> tensor<4x2x8xf32>
// CHECK: %[[A:.*]] = llm.attention %[[QS]], %[[KS]], %[[VS]] {scale = 0.353553385 : f32} : (tensor<4x4x8xf32>, tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x4x8xf32>
// CHECK: %[[AR:.*]] = llm.reshape %[[A]] : tensor<4x4x8xf32> -> tensor<1x4x4x8xf32>
// CHECK: %[[O:.*]] = llm.transpose %[[AR]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
// CHECK: return %[[O]]
func.func @llama_gqa_causal(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %ku = llm.reshape %k : tensor<1x2x4x8xf32> -> tensor<1x2x1x4x8xf32>
  %ke = llm.broadcast %ku : tensor<1x2x1x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %kr = llm.reshape %ke : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %vu = llm.reshape %v : tensor<1x2x4x8xf32> -> tensor<1x2x1x4x8xf32>
  %ve = llm.broadcast %vu : tensor<1x2x1x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %vr = llm.reshape %ve : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %kt = llm.transpose %kr {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x4x8xf32> -> tensor<1x4x8x4xf32>
  %s = llm.matmul %q, %kt : (tensor<1x4x4x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x4x4xf32>
  %c = arith.constant dense<0.353553385> : tensor<f32>
  %cb = llm.broadcast %c : tensor<f32> -> tensor<1x4x4x4xf32>
  %ss = llm.mul %s, %cb : tensor<1x4x4x4xf32>
  %mask = arith.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %mb = llm.broadcast %mask : tensor<4x4xf32> -> tensor<1x4x4x4xf32>
  %sm = llm.add %ss, %mb : tensor<1x4x4x4xf32>
  %p = llm.softmax %sm {axis = 3 : i64} : tensor<1x4x4x4xf32>
  %o = llm.matmul %p, %vr : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %o : tensor<1x4x4x8xf32>
}

// -----

// masked_fill(triu-style compare of aranges, finfo.min) after a division by
// sqrt(hd); MHA on [heads, T, hd] without a batch dimension.
// CHECK-LABEL: func.func @masked_fill_compare
// CHECK: llm.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f32} : (tensor<4x2x16xf32>, tensor<4x2x16xf32>, tensor<4x2x16xf32>) -> tensor<4x2x16xf32>
// CHECK-NOT: llm.softmax
func.func @masked_fill_compare(%q: tensor<2x4x16xf32>, %k: tensor<2x4x16xf32>, %v: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %kt = llm.transpose %k {permutation = array<i64: 0, 2, 1>} : tensor<2x4x16xf32> -> tensor<2x16x4xf32>
  %s = llm.matmul %q, %kt : (tensor<2x4x16xf32>, tensor<2x16x4xf32>) -> tensor<2x4x4xf32>
  %c = arith.constant dense<4.0> : tensor<2x4x4xf32>
  %ss = llm.div %s, %c : tensor<2x4x4xf32>
  %ar = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %row = llm.reshape %ar : tensor<4xi64> -> tensor<4x1xi64>
  %rowb = llm.broadcast %row : tensor<4x1xi64> -> tensor<4x4xi64>
  %colb = llm.broadcast %ar : tensor<4xi64> -> tensor<4x4xi64>
  %future = llm.compare gt %colb, %rowb : tensor<4x4xi64> -> tensor<4x4xi1>
  %fb = llm.broadcast %future : tensor<4x4xi1> -> tensor<2x4x4xi1>
  %min = arith.constant dense<-3.40282347E+38> : tensor<2x4x4xf32>
  %sm = llm.select %fb, %min, %ss : tensor<2x4x4xi1>, tensor<2x4x4xf32>
  %p = llm.softmax %sm {axis = 2 : i64} : tensor<2x4x4xf32>
  %o = llm.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %o : tensor<2x4x16xf32>
}

// -----

// Sliding window of 2 (Mistral), finfo.min as the masked value.
// CHECK-LABEL: func.func @sliding_window
// CHECK: llm.attention {{.*}}{scale = 5.000000e-01 : f32, sliding_window = 2 : i64}
func.func @sliding_window(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %s = llm.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %ss = llm.scale %s {factor = 0.5 : f32} : tensor<1x2x4x4xf32>
  %mask = arith.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, 0.0, 0.0, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %mb = llm.broadcast %mask : tensor<1x1x4x4xf32> -> tensor<1x2x4x4xf32>
  %sm = llm.add %mb, %ss : tensor<1x2x4x4xf32>
  %p = llm.softmax %sm {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = llm.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %o : tensor<1x2x4x4xf32>
}

// -----

// Fewer queries than keys (a chunk after a prefix): query t sits at position
// S - T + t, masked with -1e9; and unmasked, unscaled attention (causal =
// false, scale 1).
// CHECK-LABEL: func.func @offset_and_unmasked
// CHECK: llm.attention {{.*}}{scale = 1.250000e-01 : f32} : (tensor<2x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>) -> tensor<2x1x8xf32>
// CHECK: llm.attention {{.*}}{causal = false, scale = 1.000000e+00 : f32} : (tensor<2x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>) -> tensor<2x1x8xf32>
func.func @offset_and_unmasked(%q: tensor<1x1x2x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> (tensor<1x1x2x8xf32>, tensor<1x1x2x8xf32>) {
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x1x4x8xf32> -> tensor<1x1x8x4xf32>
  %s = llm.matmul %q, %kt : (tensor<1x1x2x8xf32>, tensor<1x1x8x4xf32>) -> tensor<1x1x2x4xf32>
  %c = arith.constant dense<0.125> : tensor<1x1x2x4xf32>
  %ss = llm.mul %c, %s : tensor<1x1x2x4xf32>
  %mask = arith.constant dense<[[0.0, 0.0, 0.0, -1.0E+9], [0.0, 0.0, 0.0, 0.0]]> : tensor<2x4xf32>
  %mb = llm.broadcast %mask : tensor<2x4xf32> -> tensor<1x1x2x4xf32>
  %sm = llm.add %ss, %mb : tensor<1x1x2x4xf32>
  %p = llm.softmax %sm {axis = 3 : i64} : tensor<1x1x2x4xf32>
  %o = llm.matmul %p, %v : (tensor<1x1x2x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x2x8xf32>
  %p2 = llm.softmax %s {axis = 3 : i64} : tensor<1x1x2x4xf32>
  %o2 = llm.matmul %p2, %v : (tensor<1x1x2x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x2x8xf32>
  return %o, %o2 : tensor<1x1x2x8xf32>, tensor<1x1x2x8xf32>
}

// -----

// Tile-style repeat (kv head h % nkv: expand before the head axis) is not
// the head mapping of llm.attention: the repeated keys are passed as
// full MHA keys instead of being folded into kv heads.
// CHECK-LABEL: func.func @tile_repeat_is_not_gqa
// CHECK: llm.attention {{.*}} : (tensor<4x4x8xf32>, tensor<4x4x8xf32>, tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
func.func @tile_repeat_is_not_gqa(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %ku = llm.reshape %k : tensor<1x2x4x8xf32> -> tensor<1x1x2x4x8xf32>
  %ke = llm.broadcast %ku : tensor<1x1x2x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %kr = llm.reshape %ke : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %vu = llm.reshape %v : tensor<1x2x4x8xf32> -> tensor<1x1x2x4x8xf32>
  %ve = llm.broadcast %vu : tensor<1x1x2x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %vr = llm.reshape %ve : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %kt = llm.transpose %kr {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x4x8xf32> -> tensor<1x4x8x4xf32>
  %s = llm.matmul %q, %kt : (tensor<1x4x4x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x4x4xf32>
  %p = llm.softmax %s {axis = 3 : i64} : tensor<1x4x4x4xf32>
  %o = llm.matmul %p, %vr : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %o : tensor<1x4x4x8xf32>
}

// -----

// Negatives: an anti-causal mask (keys at or after the query), a mask whose
// masked value (-5) does not zero the probability, a softmax over the
// query axis, and keys that are not transposed.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: llm.attention
func.func @not_attention(%q: tensor<1x1x4x4xf32>, %k: tensor<1x1x4x4xf32>, %v: tensor<1x1x4x4xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) {
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x1x4x4xf32> -> tensor<1x1x4x4xf32>
  %s = llm.matmul %q, %kt : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %anti = arith.constant dense<[[[[0.0, 0.0, 0.0, 0.0], [0xFF800000, 0.0, 0.0, 0.0], [0xFF800000, 0xFF800000, 0.0, 0.0], [0xFF800000, 0xFF800000, 0xFF800000, 0.0]]]]> : tensor<1x1x4x4xf32>
  %s1 = llm.add %s, %anti : tensor<1x1x4x4xf32>
  %p1 = llm.softmax %s1 {axis = 3 : i64} : tensor<1x1x4x4xf32>
  %o1 = llm.matmul %p1, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %soft = arith.constant dense<[[[[0.0, -5.0, -5.0, -5.0], [0.0, 0.0, -5.0, -5.0], [0.0, 0.0, 0.0, -5.0], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %s2 = llm.add %s, %soft : tensor<1x1x4x4xf32>
  %p2 = llm.softmax %s2 {axis = 3 : i64} : tensor<1x1x4x4xf32>
  %o2 = llm.matmul %p2, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %p3 = llm.softmax %s {axis = 2 : i64} : tensor<1x1x4x4xf32>
  %o3 = llm.matmul %p3, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %s4 = llm.matmul %q, %k : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %p4 = llm.softmax %s4 {axis = 3 : i64} : tensor<1x1x4x4xf32>
  %o4 = llm.matmul %p4, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %o1, %o2, %o3, %o4 : tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>
}

// -----

// The make_fx trace of torch.matmul on [1, h, L, d]: bmm on [h, L, d] views,
// viewed back to [1, h, T, T] for the scale, mask and softmax.
// CHECK-LABEL: func.func @bmm_on_views
// CHECK: %[[A:.*]] = llm.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f32} : (tensor<4x2x16xf32>, tensor<4x2x16xf32>, tensor<4x2x16xf32>) -> tensor<4x2x16xf32>
// CHECK: %[[R:.*]] = llm.reshape %[[A]] : tensor<4x2x16xf32> -> tensor<1x4x2x16xf32>
// CHECK: %[[T:.*]] = llm.transpose %[[R]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x16xf32> -> tensor<1x2x4x16xf32>
// CHECK: %[[V:.*]] = llm.reshape %[[T]] : tensor<1x2x4x16xf32> -> tensor<2x4x16xf32>
// CHECK: return %[[V]]
func.func @bmm_on_views(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x16xf32>) -> tensor<2x4x16xf32> {
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x4x16xf32> -> tensor<1x2x16x4xf32>
  %qv = llm.reshape %q : tensor<1x2x4x16xf32> -> tensor<2x4x16xf32>
  %ktv = llm.reshape %kt : tensor<1x2x16x4xf32> -> tensor<2x16x4xf32>
  %s = llm.matmul %qv, %ktv : (tensor<2x4x16xf32>, tensor<2x16x4xf32>) -> tensor<2x4x4xf32>
  %sv = llm.reshape %s : tensor<2x4x4xf32> -> tensor<1x2x4x4xf32>
  %c = arith.constant dense<4.0> : tensor<1x2x4x4xf32>
  %ss = llm.div %sv, %c : tensor<1x2x4x4xf32>
  %mask = arith.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %mb = llm.broadcast %mask : tensor<4x4xf32> -> tensor<1x2x4x4xf32>
  %sm = llm.add %ss, %mb : tensor<1x2x4x4xf32>
  %p = llm.softmax %sm {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %pv = llm.reshape %p : tensor<1x2x4x4xf32> -> tensor<2x4x4xf32>
  %vv = llm.reshape %v : tensor<1x2x4x16xf32> -> tensor<2x4x16xf32>
  %o = llm.matmul %pv, %vv : (tensor<2x4x4xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %o : tensor<2x4x16xf32>
}

// -----

// Gemma 2: queries pre-scaled by query_pre_attn_scalar^-0.5, logits
// soft-capped as c * tanh(s / c) before the causal mask.
// CHECK-LABEL: func.func @softcap_prescaled
// CHECK: llm.attention %{{.*}}, %{{.*}}, %{{.*}} {logit_softcap = 5.000000e+01 : f32, scale = 2.500000e-01 : f32}
// CHECK-NOT: llm.tanh
func.func @softcap_prescaled(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32> {
  %c = arith.constant dense<0.25> : tensor<1x2x4x16xf32>
  %qs = llm.mul %q, %c : tensor<1x2x4x16xf32>
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x4x16xf32> -> tensor<1x2x16x4xf32>
  %s = llm.matmul %qs, %kt : (tensor<1x2x4x16xf32>, tensor<1x2x16x4xf32>) -> tensor<1x2x4x4xf32>
  %cap = arith.constant dense<50.0> : tensor<1x2x4x4xf32>
  %sd = llm.div %s, %cap : tensor<1x2x4x4xf32>
  %t = llm.tanh %sd : tensor<1x2x4x4xf32>
  %sc = llm.mul %t, %cap : tensor<1x2x4x4xf32>
  %mask = arith.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %mb = llm.broadcast %mask : tensor<4x4xf32> -> tensor<1x2x4x4xf32>
  %sm = llm.add %sc, %mb : tensor<1x2x4x4xf32>
  %p = llm.softmax %sm {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = llm.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32>
  return %o : tensor<1x2x4x16xf32>
}

// -----

// Negative: a soft-cap whose divisor and multiplier differ is no soft-cap.
// CHECK-LABEL: func.func @bad_softcap
// CHECK-NOT: llm.attention
func.func @bad_softcap(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x4x16xf32>, %v: tensor<1x1x4x16xf32>) -> tensor<1x1x4x16xf32> {
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x1x4x16xf32> -> tensor<1x1x16x4xf32>
  %s = llm.matmul %q, %kt : (tensor<1x1x4x16xf32>, tensor<1x1x16x4xf32>) -> tensor<1x1x4x4xf32>
  %c1 = arith.constant dense<50.0> : tensor<1x1x4x4xf32>
  %c2 = arith.constant dense<30.0> : tensor<1x1x4x4xf32>
  %sd = llm.div %s, %c1 : tensor<1x1x4x4xf32>
  %t = llm.tanh %sd : tensor<1x1x4x4xf32>
  %sc = llm.mul %t, %c2 : tensor<1x1x4x4xf32>
  %p = llm.softmax %sc {axis = 3 : i64} : tensor<1x1x4x4xf32>
  %o = llm.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x16xf32>) -> tensor<1x1x4x16xf32>
  return %o : tensor<1x1x4x16xf32>
}

// -----

// Positions from a cumulative sum of ones (as models derive them from an
// all-ones attention mask), the causal mask from comparing them; the
// compare/select chain is evaluated, then checked like a constant mask.
// CHECK-LABEL: func.func @mask_from_cumsum_positions
// CHECK: llm.attention {{.*}}{scale = 2.500000e-01 : f32} : (tensor<4x1x16xf32>
func.func @mask_from_cumsum_positions(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x4x16xf32>, %v: tensor<1x1x4x16xf32>) -> tensor<1x1x4x16xf32> {
  %ones = arith.constant dense<1> : tensor<4xi64>
  %pos = llm.cumsum %ones {axis = 0 : i64, exclusive = true} : tensor<4xi64>
  %row = llm.reshape %pos : tensor<4xi64> -> tensor<4x1xi64>
  %rowb = llm.broadcast %row : tensor<4x1xi64> -> tensor<4x4xi64>
  %colb = llm.broadcast %pos : tensor<4xi64> -> tensor<4x4xi64>
  %future = llm.compare gt %colb, %rowb : tensor<4x4xi64> -> tensor<4x4xi1>
  %fb = llm.broadcast %future : tensor<4x4xi1> -> tensor<1x1x4x4xi1>
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x1x4x16xf32> -> tensor<1x1x16x4xf32>
  %s = llm.matmul %q, %kt : (tensor<1x1x4x16xf32>, tensor<1x1x16x4xf32>) -> tensor<1x1x4x4xf32>
  %c = arith.constant dense<0.25> : tensor<1x1x4x4xf32>
  %ss = llm.mul %s, %c : tensor<1x1x4x4xf32>
  %ninf = arith.constant dense<0xFF800000> : tensor<1x1x4x4xf32>
  %sm = llm.select %fb, %ninf, %ss : tensor<1x1x4x4xi1>, tensor<1x1x4x4xf32>
  %p = llm.softmax %sm {axis = 3 : i64} : tensor<1x1x4x4xf32>
  %o = llm.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x16xf32>) -> tensor<1x1x4x16xf32>
  return %o : tensor<1x1x4x16xf32>
}

// -----

// MQA by broadcasting in the products: one kv head [1, 1, S, d] against
// 4 query heads -> llm.attention with one kv head.
// CHECK-LABEL: func.func @mqa_broadcast
// CHECK: llm.attention {{.*}} : (tensor<4x4x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>) -> tensor<4x4x8xf32>
func.func @mqa_broadcast(%q: tensor<1x4x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x1x4x8xf32> -> tensor<1x1x8x4xf32>
  %s = llm.matmul %q, %kt : (tensor<1x4x4x8xf32>, tensor<1x1x8x4xf32>) -> tensor<1x4x4x4xf32>
  %mask = arith.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %mb = llm.broadcast %mask : tensor<4x4xf32> -> tensor<1x4x4x4xf32>
  %sm = llm.add %s, %mb : tensor<1x4x4x4xf32>
  %p = llm.softmax %sm {axis = 3 : i64} : tensor<1x4x4x4xf32>
  %o = llm.matmul %p, %v : (tensor<1x4x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %o : tensor<1x4x4x8xf32>
}

// -----

// F.scaled_dot_product_attention after repeat_kv, as the FX importer writes
// it: llm.attention on the repeated [S, 4, d] kv views. The repeat folds
// away (GQA on the 2 kv heads, same values); q's view stays.
// CHECK-LABEL: func.func @sdpa_after_repeat_kv
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x4x8xf32>, %[[K:.*]]: tensor<1x2x4x8xf32>, %[[V:.*]]: tensor<1x2x4x8xf32>)
// CHECK-DAG: %[[KT:.*]] = llm.transpose %[[K]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK-DAG: %[[KS:.*]] = llm.reshape %[[KT]] : tensor<1x4x2x8xf32> -> tensor<4x2x8xf32>
// CHECK-DAG: %[[VT:.*]] = llm.transpose %[[V]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK-DAG: %[[VS:.*]] = llm.reshape %[[VT]] : tensor<1x4x2x8xf32> -> tensor<4x2x8xf32>
// CHECK: llm.attention %{{.*}}, %[[KS]], %[[VS]] {scale = 0.353553385 : f32} : (tensor<4x4x8xf32>, tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x4x8xf32>
func.func @sdpa_after_repeat_kv(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<4x4x8xf32> {
  %ku = llm.reshape %k : tensor<1x2x4x8xf32> -> tensor<1x2x1x4x8xf32>
  %ke = llm.broadcast %ku : tensor<1x2x1x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %kr = llm.reshape %ke : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %vu = llm.reshape %v : tensor<1x2x4x8xf32> -> tensor<1x2x1x4x8xf32>
  %ve = llm.broadcast %vu : tensor<1x2x1x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %vr = llm.reshape %ve : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %qt = llm.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
  %qs = llm.reshape %qt : tensor<1x4x4x8xf32> -> tensor<4x4x8xf32>
  %kt = llm.transpose %kr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
  %ks = llm.reshape %kt : tensor<1x4x4x8xf32> -> tensor<4x4x8xf32>
  %vt = llm.transpose %vr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
  %vs = llm.reshape %vt : tensor<1x4x4x8xf32> -> tensor<4x4x8xf32>
  %a = llm.attention %qs, %ks, %vs {scale = 0.353553385 : f32} : (tensor<4x4x8xf32>, tensor<4x4x8xf32>, tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  return %a : tensor<4x4x8xf32>
}

// -----

// A tile-order repeat (each kv head serves non-consecutive query heads) is
// not llm.attention's head mapping: the repeated operands stay.
// CHECK-LABEL: func.func @sdpa_after_tile_repeat
// CHECK: llm.attention {{.*}} : (tensor<4x4x8xf32>, tensor<4x4x8xf32>, tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
func.func @sdpa_after_tile_repeat(%qs: tensor<4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<4x4x8xf32> {
  %ku = llm.reshape %k : tensor<1x2x4x8xf32> -> tensor<1x1x2x4x8xf32>
  %ke = llm.broadcast %ku : tensor<1x1x2x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %kr = llm.reshape %ke : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %vu = llm.reshape %v : tensor<1x2x4x8xf32> -> tensor<1x1x2x4x8xf32>
  %ve = llm.broadcast %vu : tensor<1x1x2x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %vr = llm.reshape %ve : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %kt = llm.transpose %kr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
  %ks = llm.reshape %kt : tensor<1x4x4x8xf32> -> tensor<4x4x8xf32>
  %vt = llm.transpose %vr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
  %vs = llm.reshape %vt : tensor<1x4x4x8xf32> -> tensor<4x4x8xf32>
  %a = llm.attention %qs, %ks, %vs {scale = 0.353553385 : f32} : (tensor<4x4x8xf32>, tensor<4x4x8xf32>, tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  return %a : tensor<4x4x8xf32>
}

// -----

// torch.onnx's SDPA: q and k^T each scaled by sqrt(scale), the factor
// computed from constants (sqrt(1 / sqrt(16))): scale = 0.5 * 0.5.
// CHECK-LABEL: func.func @sdpa_onnx_split_scale
// CHECK: llm.attention {{.*}} {scale = 2.500000e-01 : f32} : (tensor<4x4x16xf32>, tensor<4x4x16xf32>, tensor<4x4x16xf32>) -> tensor<4x4x16xf32>
// CHECK-NOT: llm.softmax
func.func @sdpa_onnx_split_scale(%q: tensor<1x4x4x16xf32>, %k: tensor<1x4x4x16xf32>, %v: tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32> {
  %d = arith.constant dense<16.0> : tensor<1xf32>
  %one = arith.constant dense<1.0> : tensor<1xf32>
  %sd = llm.sqrt %d : tensor<1xf32>
  %inv = llm.div %one, %sd : tensor<1xf32>
  %c = llm.sqrt %inv : tensor<1xf32>
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x4x16xf32> -> tensor<1x4x16x4xf32>
  %cq = llm.broadcast %c : tensor<1xf32> -> tensor<1x4x4x16xf32>
  %qs = llm.mul %q, %cq : tensor<1x4x4x16xf32>
  %ck = llm.broadcast %c : tensor<1xf32> -> tensor<1x4x16x4xf32>
  %ks = llm.mul %kt, %ck : tensor<1x4x16x4xf32>
  %s = llm.matmul %qs, %ks : (tensor<1x4x4x16xf32>, tensor<1x4x16x4xf32>) -> tensor<1x4x4x4xf32>
  %mask = arith.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %mb = llm.broadcast %mask : tensor<4x4xf32> -> tensor<1x4x4x4xf32>
  %sm = llm.add %s, %mb : tensor<1x4x4x4xf32>
  %p = llm.softmax %sm {axis = 3 : i64} : tensor<1x4x4x4xf32>
  %o = llm.matmul %p, %v : (tensor<1x4x4x4xf32>, tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  return %o : tensor<1x4x4x16xf32>
}

// -----

// torch.onnx's SDPA: the boolean causal mask as select(m, 0, -inf) added to
// the scores, and where(isnan(p), 0, p) after the softmax. The mask leaves
// every query its own key, so no row is fully masked and the guard goes.
// CHECK-LABEL: func.func @onnx_sdpa_nan_guard
// CHECK: llm.attention {{.*}}{scale = 5.000000e-01 : f32}
// CHECK-NOT: llm.compare
// CHECK-NOT: llm.softmax
func.func @onnx_sdpa_nan_guard(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x3x4xf32> -> tensor<1x2x4x3xf32>
  %s = llm.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %ss = llm.scale %s {factor = 0.5 : f32} : tensor<1x2x3x3xf32>
  %causal = arith.constant dense<[[[[true, false, false], [true, true, false], [true, true, true]]]]> : tensor<1x1x3x3xi1>
  %zero = arith.constant dense<0.0> : tensor<1x1x3x3xf32>
  %ninf = arith.constant dense<0xFF800000> : tensor<1x1x3x3xf32>
  %m = llm.select %causal, %zero, %ninf : tensor<1x1x3x3xi1>, tensor<1x1x3x3xf32>
  %mb = llm.broadcast %m : tensor<1x1x3x3xf32> -> tensor<1x2x3x3xf32>
  %sm = llm.add %ss, %mb : tensor<1x2x3x3xf32>
  %p = llm.softmax %sm {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %nan = llm.compare ne %p, %p : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xi1>
  %z = arith.constant dense<0.0> : tensor<1x2x3x3xf32>
  %pg = llm.select %nan, %z, %p : tensor<1x2x3x3xi1>, tensor<1x2x3x3xf32>
  %o = llm.matmul %pg, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// A select that is not the NaN guard (it fills with 1, not 0) stays.
// CHECK-LABEL: func.func @not_a_nan_guard
// CHECK-NOT: llm.attention
// CHECK: llm.softmax
func.func @not_a_nan_guard(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x3x4xf32> -> tensor<1x2x4x3xf32>
  %s = llm.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %p = llm.softmax %s {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %nan = llm.compare ne %p, %p : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xi1>
  %one = arith.constant dense<1.0> : tensor<1x2x3x3xf32>
  %pg = llm.select %nan, %one, %p : tensor<1x2x3x3xi1>, tensor<1x2x3x3xf32>
  %o = llm.matmul %pg, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}
