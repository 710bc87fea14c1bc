// RUN: pimc-opt %s --pim-fuse-host-calls | FileCheck %s

// Consecutive host-fallback ops (weights, constants and integer ops between
// them do not count) form one run; an op with its own lowering (llm.add)
// ends it; a lone host-fallback op is not marked.
// CHECK-LABEL: func.func @forward
// CHECK: llm.layer_norm {{.*}}pim.host_group = 0 : i64
// CHECK: llm.weight "w2"
// CHECK: llm.erf {{.*}}pim.host_group = 0 : i64
// CHECK: llm.mul {{.*}}pim.host_group = 0 : i64
// CHECK: llm.add
// CHECK-NOT: pim.host_group
// CHECK: llm.tanh
// CHECK-NOT: pim.host_group
// CHECK: llm.add
// CHECK: llm.sigmoid {{.*}}pim.host_group = 1 : i64
// CHECK: llm.tanh {{.*}}pim.host_group = 1 : i64
// CHECK: return
func.func @forward(%tok: tensor<1xi64>, %off: index, %x: tensor<1x16xf32>) -> tensor<1x16xf32> {
  // Over both axes: not the vector unit's layer_norm (isVectorLayerNorm).
  %n = llm.layer_norm %x {axis = 0 : i64, epsilon = 1.0e-5 : f32} : (tensor<1x16xf32>) -> tensor<1x16xf32>
  %w2 = llm.weight "w2" : tensor<1x16xf32>
  %g = llm.erf %n : tensor<1x16xf32>
  %m = llm.mul %g, %w2 : tensor<1x16xf32>
  %a = llm.add %m, %x : tensor<1x16xf32>
  %t = llm.tanh %a : tensor<1x16xf32>
  %a2 = llm.add %t, %x : tensor<1x16xf32>
  %s = llm.sigmoid %a2 : tensor<1x16xf32>
  %t2 = llm.tanh %s : tensor<1x16xf32>
  return %t2 : tensor<1x16xf32>
}
