// RUN: pimc-opt %s --split-input-file --verify-diagnostics

// Every diagnostic the llm verifiers can emit (LLMDialect.cpp type verifiers,
// LLMOps.cpp op verifiers) needs a case here, in source order, followed by
// the ODS-generated constraints that matter. A new verifier branch adds a
// case.

//===----------------------------------------------------------------------===//
// #llm.symbolic_dim and llm.dynamic_dims
//===----------------------------------------------------------------------===//

// expected-error @+1 {{symbolic_dim 's0': value 65 is outside the range [2, 64]}}
func.func @symbolic_dim_value_outside(%a: tensor<1x65xi64>) attributes {llm.dynamic_dims = [#llm.symbolic_dim<arg = 0, dim = 1, name = "seq", symbol = "s0", min = 2, max = 64, example = 8, value = 65>]} {
  return
}

// -----

// expected-error @+1 {{symbolic_dim 's0': example 1 is outside the range [2, inf]}}
func.func @symbolic_dim_example_outside(%a: tensor<1x8xi64>) attributes {llm.dynamic_dims = [#llm.symbolic_dim<arg = 0, dim = 1, name = "seq", symbol = "s0", min = 2, example = 1, value = 8>]} {
  return
}

// -----

// expected-error @+1 {{symbolic_dim range [9, 4] is empty or negative}}
func.func @symbolic_dim_empty_range(%a: tensor<1x8xi64>) attributes {llm.dynamic_dims = [#llm.symbolic_dim<arg = 0, dim = 1, name = "seq", symbol = "s0", min = 9, max = 4, example = 8, value = 8>]} {
  return
}

// -----

// expected-error @+1 {{symbolic_dim arg and dim must be non-negative}}
func.func @symbolic_dim_negative_arg(%a: tensor<1x8xi64>) attributes {llm.dynamic_dims = [#llm.symbolic_dim<arg = -1, dim = 1, name = "seq", symbol = "s0", min = 2, example = 8, value = 8>]} {
  return
}

// -----

// expected-error @+1 {{symbolic_dim needs a symbol}}
func.func @symbolic_dim_no_symbol(%a: tensor<1x8xi64>) attributes {llm.dynamic_dims = [#llm.symbolic_dim<arg = 0, dim = 1, name = "seq", symbol = "", min = 2, example = 8, value = 8>]} {
  return
}

// -----

// expected-error @+1 {{'llm.dynamic_dims' must be an array of #llm.symbolic_dim on a function}}
func.func @dynamic_dims_not_array(%a: tensor<1x8xi64>) attributes {llm.dynamic_dims = 3} {
  return
}

// -----

// expected-error @+1 {{'llm.dynamic_dims' entry 3 : i64 is not #llm.symbolic_dim}}
func.func @dynamic_dims_bad_entry(%a: tensor<1x8xi64>) attributes {llm.dynamic_dims = [3]} {
  return
}

// -----

// expected-error @+1 {{symbolic dim 's0' names argument 1 dim 1, which does not exist}}
func.func @dynamic_dims_no_such_arg(%a: tensor<1x8xi64>) attributes {llm.dynamic_dims = [#llm.symbolic_dim<arg = 1, dim = 1, name = "seq", symbol = "s0", min = 2, example = 8, value = 8>]} {
  return
}

// -----

// expected-error @+1 {{argument 0 dim 1 is 8, but its symbolic dim 's0' is specialised to 13}}
func.func @dynamic_dims_size_mismatch(%a: tensor<1x8xi64>) attributes {llm.dynamic_dims = [#llm.symbolic_dim<arg = 0, dim = 1, name = "seq", symbol = "s0", min = 2, example = 8, value = 13>]} {
  return
}

// -----

// expected-error @+1 {{symbol 's0' has two values, 8 and 9}}
func.func @dynamic_dims_two_values(%a: tensor<1x8xi64>, %b: tensor<9xi64>) attributes {llm.dynamic_dims = [#llm.symbolic_dim<arg = 0, dim = 1, name = "seq", symbol = "s0", min = 2, example = 8, value = 8>, #llm.symbolic_dim<arg = 1, dim = 0, name = "seq", symbol = "s0", min = 2, example = 8, value = 9>]} {
  return
}

// -----

//===----------------------------------------------------------------------===//
// !llm.kv_cache
//===----------------------------------------------------------------------===//

// expected-error @+1 {{kv_cache dimensions must be positive, got max_length = 0, kv_heads = 2, head_dim = 32}}
func.func @kv_cache_zero_length(%c: !llm.kv_cache<max_length = 0, kv_heads = 2, head_dim = 32, element_type = f32>) {
  return
}

// -----

// expected-error @+1 {{kv_cache dimensions must be positive}}
func.func @kv_cache_negative_heads(%c: !llm.kv_cache<max_length = 64, kv_heads = -1, head_dim = 32, element_type = f32>) {
  return
}

// -----

// expected-error @+1 {{kv_cache element_type must be f32, f16 or bf16, got 'i8'}}
func.func @kv_cache_int_element(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = i8>) {
  return
}

// -----

//===----------------------------------------------------------------------===//
// !llm.qweight
//===----------------------------------------------------------------------===//

// expected-error @+1 {{qweight shape must be [N, K] with positive sizes}}
func.func @qweight_rank3(%w: !llm.qweight<shape = [2, 64, 256], storage_type = ui4, group_size = 64, scale_type = f16, zero_point = ui4, packing = "gptq">) {
  return
}

// -----

// expected-error @+1 {{qweight shape must be [N, K] with positive sizes}}
func.func @qweight_zero_rows(%w: !llm.qweight<shape = [0, 256], storage_type = ui4, group_size = 64, scale_type = f16, zero_point = ui4, packing = "gptq">) {
  return
}

// -----

// expected-error @+1 {{qweight storage_type must be ui4 or ui8, got 'i4'}}
func.func @qweight_signless_storage(%w: !llm.qweight<shape = [64, 256], storage_type = i4, group_size = 64, scale_type = f16, zero_point = none, packing = "gptq">) {
  return
}

// -----

// expected-error @+1 {{qweight storage_type must be ui4 or ui8, got 'ui2'}}
func.func @qweight_ui2_storage(%w: !llm.qweight<shape = [64, 256], storage_type = ui2, group_size = 64, scale_type = f16, zero_point = none, packing = "gptq">) {
  return
}

// -----

// expected-error @+1 {{qweight group_size 48 must be positive and divide K = 256}}
func.func @qweight_group_not_dividing(%w: !llm.qweight<shape = [64, 256], storage_type = ui4, group_size = 48, scale_type = f16, zero_point = ui4, packing = "gptq">) {
  return
}

// -----

// expected-error @+1 {{qweight group_size 0 must be positive}}
func.func @qweight_group_zero(%w: !llm.qweight<shape = [64, 256], storage_type = ui4, group_size = 0, scale_type = f16, zero_point = ui4, packing = "gptq">) {
  return
}

// -----

// expected-error @+1 {{qweight scale_type must be f32, f16 or bf16, got 'f64'}}
func.func @qweight_f64_scale(%w: !llm.qweight<shape = [64, 256], storage_type = ui4, group_size = 64, scale_type = f64, zero_point = ui4, packing = "gptq">) {
  return
}

// -----

// expected-error @+1 {{qweight zero_point must be none or 'ui4', got 'ui8'}}
func.func @qweight_zero_point_width(%w: !llm.qweight<shape = [64, 256], storage_type = ui4, group_size = 64, scale_type = f16, zero_point = ui8, packing = "gptq">) {
  return
}

// -----

// expected-error @+1 {{qweight zero_point must be none or 'ui8', got 'f16'}}
func.func @qweight_zero_point_float(%w: !llm.qweight<shape = [64, 256], storage_type = ui8, group_size = 64, scale_type = f16, zero_point = f16, packing = "gptq">) {
  return
}

// -----

// expected-error @+1 {{qweight packing 'awq' is unknown (known: gptq, gptq_v2)}}
func.func @qweight_unknown_packing(%w: !llm.qweight<shape = [64, 256], storage_type = ui4, group_size = 64, scale_type = f16, zero_point = ui4, packing = "awq">) {
  return
}

// -----

// 4 output rows of 4 bits do not fill a 32-bit word.
// expected-error @+1 {{gptq packing needs K and N to fill whole 32-bit words}}
func.func @qweight_partial_word(%w: !llm.qweight<shape = [4, 256], storage_type = ui4, group_size = 64, scale_type = f16, zero_point = ui4, packing = "gptq">) {
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.weight
//===----------------------------------------------------------------------===//

func.func @weight_empty_name() -> tensor<4x4xf32> {
  // expected-error @+1 {{needs a non-empty checkpoint tensor name}}
  %w = llm.weight "" : tensor<4x4xf32>
  return %w : tensor<4x4xf32>
}

// -----

func.func @weight_dynamic_shape() -> tensor<?x4xbf16> {
  // expected-error @+1 {{weight 'w' must have a static shape, got 'tensor<?x4xbf16>'}}
  %w = llm.weight "w" : tensor<?x4xbf16>
  return %w : tensor<?x4xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// llm.embedding
//===----------------------------------------------------------------------===//

func.func @embedding_table_rank(%t: tensor<512xbf16>, %ids: tensor<4xi64>) -> tensor<4x256xf32> {
  // expected-error @+1 {{table must have rank 2, got 'tensor<512xbf16>'}}
  %r = llm.embedding %t, %ids : (tensor<512xbf16>, tensor<4xi64>) -> tensor<4x256xf32>
  return %r : tensor<4x256xf32>
}

// -----

func.func @embedding_ids_rank(%t: tensor<512x256xbf16>, %ids: tensor<1x4xi64>) -> tensor<4x256xf32> {
  // expected-error @+1 {{ids must have rank 1}}
  %r = llm.embedding %t, %ids : (tensor<512x256xbf16>, tensor<1x4xi64>) -> tensor<4x256xf32>
  return %r : tensor<4x256xf32>
}

// -----

func.func @embedding_result_unranked(%t: tensor<512x256xbf16>, %ids: tensor<4xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{result must be a ranked tensor}}
  %r = llm.embedding %t, %ids : (tensor<512x256xbf16>, tensor<4xi64>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

func.func @embedding_result_rank(%t: tensor<512x256xbf16>, %ids: tensor<4xi64>) -> tensor<1x4x256xf32> {
  // expected-error @+1 {{result must have rank 2}}
  %r = llm.embedding %t, %ids : (tensor<512x256xbf16>, tensor<4xi64>) -> tensor<1x4x256xf32>
  return %r : tensor<1x4x256xf32>
}

// -----

func.func @embedding_tokens(%t: tensor<512x256xbf16>, %ids: tensor<4xi64>) -> tensor<3x256xf32> {
  // expected-error @+1 {{result dimension 0 (tokens) is 3, expected 4}}
  %r = llm.embedding %t, %ids : (tensor<512x256xbf16>, tensor<4xi64>) -> tensor<3x256xf32>
  return %r : tensor<3x256xf32>
}

// -----

func.func @embedding_hidden(%t: tensor<512x256xbf16>, %ids: tensor<?xi64>) -> tensor<?x128xf32> {
  // expected-error @+1 {{result dimension 1 (hidden) is 128, expected 256}}
  %r = llm.embedding %t, %ids : (tensor<512x256xbf16>, tensor<?xi64>) -> tensor<?x128xf32>
  return %r : tensor<?x128xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.positions
//===----------------------------------------------------------------------===//

func.func @positions_rank(%o: index) -> tensor<1x4xi64> {
  // expected-error @+1 {{result must be a rank-1 tensor}}
  %r = llm.positions %o : tensor<1x4xi64>
  return %r : tensor<1x4xi64>
}

// -----

func.func @positions_dynamic_without_count(%o: index) -> tensor<?xi64> {
  // expected-error @+1 {{a dynamic result needs a count}}
  %r = llm.positions %o : tensor<?xi64>
  return %r : tensor<?xi64>
}

// -----

func.func @positions_static_with_count(%o: index, %n: index) -> tensor<4xi64> {
  // expected-error @+1 {{a static result takes no count}}
  %r = llm.positions %o, %n : tensor<4xi64>
  return %r : tensor<4xi64>
}

// -----

//===----------------------------------------------------------------------===//
// llm.linear, llm.lm_head (shared projection checks)
//===----------------------------------------------------------------------===//

func.func @linear_rank0_input(%x: tensor<f32>, %w: tensor<4x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{input and result must be ranked tensors of rank >= 1}}
  %r = llm.linear %x, %w : (tensor<f32>, tensor<4x4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @linear_unranked_result(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{input and result must be ranked tensors of rank >= 1}}
  %r = llm.linear %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

func.func @linear_result_rank(%x: tensor<2x4xf32>, %w: tensor<8x4xf32>) -> tensor<1x2x8xf32> {
  // expected-error @+1 {{result rank 3 differs from input rank 2}}
  %r = llm.linear %x, %w : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

func.func @linear_weight_rank(%x: tensor<2x4xf32>, %w: tensor<2x8x4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{weight must be [N, K], got rank 3}}
  %r = llm.linear %x, %w : (tensor<2x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

func.func @linear_input_features(%x: tensor<?x128xf32>, %w: tensor<512x256xbf16>) -> tensor<?x512xf32> {
  // expected-error @+1 {{input features 128 do not match weight K = 256}}
  %r = llm.linear %x, %w : (tensor<?x128xf32>, tensor<512x256xbf16>) -> tensor<?x512xf32>
  return %r : tensor<?x512xf32>
}

// -----

func.func @linear_result_features(%x: tensor<?x256xf32>, %w: !llm.qweight<shape = [64, 256], storage_type = ui4, group_size = 64, scale_type = f16, zero_point = ui4, packing = "gptq">) -> tensor<?x32xf32> {
  // expected-error @+1 {{result features 32 do not match weight N = 64}}
  %r = llm.linear %x, %w : (tensor<?x256xf32>, !llm.qweight<shape = [64, 256], storage_type = ui4, group_size = 64, scale_type = f16, zero_point = ui4, packing = "gptq">) -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}

// -----

func.func @linear_batch_dim(%x: tensor<2x3x4xf32>, %w: tensor<8x4xf32>) -> tensor<2x5x8xf32> {
  // expected-error @+1 {{result dimension 1 does not match input}}
  %r = llm.linear %x, %w : (tensor<2x3x4xf32>, tensor<8x4xf32>) -> tensor<2x5x8xf32>
  return %r : tensor<2x5x8xf32>
}

// -----

func.func @linear_bias_rank(%x: tensor<2x4xf32>, %w: tensor<8x4xf32>, %b: tensor<1x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{bias must have rank 1, got 'tensor<1x8xf32>'}}
  %r = llm.linear %x, %w, %b : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

func.func @linear_bias_size(%x: tensor<2x4xf32>, %w: tensor<8x4xf32>, %b: tensor<4xbf16>) -> tensor<2x8xf32> {
  // expected-error @+1 {{bias dimension 0 (N) is 4, expected 8}}
  %r = llm.linear %x, %w, %b : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<4xbf16>) -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

func.func @lm_head_unranked_input(%x: tensor<*xf32>, %w: tensor<512x256xbf16>) -> tensor<1x512xf32> {
  // expected-error @+1 {{input and result must be ranked tensors of rank >= 1}}
  %r = llm.lm_head %x, %w : (tensor<*xf32>, tensor<512x256xbf16>) -> tensor<1x512xf32>
  return %r : tensor<1x512xf32>
}

// -----

func.func @lm_head_vocab(%x: tensor<1x256xf32>, %w: tensor<512x256xbf16>) -> tensor<1x500xf32> {
  // expected-error @+1 {{result features 500 do not match weight N = 512}}
  %r = llm.lm_head %x, %w : (tensor<1x256xf32>, tensor<512x256xbf16>) -> tensor<1x500xf32>
  return %r : tensor<1x500xf32>
}

// -----

func.func @lm_head_hidden(%x: tensor<1x128xf32>, %w: tensor<512x256xbf16>) -> tensor<1x512xf32> {
  // expected-error @+1 {{input features 128 do not match weight K = 256}}
  %r = llm.lm_head %x, %w : (tensor<1x128xf32>, tensor<512x256xbf16>) -> tensor<1x512xf32>
  return %r : tensor<1x512xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.rms_norm
//===----------------------------------------------------------------------===//

func.func @rms_norm_rank0(%x: tensor<f32>, %w: tensor<1xbf16>) -> tensor<f32> {
  // expected-error @+1 {{input must be a ranked tensor of rank >= 1}}
  %r = llm.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<f32>, tensor<1xbf16>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

func.func @rms_norm_unranked(%x: tensor<*xf32>, %w: tensor<256xbf16>) -> tensor<*xf32> {
  // expected-error @+1 {{input must be a ranked tensor of rank >= 1}}
  %r = llm.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<*xf32>, tensor<256xbf16>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

func.func @rms_norm_weight_rank(%x: tensor<?x256xf32>, %w: tensor<1x256xbf16>) -> tensor<?x256xf32> {
  // expected-error @+1 {{weight must have rank 1}}
  %r = llm.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x256xf32>, tensor<1x256xbf16>) -> tensor<?x256xf32>
  return %r : tensor<?x256xf32>
}

// -----

func.func @rms_norm_weight_size(%x: tensor<?x256xf32>, %w: tensor<128xbf16>) -> tensor<?x256xf32> {
  // expected-error @+1 {{weight dimension 0 (normalised features) is 128, expected 256}}
  %r = llm.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x256xf32>, tensor<128xbf16>) -> tensor<?x256xf32>
  return %r : tensor<?x256xf32>
}

// -----

func.func @rms_norm_negative_epsilon(%x: tensor<?x256xf32>, %w: tensor<256xbf16>) -> tensor<?x256xf32> {
  // expected-error @+1 {{epsilon must be non-negative}}
  %r = llm.rms_norm %x, %w {epsilon = -1.0e-5 : f32} : (tensor<?x256xf32>, tensor<256xbf16>) -> tensor<?x256xf32>
  return %r : tensor<?x256xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.rope
//===----------------------------------------------------------------------===//

func.func @rope_unranked(%x: tensor<*xf32>, %p: index) -> tensor<*xf32> {
  // expected-error @+1 {{input must be a ranked tensor}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = 32} : tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

func.func @rope_rank(%x: tensor<?x256xf32>, %p: index) -> tensor<?x256xf32> {
  // expected-error @+1 {{input must have rank 3, got 'tensor<?x256xf32>'}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = 32} : tensor<?x256xf32>
  return %r : tensor<?x256xf32>
}

// -----

func.func @rope_odd_rotary_dim(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{rotary_dim must be positive and even, got 15}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = 15} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @rope_negative_rotary_dim(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{rotary_dim must be positive and even, got -2}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = -2} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @rope_rotary_dim_too_large(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{rotary_dim 64 exceeds head_dim 32}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = 64} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @rope_theta(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{theta must be positive}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, theta = 0.0, rotary_dim = 32} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @rope_factor(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{factor must be positive}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind linear>, layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = 32, factor = -2.0} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @rope_linear_factor(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{rope kind 'linear' requires attribute 'factor'}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind linear>, layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = 32} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @rope_dynamic_factor(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{rope kind 'dynamic' requires attribute 'factor'}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind dynamic>, layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = 32, max_position_embeddings = 4096} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @rope_dynamic_max_positions(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{rope kind 'dynamic' requires attribute 'max_position_embeddings'}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind dynamic>, layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = 32, factor = 2.0} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @rope_yarn_factor(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{rope kind 'yarn' requires attribute 'factor'}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind yarn>, layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = 32, original_max_position_embeddings = 4096} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @rope_yarn_original_max(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{rope kind 'yarn' requires attribute 'original_max_position_embeddings'}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind yarn>, layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = 32, factor = 40.0} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @rope_llama3_factor(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{rope kind 'llama3' requires attribute 'factor'}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind llama3>, layout = #llm<rope_layout half_split>, theta = 5.0e5, rotary_dim = 32, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_position_embeddings = 8192} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @rope_llama3_low_freq(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{rope kind 'llama3' requires attribute 'low_freq_factor'}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind llama3>, layout = #llm<rope_layout half_split>, theta = 5.0e5, rotary_dim = 32, factor = 8.0, high_freq_factor = 4.0, original_max_position_embeddings = 8192} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @rope_llama3_high_freq(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{rope kind 'llama3' requires attribute 'high_freq_factor'}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind llama3>, layout = #llm<rope_layout half_split>, theta = 5.0e5, rotary_dim = 32, factor = 8.0, low_freq_factor = 1.0, original_max_position_embeddings = 8192} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @rope_llama3_original_max(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{rope kind 'llama3' requires attribute 'original_max_position_embeddings'}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind llama3>, layout = #llm<rope_layout half_split>, theta = 5.0e5, rotary_dim = 32, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @rope_llama3_band(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{llama3's low_freq_factor (4.00) must not exceed high_freq_factor (1.00)}}
  %r = llm.rope %x, %p {kind = #llm<rope_kind llama3>, layout = #llm<rope_layout half_split>, theta = 5.0e5, rotary_dim = 32, factor = 8.0, low_freq_factor = 4.0, high_freq_factor = 1.0, original_max_position_embeddings = 8192} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.attention
//===----------------------------------------------------------------------===//

func.func @attention_query_unranked(%q: tensor<*xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{query must be a ranked tensor}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<*xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>) -> tensor<?x8x32xf32>
  return %o : tensor<?x8x32xf32>
}

// -----

func.func @attention_query_rank(%q: tensor<?x256xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{query must have rank 3}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<?x256xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>) -> tensor<?x8x32xf32>
  return %o : tensor<?x8x32xf32>
}

// -----

func.func @attention_key_rank(%q: tensor<?x8x32xf32>, %k: tensor<?x64xf32>, %v: tensor<?x2x32xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{key must have rank 3}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<?x8x32xf32>, tensor<?x64xf32>, tensor<?x2x32xf32>) -> tensor<?x8x32xf32>
  return %o : tensor<?x8x32xf32>
}

// -----

func.func @attention_value_rank(%q: tensor<?x8x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x64xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{value must have rank 3}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x64xf32>) -> tensor<?x8x32xf32>
  return %o : tensor<?x8x32xf32>
}

// -----

func.func @attention_result_rank(%q: tensor<?x8x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{result must have rank 3}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>) -> tensor<?x256xf32>
  return %o : tensor<?x256xf32>
}

// -----

func.func @attention_gqa_groups(%q: tensor<?x8x32xf32>, %k: tensor<?x3x32xf32>, %v: tensor<?x3x32xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{query heads (8) must be a multiple of key/value heads (3)}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<?x8x32xf32>, tensor<?x3x32xf32>, tensor<?x3x32xf32>) -> tensor<?x8x32xf32>
  return %o : tensor<?x8x32xf32>
}

// -----

func.func @attention_zero_kv_heads(%q: tensor<?x8x32xf32>, %k: tensor<?x0x32xf32>, %v: tensor<?x0x32xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{must be a multiple of key/value heads (0)}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<?x8x32xf32>, tensor<?x0x32xf32>, tensor<?x0x32xf32>) -> tensor<?x8x32xf32>
  return %o : tensor<?x8x32xf32>
}

// -----

func.func @attention_key_head_dim(%q: tensor<?x8x32xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x32xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{key dimension 2 (head_dim of query) is 16, expected 32}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<?x8x32xf32>, tensor<?x2x16xf32>, tensor<?x2x32xf32>) -> tensor<?x8x32xf32>
  return %o : tensor<?x8x32xf32>
}

// -----

func.func @attention_value_length(%q: tensor<1x8x32xf32>, %k: tensor<10x2x32xf32>, %v: tensor<9x2x32xf32>) -> tensor<1x8x32xf32> {
  // expected-error @+1 {{value dimension 0 (key length) is 9, expected 10}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<1x8x32xf32>, tensor<10x2x32xf32>, tensor<9x2x32xf32>) -> tensor<1x8x32xf32>
  return %o : tensor<1x8x32xf32>
}

// -----

func.func @attention_value_heads(%q: tensor<?x8x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x4x32xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{value dimension 1 (key heads) is 4, expected 2}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x4x32xf32>) -> tensor<?x8x32xf32>
  return %o : tensor<?x8x32xf32>
}

// -----

func.func @attention_result_queries(%q: tensor<4x8x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf32>) -> tensor<1x8x32xf32> {
  // expected-error @+1 {{result dimension 0 (queries) is 1, expected 4}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<4x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>) -> tensor<1x8x32xf32>
  return %o : tensor<1x8x32xf32>
}

// -----

func.func @attention_result_heads(%q: tensor<?x8x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf32>) -> tensor<?x2x32xf32> {
  // expected-error @+1 {{result dimension 1 (query heads) is 2, expected 8}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>) -> tensor<?x2x32xf32>
  return %o : tensor<?x2x32xf32>
}

// -----

func.func @attention_result_value_dim(%q: tensor<?x8x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x64xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{result dimension 2 (value head_dim) is 32, expected 64}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x64xf32>) -> tensor<?x8x32xf32>
  return %o : tensor<?x8x32xf32>
}

// -----

func.func @attention_sliding_window(%q: tensor<?x8x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{sliding_window must be positive, got 0}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32, sliding_window = 0} : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>) -> tensor<?x8x32xf32>
  return %o : tensor<?x8x32xf32>
}

// -----

func.func @attention_softcap(%q: tensor<?x8x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{logit_softcap must be positive}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32, logit_softcap = 0.0 : f32} : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>) -> tensor<?x8x32xf32>
  return %o : tensor<?x8x32xf32>
}

// -----

func.func @attention_alibi_count(%q: tensor<?x8x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{alibi_slopes has 2 slopes for 8 query heads}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32, alibi_slopes = array<f32: 0.5, 0.25>} : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>) -> tensor<?x8x32xf32>
  return %o : tensor<?x8x32xf32>
}

// -----

func.func @attention_alibi_finite(%q: tensor<?x2x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf32>) -> tensor<?x2x32xf32> {
  // expected-error @+1 {{alibi_slopes[1] is not finite}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32, alibi_slopes = array<f32: 0.5, 0x7F800000>} : (tensor<?x2x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>) -> tensor<?x2x32xf32>
  return %o : tensor<?x2x32xf32>
}

// -----

func.func @attention_window_not_causal(%q: tensor<?x8x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{sliding_window requires causal attention}}
  %o = llm.attention %q, %k, %v {scale = 0.125 : f32, causal = false, sliding_window = 8} : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>) -> tensor<?x8x32xf32>
  return %o : tensor<?x8x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.kv_cache_append
//===----------------------------------------------------------------------===//

// The result must have the cache's type (AllTypesMatch).
func.func @kv_append_result_type(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %k: tensor<4x2x32xf32>, %p: index) -> !llm.kv_cache<max_length = 32, kv_heads = 2, head_dim = 32, element_type = f32> {
  // expected-error @+1 {{failed to verify that all of {cache, result} have same type}}
  %r = "llm.kv_cache_append"(%c, %k, %k, %p) : (!llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, tensor<4x2x32xf32>, tensor<4x2x32xf32>, index) -> !llm.kv_cache<max_length = 32, kv_heads = 2, head_dim = 32, element_type = f32>
  return %r : !llm.kv_cache<max_length = 32, kv_heads = 2, head_dim = 32, element_type = f32>
}

// -----

func.func @kv_append_key_unranked(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %k: tensor<*xf32>, %v: tensor<?x2x32xf32>, %p: index) -> !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> {
  // expected-error @+1 {{key must be a ranked tensor}}
  %r = llm.kv_cache_append %c, %k, %v, %p : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, tensor<*xf32>, tensor<?x2x32xf32>
  return %r : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>
}

// -----

func.func @kv_append_key_rank(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %k: tensor<?x64xf32>, %v: tensor<?x2x32xf32>, %p: index) -> !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> {
  // expected-error @+1 {{key must have rank 3}}
  %r = llm.kv_cache_append %c, %k, %v, %p : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, tensor<?x64xf32>, tensor<?x2x32xf32>
  return %r : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>
}

// -----

func.func @kv_append_key_heads(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %k: tensor<?x4x32xf32>, %v: tensor<?x2x32xf32>, %p: index) -> !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> {
  // expected-error @+1 {{key dimension 1 (kv_heads) is 4, expected 2}}
  %r = llm.kv_cache_append %c, %k, %v, %p : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, tensor<?x4x32xf32>, tensor<?x2x32xf32>
  return %r : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>
}

// -----

func.func @kv_append_key_head_dim(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x32xf32>, %p: index) -> !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> {
  // expected-error @+1 {{key dimension 2 (head_dim) is 16, expected 32}}
  %r = llm.kv_cache_append %c, %k, %v, %p : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, tensor<?x2x16xf32>, tensor<?x2x32xf32>
  return %r : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>
}

// -----

func.func @kv_append_key_too_long(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %k: tensor<65x2x32xf32>, %v: tensor<?x2x32xf32>, %p: index) -> !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> {
  // expected-error @+1 {{key length 65 exceeds the cache's max_length 64}}
  %r = llm.kv_cache_append %c, %k, %v, %p : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, tensor<65x2x32xf32>, tensor<?x2x32xf32>
  return %r : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>
}

// -----

func.func @kv_append_value_unranked(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %k: tensor<?x2x32xf32>, %v: tensor<*xf32>, %p: index) -> !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> {
  // expected-error @+1 {{value must be a ranked tensor}}
  %r = llm.kv_cache_append %c, %k, %v, %p : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, tensor<?x2x32xf32>, tensor<*xf32>
  return %r : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>
}

// -----

func.func @kv_append_value_heads(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %k: tensor<?x2x32xf32>, %v: tensor<?x1x32xf32>, %p: index) -> !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> {
  // expected-error @+1 {{value dimension 1 (kv_heads) is 1, expected 2}}
  %r = llm.kv_cache_append %c, %k, %v, %p : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, tensor<?x2x32xf32>, tensor<?x1x32xf32>
  return %r : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>
}

// -----

func.func @kv_append_value_too_long(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %k: tensor<?x2x32xf32>, %v: tensor<100x2x32xf32>, %p: index) -> !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> {
  // expected-error @+1 {{value length 100 exceeds the cache's max_length 64}}
  %r = llm.kv_cache_append %c, %k, %v, %p : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, tensor<?x2x32xf32>, tensor<100x2x32xf32>
  return %r : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>
}

// -----

func.func @kv_append_token_mismatch(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %k: tensor<4x2x32xf32>, %v: tensor<3x2x32xf32>, %p: index) -> !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> {
  // expected-error @+1 {{value dimension 0 (tokens) is 3, expected 4}}
  %r = llm.kv_cache_append %c, %k, %v, %p : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, tensor<4x2x32xf32>, tensor<3x2x32xf32>
  return %r : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.kv_cache_read
//===----------------------------------------------------------------------===//

func.func @kv_read_key_rank(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %n: index) -> (tensor<?x64xf32>, tensor<?x2x32xf32>) {
  // expected-error @+1 {{key must have rank 3}}
  %k, %v = llm.kv_cache_read %c, %n : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> -> tensor<?x64xf32>, tensor<?x2x32xf32>
  return %k, %v : tensor<?x64xf32>, tensor<?x2x32xf32>
}

// -----

func.func @kv_read_key_too_long(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %n: index) -> (tensor<128x2x32xf32>, tensor<?x2x32xf32>) {
  // expected-error @+1 {{key length 128 exceeds the cache's max_length 64}}
  %k, %v = llm.kv_cache_read %c, %n : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> -> tensor<128x2x32xf32>, tensor<?x2x32xf32>
  return %k, %v : tensor<128x2x32xf32>, tensor<?x2x32xf32>
}

// -----

func.func @kv_read_value_unranked(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %n: index) -> (tensor<?x2x32xf32>, tensor<*xf32>) {
  // expected-error @+1 {{value must be a ranked tensor}}
  %k, %v = llm.kv_cache_read %c, %n : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> -> tensor<?x2x32xf32>, tensor<*xf32>
  return %k, %v : tensor<?x2x32xf32>, tensor<*xf32>
}

// -----

func.func @kv_read_value_head_dim(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %n: index) -> (tensor<?x2x32xf32>, tensor<?x2x64xf32>) {
  // expected-error @+1 {{value dimension 2 (head_dim) is 64, expected 32}}
  %k, %v = llm.kv_cache_read %c, %n : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> -> tensor<?x2x32xf32>, tensor<?x2x64xf32>
  return %k, %v : tensor<?x2x32xf32>, tensor<?x2x64xf32>
}

// -----

func.func @kv_read_length_mismatch(%c: !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32>, %n: index) -> (tensor<8x2x32xf32>, tensor<7x2x32xf32>) {
  // expected-error @+1 {{value dimension 0 (length) is 7, expected 8}}
  %k, %v = llm.kv_cache_read %c, %n : !llm.kv_cache<max_length = 64, kv_heads = 2, head_dim = 32, element_type = f32> -> tensor<8x2x32xf32>, tensor<7x2x32xf32>
  return %k, %v : tensor<8x2x32xf32>, tensor<7x2x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.gated_mlp
//===----------------------------------------------------------------------===//

func.func @gated_mlp_gate_up(%x: tensor<?x256xf32>, %g: tensor<512x256xbf16>, %u: tensor<256x512xbf16>, %d: tensor<256x512xbf16>) -> tensor<?x256xf32> {
  // expected-error @+1 {{gate [512, 256] and up [256, 512] weights must have the same shape}}
  %r = llm.gated_mlp %x, %g, %u, %d : (tensor<?x256xf32>, tensor<512x256xbf16>, tensor<256x512xbf16>, tensor<256x512xbf16>) -> tensor<?x256xf32>
  return %r : tensor<?x256xf32>
}

// -----

func.func @gated_mlp_down(%x: tensor<?x256xf32>, %g: tensor<512x256xbf16>, %d: tensor<512x256xbf16>) -> tensor<?x256xf32> {
  // expected-error @+1 {{down weight must be [256, 512], got [512, 256]}}
  %r = llm.gated_mlp %x, %g, %g, %d : (tensor<?x256xf32>, tensor<512x256xbf16>, tensor<512x256xbf16>, tensor<512x256xbf16>) -> tensor<?x256xf32>
  return %r : tensor<?x256xf32>
}

// -----

func.func @gated_mlp_result_type(%x: tensor<?x256xf32>, %g: tensor<512x256xbf16>, %d: tensor<256x512xbf16>) -> tensor<4x256xf32> {
  // expected-error @+1 {{result type must equal the input type}}
  %r = llm.gated_mlp %x, %g, %g, %d : (tensor<?x256xf32>, tensor<512x256xbf16>, tensor<512x256xbf16>, tensor<256x512xbf16>) -> tensor<4x256xf32>
  return %r : tensor<4x256xf32>
}

// -----

func.func @gated_mlp_unranked(%x: tensor<*xf32>, %g: tensor<512x256xbf16>, %d: tensor<256x512xbf16>) -> tensor<*xf32> {
  // expected-error @+1 {{input must be a ranked tensor of rank >= 1}}
  %r = llm.gated_mlp %x, %g, %g, %d : (tensor<*xf32>, tensor<512x256xbf16>, tensor<512x256xbf16>, tensor<256x512xbf16>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

func.func @gated_mlp_hidden(%x: tensor<?x128xf32>, %g: !llm.qweight<shape = [512, 256], storage_type = ui4, group_size = 64, scale_type = f16, zero_point = ui4, packing = "gptq">, %d: tensor<256x512xbf16>) -> tensor<?x128xf32> {
  // expected-error @+1 {{input features 128 do not match the hidden size 256 of the gate/up weights}}
  %r = llm.gated_mlp %x, %g, %g, %d : (tensor<?x128xf32>, !llm.qweight<shape = [512, 256], storage_type = ui4, group_size = 64, scale_type = f16, zero_point = ui4, packing = "gptq">, !llm.qweight<shape = [512, 256], storage_type = ui4, group_size = 64, scale_type = f16, zero_point = ui4, packing = "gptq">, tensor<256x512xbf16>) -> tensor<?x128xf32>
  return %r : tensor<?x128xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.reduce
//===----------------------------------------------------------------------===//

func.func @reduce_unranked(%x: tensor<*xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{input and result must be ranked}}
  %r = llm.reduce sum %x {axis = 1} : tensor<*xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @reduce_axis(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %r = llm.reduce sum %x {axis = 2} : tensor<4x8xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @reduce_negative_axis(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{axis -1 is out of range for rank 2}}
  %r = llm.reduce max %x {axis = -1} : tensor<4x8xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @reduce_result_rank(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result rank 1, expected 2}}
  %r = llm.reduce mean %x {axis = 1, keep_dim = true} : tensor<4x8xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @reduce_result_dim(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{result dimension 0 is 8, expected 4}}
  %r = llm.reduce sum %x {axis = 1} : tensor<4x8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.softmax
//===----------------------------------------------------------------------===//

func.func @softmax_unranked(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{input must be ranked}}
  %r = llm.softmax %x {axis = 0} : tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

func.func @softmax_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %r = llm.softmax %x {axis = 2} : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.argmax
//===----------------------------------------------------------------------===//

func.func @argmax_rank0(%x: tensor<f32>) -> tensor<i64> {
  // expected-error @+1 {{input must be a ranked tensor of rank >= 1}}
  %r = llm.argmax %x : tensor<f32> -> tensor<i64>
  return %r : tensor<i64>
}

// -----

func.func @argmax_keeps_last_dim(%x: tensor<4x8xf32>) -> tensor<4x1xi64> {
  // expected-error @+1 {{result must drop the last dimension of the input}}
  %r = llm.argmax %x : tensor<4x8xf32> -> tensor<4x1xi64>
  return %r : tensor<4x1xi64>
}

// -----

func.func @argmax_result_dim(%x: tensor<4x8xf32>) -> tensor<8xi64> {
  // expected-error @+1 {{result dimension 0 does not match the input}}
  %r = llm.argmax %x : tensor<4x8xf32> -> tensor<8xi64>
  return %r : tensor<8xi64>
}

// -----

//===----------------------------------------------------------------------===//
// llm.reshape
//===----------------------------------------------------------------------===//

func.func @reshape_unranked(%x: tensor<*xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{invalid kind of type specified: expected builtin.tensor}}
  %r = llm.reshape %x : tensor<*xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

func.func @reshape_two_dynamic(%x: tensor<?x256xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{at most one result dimension may be dynamic}}
  %r = llm.reshape %x : tensor<?x256xf32> -> tensor<?x?x32xf32>
  return %r : tensor<?x?x32xf32>
}

// -----

func.func @reshape_element_count(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{element count changes from 32 to 16}}
  %r = llm.reshape %x : tensor<4x8xf32> -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

func.func @reshape_static_to_dynamic(%x: tensor<4x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{input and result must both be static or both have a dynamic dimension}}
  %r = llm.reshape %x : tensor<4x8xf32> -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

func.func @reshape_dynamic_to_static(%x: tensor<?x8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{input and result must both be static or both have a dynamic dimension}}
  %r = llm.reshape %x : tensor<?x8xf32> -> tensor<32xf32>
  return %r : tensor<32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.transpose
//===----------------------------------------------------------------------===//

func.func @transpose_unranked(%x: tensor<*xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{invalid kind of type specified: expected builtin.tensor}}
  %r = llm.transpose %x {permutation = array<i64: 1, 0>} : tensor<*xf32> -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

func.func @transpose_perm_size(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{permutation size 3 must equal the rank 2}}
  %r = llm.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<4x8xf32> -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

func.func @transpose_result_rank(%x: tensor<4x8xf32>) -> tensor<8x4x1xf32> {
  // expected-error @+1 {{result rank 3 must equal the input rank 2}}
  %r = llm.transpose %x {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4x1xf32>
  return %r : tensor<8x4x1xf32>
}

// -----

func.func @transpose_repeated(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{permutation must be a permutation of [0, 2)}}
  %r = llm.transpose %x {permutation = array<i64: 0, 0>} : tensor<4x8xf32> -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

func.func @transpose_out_of_range(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{permutation must be a permutation of [0, 2)}}
  %r = llm.transpose %x {permutation = array<i64: 2, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

func.func @transpose_result_dim(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{result dimension 0 must be input dimension 1 (8)}}
  %r = llm.transpose %x {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.concat
//===----------------------------------------------------------------------===//

func.func @concat_no_inputs() -> tensor<4xf32> {
  // expected-error @+1 {{needs at least one input}}
  %r = llm.concat {axis = 0} : () -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @concat_unranked_result(%a: tensor<4x8xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit signless integer or 1-bit signless integer values}}
  %r = llm.concat %a, %a {axis = 0} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

func.func @concat_axis(%a: tensor<4x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %r = llm.concat %a, %a {axis = 2} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

func.func @concat_input_rank(%a: tensor<4x8xf32>, %b: tensor<32xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{every input must have rank 2}}
  %r = llm.concat %a, %b {axis = 0} : (tensor<4x8xf32>, tensor<32xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

func.func @concat_unranked_input(%a: tensor<4x8xf32>, %b: tensor<*xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{operand #1 must be variadic of ranked tensor}}
  %r = llm.concat %a, %b {axis = 0} : (tensor<4x8xf32>, tensor<*xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

func.func @concat_other_dim(%a: tensor<4x8xf32>, %b: tensor<4x6xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{input dimension 1 does not match the result}}
  %r = llm.concat %a, %b {axis = 0} : (tensor<4x8xf32>, tensor<4x6xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

func.func @concat_total(%a: tensor<4x8xf32>, %b: tensor<3x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{result dimension 0 must be 7}}
  %r = llm.concat %a, %b {axis = 0} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.slice
//===----------------------------------------------------------------------===//

func.func @slice_rank(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{input and result must be ranked with equal rank}}
  %r = llm.slice %x {axis = 0, start = 0, size = 1} : tensor<4x8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @slice_unranked(%x: tensor<*xf32>) -> tensor<1x8xf32> {
  // expected-error @+1 {{invalid kind of type specified: expected builtin.tensor}}
  %r = llm.slice %x {axis = 0, start = 0, size = 1} : tensor<*xf32> -> tensor<1x8xf32>
  return %r : tensor<1x8xf32>
}

// -----

func.func @slice_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{axis 3 is out of range for rank 2}}
  %r = llm.slice %x {axis = 3, start = 0, size = 1} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

func.func @slice_size(%x: tensor<4x8xf32>) -> tensor<0x8xf32> {
  // expected-error @+1 {{size must be positive, got 0}}
  %r = llm.slice %x {axis = 0, start = 0, size = 0} : tensor<4x8xf32> -> tensor<0x8xf32>
  return %r : tensor<0x8xf32>
}

// -----

func.func @slice_past_end(%x: tensor<4x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{slice [3, +2) is out of range for dimension size 4}}
  %r = llm.slice %x {axis = 0, start = 3, size = 2} : tensor<4x8xf32> -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

func.func @slice_before_start(%x: tensor<4x8xf32>) -> tensor<1x8xf32> {
  // expected-error @+1 {{slice [-5, +1) is out of range for dimension size 4}}
  %r = llm.slice %x {axis = 0, start = -5, size = 1} : tensor<4x8xf32> -> tensor<1x8xf32>
  return %r : tensor<1x8xf32>
}

// -----

func.func @slice_dynamic_from_end(%x: tensor<?x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{a slice starting 1 from the end cannot have size 2}}
  %r = llm.slice %x {axis = 0, start = -1, size = 2} : tensor<?x8xf32> -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

func.func @slice_result_axis_dim(%x: tensor<?x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{result dimension 0 must be 1}}
  %r = llm.slice %x {axis = 0, start = -1, size = 1} : tensor<?x8xf32> -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

func.func @slice_result_other_dim(%x: tensor<4x8xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{result dimension 1 must be 8}}
  %r = llm.slice %x {axis = 0, start = 0, size = 1} : tensor<4x8xf32> -> tensor<1x4xf32>
  return %r : tensor<1x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.gather
//===----------------------------------------------------------------------===//

func.func @gather_rank(%x: tensor<8x8xf32>, %i: tensor<3xi64>) -> tensor<3xf32> {
  // expected-error @+1 {{result rank 1, expected 2 (input rank - 1 + indices rank)}}
  %r = llm.gather %x, %i {axis = 1} : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// -----

func.func @gather_axis(%x: tensor<8x8xf32>, %i: tensor<3xi64>) -> tensor<8x3xf32> {
  // expected-error @+1 {{axis -1 is out of range for rank 2}}
  %r = llm.gather %x, %i {axis = -1} : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<8x3xf32>
  return %r : tensor<8x3xf32>
}

// -----

func.func @gather_indices_rank(%x: tensor<8x8xf32>, %i: tensor<1x3xi32>) -> tensor<8x3xf32> {
  // expected-error @+1 {{result rank 2, expected 3 (input rank - 1 + indices rank)}}
  %r = llm.gather %x, %i {axis = 1} : (tensor<8x8xf32>, tensor<1x3xi32>) -> tensor<8x3xf32>
  return %r : tensor<8x3xf32>
}

// -----

func.func @gather_result_axis_dim(%x: tensor<8x8xf32>, %i: tensor<3xi64>) -> tensor<8x8xf32> {
  // expected-error @+1 {{result dimension 1 must be 3}}
  %r = llm.gather %x, %i {axis = 1} : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

func.func @gather_result_other_dim(%x: tensor<8x8xf32>, %i: tensor<3xi64>) -> tensor<4x3xf32> {
  // expected-error @+1 {{result dimension 0 must be 8}}
  %r = llm.gather %x, %i {axis = 1} : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// ODS-generated constraints
//===----------------------------------------------------------------------===//

func.func @add_int_activation(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{operand #0 must be tensor of 32-bit float values}}
  %r = llm.add %a, %a : tensor<4xi32>
  return %r : tensor<4xi32>
}

// -----

func.func @add_f16_activation(%a: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{operand #0 must be tensor of 32-bit float values}}
  %r = llm.add %a, %a : tensor<4xf16>
  return %r : tensor<4xf16>
}

// -----

func.func @add_shape_mismatch(%a: tensor<4xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %r = "llm.add"(%a, %b) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @weight_not_a_tensor() -> f32 {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values or a quantized weight matrix}}
  %w = llm.weight "w" : f32
  return %w : f32
}

// -----

func.func @weight_int_tensor() -> tensor<4x4xi8> {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values or a quantized weight matrix}}
  %w = llm.weight "w" : tensor<4x4xi8>
  return %w : tensor<4x4xi8>
}

// -----

func.func @weight_unranked() -> tensor<*xf32> {
  // expected-error @+1 {{result #0 must be ranked tensor}}
  %w = llm.weight "w" : tensor<*xf32>
  return %w : tensor<*xf32>
}

// -----

func.func @linear_int_weight(%x: tensor<2x4xf32>, %w: tensor<8x4xi8>) -> tensor<2x8xf32> {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values or a quantized weight matrix}}
  %r = llm.linear %x, %w : (tensor<2x4xf32>, tensor<8x4xi8>) -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

func.func @embedding_float_ids(%t: tensor<512x256xbf16>, %ids: tensor<4xf32>) -> tensor<4x256xf32> {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %r = llm.embedding %t, %ids : (tensor<512x256xbf16>, tensor<4xf32>) -> tensor<4x256xf32>
  return %r : tensor<4x256xf32>
}

// -----

func.func @embedding_bf16_result(%t: tensor<512x256xbf16>, %ids: tensor<4xi64>) -> tensor<4x256xbf16> {
  // expected-error @+1 {{result #0 must be tensor of 32-bit float values}}
  %r = llm.embedding %t, %ids : (tensor<512x256xbf16>, tensor<4xi64>) -> tensor<4x256xbf16>
  return %r : tensor<4x256xbf16>
}

// -----

func.func @rms_norm_type_mismatch(%x: tensor<?x256xf32>, %w: tensor<256xbf16>) -> tensor<4x256xf32> {
  // expected-error @+1 {{failed to verify that all of {input, result} have same type}}
  %r = llm.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x256xf32>, tensor<256xbf16>) -> tensor<4x256xf32>
  return %r : tensor<4x256xf32>
}

// -----

func.func @attention_missing_scale(%q: tensor<?x8x32xf32>, %k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{requires attribute 'scale'}}
  %o = llm.attention %q, %k, %v : (tensor<?x8x32xf32>, tensor<?x2x32xf32>, tensor<?x2x32xf32>) -> tensor<?x8x32xf32>
  return %o : tensor<?x8x32xf32>
}

// -----

func.func @rope_missing_kind(%x: tensor<?x8x32xf32>, %p: index) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{requires attribute 'kind'}}
  %r = llm.rope %x, %p {layout = #llm<rope_layout half_split>, theta = 1.0e4, rotary_dim = 32} : tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}

// -----

func.func @cast_to_int(%x: tensor<4xf32>) -> tensor<4xi8> {
  // expected-error @+1 {{result #0 must be tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %r = llm.cast %x : tensor<4xf32> to tensor<4xi8>
  return %r : tensor<4xi8>
}

// -----

func.func @cast_shape(%x: tensor<4x8xf32>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{requires the same shape for all operands and results}}
  %r = llm.cast %x : tensor<4x8xf32> to tensor<8x4xbf16>
  return %r : tensor<8x4xbf16>
}

// -----

func.func @argmax_int32_result(%x: tensor<4x8xf32>) -> tensor<4xi32> {
  // expected-error @+1 {{result #0 must be ranked tensor of 64-bit signless integer values}}
  %r = llm.argmax %x : tensor<4x8xf32> -> tensor<4xi32>
  return %r : tensor<4xi32>
}

// -----

func.func @kv_append_not_a_cache(%c: tensor<64x2x32xf32>, %k: tensor<4x2x32xf32>, %p: index) -> tensor<64x2x32xf32> {
  // expected-error @+1 {{operand #0 must be per-layer key/value cache}}
  %r = "llm.kv_cache_append"(%c, %k, %k, %p) : (tensor<64x2x32xf32>, tensor<4x2x32xf32>, tensor<4x2x32xf32>, index) -> tensor<64x2x32xf32>
  return %r : tensor<64x2x32xf32>
}

// -----

func.func @gated_mlp_weight_rank(%x: tensor<4x256xf32>, %g: tensor<512x256xbf16>, %d: tensor<256xbf16>) -> tensor<4x256xf32> {
  // expected-error @+1 {{down weight must be 2-D, got 'tensor<256xbf16>'}}
  %r = llm.gated_mlp %x, %g, %g, %d : (tensor<4x256xf32>, tensor<512x256xbf16>, tensor<512x256xbf16>, tensor<256xbf16>) -> tensor<4x256xf32>
  return %r : tensor<4x256xf32>
}

// -----

func.func @gated_mlp_weight_rank3(%x: tensor<4x256xf32>, %g: tensor<512x256x2xbf16>, %d: tensor<256x512xbf16>) -> tensor<4x256xf32> {
  // expected-error @+1 {{gate weight must be 2-D}}
  %r = llm.gated_mlp %x, %g, %g, %d : (tensor<4x256xf32>, tensor<512x256x2xbf16>, tensor<512x256x2xbf16>, tensor<256x512xbf16>) -> tensor<4x256xf32>
  return %r : tensor<4x256xf32>
}
