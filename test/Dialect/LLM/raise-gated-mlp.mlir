// RUN: pimc-opt %s --split-input-file --llm-raise-gated-mlp | FileCheck %s

// SwiGLU as the FX importer emits it: silu(gate(x)) * up(x), then down.
// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8xf32>)
// CHECK-DAG: %[[G:.*]] = llm.weight "mlp.gate_proj.weight"
// CHECK-DAG: %[[U:.*]] = llm.weight "mlp.up_proj.weight"
// CHECK-DAG: %[[D:.*]] = llm.weight "mlp.down_proj.weight"
// CHECK: %[[R:.*]] = llm.gated_mlp %[[X]], %[[G]], %[[U]], %[[D]] :
// CHECK-NOT: activation
// CHECK-NOT: llm.linear
// CHECK-NOT: llm.silu
// CHECK: return %[[R]]
func.func @swiglu(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %wg = llm.weight "mlp.gate_proj.weight" : tensor<16x8xf32>
  %wu = llm.weight "mlp.up_proj.weight" : tensor<16x8xf32>
  %wd = llm.weight "mlp.down_proj.weight" : tensor<8x16xf32>
  %g = llm.linear %x, %wg : (tensor<1x4x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16xf32>
  %a = llm.silu %g : tensor<1x4x16xf32>
  %u = llm.linear %x, %wu : (tensor<1x4x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16xf32>
  %h = llm.mul %a, %u : tensor<1x4x16xf32>
  %y = llm.linear %h, %wd : (tensor<1x4x16xf32>, tensor<8x16xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

// Operands of the product swapped, SiLU spelled out as g * sigmoid(g), bf16
// weights.
// CHECK-LABEL: func.func @swiglu_spelled_out
// CHECK: llm.gated_mlp %{{.*}} : (tensor<4x8xf32>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>) -> tensor<4x8xf32>
// CHECK-NOT: llm.sigmoid
func.func @swiglu_spelled_out(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wg = llm.weight "gate" : tensor<16x8xbf16>
  %wu = llm.weight "up" : tensor<16x8xbf16>
  %wd = llm.weight "down" : tensor<8x16xbf16>
  %g = llm.linear %x, %wg : (tensor<4x8xf32>, tensor<16x8xbf16>) -> tensor<4x16xf32>
  %s = llm.sigmoid %g : tensor<4x16xf32>
  %a = llm.mul %s, %g : tensor<4x16xf32>
  %u = llm.linear %x, %wu : (tensor<4x8xf32>, tensor<16x8xbf16>) -> tensor<4x16xf32>
  %h = llm.mul %u, %a : tensor<4x16xf32>
  %y = llm.linear %h, %wd : (tensor<4x16xf32>, tensor<8x16xbf16>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// GeGLU: tanh-approximated GELU (Gemma) and exact GELU.
// CHECK-LABEL: func.func @geglu
// CHECK: llm.gated_mlp {{.*}}activation = #llm<activation gelu_tanh>
// CHECK: llm.gated_mlp {{.*}}activation = #llm<activation gelu>
func.func @geglu(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %wg = llm.weight "gate" : tensor<16x8xf32>
  %wu = llm.weight "up" : tensor<16x8xf32>
  %wd = llm.weight "down" : tensor<8x16xf32>
  %g = llm.linear %x, %wg : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %u = llm.linear %x, %wu : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %a = llm.gelu %g {approximate = true} : tensor<4x16xf32>
  %h = llm.mul %a, %u : tensor<4x16xf32>
  %y = llm.linear %h, %wd : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %a2 = llm.gelu %g : tensor<4x16xf32>
  %h2 = llm.mul %a2, %u : tensor<4x16xf32>
  %y2 = llm.linear %h2, %wd : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  return %y, %y2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Negative: gate and up read different inputs.
// CHECK-LABEL: func.func @different_inputs
// CHECK-NOT: llm.gated_mlp
// CHECK: llm.silu
func.func @different_inputs(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wg = llm.weight "gate" : tensor<16x8xf32>
  %wu = llm.weight "up" : tensor<16x8xf32>
  %wd = llm.weight "down" : tensor<8x16xf32>
  %g = llm.linear %x, %wg : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %a = llm.silu %g : tensor<4x16xf32>
  %u = llm.linear %z, %wu : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %h = llm.mul %a, %u : tensor<4x16xf32>
  %y = llm.linear %h, %wd : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Negative: a bias on a projection (gated_mlp has none), and an activation
// that is not a gate (tanh).
// CHECK-LABEL: func.func @bias_or_wrong_activation
// CHECK-NOT: llm.gated_mlp
func.func @bias_or_wrong_activation(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %wg = llm.weight "gate" : tensor<16x8xf32>
  %wu = llm.weight "up" : tensor<16x8xf32>
  %wd = llm.weight "down" : tensor<8x16xf32>
  %bu = llm.weight "up.bias" : tensor<16xf32>
  %g = llm.linear %x, %wg : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %a = llm.silu %g : tensor<4x16xf32>
  %u = llm.linear %x, %wu, %bu : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %h = llm.mul %a, %u : tensor<4x16xf32>
  %y = llm.linear %h, %wd : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %u2 = llm.linear %x, %wu : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %t = llm.tanh %g : tensor<4x16xf32>
  %h2 = llm.mul %t, %u2 : tensor<4x16xf32>
  %y2 = llm.linear %h2, %wd : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  return %y, %y2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The FX trace of nn.Linear on [1, T, H]: mm on a [T, H] view, the result
// viewed back as [1, T, I]; the gated MLP runs on the [T, H] view and is
// viewed back like the down projection was.
// CHECK-LABEL: func.func @flattened_views
// CHECK: %[[V:.*]] = llm.reshape %arg0 : tensor<1x4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[M:.*]] = llm.gated_mlp %[[V]], %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
// CHECK: %[[R:.*]] = llm.reshape %[[M]] : tensor<4x8xf32> -> tensor<1x4x8xf32>
// CHECK: return %[[R]]
func.func @flattened_views(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %wg = llm.weight "gate" : tensor<16x8xf32>
  %wu = llm.weight "up" : tensor<16x8xf32>
  %wd = llm.weight "down" : tensor<8x16xf32>
  %xv = llm.reshape %x : tensor<1x4x8xf32> -> tensor<4x8xf32>
  %g = llm.linear %xv, %wg : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %gv = llm.reshape %g : tensor<4x16xf32> -> tensor<1x4x16xf32>
  %a = llm.silu %gv : tensor<1x4x16xf32>
  %xv2 = llm.reshape %x : tensor<1x4x8xf32> -> tensor<4x8xf32>
  %u = llm.linear %xv2, %wu : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %uv = llm.reshape %u : tensor<4x16xf32> -> tensor<1x4x16xf32>
  %h = llm.mul %a, %uv : tensor<1x4x16xf32>
  %hv = llm.reshape %h : tensor<1x4x16xf32> -> tensor<4x16xf32>
  %y = llm.linear %hv, %wd : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %yv = llm.reshape %y : tensor<4x8xf32> -> tensor<1x4x8xf32>
  return %yv : tensor<1x4x8xf32>
}

// -----

// Negative: a view that regroups the features ([4, 16] -> [8, 8]) between
// the product and the down projection is not a gated MLP.
// CHECK-LABEL: func.func @regrouping_view
// CHECK-NOT: llm.gated_mlp
func.func @regrouping_view(%x: tensor<4x8xf32>) -> tensor<8x8xf32> {
  %wg = llm.weight "gate" : tensor<16x8xf32>
  %wu = llm.weight "up" : tensor<16x8xf32>
  %wd = llm.weight "down" : tensor<8x8xf32>
  %g = llm.linear %x, %wg : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %a = llm.silu %g : tensor<4x16xf32>
  %u = llm.linear %x, %wu : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %h = llm.mul %a, %u : tensor<4x16xf32>
  %hv = llm.reshape %h : tensor<4x16xf32> -> tensor<8x8xf32>
  %y = llm.linear %hv, %wd : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

// GPT-2's NewGELU as torch.onnx exports it (x * x * x, constants broadcast
// from scalars), and the exact erf GELU: both become llm.gelu.
// CHECK-LABEL: func.func @spelled_out_gelu
// CHECK: %[[T:.*]] = llm.gelu %arg0 {approximate = true} : tensor<4x16xf32>
// CHECK: %[[E:.*]] = llm.gelu %arg0 : tensor<4x16xf32>
// CHECK-NOT: llm.tanh
// CHECK-NOT: llm.erf
// CHECK: return %[[T]], %[[E]]
func.func @spelled_out_gelu(%x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %c044 = arith.constant dense<4.471500e-02> : tensor<f32>
  %ck = arith.constant dense<0.797884583> : tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %half = arith.constant dense<0.5> : tensor<f32>
  %x2 = llm.mul %x, %x : tensor<4x16xf32>
  %x3 = llm.mul %x, %x2 : tensor<4x16xf32>
  %c044b = llm.broadcast %c044 : tensor<f32> -> tensor<4x16xf32>
  %a = llm.mul %c044b, %x3 : tensor<4x16xf32>
  %b = llm.add %x, %a : tensor<4x16xf32>
  %ckb = llm.broadcast %ck : tensor<f32> -> tensor<4x16xf32>
  %c = llm.mul %ckb, %b : tensor<4x16xf32>
  %t = llm.tanh %c : tensor<4x16xf32>
  %oneb = llm.broadcast %one : tensor<f32> -> tensor<4x16xf32>
  %d = llm.add %oneb, %t : tensor<4x16xf32>
  %e = llm.mul %x, %d : tensor<4x16xf32>
  %halfb = llm.broadcast %half : tensor<f32> -> tensor<4x16xf32>
  %g = llm.mul %halfb, %e : tensor<4x16xf32>
  %s2 = arith.constant dense<1.41421354> : tensor<4x16xf32>
  %z = llm.div %x, %s2 : tensor<4x16xf32>
  %erf = llm.erf %z : tensor<4x16xf32>
  %p = llm.add %erf, %oneb : tensor<4x16xf32>
  %hx = llm.mul %x, %halfb : tensor<4x16xf32>
  %ge = llm.mul %hx, %p : tensor<4x16xf32>
  return %g, %ge : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Negatives: a wrong cubic coefficient (0.05), and tanh of the plain x
// (not the GELU polynomial).
// CHECK-LABEL: func.func @not_gelu
// CHECK-NOT: llm.gelu
func.func @not_gelu(%x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %c05 = arith.constant dense<5.0e-02> : tensor<4x16xf32>
  %ck = arith.constant dense<0.797884583> : tensor<4x16xf32>
  %one = arith.constant dense<1.0> : tensor<4x16xf32>
  %half = arith.constant dense<0.5> : tensor<4x16xf32>
  %x2 = llm.mul %x, %x : tensor<4x16xf32>
  %x3 = llm.mul %x, %x2 : tensor<4x16xf32>
  %a = llm.mul %c05, %x3 : tensor<4x16xf32>
  %b = llm.add %x, %a : tensor<4x16xf32>
  %c = llm.mul %ck, %b : tensor<4x16xf32>
  %t = llm.tanh %c : tensor<4x16xf32>
  %d = llm.add %one, %t : tensor<4x16xf32>
  %e = llm.mul %x, %d : tensor<4x16xf32>
  %g = llm.mul %half, %e : tensor<4x16xf32>
  %t2 = llm.tanh %x : tensor<4x16xf32>
  %d2 = llm.add %one, %t2 : tensor<4x16xf32>
  %e2 = llm.mul %x, %d2 : tensor<4x16xf32>
  %g2 = llm.mul %half, %e2 : tensor<4x16xf32>
  return %g, %g2 : tensor<4x16xf32>, tensor<4x16xf32>
}
