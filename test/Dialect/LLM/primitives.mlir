// RUN: pimc-opt %s --split-input-file | pimc-opt --split-input-file | FileCheck %s
// RUN: pimc-opt %s --split-input-file --mlir-print-op-generic | pimc-opt --split-input-file | FileCheck %s

// Round trip of the primitive ops the graph frontends emit
// (docs/frontend-graphs.md section 3), in custom and generic form.

// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<2x1x4x16xf32>, %b: tensor<3x16x8xf32>, %w: tensor<16x8xbf16>)
    -> (tensor<2x3x4x8xf32>, tensor<2x1x4x8xf32>) {
  // CHECK: llm.matmul %{{.*}}, %{{.*}} : (tensor<2x1x4x16xf32>, tensor<3x16x8xf32>) -> tensor<2x3x4x8xf32>
  %0 = llm.matmul %a, %b : (tensor<2x1x4x16xf32>, tensor<3x16x8xf32>) -> tensor<2x3x4x8xf32>
  // CHECK: llm.matmul %{{.*}}, %{{.*}} : (tensor<2x1x4x16xf32>, tensor<16x8xbf16>) -> tensor<2x1x4x8xf32>
  %1 = llm.matmul %a, %w : (tensor<2x1x4x16xf32>, tensor<16x8xbf16>) -> tensor<2x1x4x8xf32>
  return %0, %1 : tensor<2x3x4x8xf32>, tensor<2x1x4x8xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_compare_select
func.func @broadcast_compare_select(%x: tensor<4x4xf32>, %pos: tensor<4xi64>, %m: tensor<1x4xi1>)
    -> (tensor<4x4xf32>, tensor<2x4x4xi1>) {
  // CHECK: llm.broadcast %{{.*}} : tensor<4xi64> -> tensor<4x4xi64>
  %row = llm.broadcast %pos : tensor<4xi64> -> tensor<4x4xi64>
  %col0 = llm.reshape %pos : tensor<4xi64> -> tensor<4x1xi64>
  %col = llm.broadcast %col0 : tensor<4x1xi64> -> tensor<4x4xi64>
  // CHECK: llm.compare gt %{{.*}}, %{{.*}} : tensor<4x4xi64> -> tensor<4x4xi1>
  %mask = llm.compare gt %row, %col : tensor<4x4xi64> -> tensor<4x4xi1>
  // CHECK: llm.compare eq
  %e = llm.compare eq %x, %x : tensor<4x4xf32> -> tensor<4x4xi1>
  // CHECK: llm.compare ne
  %ne = llm.compare ne %mask, %e : tensor<4x4xi1> -> tensor<4x4xi1>
  // CHECK: llm.compare lt
  %lt = llm.compare lt %x, %x : tensor<4x4xf32> -> tensor<4x4xi1>
  // CHECK: llm.compare le
  %le = llm.compare le %x, %x : tensor<4x4xf32> -> tensor<4x4xi1>
  // CHECK: llm.compare ge
  %ge = llm.compare ge %x, %x : tensor<4x4xf32> -> tensor<4x4xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<4x4xf32>
  // CHECK: llm.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x4xi1>, tensor<4x4xf32>
  %y = llm.select %mask, %ninf, %x : tensor<4x4xi1>, tensor<4x4xf32>
  // CHECK: llm.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x4xi1>, tensor<4x4xi64>
  %z = llm.select %lt, %row, %col : tensor<4x4xi1>, tensor<4x4xi64>
  // CHECK: llm.broadcast %{{.*}} : tensor<1x4xi1> -> tensor<2x4x4xi1>
  %mb = llm.broadcast %m : tensor<1x4xi1> -> tensor<2x4x4xi1>
  return %y, %mb : tensor<4x4xf32>, tensor<2x4x4xi1>
}

// -----

// CHECK-LABEL: func.func @convert
func.func @convert(%i: tensor<8xi64>, %f: tensor<8xf32>, %b: tensor<8xi1>, %h: tensor<8xbf16>)
    -> (tensor<8xf32>, tensor<8xi64>, tensor<8xi1>, tensor<8xf32>, tensor<8xf32>) {
  // CHECK: llm.convert %{{.*}} : tensor<8xi64> -> tensor<8xf32>
  %0 = llm.convert %i : tensor<8xi64> -> tensor<8xf32>
  // CHECK: llm.convert %{{.*}} : tensor<8xf32> -> tensor<8xi64>
  %1 = llm.convert %f : tensor<8xf32> -> tensor<8xi64>
  // CHECK: llm.convert %{{.*}} : tensor<8xf32> -> tensor<8xi1>
  %2 = llm.convert %f : tensor<8xf32> -> tensor<8xi1>
  // CHECK: llm.convert %{{.*}} : tensor<8xi1> -> tensor<8xf32>
  %3 = llm.convert %b : tensor<8xi1> -> tensor<8xf32>
  // CHECK: llm.convert %{{.*}} : tensor<8xbf16> -> tensor<8xf32>
  %4 = llm.convert %h : tensor<8xbf16> -> tensor<8xf32>
  return %0, %1, %2, %3, %4 : tensor<8xf32>, tensor<8xi64>, tensor<8xi1>, tensor<8xf32>, tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: llm.sqrt
  %0 = llm.sqrt %x : tensor<4x8xf32>
  // CHECK: llm.log
  %1 = llm.log %0 : tensor<4x8xf32>
  // CHECK: llm.cos
  %2 = llm.cos %1 : tensor<4x8xf32>
  // CHECK: llm.sin
  %3 = llm.sin %2 : tensor<4x8xf32>
  // CHECK: llm.abs
  %4 = llm.abs %3 : tensor<4x8xf32>
  // CHECK: llm.erf
  %5 = llm.erf %4 : tensor<4x8xf32>
  // CHECK: llm.reciprocal
  %6 = llm.reciprocal %5 : tensor<4x8xf32>
  // CHECK: llm.relu
  %7 = llm.relu %6 : tensor<4x8xf32>
  // CHECK: llm.pow %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %8 = llm.pow %7, %x : tensor<4x8xf32>
  // CHECK: llm.minimum %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %9 = llm.minimum %8, %x : tensor<4x8xf32>
  return %9 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @reductions_topk_cumsum
func.func @reductions_topk_cumsum(%x: tensor<8x4xf32>, %m: tensor<2x8xi64>)
    -> (tensor<8xf32>, tensor<1x4xf32>, tensor<8x2xf32>, tensor<8x2xi64>, tensor<3x4xf32>, tensor<3x4xi64>, tensor<2x8xi64>, tensor<8x4xf32>) {
  // CHECK: llm.reduce min %{{.*}} {axis = 1 : i64} : tensor<8x4xf32> -> tensor<8xf32>
  %0 = llm.reduce min %x {axis = 1} : tensor<8x4xf32> -> tensor<8xf32>
  // CHECK: llm.reduce prod %{{.*}} {axis = 0 : i64, keep_dim = true} : tensor<8x4xf32> -> tensor<1x4xf32>
  %1 = llm.reduce prod %x {axis = 0, keep_dim = true} : tensor<8x4xf32> -> tensor<1x4xf32>
  // CHECK: llm.topk %{{.*}} {k = 2 : i64} : tensor<8x4xf32> -> tensor<8x2xf32>, tensor<8x2xi64>
  %v, %i = llm.topk %x {k = 2} : tensor<8x4xf32> -> tensor<8x2xf32>, tensor<8x2xi64>
  // CHECK: llm.topk %{{.*}} {axis = 0 : i64, k = 3 : i64, largest = false} : tensor<8x4xf32> -> tensor<3x4xf32>, tensor<3x4xi64>
  %v2, %i2 = llm.topk %x {k = 3, axis = 0, largest = false} : tensor<8x4xf32> -> tensor<3x4xf32>, tensor<3x4xi64>
  // CHECK: llm.cumsum %{{.*}} {axis = 1 : i64} : tensor<2x8xi64>
  %c = llm.cumsum %m {axis = 1} : tensor<2x8xi64>
  // CHECK: llm.cumsum %{{.*}} {axis = -2 : i64, exclusive = true, reverse = true} : tensor<8x4xf32>
  %cf = llm.cumsum %x {axis = -2, exclusive = true, reverse = true} : tensor<8x4xf32>
  return %0, %1, %v, %i, %v2, %i2, %c, %cf : tensor<8xf32>, tensor<1x4xf32>, tensor<8x2xf32>, tensor<8x2xi64>, tensor<3x4xf32>, tensor<3x4xi64>, tensor<2x8xi64>, tensor<8x4xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: tensor<2x8x64xf32>, %w: tensor<64xbf16>, %b: tensor<64xf32>, %w2: tensor<8x64xf32>)
    -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) {
  // CHECK: llm.layer_norm %{{.*}} weight %{{.*}} bias %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<2x8x64xf32>, tensor<64xbf16>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %0 = llm.layer_norm %x weight %w bias %b {epsilon = 1.0e-5 : f32} : (tensor<2x8x64xf32>, tensor<64xbf16>, tensor<64xf32>) -> tensor<2x8x64xf32>
  // CHECK: llm.layer_norm %{{.*}} weight %{{.*}} {epsilon = {{.*}}} : (tensor<2x8x64xf32>, tensor<64xbf16>) -> tensor<2x8x64xf32>
  %1 = llm.layer_norm %x weight %w {epsilon = 1.0e-5 : f32} : (tensor<2x8x64xf32>, tensor<64xbf16>) -> tensor<2x8x64xf32>
  // CHECK: llm.layer_norm %{{.*}} bias %{{.*}} {epsilon = {{.*}}} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %2 = llm.layer_norm %x bias %b {epsilon = 1.0e-5 : f32} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  // CHECK: llm.layer_norm %{{.*}} {epsilon = {{.*}}} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %3 = llm.layer_norm %x {epsilon = 1.0e-5 : f32} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: llm.layer_norm %{{.*}} weight %{{.*}} {axis = 1 : i64, epsilon = {{.*}}} : (tensor<2x8x64xf32>, tensor<8x64xf32>) -> tensor<2x8x64xf32>
  %4 = llm.layer_norm %x weight %w2 {axis = 1, epsilon = 1.0e-5 : f32} : (tensor<2x8x64xf32>, tensor<8x64xf32>) -> tensor<2x8x64xf32>
  return %0, %1, %2, %3, %4 : tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>
}

// -----

// Integer and boolean tensors through the data-movement ops.
// CHECK-LABEL: func.func @integer_data_movement
func.func @integer_data_movement(%i: tensor<2x6xi64>, %b: tensor<2x6xi1>, %idx: tensor<2x3xi64>)
    -> (tensor<6x2xi64>, tensor<4x6xi1>, tensor<2x2xi64>, tensor<2x3x6xi1>, tensor<12xi64>) {
  // CHECK: llm.reshape %{{.*}} : tensor<2x6xi64> -> tensor<12xi64>
  %r = llm.reshape %i : tensor<2x6xi64> -> tensor<12xi64>
  // CHECK: llm.transpose %{{.*}} {permutation = array<i64: 1, 0>} : tensor<2x6xi64> -> tensor<6x2xi64>
  %t = llm.transpose %i {permutation = array<i64: 1, 0>} : tensor<2x6xi64> -> tensor<6x2xi64>
  // CHECK: llm.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2x6xi1>, tensor<2x6xi1>) -> tensor<4x6xi1>
  %c = llm.concat %b, %b {axis = 0} : (tensor<2x6xi1>, tensor<2x6xi1>) -> tensor<4x6xi1>
  // CHECK: llm.slice %{{.*}} {axis = 1 : i64, size = 2 : i64, start = 1 : i64} : tensor<2x6xi64> -> tensor<2x2xi64>
  %s = llm.slice %i {axis = 1, start = 1, size = 2} : tensor<2x6xi64> -> tensor<2x2xi64>
  // CHECK: llm.gather %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2x6xi1>, tensor<2x3xi64>) -> tensor<2x3x6xi1>
  %g = llm.gather %b, %idx {axis = 0} : (tensor<2x6xi1>, tensor<2x3xi64>) -> tensor<2x3x6xi1>
  return %t, %c, %s, %g, %r : tensor<6x2xi64>, tensor<4x6xi1>, tensor<2x2xi64>, tensor<2x3x6xi1>, tensor<12xi64>
}

// -----

// CHECK-LABEL: func.func @gather_scalar_index
func.func @gather_scalar_index(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  // CHECK: arith.constant dense<-1> : tensor<i64>
  %i = arith.constant dense<-1> : tensor<i64>
  // CHECK: llm.gather %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<4x8xf32>, tensor<i64>) -> tensor<8xf32>
  %g = llm.gather %x, %i {axis = 0} : (tensor<4x8xf32>, tensor<i64>) -> tensor<8xf32>
  return %g : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @moe_mixtral
func.func @moe_mixtral(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %wr = llm.weight "moe.gate.weight" : tensor<3x16xf32>
  %g0 = llm.weight "moe.experts.0.w1.weight" : tensor<32x16xbf16>
  %g1 = llm.weight "moe.experts.1.w1.weight" : tensor<32x16xbf16>
  %g2 = llm.weight "moe.experts.2.w1.weight" : tensor<32x16xbf16>
  %u0 = llm.weight "moe.experts.0.w3.weight" : tensor<32x16xbf16>
  %u1 = llm.weight "moe.experts.1.w3.weight" : tensor<32x16xbf16>
  %u2 = llm.weight "moe.experts.2.w3.weight" : tensor<32x16xbf16>
  %d0 = llm.weight "moe.experts.0.w2.weight" : tensor<16x32xbf16>
  %d1 = llm.weight "moe.experts.1.w2.weight" : tensor<16x32xbf16>
  %d2 = llm.weight "moe.experts.2.w2.weight" : tensor<16x32xbf16>
  // CHECK: llm.moe %{{.*}} router %{{.*}} experts gate[%{{.*}}, %{{.*}}, %{{.*}}] up[%{{.*}}, %{{.*}}, %{{.*}}] down[%{{.*}}, %{{.*}}, %{{.*}}] {renormalize = true, top_k = 2 : i64}
  %y = llm.moe %x router %wr experts gate [%g0, %g1, %g2] up [%u0, %u1, %u2] down [%d0, %d1, %d2]
         {top_k = 2, renormalize = true}
         : (tensor<4x16xf32>, tensor<3x16xf32>, tensor<32x16xbf16>, tensor<32x16xbf16>, tensor<32x16xbf16>,
            tensor<32x16xbf16>, tensor<32x16xbf16>, tensor<32x16xbf16>,
            tensor<16x32xbf16>, tensor<16x32xbf16>, tensor<16x32xbf16>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Llama 4: top-1 of the logits, sigmoid, weight on the expert input, shared expert.
// CHECK-LABEL: func.func @moe_llama4
func.func @moe_llama4(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %br: tensor<2xf32>,
                      %g: tensor<8x16xf32>, %d: tensor<16x8xf32>, %sg: tensor<24x16xf32>, %sd: tensor<16x24xf32>) -> tensor<4x16xf32> {
  // CHECK: llm.moe %{{.*}} router %{{.*}} bias %{{.*}} experts gate[{{.*}}] up[{{.*}}] down[{{.*}}] shared({{.*}}) {activation = #llm<activation gelu>, order = #llm<moe_order topk_then_score>, routed_scaling_factor = 2.500000e+00 : f32, scoring = #llm<moe_scoring sigmoid>, top_k = 1 : i64, weight_on_input = true}
  %y = llm.moe %x router %wr bias %br experts gate [%g, %g] up [%g, %g] down [%d, %d] shared (%sg, %sg, %sd)
         {top_k = 1, scoring = #llm<moe_scoring sigmoid>, order = #llm<moe_order topk_then_score>,
          weight_on_input = true, routed_scaling_factor = 2.5 : f32, activation = #llm<activation gelu>}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<2xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
            tensor<16x8xf32>, tensor<16x8xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Qwen2-MoE: softmax top-2 without renormalisation, shared expert gated by
// sigmoid(shared_expert_gate x).
// CHECK-LABEL: func.func @moe_qwen2
func.func @moe_qwen2(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>,
                     %sg: tensor<24x16xf32>, %sd: tensor<16x24xf32>, %wg: tensor<1x16xbf16>) -> tensor<4x16xf32> {
  // CHECK: llm.moe %{{.*}} router %{{.*}} experts gate[{{.*}}] up[{{.*}}] down[{{.*}}] shared(%{{.*}}, %{{.*}}, %{{.*}}) shared_expert_gate %arg6 {top_k = 2 : i64}
  // CHECK-SAME: tensor<16x24xf32>, tensor<1x16xbf16>) -> tensor<4x16xf32>
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] shared (%sg, %sg, %sd) shared_expert_gate %wg
         {top_k = 2}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
            tensor<16x8xf32>, tensor<16x8xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>, tensor<1x16xbf16>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// gpt-oss: router bias, top-k of the logits then softmax, expert biases
// and the clamped SwiGLU.
// CHECK-LABEL: func.func @moe_gpt_oss
func.func @moe_gpt_oss(%x: tensor<1x16xf32>, %wr: tensor<2x16xbf16>, %br: tensor<2xbf16>, %g: tensor<8x16xbf16>, %d: tensor<16x8xbf16>,
                       %bg: tensor<2x8xbf16>, %bd: tensor<2x16xbf16>) -> tensor<1x16xf32> {
  // CHECK: llm.moe %{{.*}} router %{{.*}} bias %{{.*}} experts gate[{{.*}}] up[{{.*}}] down[{{.*}}] biases(%arg5, %arg5, %arg6) {activation = #llm<activation clamped_swiglu>, order = #llm<moe_order topk_then_score>, swiglu_alpha = 1.702000e+00 : f32, swiglu_limit = 7.000000e+00 : f32, top_k = 1 : i64}
  %y = llm.moe %x router %wr bias %br experts gate [%g, %g] up [%g, %g] down [%d, %d] biases (%bg, %bg, %bd)
         {top_k = 1, order = #llm<moe_order topk_then_score>, activation = #llm<activation clamped_swiglu>,
          swiglu_limit = 7.0 : f32, swiglu_alpha = 1.702 : f32}
         : (tensor<1x16xf32>, tensor<2x16xbf16>, tensor<2xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>,
            tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<2x8xbf16>, tensor<2x8xbf16>, tensor<2x16xbf16>) -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}

// -----

// DeepSeek-V3 (noaux_tc): sigmoid scores, the correction bias for the
// choice only, 2 groups of 2 experts, the best group (by its top-2 sum)
// kept, renormalised with epsilon 1e-20 and scaled.
// CHECK-LABEL: func.func @moe_deepseek_v3
func.func @moe_deepseek_v3(%x: tensor<1x16xf32>, %wr: tensor<4x16xf32>, %b: tensor<4xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<1x16xf32> {
  // CHECK: llm.moe %{{.*}} router %{{.*}} correction_bias %{{.*}} experts gate[{{.*}}] {{.*}}group_score_topk = 2 : i64, n_group = 2 : i64, renormalize = true, renormalize_epsilon = 9.99999968E-21 : f32, routed_scaling_factor = 2.500000e+00 : f32, scoring = #llm<moe_scoring sigmoid>, top_k = 2 : i64, topk_group = 1 : i64}
  %y = llm.moe %x router %wr correction_bias %b experts gate [%g, %g, %g, %g] up [%g, %g, %g, %g] down [%d, %d, %d, %d]
         {top_k = 2, scoring = #llm<moe_scoring sigmoid>, renormalize = true, renormalize_epsilon = 1.0e-20 : f32,
          routed_scaling_factor = 2.5 : f32, n_group = 2, topk_group = 1, group_score_topk = 2}
         : (tensor<1x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
            tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
            tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}

// -----

// MLA's absorbed decode: the latent cache stores [c_KV; k_rope] (24 + 8)
// once per token and reads c_KV back as the values; head_linear maps each
// head's nope query into the latent space (W_UK, transposed) and the
// latent output back to values (W_UV).
// CHECK-LABEL: func.func @mla_absorbed
func.func @mla_absorbed(%c: !llm.kv_cache<max_length = 64, kv_heads = 1, head_dim = 32, element_type = f32, value_prefix = 24>,
                        %key: tensor<1x1x32xf32>, %latent: tensor<1x1x24xf32>, %qn: tensor<1x4x16xf32>,
                        %wuk: tensor<4x16x24xbf16>, %wuv: tensor<4x12x24xbf16>, %p: index)
    -> (tensor<1x4x24xf32>, tensor<1x4x12xf32>, !llm.kv_cache<max_length = 64, kv_heads = 1, head_dim = 32, element_type = f32, value_prefix = 24>) {
  // CHECK: llm.kv_cache_append {{.*}} : <max_length = 64, kv_heads = 1, head_dim = 32, element_type = f32, value_prefix = 24>, tensor<1x1x32xf32>, tensor<1x1x24xf32>
  %c2 = llm.kv_cache_append %c, %key, %latent, %p : !llm.kv_cache<max_length = 64, kv_heads = 1, head_dim = 32, element_type = f32, value_prefix = 24>, tensor<1x1x32xf32>, tensor<1x1x24xf32>
  // CHECK: llm.kv_cache_read {{.*}} -> tensor<?x1x32xf32>, tensor<?x1x24xf32>
  %k, %v = llm.kv_cache_read %c2, %p : !llm.kv_cache<max_length = 64, kv_heads = 1, head_dim = 32, element_type = f32, value_prefix = 24> -> tensor<?x1x32xf32>, tensor<?x1x24xf32>
  // CHECK: llm.head_linear %{{.*}}, %{{.*}} {transpose_weight = true} : (tensor<1x4x16xf32>, tensor<4x16x24xbf16>) -> tensor<1x4x24xf32>
  %qhat = llm.head_linear %qn, %wuk {transpose_weight = true} : (tensor<1x4x16xf32>, tensor<4x16x24xbf16>) -> tensor<1x4x24xf32>
  // CHECK: llm.head_linear %{{.*}}, %{{.*}} : (tensor<1x4x24xf32>, tensor<4x12x24xbf16>) -> tensor<1x4x12xf32>
  %o = llm.head_linear %qhat, %wuv : (tensor<1x4x24xf32>, tensor<4x12x24xbf16>) -> tensor<1x4x12xf32>
  return %qhat, %o, %c2 : tensor<1x4x24xf32>, tensor<1x4x12xf32>, !llm.kv_cache<max_length = 64, kv_heads = 1, head_dim = 32, element_type = f32, value_prefix = 24>
}

// -----

// Llama 4's attention: chunks of 8 keys on the RoPE layers, the weightless
// QK norm, and the temperature on the NoPE layers.
// CHECK-LABEL: func.func @llama4_attention
func.func @llama4_attention(%q: tensor<1x4x8xf32>, %k: tensor<16x2x8xf32>) -> (tensor<1x4x8xf32>, tensor<1x4x8xf32>) {
  // CHECK: llm.rms_norm %{{.*}} {epsilon = {{.*}}} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %qn = llm.rms_norm %q {epsilon = 1.0e-5 : f32} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  // CHECK: llm.attention {{.*}} {chunk_size = 8 : i64, scale = 1.000000e+00 : f32}
  %a = llm.attention %qn, %k, %k {scale = 1.0 : f32, chunk_size = 8} : (tensor<1x4x8xf32>, tensor<16x2x8xf32>, tensor<16x2x8xf32>) -> tensor<1x4x8xf32>
  // CHECK: llm.attention {{.*}} {scale = 1.000000e+00 : f32, temperature_floor_scale = 8192 : i64, temperature_scale = 1.000000e-01 : f32}
  %b = llm.attention %q, %k, %k {scale = 1.0 : f32, temperature_floor_scale = 8192, temperature_scale = 0.1 : f32} : (tensor<1x4x8xf32>, tensor<16x2x8xf32>, tensor<16x2x8xf32>) -> tensor<1x4x8xf32>
  return %a, %b : tensor<1x4x8xf32>, tensor<1x4x8xf32>
}

// -----

// Integer and boolean graph buffers as weights.
// CHECK-LABEL: func.func @integer_weights
func.func @integer_weights() -> (tensor<8xi64>, tensor<4x4xi1>) {
  // CHECK: llm.weight "position_ids" : tensor<8xi64>
  %p = llm.weight "position_ids" : tensor<8xi64>
  // CHECK: llm.weight "causal_mask" : tensor<4x4xi1>
  %m = llm.weight "causal_mask" : tensor<4x4xi1>
  return %p, %m : tensor<8xi64>, tensor<4x4xi1>
}

// -----

// CHECK-LABEL: func.func @nonzero
func.func @nonzero(%m: tensor<8x2xi1>, %f: tensor<3x4x5xf32>, %i: tensor<6xi64>)
    -> (tensor<4x2xi64>, tensor<0x3xi64>, tensor<6x1xi64>) {
  // CHECK: llm.nonzero %{{.*}} : (tensor<8x2xi1>) -> tensor<4x2xi64>
  %0 = llm.nonzero %m : (tensor<8x2xi1>) -> tensor<4x2xi64>
  // CHECK: llm.nonzero %{{.*}} : (tensor<3x4x5xf32>) -> tensor<0x3xi64>
  %1 = llm.nonzero %f : (tensor<3x4x5xf32>) -> tensor<0x3xi64>
  // CHECK: llm.nonzero %{{.*}} : (tensor<6xi64>) -> tensor<6x1xi64>
  %2 = llm.nonzero %i : (tensor<6xi64>) -> tensor<6x1xi64>
  return %0, %1, %2 : tensor<4x2xi64>, tensor<0x3xi64>, tensor<6x1xi64>
}
