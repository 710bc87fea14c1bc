// The pim tensor-level ops (what convert-llm-to-pim writes into @forward):
// round trip, and one case per verifier diagnostic.
// RUN: pimc-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @ok
// CHECK: pim.gemv %arg0[%arg1, %arg2] bias[%arg3] {biased = array<i1: false, true>, name = "qk", source = "llm.linear"} : (tensor<1x64xf32>, tensor<32x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> (tensor<1x32xf32>, tensor<1x16xf32>)
// CHECK: pim.gated_act %{{.*}}, %{{.*}} {activation = "silu"} : tensor<1x32xf32>
// CHECK: pim.attention %arg4, %arg5, %arg5, %arg6 {causal = true, scale = 2.500000e-01 : f32, sliding_window = 8 : i64}
func.func @ok(%x: tensor<1x64xf32>, %w0: tensor<32x64xf32>, %w1: tensor<16x64xf32>,
              %b1: tensor<16xf32>, %q: tensor<1x4x16xf32>, %kv: tensor<1x2x16xf32>,
              %cache: !llm.kv_cache<max_length = 128, kv_heads = 2, head_dim = 16, element_type = f32>) -> (tensor<1x32xf32>, tensor<1x4x16xf32>, !llm.kv_cache<max_length = 128, kv_heads = 2, head_dim = 16, element_type = f32>) {
  %r:2 = pim.gemv %x[%w0, %w1] bias[%b1] {biased = array<i1: false, true>, source = "llm.linear", name = "qk"}
      : (tensor<1x64xf32>, tensor<32x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> (tensor<1x32xf32>, tensor<1x16xf32>)
  %a = pim.gated_act %r#0, %r#0 {activation = "silu"} : tensor<1x32xf32>
  %o, %c = pim.attention %q, %kv, %kv, %cache {scale = 0.25 : f32, causal = true, sliding_window = 8 : i64}
      : (tensor<1x4x16xf32>, tensor<1x2x16xf32>, tensor<1x2x16xf32>, !llm.kv_cache<max_length = 128, kv_heads = 2, head_dim = 16, element_type = f32>) -> (tensor<1x4x16xf32>, !llm.kv_cache<max_length = 128, kv_heads = 2, head_dim = 16, element_type = f32>)
  return %a, %o, %c : tensor<1x32xf32>, tensor<1x4x16xf32>, !llm.kv_cache<max_length = 128, kv_heads = 2, head_dim = 16, element_type = f32>
}

// -----

func.func @no_weights(%x: tensor<1x64xf32>) {
  // expected-error @+1 {{'pim.gemv' op has no weights}}
  pim.gemv %x[] {biased = array<i1>, source = "llm.linear"} : (tensor<1x64xf32>) -> ()
  return
}

// -----

func.func @results(%x: tensor<1x64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'pim.gemv' op has 2 results for 1 weights}}
  %r:2 = pim.gemv %x[%w] {biased = array<i1: false>, source = "llm.linear"} : (tensor<1x64xf32>, tensor<32x64xf32>) -> (tensor<1x32xf32>, tensor<1x32xf32>)
  return
}

// -----

func.func @biased(%x: tensor<1x64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'pim.gemv' op `biased` has 2 entries for 1 weights}}
  %r = pim.gemv %x[%w] {biased = array<i1: false, true>, source = "llm.linear"} : (tensor<1x64xf32>, tensor<32x64xf32>) -> tensor<1x32xf32>
  return
}

// -----

func.func @biases(%x: tensor<1x64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'pim.gemv' op `biased` marks 1 weights, 0 biases given}}
  %r = pim.gemv %x[%w] {biased = array<i1: true>, source = "llm.linear"} : (tensor<1x64xf32>, tensor<32x64xf32>) -> tensor<1x32xf32>
  return
}

// -----

func.func @rows(%x: tensor<1x64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'pim.gemv' op result 0 has 16 outputs, its weight 32 rows}}
  %r = pim.gemv %x[%w] {biased = array<i1: false>, source = "llm.linear"} : (tensor<1x64xf32>, tensor<32x64xf32>) -> tensor<1x16xf32>
  return
}

// -----

func.func @rank(%x: tensor<1x64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'pim.gemv' op result 0 has rank 1, the input 2}}
  %r = pim.gemv %x[%w] {biased = array<i1: false>, source = "llm.linear"} : (tensor<1x64xf32>, tensor<32x64xf32>) -> tensor<32xf32>
  return
}

// -----

func.func @act(%x: tensor<1x32xf32>) {
  // expected-error @+1 {{'pim.gated_act' op unknown activation 'relu' (silu, gelu, gelu_tanh, clamped_swiglu)}}
  %a = pim.gated_act %x, %x {activation = "relu"} : tensor<1x32xf32>
  return
}

