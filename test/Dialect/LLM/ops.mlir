// RUN: pimc-opt %s | pimc-opt | FileCheck %s
// RUN: pimc-opt %s --mlir-print-op-generic | pimc-opt | FileCheck %s

// CHECK-LABEL: func.func @decoder_layer
func.func @decoder_layer(%ids: tensor<?xi64>, %start: index, %len: index,
                         %cache: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>)
    -> (tensor<1x512xf32>, !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>) {
  // CHECK: llm.weight "model.embed_tokens.weight" : tensor<512x256xbf16>
  %emb = llm.weight "model.embed_tokens.weight" : tensor<512x256xbf16>
  // CHECK: llm.embedding %{{.*}}, %{{.*}} : (tensor<512x256xbf16>, tensor<?xi64>) -> tensor<?x256xf32>
  %h = llm.embedding %emb, %ids : (tensor<512x256xbf16>, tensor<?xi64>) -> tensor<?x256xf32>
  // Learned positions (GPT-2): the step's T positions from %start.
  %c0 = arith.constant 0 : index
  %count = tensor.dim %ids, %c0 : tensor<?xi64>
  // CHECK: llm.positions %{{.*}}, %{{.*}} : tensor<?xi64>
  %pos = llm.positions %start, %count : tensor<?xi64>
  // CHECK: llm.positions %{{.*}} : tensor<1xi64>
  %pos1 = llm.positions %start : tensor<1xi64>
  %nw = llm.weight "model.layers.0.input_layernorm.weight" : tensor<256xbf16>
  // CHECK: llm.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32}
  %x = llm.rms_norm %h, %nw {epsilon = 1.0e-5 : f32} : (tensor<?x256xf32>, tensor<256xbf16>) -> tensor<?x256xf32>
  // CHECK: style = #llm<norm_style gemma>
  %xg = llm.rms_norm %h, %nw {epsilon = 1.0e-6 : f32, style = #llm<norm_style gemma>} : (tensor<?x256xf32>, tensor<256xbf16>) -> tensor<?x256xf32>
  %wq = llm.weight "model.layers.0.self_attn.q_proj.weight" : tensor<256x256xbf16>
  %bq = llm.weight "model.layers.0.self_attn.q_proj.bias" : tensor<256xbf16>
  // CHECK: llm.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x256xf32>, tensor<256x256xbf16>, tensor<256xbf16>) -> tensor<?x256xf32>
  %q = llm.linear %x, %wq, %bq : (tensor<?x256xf32>, tensor<256x256xbf16>, tensor<256xbf16>) -> tensor<?x256xf32>
  %wk = llm.weight "model.layers.0.self_attn.k_proj" : !llm.qweight<shape = [64, 256], storage_type = ui4, group_size = 64, scale_type = f16, zero_point = ui4, packing = "gptq">
  // CHECK: !llm.qweight<shape = [64, 256], storage_type = ui4, group_size = 64, scale_type = f16, zero_point = ui4, packing = "gptq">
  %k = llm.linear %x, %wk : (tensor<?x256xf32>, !llm.qweight<shape = [64, 256], storage_type = ui4, group_size = 64, scale_type = f16, zero_point = ui4, packing = "gptq">) -> tensor<?x64xf32>
  %wv = llm.weight "model.layers.0.self_attn.v_proj" : !llm.qweight<shape = [64, 256], storage_type = ui8, group_size = 256, scale_type = f16, zero_point = none, packing = "gptq_v2">
  %v = llm.linear %x, %wv : (tensor<?x256xf32>, !llm.qweight<shape = [64, 256], storage_type = ui8, group_size = 256, scale_type = f16, zero_point = none, packing = "gptq_v2">) -> tensor<?x64xf32>
  // CHECK: llm.reshape %{{.*}} : tensor<?x256xf32> -> tensor<?x8x32xf32>
  %q3 = llm.reshape %q : tensor<?x256xf32> -> tensor<?x8x32xf32>
  %k3 = llm.reshape %k : tensor<?x64xf32> -> tensor<?x2x32xf32>
  %v3 = llm.reshape %v : tensor<?x64xf32> -> tensor<?x2x32xf32>
  %qn = llm.weight "model.layers.0.self_attn.q_norm.weight" : tensor<32xbf16>
  %q3n = llm.rms_norm %q3, %qn {epsilon = 1.0e-6 : f32} : (tensor<?x8x32xf32>, tensor<32xbf16>) -> tensor<?x8x32xf32>
  // CHECK: llm.rope {{.*}}kind = #llm<rope_kind llama3>, layout = #llm<rope_layout half_split>
  %qr = llm.rope %q3n, %start {kind = #llm<rope_kind llama3>, layout = #llm<rope_layout half_split>, theta = 5.0e5, rotary_dim = 32, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_position_embeddings = 8192} : tensor<?x8x32xf32>
  // CHECK: llm.rope {{.*}}kind = #llm<rope_kind yarn>, layout = #llm<rope_layout interleaved>
  %kr = llm.rope %k3, %start {kind = #llm<rope_kind yarn>, layout = #llm<rope_layout interleaved>, theta = 1.0e4, rotary_dim = 16, factor = 40.0, original_max_position_embeddings = 4096, beta_fast = 32.0, beta_slow = 1.0, truncate = false} : tensor<?x2x32xf32>
  %kl = llm.rope %k3, %start {kind = #llm<rope_kind linear>, layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = 32, factor = 2.0} : tensor<?x2x32xf32>
  %kd = llm.rope %k3, %start {kind = #llm<rope_kind dynamic>, layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = 32, factor = 2.0, max_position_embeddings = 4096} : tensor<?x2x32xf32>
  %k0 = llm.rope %k3, %start {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = 32} : tensor<?x2x32xf32>
  // CHECK: llm.kv_cache_append
  %c1 = llm.kv_cache_append %cache, %kr, %v3, %start : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>
  // CHECK: llm.kv_cache_read
  %ka, %va = llm.kv_cache_read %c1, %len : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> -> tensor<?x2x32xf32>, tensor<?x2x32xf32>
  // CHECK: llm.attention {{.*}} {scale = 0.176776692 : f32, sliding_window = 8 : i64}
  %o = llm.attention %qr, %ka, %va {scale = 0.176776695 : f32, sliding_window = 8} : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>) -> tensor<?x8x32xf32>
  // CHECK: causal = false, logit_softcap = 5.000000e+01 : f32
  %o2 = llm.attention %qr, %ka, %va {scale = 0.176776695 : f32, causal = false, logit_softcap = 50.0 : f32} : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>) -> tensor<?x8x32xf32>
  // CHECK: alibi_slopes = array<f32: 5.000000e-01, 2.500000e-01, 1.250000e-01, 6.250000e-02, 3.125000e-02, 1.562500e-02, 7.812500e-03, 3.906250e-03>
  %o3 = llm.attention %qr, %ka, %va {scale = 0.176776695 : f32, alibi_slopes = array<f32: 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625>} : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>) -> tensor<?x8x32xf32>
  // gpt-oss's learned sinks, one logit per query head.
  // CHECK: llm.attention %{{.*}}, %{{.*}}, %{{.*}} sinks %{{.*}} {scale = 1.250000e-01 : f32, sliding_window = 128 : i64} : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<8xbf16>) -> tensor<?x8x32xf32>
  %sinks = llm.weight "model.layers.0.self_attn.sinks" : tensor<8xbf16>
  %o4 = llm.attention %qr, %ka, %va sinks %sinks {scale = 0.125 : f32, sliding_window = 128} : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<8xbf16>) -> tensor<?x8x32xf32>
  %o2d = llm.reshape %o : tensor<?x8x32xf32> -> tensor<?x256xf32>
  %r = llm.add %h, %o2d : tensor<?x256xf32>
  %wg = llm.weight "model.layers.0.mlp.gate_proj.weight" : tensor<512x256xbf16>
  %wu = llm.weight "model.layers.0.mlp.up_proj.weight" : tensor<512x256xbf16>
  %wd = llm.weight "model.layers.0.mlp.down_proj.weight" : tensor<256x512xbf16>
  // CHECK: llm.gated_mlp {{.*}} : (tensor<?x256xf32>, tensor<512x256xbf16>, tensor<512x256xbf16>, tensor<256x512xbf16>) -> tensor<?x256xf32>
  %m = llm.gated_mlp %r, %wg, %wu, %wd : (tensor<?x256xf32>, tensor<512x256xbf16>, tensor<512x256xbf16>, tensor<256x512xbf16>) -> tensor<?x256xf32>
  // CHECK: activation = #llm<activation gelu_tanh>
  %mg = llm.gated_mlp %r, %wg, %wu, %wd {activation = #llm<activation gelu_tanh>} : (tensor<?x256xf32>, tensor<512x256xbf16>, tensor<512x256xbf16>, tensor<256x512xbf16>) -> tensor<?x256xf32>
  // CHECK: llm.slice %{{.*}} {axis = 0 : i64, size = 1 : i64, start = -1 : i64} : tensor<?x256xf32> -> tensor<1x256xf32>
  %last = llm.slice %m {axis = 0, start = -1, size = 1} : tensor<?x256xf32> -> tensor<1x256xf32>
  // CHECK: llm.lm_head
  %logits = llm.lm_head %last, %emb : (tensor<1x256xf32>, tensor<512x256xbf16>) -> tensor<1x512xf32>
  return %logits, %c1 : tensor<1x512xf32>, !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>
}

// CHECK-LABEL: func.func @elementwise_and_reductions
func.func @elementwise_and_reductions(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %i: tensor<3xi64>) -> tensor<4xi64> {
  // CHECK: llm.sub
  %0 = llm.sub %a, %b : tensor<4x8xf32>
  // CHECK: llm.mul
  %1 = llm.mul %0, %b : tensor<4x8xf32>
  // CHECK: llm.div
  %2 = llm.div %1, %a : tensor<4x8xf32>
  // CHECK: llm.maximum
  %3 = llm.maximum %2, %a : tensor<4x8xf32>
  // CHECK: llm.neg
  %4 = llm.neg %3 : tensor<4x8xf32>
  // CHECK: llm.exp
  %5 = llm.exp %4 : tensor<4x8xf32>
  // CHECK: llm.tanh
  %6 = llm.tanh %5 : tensor<4x8xf32>
  // CHECK: llm.rsqrt
  %7 = llm.rsqrt %6 : tensor<4x8xf32>
  // CHECK: llm.sigmoid
  %8 = llm.sigmoid %7 : tensor<4x8xf32>
  // CHECK: llm.silu
  %9 = llm.silu %8 : tensor<4x8xf32>
  // CHECK: llm.gelu %{{.*}} {approximate = true}
  %10 = llm.gelu %9 {approximate = true} : tensor<4x8xf32>
  // CHECK: llm.scale %{{.*}} {factor = 2.000000e+00 : f32}
  %11 = llm.scale %10 {factor = 2.0 : f32} : tensor<4x8xf32>
  // CHECK: llm.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
  %12 = llm.cast %11 : tensor<4x8xf32> to tensor<4x8xbf16>
  %13 = llm.cast %12 : tensor<4x8xbf16> to tensor<4x8xf32>
  // CHECK: llm.reduce sum %{{.*}} {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  %14 = llm.reduce sum %13 {axis = 1} : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK: llm.reduce max %{{.*}} {axis = 0 : i64, keep_dim = true} : tensor<4x8xf32> -> tensor<1x8xf32>
  %15 = llm.reduce max %13 {axis = 0, keep_dim = true} : tensor<4x8xf32> -> tensor<1x8xf32>
  // CHECK: llm.reduce mean
  %16 = llm.reduce mean %13 {axis = 1} : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK: llm.softmax %{{.*}} {axis = 1 : i64}
  %17 = llm.softmax %13 {axis = 1} : tensor<4x8xf32>
  // CHECK: llm.transpose %{{.*}} {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %18 = llm.transpose %17 {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  // CHECK: llm.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %19 = llm.concat %17, %13 {axis = 0} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  // CHECK: llm.gather %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<8x3xf32>
  %20 = llm.gather %19, %i {axis = 1} : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<8x3xf32>
  // CHECK: llm.argmax %{{.*}} : tensor<4x8xf32> -> tensor<4xi64>
  %21 = llm.argmax %17 : tensor<4x8xf32> -> tensor<4xi64>
  return %21 : tensor<4xi64>
}

// A function specialised from a symbolic sequence length (pimc import --dim):
// the record round-trips, with and without an upper bound.
// CHECK-LABEL: func.func @specialised
// CHECK-SAME: llm.dynamic_dims = [#llm.symbolic_dim<arg = 0, dim = 1, name = "seq", symbol = "s70", min = 2, max = 64, example = 8, value = 13>, #llm.symbolic_dim<arg = 1, dim = 0, name = "batch", symbol = "s1", min = 1, example = 1, value = 2>]
func.func @specialised(%ids: tensor<1x13xi64>, %b: tensor<2xf32>) attributes {llm.dynamic_dims = [#llm.symbolic_dim<arg = 0, dim = 1, name = "seq", symbol = "s70", min = 2, max = 64, example = 8, value = 13>, #llm.symbolic_dim<arg = 1, dim = 0, name = "batch", symbol = "s1", min = 1, example = 1, value = 2>]} {
  return
}
