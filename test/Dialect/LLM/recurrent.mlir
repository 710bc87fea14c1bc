// RUN: pimc-opt %s | pimc-opt | FileCheck %s

// The recurrent layers round-trip: a Mamba-2 mixer (conv, scan, gated
// norm), a Mamba-1 scan (per-state decay), and a gated delta rule.

// CHECK-LABEL: func.func @mamba2
// CHECK: llm.causal_conv1d %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}}, %{{.*}} : tensor<?x96xf32>, !llm.recurrent_state<shape = [96, 3], element_type = f32>, tensor<96x1x4xbf16>, tensor<96xbf16> -> tensor<?x96xf32>
// CHECK: llm.ssm_scan {{.*}} {dt_max = 1.000000e+01 : f32, groups = 2 : i64}
// CHECK: llm.gated_rms_norm {{.*}} {epsilon = 9.99999974E-6 : f32, group_size = 32 : i64, norm_before_gate = true}
func.func @mamba2(%u: tensor<?x96xf32>, %x: tensor<?x64xf32>, %dt: tensor<?x4xf32>,
                  %b: tensor<?x16xf32>, %c: tensor<?x16xf32>, %z: tensor<?x64xf32>,
                  %conv: !llm.recurrent_state<shape = [96, 3], element_type = f32>,
                  %ssm: !llm.recurrent_state<shape = [4, 16, 8], element_type = f32>,
                  %off: index)
    -> (tensor<?x96xf32>, tensor<?x64xf32>, !llm.recurrent_state<shape = [96, 3], element_type = f32>,
        !llm.recurrent_state<shape = [4, 16, 8], element_type = f32>) {
  %w = llm.weight "conv1d.weight" : tensor<96x1x4xbf16>
  %cb = llm.weight "conv1d.bias" : tensor<96xbf16>
  %y, %conv1 = llm.causal_conv1d %u, %conv, %w bias %cb, %off : tensor<?x96xf32>, !llm.recurrent_state<shape = [96, 3], element_type = f32>, tensor<96x1x4xbf16>, tensor<96xbf16> -> tensor<?x96xf32>
  %alog = llm.weight "A_log" : tensor<4xf32>
  %d = llm.weight "D" : tensor<4xf32>
  %dtb = llm.weight "dt_bias" : tensor<4xf32>
  %s, %ssm1 = llm.ssm_scan %x, %dt, %b, %c, %alog, %d, %dtb, %ssm, %off {groups = 2 : i64, dt_max = 10.0 : f32} : (tensor<?x64xf32>, tensor<?x4xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, !llm.recurrent_state<shape = [4, 16, 8], element_type = f32>, index) -> (tensor<?x64xf32>, !llm.recurrent_state<shape = [4, 16, 8], element_type = f32>)
  %nw = llm.weight "norm.weight" : tensor<64xbf16>
  %o = llm.gated_rms_norm %s, %z, %nw {epsilon = 1.0e-5 : f32, group_size = 32 : i64, norm_before_gate = true} : tensor<?x64xf32>, tensor<64xbf16>
  return %y, %o, %conv1, %ssm1 : tensor<?x96xf32>, tensor<?x64xf32>, !llm.recurrent_state<shape = [96, 3], element_type = f32>, !llm.recurrent_state<shape = [4, 16, 8], element_type = f32>
}

// CHECK-LABEL: func.func @mamba1
// CHECK: llm.ssm_scan {{.*}} {groups = 1 : i64} : (tensor<1x32xf32>, tensor<1x32xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<32x4xf32>
func.func @mamba1(%x: tensor<1x32xf32>, %dt: tensor<1x32xf32>, %b: tensor<1x4xf32>, %c: tensor<1x4xf32>,
                  %ssm: !llm.recurrent_state<shape = [32, 1, 4], element_type = f32>, %off: index)
    -> (tensor<1x32xf32>, !llm.recurrent_state<shape = [32, 1, 4], element_type = f32>) {
  %alog = llm.weight "A_log" : tensor<32x4xf32>
  %d = llm.weight "D" : tensor<32xf32>
  %dtb = llm.weight "dt_proj.bias" : tensor<32xf32>
  %s, %ssm1 = llm.ssm_scan %x, %dt, %b, %c, %alog, %d, %dtb, %ssm, %off {groups = 1 : i64} : (tensor<1x32xf32>, tensor<1x32xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<32x4xf32>, tensor<32xf32>, tensor<32xf32>, !llm.recurrent_state<shape = [32, 1, 4], element_type = f32>, index) -> (tensor<1x32xf32>, !llm.recurrent_state<shape = [32, 1, 4], element_type = f32>)
  return %s, %ssm1 : tensor<1x32xf32>, !llm.recurrent_state<shape = [32, 1, 4], element_type = f32>
}

// CHECK-LABEL: func.func @delta
// CHECK: llm.gated_delta_rule {{.*}} {key_heads = 2 : i64}
func.func @delta(%q: tensor<?x32xf32>, %k: tensor<?x32xf32>, %v: tensor<?x64xf32>, %a: tensor<?x4xf32>,
                 %b: tensor<?x4xf32>, %st: !llm.recurrent_state<shape = [4, 16, 16], element_type = f32>, %off: index)
    -> (tensor<?x64xf32>, !llm.recurrent_state<shape = [4, 16, 16], element_type = f32>) {
  %alog = llm.weight "A_log" : tensor<4xf32>
  %dtb = llm.weight "dt_bias" : tensor<4xf32>
  %o, %st1 = llm.gated_delta_rule %q, %k, %v, %a, %b, %alog, %dtb, %st, %off {key_heads = 2 : i64} : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, !llm.recurrent_state<shape = [4, 16, 16], element_type = f32>, index) -> (tensor<?x64xf32>, !llm.recurrent_state<shape = [4, 16, 16], element_type = f32>)
  return %o, %st1 : tensor<?x64xf32>, !llm.recurrent_state<shape = [4, 16, 16], element_type = f32>
}