// -----

func.func @heads(%q: tensor<1x5x16xf32>, %kv: tensor<1x2x16xf32>, %cache: !llm.kv_cache<max_length = 128, kv_heads = 2, head_dim = 16, element_type = f32>) {
  // expected-error @+1 {{'pim.attention' op 5 query heads are not a multiple of 2 KV heads}}
  %o, %c = pim.attention %q, %kv, %kv, %cache {scale = 0.25 : f32, causal = true}
      : (tensor<1x5x16xf32>, tensor<1x2x16xf32>, tensor<1x2x16xf32>, !llm.kv_cache<max_length = 128, kv_heads = 2, head_dim = 16, element_type = f32>) -> (tensor<1x5x16xf32>, !llm.kv_cache<max_length = 128, kv_heads = 2, head_dim = 16, element_type = f32>)
  return
}

// -----

func.func @kv(%q: tensor<1x4x16xf32>, %k: tensor<1x2x16xf32>, %v: tensor<1x2x8xf32>, %cache: !llm.kv_cache<max_length = 128, kv_heads = 2, head_dim = 16, element_type = f32>) {
  // expected-error @+1 {{'pim.attention' op key and value differ in shape}}
  %o, %c = pim.attention %q, %k, %v, %cache {scale = 0.25 : f32, causal = true}
      : (tensor<1x4x16xf32>, tensor<1x2x16xf32>, tensor<1x2x8xf32>, !llm.kv_cache<max_length = 128, kv_heads = 2, head_dim = 16, element_type = f32>) -> (tensor<1x4x16xf32>, !llm.kv_cache<max_length = 128, kv_heads = 2, head_dim = 16, element_type = f32>)
  return
}

// -----

func.func @window(%q: tensor<1x4x16xf32>, %kv: tensor<1x2x16xf32>, %cache: !llm.kv_cache<max_length = 128, kv_heads = 2, head_dim = 16, element_type = f32>) {
  // expected-error @+1 {{'pim.attention' op sliding window 0 is not positive}}
  %o, %c = pim.attention %q, %kv, %kv, %cache {scale = 0.25 : f32, causal = true, sliding_window = 0 : i64}
      : (tensor<1x4x16xf32>, tensor<1x2x16xf32>, tensor<1x2x16xf32>, !llm.kv_cache<max_length = 128, kv_heads = 2, head_dim = 16, element_type = f32>) -> (tensor<1x4x16xf32>, !llm.kv_cache<max_length = 128, kv_heads = 2, head_dim = 16, element_type = f32>)
  return
}

// -----

