// RUN: pimc-opt %s --split-input-file --verify-diagnostics

// Every diagnostic of RecurrentOps.cpp, in source order.

// expected-error @+1 {{recurrent_state shape must be non-empty with positive sizes}}
func.func @state_shape(%s: !llm.recurrent_state<shape = [4, 0], element_type = f32>) { return }

// -----

// expected-error @+1 {{recurrent_state element_type must be f32, got 'bf16'}}
func.func @state_type(%s: !llm.recurrent_state<shape = [4, 3], element_type = bf16>) { return }

// -----

func.func @conv_state_rank(%u: tensor<1x8xf32>, %s: !llm.recurrent_state<shape = [8, 3, 1], element_type = f32>, %w: tensor<8x4xf32>, %o: index) {
  // expected-error @+1 {{state must be [channels, kernel - 1]}}
  %y, %s1 = llm.causal_conv1d %u, %s, %w, %o : tensor<1x8xf32>, !llm.recurrent_state<shape = [8, 3, 1], element_type = f32>, tensor<8x4xf32> -> tensor<1x8xf32>
  return
}

// -----

func.func @conv_weight(%u: tensor<1x8xf32>, %s: !llm.recurrent_state<shape = [8, 3], element_type = f32>, %w: tensor<8x5xf32>, %o: index) {
  // expected-error @+1 {{weight must be [8x4], got 'tensor<8x5xf32>'}}
  %y, %s1 = llm.causal_conv1d %u, %s, %w, %o : tensor<1x8xf32>, !llm.recurrent_state<shape = [8, 3], element_type = f32>, tensor<8x5xf32> -> tensor<1x8xf32>
  return
}

// -----

func.func @conv_bias(%u: tensor<1x8xf32>, %s: !llm.recurrent_state<shape = [8, 3], element_type = f32>, %w: tensor<8x1x4xf32>, %b: tensor<4xf32>, %o: index) {
  // expected-error @+1 {{bias must be [8], got 'tensor<4xf32>'}}
  %y, %s1 = llm.causal_conv1d %u, %s, %w bias %b, %o : tensor<1x8xf32>, !llm.recurrent_state<shape = [8, 3], element_type = f32>, tensor<8x1x4xf32>, tensor<4xf32> -> tensor<1x8xf32>
  return
}

// -----

func.func @conv_channels(%u: tensor<1x6xf32>, %s: !llm.recurrent_state<shape = [8, 3], element_type = f32>, %w: tensor<8x4xf32>, %o: index) {
  // expected-error @+1 {{input dimension 1 (channels) is 6, expected 8}}
  %y, %s1 = llm.causal_conv1d %u, %s, %w, %o : tensor<1x6xf32>, !llm.recurrent_state<shape = [8, 3], element_type = f32>, tensor<8x4xf32> -> tensor<1x6xf32>
  return
}

// -----

func.func @scan_state(%x: tensor<1x8xf32>, %dt: tensor<1x2xf32>, %b: tensor<1x4xf32>, %p: tensor<2xf32>, %s: !llm.recurrent_state<shape = [2, 4], element_type = f32>, %o: index) {
  // expected-error @+1 {{state must be [heads, head_dim, state_size]}}
  %y, %s1 = llm.ssm_scan %x, %dt, %b, %b, %p, %p, %p, %s, %o {groups = 1 : i64} : (tensor<1x8xf32>, tensor<1x2xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, !llm.recurrent_state<shape = [2, 4], element_type = f32>, index) -> (tensor<1x8xf32>, !llm.recurrent_state<shape = [2, 4], element_type = f32>)
  return
}

// -----

func.func @scan_groups(%x: tensor<1x8xf32>, %dt: tensor<1x2xf32>, %b: tensor<1x12xf32>, %p: tensor<2xf32>, %s: !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>, %o: index) {
  // expected-error @+1 {{groups 3 must divide the 2 heads}}
  %y, %s1 = llm.ssm_scan %x, %dt, %b, %b, %p, %p, %p, %s, %o {groups = 3 : i64} : (tensor<1x8xf32>, tensor<1x2xf32>, tensor<1x12xf32>, tensor<1x12xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>, index) -> (tensor<1x8xf32>, !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>)
  return
}

// -----

