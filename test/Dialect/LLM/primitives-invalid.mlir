// RUN: pimc-opt %s --split-input-file --verify-diagnostics

// Every diagnostic of the primitive ops' verifiers (LLMOps.cpp, "Primitive
// ops of the graph frontends"), in source order, then the element-type
// checks of the data-movement ops and the ODS constraints that matter.

//===----------------------------------------------------------------------===//
// llm.matmul
//===----------------------------------------------------------------------===//

func.func @matmul_rank1(%a: tensor<16xf32>, %b: tensor<16x8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{operands must have rank >= 2, got 'tensor<16xf32>' and 'tensor<16x8xf32>'}}
  %r = llm.matmul %a, %b : (tensor<16xf32>, tensor<16x8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @matmul_k(%a: tensor<4x16xf32>, %b: tensor<15x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{contraction sizes differ: lhs has K = 16, rhs has K = 15}}
  %r = llm.matmul %a, %b : (tensor<4x16xf32>, tensor<15x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

func.func @matmul_batch(%a: tensor<2x4x16xf32>, %b: tensor<3x16x8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{batch dimensions of 'tensor<2x4x16xf32>' and 'tensor<3x16x8xf32>' do not broadcast}}
  %r = llm.matmul %a, %b : (tensor<2x4x16xf32>, tensor<3x16x8xf32>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

func.func @matmul_result_rank(%a: tensor<2x4x16xf32>, %b: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{result rank 2, expected 3}}
  %r = llm.matmul %a, %b : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

func.func @matmul_result_dim(%a: tensor<1x4x16xf32>, %b: tensor<3x16x8xf32>) -> tensor<1x4x8xf32> {
  // expected-error @+1 {{result dimension 0 is 1, expected 3}}
  %r = llm.matmul %a, %b : (tensor<1x4x16xf32>, tensor<3x16x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}

// -----

func.func @matmul_int(%a: tensor<4x16xi64>, %b: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %r = llm.matmul %a, %b : (tensor<4x16xi64>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.broadcast
//===----------------------------------------------------------------------===//

func.func @broadcast_element_type(%x: tensor<4xi64>) -> tensor<4x4xf32> {
  // expected-error @+1 {{result element type 'f32' must equal the input element type 'i64'}}
  %r = llm.broadcast %x : tensor<4xi64> -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

func.func @broadcast_lower_rank(%x: tensor<1x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot broadcast rank 2 to the lower rank 1}}
  %r = llm.broadcast %x : tensor<1x4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @broadcast_dim(%x: tensor<3x1xf32>) -> tensor<2x4x5xf32> {
  // expected-error @+1 {{input dimension 0 (3) must be 1 or equal result dimension 1 (4)}}
  %r = llm.broadcast %x : tensor<3x1xf32> -> tensor<2x4x5xf32>
  return %r : tensor<2x4x5xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.compare
//===----------------------------------------------------------------------===//

func.func @compare_result_shape(%a: tensor<4xf32>) -> tensor<1x4xi1> {
  // expected-error @+1 {{result shape must equal the operand shape 'tensor<4xf32>'}}
  %r = llm.compare lt %a, %a : tensor<4xf32> -> tensor<1x4xi1>
  return %r : tensor<1x4xi1>
}

// -----

func.func @compare_bool_order(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{i1 operands only support eq and ne}}
  %r = llm.compare lt %a, %a : tensor<4xi1> -> tensor<4xi1>
  return %r : tensor<4xi1>
}

// -----

func.func @compare_mixed_types(%a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xi1> {
  // expected-error @+1 {{requires all operands to have the same type}}
  %r = "llm.compare"(%a, %b) {predicate = #llm<predicate eq>} : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi1>
  return %r : tensor<4xi1>
}

// -----

func.func @compare_result_not_bool(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result #0 must be ranked tensor of 1-bit signless integer values}}
  %r = llm.compare eq %a, %a : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.select
//===----------------------------------------------------------------------===//

func.func @select_condition_shape(%c: tensor<1x4xi1>, %a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{condition shape 'tensor<1x4xi1>' must equal the value shape 'tensor<4x4xf32>' (broadcast it first)}}
  %r = llm.select %c, %a, %a : tensor<1x4xi1>, tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

func.func @select_value_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{all of {true_value, false_value, result} have same type}}
  %r = "llm.select"(%c, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.convert
//===----------------------------------------------------------------------===//

func.func @convert_shape(%x: tensor<4xi64>) -> tensor<2x2xf32> {
  // expected-error @+1 {{requires the same shape for all operands and results}}
  %r = llm.convert %x : tensor<4xi64> -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

func.func @convert_to_bf16(%x: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or 64-bit signless integer or 1-bit signless integer values}}
  %r = llm.convert %x : tensor<4xf32> -> tensor<4xbf16>
  return %r : tensor<4xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// llm.topk
//===----------------------------------------------------------------------===//

func.func @topk_scalar(%x: tensor<f32>) -> (tensor<f32>, tensor<i64>) {
  // expected-error @+1 {{input must be a ranked tensor of rank >= 1}}
  %v, %i = llm.topk %x {k = 1} : tensor<f32> -> tensor<f32>, tensor<i64>
  return %v, %i : tensor<f32>, tensor<i64>
}

// -----

func.func @topk_axis(%x: tensor<8x4xf32>) -> (tensor<8x2xf32>, tensor<8x2xi64>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2}}
  %v, %i = llm.topk %x {k = 2, axis = -3} : tensor<8x4xf32> -> tensor<8x2xf32>, tensor<8x2xi64>
  return %v, %i : tensor<8x2xf32>, tensor<8x2xi64>
}

// -----

func.func @topk_k_zero(%x: tensor<8x4xf32>) -> (tensor<8x0xf32>, tensor<8x0xi64>) {
  // expected-error @+1 {{k must be positive, got 0}}
  %v, %i = llm.topk %x {k = 0} : tensor<8x4xf32> -> tensor<8x0xf32>, tensor<8x0xi64>
  return %v, %i : tensor<8x0xf32>, tensor<8x0xi64>
}

// -----

func.func @topk_k_too_large(%x: tensor<8x4xf32>) -> (tensor<8x5xf32>, tensor<8x5xi64>) {
  // expected-error @+1 {{k = 5 exceeds the axis size 4}}
  %v, %i = llm.topk %x {k = 5} : tensor<8x4xf32> -> tensor<8x5xf32>, tensor<8x5xi64>
  return %v, %i : tensor<8x5xf32>, tensor<8x5xi64>
}

// -----

func.func @topk_values_rank(%x: tensor<8x4xf32>) -> (tensor<16xf32>, tensor<8x2xi64>) {
  // expected-error @+1 {{values must have rank 2}}
  %v, %i = llm.topk %x {k = 2} : tensor<8x4xf32> -> tensor<16xf32>, tensor<8x2xi64>
  return %v, %i : tensor<16xf32>, tensor<8x2xi64>
}

// -----

func.func @topk_indices_dim(%x: tensor<8x4xf32>) -> (tensor<8x2xf32>, tensor<8x4xi64>) {
  // expected-error @+1 {{indices dimension 1 is 4, expected 2}}
  %v, %i = llm.topk %x {k = 2} : tensor<8x4xf32> -> tensor<8x2xf32>, tensor<8x4xi64>
  return %v, %i : tensor<8x2xf32>, tensor<8x4xi64>
}

// -----

func.func @topk_indices_type(%x: tensor<8x4xf32>) -> (tensor<8x2xf32>, tensor<8x2xi32>) {
  // expected-error @+1 {{result #1 must be ranked tensor of 64-bit signless integer values}}
  %v, %i = llm.topk %x {k = 2} : tensor<8x4xf32> -> tensor<8x2xf32>, tensor<8x2xi32>
  return %v, %i : tensor<8x2xf32>, tensor<8x2xi32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.cumsum
//===----------------------------------------------------------------------===//

func.func @cumsum_axis(%x: tensor<2x8xi64>) -> tensor<2x8xi64> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %r = llm.cumsum %x {axis = 2} : tensor<2x8xi64>
  return %r : tensor<2x8xi64>
}

// -----

func.func @cumsum_bool(%x: tensor<2x8xi1>) -> tensor<2x8xi1> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit signless integer values}}
  %r = llm.cumsum %x {axis = 1} : tensor<2x8xi1>
  return %r : tensor<2x8xi1>
}

// -----

//===----------------------------------------------------------------------===//
// llm.layer_norm
//===----------------------------------------------------------------------===//

func.func @layer_norm_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{input must be a ranked tensor of rank >= 1}}
  %r = llm.layer_norm %x {epsilon = 1.0e-5 : f32} : (tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

func.func @layer_norm_axis(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %r = llm.layer_norm %x {epsilon = 1.0e-5 : f32, axis = 2} : (tensor<8x64xf32>) -> tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}

// -----

func.func @layer_norm_weight_shape(%x: tensor<8x64xf32>, %w: tensor<32xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{weight 'tensor<32xf32>' must have the normalised shape [64]}}
  %r = llm.layer_norm %x weight %w {epsilon = 1.0e-5 : f32} : (tensor<8x64xf32>, tensor<32xf32>) -> tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}

// -----

func.func @layer_norm_bias_rank(%x: tensor<2x8x64xf32>, %b: tensor<64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{bias 'tensor<64xf32>' must have the normalised shape [8x64]}}
  %r = llm.layer_norm %x bias %b {epsilon = 1.0e-5 : f32, axis = -2} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  return %r : tensor<2x8x64xf32>
}

// -----

func.func @layer_norm_epsilon(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{epsilon must be non-negative}}
  %r = llm.layer_norm %x {epsilon = -1.0 : f32} : (tensor<8x64xf32>) -> tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}

// -----

func.func @layer_norm_result_type(%x: tensor<8x64xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{all of {input, result} have same type}}
  %r = llm.layer_norm %x {epsilon = 1.0e-5 : f32} : (tensor<8x64xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.moe
//===----------------------------------------------------------------------===//

func.func @moe_input_rank(%x: tensor<1x4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+1 {{input must be [tokens, hidden], got 'tensor<1x4x16xf32>'}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1}
         : (tensor<1x4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16xf32>
  return %y : tensor<1x4x16xf32>
}

// -----

func.func @moe_router_rank(%x: tensor<4x16xf32>, %wr: tensor<32xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{router weight must be [experts, hidden], got 'tensor<32xf32>'}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1}
         : (tensor<4x16xf32>, tensor<32xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_router_hidden(%x: tensor<4x16xf32>, %wr: tensor<2x8xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{router weight 'tensor<2x8xf32>' does not match the hidden size 16}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1}
         : (tensor<4x16xf32>, tensor<2x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_no_experts(%x: tensor<4x16xf32>, %wr: tensor<0x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{needs at least one expert}}
  %y = llm.moe %x router %wr experts gate [] up [] down [] {top_k = 1}
         : (tensor<4x16xf32>, tensor<0x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_counts(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{needs as many up (2) and down (1) weights as gate weights (2)}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d] {top_k = 1}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_router_experts(%x: tensor<4x16xf32>, %wr: tensor<3x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{has 2 experts but the router scores 3}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1}
         : (tensor<4x16xf32>, tensor<3x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_router_bias(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %b: tensor<3xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{router bias must be [2], got 'tensor<3xf32>'}}
  %y = llm.moe %x router %wr bias %b experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<3xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_top_k(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{top_k = 3 must be in [1, 2]}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 3}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_scaling(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{routed_scaling_factor must be positive}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1, routed_scaling_factor = 0.0 : f32}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_expert_rank(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %g3: tensor<1x8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expert 1 weights must be 2-D}}
  %y = llm.moe %x router %wr experts gate [%g, %g3] up [%g, %g] down [%d, %d] {top_k = 1}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<1x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_gate_up(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %u: tensor<4x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expert 0 gate [8, 16] and up [4, 16] weights must have the same shape}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%u, %g] down [%d, %d] {top_k = 1}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_expert_hidden(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x32xf32>, %d: tensor<32x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expert 0 gate/up weights [8, 32] do not match the hidden size 16}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<32x8xf32>, tensor<32x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_down(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<8x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expert 0 down weight must be [16, 8], got [8, 16]}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_shared_partial(%x: tensor<4x16xf32>, %wr: tensor<1x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{the shared expert needs all of gate, up and down weights}}
  %y = "llm.moe"(%x, %wr, %g, %g, %d, %g) {top_k = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0>}
         : (tensor<4x16xf32>, tensor<1x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_shared_shape(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>, %sd: tensor<16x4xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{shared expert down weight must be [16, 8], got [16, 4]}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] shared (%g, %g, %sd) {top_k = 1}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_shared_expert_gate_alone(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>, %wg: tensor<1x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{shared_expert_gate needs a shared expert to gate}}
  %y = "llm.moe"(%x, %wr, %g, %g, %g, %g, %d, %d, %wg) {top_k = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 2, 2, 2, 0, 0, 0, 0, 0, 0, 1>}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_shared_expert_gate_rows(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>, %wg: tensor<2x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{shared_expert_gate weight must be [1, 16], got 'tensor<2x16xf32>'}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] shared (%g, %g, %d) shared_expert_gate %wg {top_k = 1}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<2x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_shared_expert_gate_hidden(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>, %wg: tensor<1x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{shared_expert_gate weight must be [1, 16], got 'tensor<1x8xf32>'}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] shared (%g, %g, %d) shared_expert_gate %wg {top_k = 1}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<1x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_bias_partial(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>, %b: tensor<2x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expert biases need all of gate, up and down}}
  %y = "llm.moe"(%x, %wr, %g, %g, %g, %g, %d, %d, %b, %b) {top_k = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0>}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_bias_shape(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>, %b: tensor<2x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{down biases must be [2, 16] (a row per expert), got 'tensor<2x8xf32>'}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] biases (%b, %b, %b) {top_k = 1}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_clamp_without_limit(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{swiglu_limit and swiglu_alpha are set exactly when the activation is clamped_swiglu}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1, activation = #llm<activation clamped_swiglu>, swiglu_alpha = 1.702 : f32}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_limit_without_clamp(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{swiglu_limit and swiglu_alpha are set exactly when the activation is clamped_swiglu}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1, swiglu_limit = 7.0 : f32, swiglu_alpha = 1.702 : f32}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_clamp_limit(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{swiglu_limit must be positive and finite, got 0}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1, activation = #llm<activation clamped_swiglu>, swiglu_limit = 0.0 : f32, swiglu_alpha = 1.702 : f32}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_groups_divide(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{n_group = 3 must divide the 2 experts}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1, n_group = 3}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_groups_keep(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{topk_group = 3 must be in [1, 2]}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1, n_group = 2, topk_group = 3}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_groups_too_few(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{top_k = 2 exceeds the 1 experts of the 1 kept groups}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 2, n_group = 2, topk_group = 1}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_groups_order(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{group-limited routing and score_correction_bias select on the scores: order must be score_then_topk}}
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1, n_group = 2, order = #llm<moe_order topk_then_score>}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @moe_correction_bias_shape(%x: tensor<4x16xf32>, %wr: tensor<2x16xf32>, %b: tensor<3xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{score_correction_bias must be [2], got 'tensor<3xf32>'}}
  %y = llm.moe %x router %wr correction_bias %b experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1}
         : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<3xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @gated_mlp_clamped(%x: tensor<4x16xf32>, %g: tensor<8x16xf32>, %d: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{clamped_swiglu (limit, alpha) is an llm.moe expert activation}}
  %y = llm.gated_mlp %x, %g, %g, %d {activation = #llm<activation clamped_swiglu>} : (tensor<4x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @attention_sinks(%q: tensor<1x8x32xf32>, %k: tensor<?x2x32xf32>, %s: tensor<4xf32>) -> tensor<1x8x32xf32> {
  // expected-error @+1 {{sinks must be [8] (one logit per query head), got 'tensor<4xf32>'}}
  %o = llm.attention %q, %k, %k sinks %s {scale = 0.125 : f32} : (tensor<1x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<4xf32>) -> tensor<1x8x32xf32>
  return %o : tensor<1x8x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Data movement keeps the element type
//===----------------------------------------------------------------------===//

func.func @reshape_element_type(%x: tensor<2x4xi64>) -> tensor<8xf32> {
  // expected-error @+1 {{result element type 'f32' must equal the input element type 'i64'}}
  %r = llm.reshape %x : tensor<2x4xi64> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @transpose_element_type(%x: tensor<2x4xi1>) -> tensor<4x2xi64> {
  // expected-error @+1 {{result element type 'i64' must equal the input element type 'i1'}}
  %r = llm.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x4xi1> -> tensor<4x2xi64>
  return %r : tensor<4x2xi64>
}

// -----

func.func @concat_element_type(%a: tensor<2x4xi64>, %b: tensor<2x4xf32>) -> tensor<4x4xi64> {
  // expected-error @+1 {{result element type 'i64' must equal the input element type 'f32'}}
  %r = llm.concat %a, %b {axis = 0} : (tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<4x4xi64>
  return %r : tensor<4x4xi64>
}

// -----

func.func @slice_element_type(%x: tensor<2x4xi64>) -> tensor<1x4xf32> {
  // expected-error @+1 {{result element type 'f32' must equal the input element type 'i64'}}
  %r = llm.slice %x {axis = 0, start = 0, size = 1} : tensor<2x4xi64> -> tensor<1x4xf32>
  return %r : tensor<1x4xf32>
}

// -----

func.func @gather_element_type(%x: tensor<4x8xi1>, %i: tensor<2xi64>) -> tensor<2x8xi64> {
  // expected-error @+1 {{result element type 'i64' must equal the input element type 'i1'}}
  %r = llm.gather %x, %i {axis = 0} : (tensor<4x8xi1>, tensor<2xi64>) -> tensor<2x8xi64>
  return %r : tensor<2x8xi64>
}

// -----

// Arithmetic stays f32: an i64 tensor is not an activation.
func.func @add_int(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{operand #0 must be tensor of 32-bit float values}}
  %r = "llm.add"(%a, %a) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %r : tensor<4xi64>
}

// -----

func.func @weight_f64() -> tensor<4xf64> {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values or a quantized weight matrix: one value, its scheme in the type or ranked tensor of 64-bit signless integer or 1-bit signless integer values, but got}}
  %w = llm.weight "w" : tensor<4xf64>
  return %w : tensor<4xf64>
}

// -----

//===----------------------------------------------------------------------===//
// llm.nonzero
//===----------------------------------------------------------------------===//

func.func @nonzero_columns(%m: tensor<8x2xi1>) -> tensor<4x3xi64> {
  // expected-error @+1 {{result has 3 index columns, the input rank is 2}}
  %r = llm.nonzero %m : (tensor<8x2xi1>) -> tensor<4x3xi64>
  return %r : tensor<4x3xi64>
}

// -----

func.func @nonzero_count(%m: tensor<8x2xi1>) -> tensor<17x2xi64> {
  // expected-error @+1 {{count 17 exceeds the input's 16 elements}}
  %r = llm.nonzero %m : (tensor<8x2xi1>) -> tensor<17x2xi64>
  return %r : tensor<17x2xi64>
}

// -----

func.func @nonzero_dynamic(%m: tensor<8x2xi1>) -> tensor<?x2xi64> {
  // expected-error @+1 {{result must be a static [count, rank] tensor}}
  %r = llm.nonzero %m : (tensor<8x2xi1>) -> tensor<?x2xi64>
  return %r : tensor<?x2xi64>
}

// -----

func.func @nonzero_i32(%m: tensor<8x2xi1>) -> tensor<4x2xi32> {
  // expected-error @+1 {{result #0 must be ranked tensor of 64-bit signless integer values}}
  %r = llm.nonzero %m : (tensor<8x2xi1>) -> tensor<4x2xi32>
  return %r : tensor<4x2xi32>
}

// -----

// A latent cache's value prefix lies inside the key.
// expected-error @+1 {{kv_cache value_prefix 32 must be in [0, head_dim = 32)}}
func.func @latent_prefix_too_wide(%c: !llm.kv_cache<max_length = 64, kv_heads = 1, head_dim = 32, element_type = f32, value_prefix = 32>) {
  return
}

// -----

func.func @latent_value_width(%c: !llm.kv_cache<max_length = 64, kv_heads = 1, head_dim = 32, element_type = f32, value_prefix = 24>,
                              %k: tensor<1x1x32xf32>, %p: index) {
  // expected-error @+1 {{value}}
  %c2 = llm.kv_cache_append %c, %k, %k, %p : !llm.kv_cache<max_length = 64, kv_heads = 1, head_dim = 32, element_type = f32, value_prefix = 24>, tensor<1x1x32xf32>, tensor<1x1x32xf32>
  return
}

// -----

func.func @head_linear_heads(%x: tensor<1x4x16xf32>, %w: tensor<2x12x16xf32>) {
  // expected-error @+1 {{input dimension 1 (heads) is 4, expected 2}}
  %y = llm.head_linear %x, %w : (tensor<1x4x16xf32>, tensor<2x12x16xf32>) -> tensor<1x2x12xf32>
  return
}

// -----

func.func @head_linear_transposed_k(%x: tensor<1x4x16xf32>, %w: tensor<4x12x16xf32>) {
  // expected-error @+1 {{input dimension 2 (K) is 16, expected 12}}
  %y = llm.head_linear %x, %w {transpose_weight = true} : (tensor<1x4x16xf32>, tensor<4x12x16xf32>) -> tensor<1x4x16xf32>
  return
}

// -----

func.func @chunk_and_window(%q: tensor<1x4x8xf32>, %k: tensor<8x2x8xf32>) {
  // expected-error @+1 {{chunk_size and sliding_window exclude each other}}
  %a = llm.attention %q, %k, %k {scale = 1.0 : f32, chunk_size = 4, sliding_window = 4} : (tensor<1x4x8xf32>, tensor<8x2x8xf32>, tensor<8x2x8xf32>) -> tensor<1x4x8xf32>
  return
}

// -----

func.func @temperature_half(%q: tensor<1x4x8xf32>, %k: tensor<8x2x8xf32>) {
  // expected-error @+1 {{temperature_floor_scale and temperature_scale come together}}
  %a = llm.attention %q, %k, %k {scale = 1.0 : f32, temperature_floor_scale = 8} : (tensor<1x4x8xf32>, tensor<8x2x8xf32>, tensor<8x2x8xf32>) -> tensor<1x4x8xf32>
  return
}

// -----

func.func @weightless_gemma_norm(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{the gemma style (1 + w) needs a weight}}
  %y = llm.rms_norm %x {epsilon = 1.0e-5 : f32, style = #llm<norm_style gemma>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}