// MoE: a route, two experts' gate/up GEMVs for slot 1, and the combine.
// CHECK-LABEL: func.func @moe
// CHECK: %[[W:.*]], %[[E:.*]] = pim.moe_route %arg0 {renormalize = true, scale = 1.000000e+00 : f32, sigmoid = false, top_k = 2 : i64, topk_first = false} : tensor<1x4xf32> -> tensor<2xf32>, tensor<2xi32>
// CHECK: pim.gemv %arg1[%arg2, %arg2, %arg2, %arg2] experts(%[[E]]) {biased = array<i1: false, false>, expert_slot = 1 : i64, name = "slot1.gate_up", source = "llm.moe"}
// CHECK: pim.moe_combine %[[W]], [%{{.*}}, %{{.*}}] : tensor<2xf32>, tensor<1x16xf32>, tensor<1x16xf32> -> tensor<1x16xf32>
func.func @moe(%l: tensor<1x4xf32>, %x: tensor<1x64xf32>, %w: tensor<16x64xf32>) -> tensor<1x16xf32> {
  %w8, %e = pim.moe_route %l {top_k = 2 : i64, sigmoid = false, topk_first = false, renormalize = true, scale = 1.0 : f32} : tensor<1x4xf32> -> tensor<2xf32>, tensor<2xi32>
  %g:2 = pim.gemv %x[%w, %w, %w, %w] experts(%e) {biased = array<i1: false, false>, source = "llm.moe", name = "slot1.gate_up", expert_slot = 1 : i64}
      : (tensor<1x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<2xi32>) -> (tensor<1x16xf32>, tensor<1x16xf32>)
  %y = pim.moe_combine %w8, [%g#0, %g#1] : tensor<2xf32>, tensor<1x16xf32>, tensor<1x16xf32> -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}

// -----

func.func @expert_groups(%x: tensor<1x64xf32>, %w: tensor<16x64xf32>, %e: tensor<2xi32>) {
  // expected-error @+1 {{'pim.gemv' op 3 expert weights are not a whole number of groups of 2 (one per result)}}
  %g:2 = pim.gemv %x[%w, %w, %w] experts(%e) {biased = array<i1: false, false>, source = "llm.moe", expert_slot = 0 : i64}
      : (tensor<1x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<2xi32>) -> (tensor<1x16xf32>, tensor<1x16xf32>)
  return
}

// -----

func.func @expert_types(%x: tensor<1x64xf32>, %w: tensor<16x64xf32>, %v: tensor<16x64xbf16>, %e: tensor<2xi32>) {
  // expected-error @+1 {{'pim.gemv' op expert 1 weight 0 has another type than expert 0's}}
  %g = pim.gemv %x[%w, %v] experts(%e) {biased = array<i1: false>, source = "llm.moe", expert_slot = 0 : i64}
      : (tensor<1x64xf32>, tensor<16x64xf32>, tensor<16x64xbf16>, tensor<2xi32>) -> tensor<1x16xf32>
  return
}

// -----

func.func @expert_slot(%x: tensor<1x64xf32>, %w: tensor<16x64xf32>, %e: tensor<2xi32>) {
  // expected-error @+1 {{'pim.gemv' op expert_slot must be in [0, 2)}}
  %g = pim.gemv %x[%w, %w] experts(%e) {biased = array<i1: false>, source = "llm.moe", expert_slot = 2 : i64}
      : (tensor<1x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<2xi32>) -> tensor<1x16xf32>
  return
}

// -----

func.func @slot_without_experts(%x: tensor<1x64xf32>, %w: tensor<16x64xf32>) {
  // expected-error @+1 {{'pim.gemv' op has an expert_slot but no experts}}
  %g = pim.gemv %x[%w] {biased = array<i1: false>, source = "llm.moe", expert_slot = 0 : i64}
      : (tensor<1x64xf32>, tensor<16x64xf32>) -> tensor<1x16xf32>
  return
}

// -----

func.func @route_k(%l: tensor<1x4xf32>) {
  // expected-error @+1 {{'pim.moe_route' op top_k 5 must be in [1, 4] (the experts)}}
  %w, %e = pim.moe_route %l {top_k = 5 : i64, sigmoid = false, topk_first = false, renormalize = true, scale = 1.0 : f32} : tensor<1x4xf32> -> tensor<5xf32>, tensor<5xi32>
  return
}

// -----

func.func @route_experts(%l: tensor<1x4xf32>) {
  // expected-error @+1 {{'pim.moe_route' op experts are i32 [2]}}
  %w, %e = pim.moe_route %l {top_k = 2 : i64, sigmoid = false, topk_first = false, renormalize = true, scale = 1.0 : f32} : tensor<1x4xf32> -> tensor<2xf32>, tensor<2xi64>
  return
}

// -----

func.func @route_scale(%l: tensor<1x4xf32>) {
  // expected-error @+1 {{'pim.moe_route' op scale must be positive}}
  %w, %e = pim.moe_route %l {top_k = 2 : i64, sigmoid = false, topk_first = false, renormalize = true, scale = 0.0 : f32} : tensor<1x4xf32> -> tensor<2xf32>, tensor<2xi32>
  return
}

// -----

func.func @route_shared(%l: tensor<1x4xf32>, %g: tensor<1x1xf32>) {
  // expected-error @+1 {{'pim.moe_route' op weights are f32 [3]}}
  %w, %e = pim.moe_route %l shared(%g : tensor<1x1xf32>) {top_k = 2 : i64, sigmoid = false, topk_first = false, renormalize = true, scale = 1.0 : f32} : tensor<1x4xf32> -> tensor<2xf32>, tensor<2xi32>
  return
}

// -----

func.func @route_shared_shape(%l: tensor<1x4xf32>, %g: tensor<1x2xf32>) {
  // expected-error @+1 {{'pim.moe_route' op shared_logit is one token's f32 [1, 1]}}
  %w, %e = pim.moe_route %l shared(%g : tensor<1x2xf32>) {top_k = 2 : i64, sigmoid = false, topk_first = false, renormalize = true, scale = 1.0 : f32} : tensor<1x4xf32> -> tensor<3xf32>, tensor<2xi32>
  return
}

// -----

func.func @combine_count(%w: tensor<2xf32>, %o: tensor<1x16xf32>) {
  // expected-error @+1 {{'pim.moe_combine' op weights are [1], one per expert output}}
  %y = pim.moe_combine %w, [%o] : tensor<2xf32>, tensor<1x16xf32> -> tensor<1x16xf32>
  return
}