func.func @scan_clamp(%x: tensor<1x8xf32>, %dt: tensor<1x2xf32>, %b: tensor<1x4xf32>, %p: tensor<2xf32>, %s: !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>, %o: index) {
  // expected-error @+1 {{dt_max must not be below dt_min}}
  %y, %s1 = llm.ssm_scan %x, %dt, %b, %b, %p, %p, %p, %s, %o {groups = 1 : i64, dt_min = 1.0 : f32, dt_max = 0.5 : f32} : (tensor<1x8xf32>, tensor<1x2xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>, index) -> (tensor<1x8xf32>, !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>)
  return
}

// -----

func.func @scan_a_log(%x: tensor<1x8xf32>, %dt: tensor<1x2xf32>, %b: tensor<1x4xf32>, %p: tensor<2xf32>, %a: tensor<2x3xf32>, %s: !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>, %o: index) {
  // expected-error @+1 {{a_log must be [2x4], got 'tensor<2x3xf32>'}}
  %y, %s1 = llm.ssm_scan %x, %dt, %b, %b, %a, %p, %p, %s, %o {groups = 1 : i64} : (tensor<1x8xf32>, tensor<1x2xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>, !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>, index) -> (tensor<1x8xf32>, !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>)
  return
}

// -----

func.func @scan_b(%x: tensor<1x8xf32>, %dt: tensor<1x2xf32>, %b: tensor<1x5xf32>, %p: tensor<2xf32>, %s: !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>, %o: index) {
  // expected-error @+1 {{b dimension 1 (groups x state_size) is 5, expected 4}}
  %y, %s1 = llm.ssm_scan %x, %dt, %b, %b, %p, %p, %p, %s, %o {groups = 1 : i64} : (tensor<1x8xf32>, tensor<1x2xf32>, tensor<1x5xf32>, tensor<1x5xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>, index) -> (tensor<1x8xf32>, !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>)
  return
}

// -----

func.func @delta_state(%q: tensor<1x8xf32>, %a: tensor<1x2xf32>, %p: tensor<2xf32>, %s: !llm.recurrent_state<shape = [2, 4], element_type = f32>, %o: index) {
  // expected-error @+1 {{state must be [value_heads, dk, dv]}}
  %y, %s1 = llm.gated_delta_rule %q, %q, %q, %a, %a, %p, %p, %s, %o {key_heads = 1 : i64} : (tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<2xf32>, tensor<2xf32>, !llm.recurrent_state<shape = [2, 4], element_type = f32>, index) -> (tensor<1x8xf32>, !llm.recurrent_state<shape = [2, 4], element_type = f32>)
  return
}

// -----

func.func @delta_heads(%q: tensor<1x12xf32>, %v: tensor<1x8xf32>, %a: tensor<1x2xf32>, %p: tensor<2xf32>, %s: !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>, %o: index) {
  // expected-error @+1 {{key_heads 3 must divide the 2 value heads}}
  %y, %s1 = llm.gated_delta_rule %q, %q, %v, %a, %a, %p, %p, %s, %o {key_heads = 3 : i64} : (tensor<1x12xf32>, tensor<1x12xf32>, tensor<1x8xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<2xf32>, tensor<2xf32>, !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>, index) -> (tensor<1x8xf32>, !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>)
  return
}

// -----

func.func @delta_value(%q: tensor<1x4xf32>, %v: tensor<1x6xf32>, %a: tensor<1x2xf32>, %p: tensor<2xf32>, %s: !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>, %o: index) {
  // expected-error @+1 {{value dimension 1 (value_heads x dv) is 6, expected 8}}
  %y, %s1 = llm.gated_delta_rule %q, %q, %v, %a, %a, %p, %p, %s, %o {key_heads = 1 : i64} : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x6xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<2xf32>, tensor<2xf32>, !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>, index) -> (tensor<1x6xf32>, !llm.recurrent_state<shape = [2, 4, 4], element_type = f32>)
  return
}

// -----

func.func @norm_group(%y: tensor<1x12xf32>, %w: tensor<12xf32>) {
  // expected-error @+1 {{group_size 5 must divide the 12 features}}
  %o = llm.gated_rms_norm %y, %y, %w {epsilon = 1.0e-6 : f32, group_size = 5 : i64, norm_before_gate = false} : tensor<1x12xf32>, tensor<12xf32>
  return
}

// -----

func.func @norm_weight(%y: tensor<1x12xf32>, %w: tensor<5xf32>) {
  // expected-error @+1 {{weight must be [12] or [4] (shared by the groups), got 'tensor<5xf32>'}}
  %o = llm.gated_rms_norm %y, %y, %w {epsilon = 1.0e-6 : f32, group_size = 4 : i64, norm_before_gate = false} : tensor<1x12xf32>, tensor<5xf32>
  return
}
