// RUN: pimc-opt %s --split-input-file --llm-raise-moe | FileCheck %s
// The sparse per-expert dispatch (HF Mixtral's torch.where + index_add_
// loop) as the ONNX importer spells torch.onnx's export: llm.nonzero of the
// expert's mask, split into rows and slots, the rows of x gathered, the
// routing weight gathered at rows * K + slots of the flattened [T, K]
// weights, and index_add_ as ScatterElements (a one-hot select over
// [T, N, H] reduced over N). llm-raise-moe densifies each such term to
// broadcast(gate) * expert(x), checked by evaluation.

// ScatterElements into zeros (reduction none: select(covered, written,
// zeros)), then the Add into the accumulator: densified.
// CHECK-LABEL: func.func @scatter_none
// CHECK:      %[[MASK:.*]] = llm.compare eq %arg2, %{{.*}} : tensor<4x2xi64> -> tensor<4x2xi1>
// CHECK-NOT:  llm.nonzero
// CHECK:      %[[PICK:.*]] = llm.select %[[MASK]], %arg1, %{{.*}} : tensor<4x2xi1>, tensor<4x2xf32>
// CHECK-NEXT: %[[GATE:.*]] = llm.reduce sum %[[PICK]] {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
// CHECK:      %[[E:.*]] = llm.gated_mlp %arg0, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[GB:.*]] = llm.broadcast %[[GATE]] : tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[T:.*]] = llm.mul %[[GB]], %[[E]] : tensor<4x8xf32>
// CHECK-NEXT: %[[Y:.*]] = llm.add %arg3, %[[T]] : tensor<4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @scatter_none(%x: tensor<4x8xf32>, %w: tensor<4x2xf32>, %idx: tensor<4x2xi64>, %acc: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e0_c = arith.constant dense<0> : tensor<4x2xi64>
  %e0_mask = llm.compare eq %idx, %e0_c : tensor<4x2xi64> -> tensor<4x2xi1>
  %e0_nz = llm.nonzero %e0_mask : (tensor<4x2xi1>) -> tensor<3x2xi64>
  %e0_r2 = llm.slice %e0_nz {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %e0_s2 = llm.slice %e0_nz {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %e0_rows = llm.reshape %e0_r2 : tensor<3x1xi64> -> tensor<3xi64>
  %e0_slots = llm.reshape %e0_s2 : tensor<3x1xi64> -> tensor<3xi64>
  %e0_xr = llm.gather %x, %e0_rows {axis = 0 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  %e0_g = llm.weight "e0.gate" : tensor<16x8xf32>
  %e0_u = llm.weight "e0.up" : tensor<16x8xf32>
  %e0_d = llm.weight "e0.down" : tensor<8x16xf32>
  %e0_y = llm.gated_mlp %e0_xr, %e0_g, %e0_u, %e0_d : (tensor<3x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<3x8xf32>
  %e0_wf = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %e0_mf = llm.convert %e0_rows : tensor<3xi64> -> tensor<3xf32>
  %e0_k = arith.constant dense<2.0> : tensor<3xf32>
  %e0_mk = llm.mul %e0_mf, %e0_k : tensor<3xf32>
  %e0_nf = llm.convert %e0_slots : tensor<3xi64> -> tensor<3xf32>
  %e0_flat = llm.add %e0_nf, %e0_mk : tensor<3xf32>
  %e0_fi = llm.convert %e0_flat : tensor<3xf32> -> tensor<3xi64>
  %e0_wg = llm.gather %e0_wf, %e0_fi {axis = 0 : i64} : (tensor<8x1xf32>, tensor<3xi64>) -> tensor<3x1xf32>
  %e0_wb = llm.broadcast %e0_wg : tensor<3x1xf32> -> tensor<3x8xf32>
  %e0_src = llm.mul %e0_y, %e0_wb : tensor<3x8xf32>
  %e0_ib = llm.broadcast %e0_r2 : tensor<3x1xi64> -> tensor<3x8xi64>
  %e0_iv = llm.reshape %e0_ib : tensor<3x8xi64> -> tensor<1x3x8xi64>
  %e0_iw = llm.broadcast %e0_iv : tensor<1x3x8xi64> -> tensor<4x3x8xi64>
  %e0_iota = arith.constant dense<[[[0]], [[1]], [[2]], [[3]]]> : tensor<4x1x1xi64>
  %e0_iob = llm.broadcast %e0_iota : tensor<4x1x1xi64> -> tensor<4x3x8xi64>
  %e0_hit = llm.compare eq %e0_iw, %e0_iob : tensor<4x3x8xi64> -> tensor<4x3x8xi1>
  %e0_uv = llm.reshape %e0_src : tensor<3x8xf32> -> tensor<1x3x8xf32>
  %e0_ub = llm.broadcast %e0_uv : tensor<1x3x8xf32> -> tensor<4x3x8xf32>
  %e0_z3 = arith.constant dense<0.0> : tensor<4x3x8xf32>
  %e0_sel = llm.select %e0_hit, %e0_ub, %e0_z3 : tensor<4x3x8xi1>, tensor<4x3x8xf32>
  %e0_sum3 = llm.reduce sum %e0_sel {axis = 1 : i64, keep_dim = true} : tensor<4x3x8xf32> -> tensor<4x1x8xf32>
  %e0_sum = llm.reshape %e0_sum3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %e0_o3 = arith.constant dense<1.0> : tensor<4x3x8xf32>
  %e0_cnt = llm.select %e0_hit, %e0_o3, %e0_z3 : tensor<4x3x8xi1>, tensor<4x3x8xf32>
  %e0_cs3 = llm.reduce sum %e0_cnt {axis = 1 : i64, keep_dim = true} : tensor<4x3x8xf32> -> tensor<4x1x8xf32>
  %e0_cs = llm.reshape %e0_cs3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %e0_z2 = arith.constant dense<0.0> : tensor<4x8xf32>
  %e0_cov = llm.compare gt %e0_cs, %e0_z2 : tensor<4x8xf32> -> tensor<4x8xi1>
  %e0_sc = llm.select %e0_cov, %e0_sum, %e0_z2 : tensor<4x8xi1>, tensor<4x8xf32>
  %e0_out = llm.add %acc, %e0_sc : tensor<4x8xf32>
  return %e0_out : tensor<4x8xf32>
}

// -----

// ScatterElements with reduction=add into the accumulator: densified.
// CHECK-LABEL: func.func @scatter_add
// CHECK:      %[[MASK:.*]] = llm.compare eq %arg2, %{{.*}} : tensor<4x2xi64> -> tensor<4x2xi1>
// CHECK-NOT:  llm.nonzero
// CHECK:      %[[PICK:.*]] = llm.select %[[MASK]], %arg1, %{{.*}} : tensor<4x2xi1>, tensor<4x2xf32>
// CHECK-NEXT: %[[GATE:.*]] = llm.reduce sum %[[PICK]] {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
// CHECK:      %[[E:.*]] = llm.gated_mlp %arg0, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[GB:.*]] = llm.broadcast %[[GATE]] : tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[T:.*]] = llm.mul %[[GB]], %[[E]] : tensor<4x8xf32>
// CHECK-NEXT: %[[Y:.*]] = llm.add %arg3, %[[T]] : tensor<4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @scatter_add(%x: tensor<4x8xf32>, %w: tensor<4x2xf32>, %idx: tensor<4x2xi64>, %acc: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e0_c = arith.constant dense<0> : tensor<4x2xi64>
  %e0_mask = llm.compare eq %idx, %e0_c : tensor<4x2xi64> -> tensor<4x2xi1>
  %e0_nz = llm.nonzero %e0_mask : (tensor<4x2xi1>) -> tensor<3x2xi64>
  %e0_r2 = llm.slice %e0_nz {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %e0_s2 = llm.slice %e0_nz {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %e0_rows = llm.reshape %e0_r2 : tensor<3x1xi64> -> tensor<3xi64>
  %e0_slots = llm.reshape %e0_s2 : tensor<3x1xi64> -> tensor<3xi64>
  %e0_xr = llm.gather %x, %e0_rows {axis = 0 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  %e0_g = llm.weight "e0.gate" : tensor<16x8xf32>
  %e0_u = llm.weight "e0.up" : tensor<16x8xf32>
  %e0_d = llm.weight "e0.down" : tensor<8x16xf32>
  %e0_y = llm.gated_mlp %e0_xr, %e0_g, %e0_u, %e0_d : (tensor<3x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<3x8xf32>
  %e0_wf = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %e0_mf = llm.convert %e0_rows : tensor<3xi64> -> tensor<3xf32>
  %e0_k = arith.constant dense<2.0> : tensor<3xf32>
  %e0_mk = llm.mul %e0_mf, %e0_k : tensor<3xf32>
  %e0_nf = llm.convert %e0_slots : tensor<3xi64> -> tensor<3xf32>
  %e0_flat = llm.add %e0_nf, %e0_mk : tensor<3xf32>
  %e0_fi = llm.convert %e0_flat : tensor<3xf32> -> tensor<3xi64>
  %e0_wg = llm.gather %e0_wf, %e0_fi {axis = 0 : i64} : (tensor<8x1xf32>, tensor<3xi64>) -> tensor<3x1xf32>
  %e0_wb = llm.broadcast %e0_wg : tensor<3x1xf32> -> tensor<3x8xf32>
  %e0_src = llm.mul %e0_y, %e0_wb : tensor<3x8xf32>
  %e0_ib = llm.broadcast %e0_r2 : tensor<3x1xi64> -> tensor<3x8xi64>
  %e0_iv = llm.reshape %e0_ib : tensor<3x8xi64> -> tensor<1x3x8xi64>
  %e0_iw = llm.broadcast %e0_iv : tensor<1x3x8xi64> -> tensor<4x3x8xi64>
  %e0_iota = arith.constant dense<[[[0]], [[1]], [[2]], [[3]]]> : tensor<4x1x1xi64>
  %e0_iob = llm.broadcast %e0_iota : tensor<4x1x1xi64> -> tensor<4x3x8xi64>
  %e0_hit = llm.compare eq %e0_iw, %e0_iob : tensor<4x3x8xi64> -> tensor<4x3x8xi1>
  %e0_uv = llm.reshape %e0_src : tensor<3x8xf32> -> tensor<1x3x8xf32>
  %e0_ub = llm.broadcast %e0_uv : tensor<1x3x8xf32> -> tensor<4x3x8xf32>
  %e0_z3 = arith.constant dense<0.0> : tensor<4x3x8xf32>
  %e0_sel = llm.select %e0_hit, %e0_ub, %e0_z3 : tensor<4x3x8xi1>, tensor<4x3x8xf32>
  %e0_sum3 = llm.reduce sum %e0_sel {axis = 1 : i64, keep_dim = true} : tensor<4x3x8xf32> -> tensor<4x1x8xf32>
  %e0_sum = llm.reshape %e0_sum3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %e0_out = llm.add %acc, %e0_sum : tensor<4x8xf32>
  return %e0_out : tensor<4x8xf32>
}

// -----

// The weight gathered at slots * K + rows (rows and slots swapped): not
// w[rows, slots], not rewritten.
// CHECK-LABEL: func.func @weight_swapped
// CHECK:       llm.nonzero
// CHECK:       llm.gather %arg0
// CHECK-NOT:   llm.reduce sum %{{.*}} {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32>
// CHECK:       return
func.func @weight_swapped(%x: tensor<4x8xf32>, %w: tensor<4x2xf32>, %idx: tensor<4x2xi64>, %acc: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e0_c = arith.constant dense<0> : tensor<4x2xi64>
  %e0_mask = llm.compare eq %idx, %e0_c : tensor<4x2xi64> -> tensor<4x2xi1>
  %e0_nz = llm.nonzero %e0_mask : (tensor<4x2xi1>) -> tensor<3x2xi64>
  %e0_r2 = llm.slice %e0_nz {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %e0_s2 = llm.slice %e0_nz {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %e0_rows = llm.reshape %e0_r2 : tensor<3x1xi64> -> tensor<3xi64>
  %e0_slots = llm.reshape %e0_s2 : tensor<3x1xi64> -> tensor<3xi64>
  %e0_xr = llm.gather %x, %e0_rows {axis = 0 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  %e0_g = llm.weight "e0.gate" : tensor<16x8xf32>
  %e0_u = llm.weight "e0.up" : tensor<16x8xf32>
  %e0_d = llm.weight "e0.down" : tensor<8x16xf32>
  %e0_y = llm.gated_mlp %e0_xr, %e0_g, %e0_u, %e0_d : (tensor<3x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<3x8xf32>
  %e0_wf = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %e0_mf = llm.convert %e0_slots : tensor<3xi64> -> tensor<3xf32>
  %e0_k = arith.constant dense<2.0> : tensor<3xf32>
  %e0_mk = llm.mul %e0_mf, %e0_k : tensor<3xf32>
  %e0_nf = llm.convert %e0_rows : tensor<3xi64> -> tensor<3xf32>
  %e0_flat = llm.add %e0_nf, %e0_mk : tensor<3xf32>
  %e0_fi = llm.convert %e0_flat : tensor<3xf32> -> tensor<3xi64>
  %e0_wg = llm.gather %e0_wf, %e0_fi {axis = 0 : i64} : (tensor<8x1xf32>, tensor<3xi64>) -> tensor<3x1xf32>
  %e0_wb = llm.broadcast %e0_wg : tensor<3x1xf32> -> tensor<3x8xf32>
  %e0_src = llm.mul %e0_y, %e0_wb : tensor<3x8xf32>
  %e0_ib = llm.broadcast %e0_r2 : tensor<3x1xi64> -> tensor<3x8xi64>
  %e0_iv = llm.reshape %e0_ib : tensor<3x8xi64> -> tensor<1x3x8xi64>
  %e0_iw = llm.broadcast %e0_iv : tensor<1x3x8xi64> -> tensor<4x3x8xi64>
  %e0_iota = arith.constant dense<[[[0]], [[1]], [[2]], [[3]]]> : tensor<4x1x1xi64>
  %e0_iob = llm.broadcast %e0_iota : tensor<4x1x1xi64> -> tensor<4x3x8xi64>
  %e0_hit = llm.compare eq %e0_iw, %e0_iob : tensor<4x3x8xi64> -> tensor<4x3x8xi1>
  %e0_uv = llm.reshape %e0_src : tensor<3x8xf32> -> tensor<1x3x8xf32>
  %e0_ub = llm.broadcast %e0_uv : tensor<1x3x8xf32> -> tensor<4x3x8xf32>
  %e0_z3 = arith.constant dense<0.0> : tensor<4x3x8xf32>
  %e0_sel = llm.select %e0_hit, %e0_ub, %e0_z3 : tensor<4x3x8xi1>, tensor<4x3x8xf32>
  %e0_sum3 = llm.reduce sum %e0_sel {axis = 1 : i64, keep_dim = true} : tensor<4x3x8xf32> -> tensor<4x1x8xf32>
  %e0_sum = llm.reshape %e0_sum3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %e0_o3 = arith.constant dense<1.0> : tensor<4x3x8xf32>
  %e0_cnt = llm.select %e0_hit, %e0_o3, %e0_z3 : tensor<4x3x8xi1>, tensor<4x3x8xf32>
  %e0_cs3 = llm.reduce sum %e0_cnt {axis = 1 : i64, keep_dim = true} : tensor<4x3x8xf32> -> tensor<4x1x8xf32>
  %e0_cs = llm.reshape %e0_cs3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %e0_z2 = arith.constant dense<0.0> : tensor<4x8xf32>
  %e0_cov = llm.compare gt %e0_cs, %e0_z2 : tensor<4x8xf32> -> tensor<4x8xi1>
  %e0_sc = llm.select %e0_cov, %e0_sum, %e0_z2 : tensor<4x8xi1>, tensor<4x8xf32>
  %e0_out = llm.add %acc, %e0_sc : tensor<4x8xf32>
  return %e0_out : tensor<4x8xf32>
}

// -----

// index_add_ at the slots instead of the rows: the one-hot is not
// (t == rows[i]), not rewritten.
// CHECK-LABEL: func.func @scatter_by_slots
// CHECK:       llm.nonzero
// CHECK:       llm.gather %arg0
// CHECK-NOT:   llm.reduce sum %{{.*}} {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32>
// CHECK:       return
func.func @scatter_by_slots(%x: tensor<4x8xf32>, %w: tensor<4x2xf32>, %idx: tensor<4x2xi64>, %acc: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e0_c = arith.constant dense<0> : tensor<4x2xi64>
  %e0_mask = llm.compare eq %idx, %e0_c : tensor<4x2xi64> -> tensor<4x2xi1>
  %e0_nz = llm.nonzero %e0_mask : (tensor<4x2xi1>) -> tensor<3x2xi64>
  %e0_r2 = llm.slice %e0_nz {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %e0_s2 = llm.slice %e0_nz {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %e0_rows = llm.reshape %e0_r2 : tensor<3x1xi64> -> tensor<3xi64>
  %e0_slots = llm.reshape %e0_s2 : tensor<3x1xi64> -> tensor<3xi64>
  %e0_xr = llm.gather %x, %e0_rows {axis = 0 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  %e0_g = llm.weight "e0.gate" : tensor<16x8xf32>
  %e0_u = llm.weight "e0.up" : tensor<16x8xf32>
  %e0_d = llm.weight "e0.down" : tensor<8x16xf32>
  %e0_y = llm.gated_mlp %e0_xr, %e0_g, %e0_u, %e0_d : (tensor<3x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<3x8xf32>
  %e0_wf = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %e0_mf = llm.convert %e0_rows : tensor<3xi64> -> tensor<3xf32>
  %e0_k = arith.constant dense<2.0> : tensor<3xf32>
  %e0_mk = llm.mul %e0_mf, %e0_k : tensor<3xf32>
  %e0_nf = llm.convert %e0_slots : tensor<3xi64> -> tensor<3xf32>
  %e0_flat = llm.add %e0_nf, %e0_mk : tensor<3xf32>
  %e0_fi = llm.convert %e0_flat : tensor<3xf32> -> tensor<3xi64>
  %e0_wg = llm.gather %e0_wf, %e0_fi {axis = 0 : i64} : (tensor<8x1xf32>, tensor<3xi64>) -> tensor<3x1xf32>
  %e0_wb = llm.broadcast %e0_wg : tensor<3x1xf32> -> tensor<3x8xf32>
  %e0_src = llm.mul %e0_y, %e0_wb : tensor<3x8xf32>
  %e0_ib = llm.broadcast %e0_s2 : tensor<3x1xi64> -> tensor<3x8xi64>
  %e0_iv = llm.reshape %e0_ib : tensor<3x8xi64> -> tensor<1x3x8xi64>
  %e0_iw = llm.broadcast %e0_iv : tensor<1x3x8xi64> -> tensor<4x3x8xi64>
  %e0_iota = arith.constant dense<[[[0]], [[1]], [[2]], [[3]]]> : tensor<4x1x1xi64>
  %e0_iob = llm.broadcast %e0_iota : tensor<4x1x1xi64> -> tensor<4x3x8xi64>
  %e0_hit = llm.compare eq %e0_iw, %e0_iob : tensor<4x3x8xi64> -> tensor<4x3x8xi1>
  %e0_uv = llm.reshape %e0_src : tensor<3x8xf32> -> tensor<1x3x8xf32>
  %e0_ub = llm.broadcast %e0_uv : tensor<1x3x8xf32> -> tensor<4x3x8xf32>
  %e0_z3 = arith.constant dense<0.0> : tensor<4x3x8xf32>
  %e0_sel = llm.select %e0_hit, %e0_ub, %e0_z3 : tensor<4x3x8xi1>, tensor<4x3x8xf32>
  %e0_sum3 = llm.reduce sum %e0_sel {axis = 1 : i64, keep_dim = true} : tensor<4x3x8xf32> -> tensor<4x1x8xf32>
  %e0_sum = llm.reshape %e0_sum3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %e0_o3 = arith.constant dense<1.0> : tensor<4x3x8xf32>
  %e0_cnt = llm.select %e0_hit, %e0_o3, %e0_z3 : tensor<4x3x8xi1>, tensor<4x3x8xf32>
  %e0_cs3 = llm.reduce sum %e0_cnt {axis = 1 : i64, keep_dim = true} : tensor<4x3x8xf32> -> tensor<4x1x8xf32>
  %e0_cs = llm.reshape %e0_cs3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %e0_z2 = arith.constant dense<0.0> : tensor<4x8xf32>
  %e0_cov = llm.compare gt %e0_cs, %e0_z2 : tensor<4x8xf32> -> tensor<4x8xi1>
  %e0_sc = llm.select %e0_cov, %e0_sum, %e0_z2 : tensor<4x8xi1>, tensor<4x8xf32>
  %e0_out = llm.add %acc, %e0_sc : tensor<4x8xf32>
  return %e0_out : tensor<4x8xf32>
}

// -----

// The expert runs on x[slots]: not x[rows], not rewritten.
// CHECK-LABEL: func.func @gather_by_slots
// CHECK:       llm.nonzero
// CHECK:       llm.gather %arg0
// CHECK-NOT:   llm.reduce sum %{{.*}} {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32>
// CHECK:       return
func.func @gather_by_slots(%x: tensor<4x8xf32>, %w: tensor<4x2xf32>, %idx: tensor<4x2xi64>, %acc: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e0_c = arith.constant dense<0> : tensor<4x2xi64>
  %e0_mask = llm.compare eq %idx, %e0_c : tensor<4x2xi64> -> tensor<4x2xi1>
  %e0_nz = llm.nonzero %e0_mask : (tensor<4x2xi1>) -> tensor<3x2xi64>
  %e0_r2 = llm.slice %e0_nz {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %e0_s2 = llm.slice %e0_nz {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %e0_rows = llm.reshape %e0_r2 : tensor<3x1xi64> -> tensor<3xi64>
  %e0_slots = llm.reshape %e0_s2 : tensor<3x1xi64> -> tensor<3xi64>
  %e0_xr = llm.gather %x, %e0_slots {axis = 0 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  %e0_g = llm.weight "e0.gate" : tensor<16x8xf32>
  %e0_u = llm.weight "e0.up" : tensor<16x8xf32>
  %e0_d = llm.weight "e0.down" : tensor<8x16xf32>
  %e0_y = llm.gated_mlp %e0_xr, %e0_g, %e0_u, %e0_d : (tensor<3x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<3x8xf32>
  %e0_wf = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %e0_mf = llm.convert %e0_rows : tensor<3xi64> -> tensor<3xf32>
  %e0_k = arith.constant dense<2.0> : tensor<3xf32>
  %e0_mk = llm.mul %e0_mf, %e0_k : tensor<3xf32>
  %e0_nf = llm.convert %e0_slots : tensor<3xi64> -> tensor<3xf32>
  %e0_flat = llm.add %e0_nf, %e0_mk : tensor<3xf32>
  %e0_fi = llm.convert %e0_flat : tensor<3xf32> -> tensor<3xi64>
  %e0_wg = llm.gather %e0_wf, %e0_fi {axis = 0 : i64} : (tensor<8x1xf32>, tensor<3xi64>) -> tensor<3x1xf32>
  %e0_wb = llm.broadcast %e0_wg : tensor<3x1xf32> -> tensor<3x8xf32>
  %e0_src = llm.mul %e0_y, %e0_wb : tensor<3x8xf32>
  %e0_ib = llm.broadcast %e0_r2 : tensor<3x1xi64> -> tensor<3x8xi64>
  %e0_iv = llm.reshape %e0_ib : tensor<3x8xi64> -> tensor<1x3x8xi64>
  %e0_iw = llm.broadcast %e0_iv : tensor<1x3x8xi64> -> tensor<4x3x8xi64>
  %e0_iota = arith.constant dense<[[[0]], [[1]], [[2]], [[3]]]> : tensor<4x1x1xi64>
  %e0_iob = llm.broadcast %e0_iota : tensor<4x1x1xi64> -> tensor<4x3x8xi64>
  %e0_hit = llm.compare eq %e0_iw, %e0_iob : tensor<4x3x8xi64> -> tensor<4x3x8xi1>
  %e0_uv = llm.reshape %e0_src : tensor<3x8xf32> -> tensor<1x3x8xf32>
  %e0_ub = llm.broadcast %e0_uv : tensor<1x3x8xf32> -> tensor<4x3x8xf32>
  %e0_z3 = arith.constant dense<0.0> : tensor<4x3x8xf32>
  %e0_sel = llm.select %e0_hit, %e0_ub, %e0_z3 : tensor<4x3x8xi1>, tensor<4x3x8xf32>
  %e0_sum3 = llm.reduce sum %e0_sel {axis = 1 : i64, keep_dim = true} : tensor<4x3x8xf32> -> tensor<4x1x8xf32>
  %e0_sum = llm.reshape %e0_sum3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %e0_o3 = arith.constant dense<1.0> : tensor<4x3x8xf32>
  %e0_cnt = llm.select %e0_hit, %e0_o3, %e0_z3 : tensor<4x3x8xi1>, tensor<4x3x8xf32>
  %e0_cs3 = llm.reduce sum %e0_cnt {axis = 1 : i64, keep_dim = true} : tensor<4x3x8xf32> -> tensor<4x1x8xf32>
  %e0_cs = llm.reshape %e0_cs3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %e0_z2 = arith.constant dense<0.0> : tensor<4x8xf32>
  %e0_cov = llm.compare gt %e0_cs, %e0_z2 : tensor<4x8xf32> -> tensor<4x8xi1>
  %e0_sc = llm.select %e0_cov, %e0_sum, %e0_z2 : tensor<4x8xi1>, tensor<4x8xf32>
  %e0_out = llm.add %acc, %e0_sc : tensor<4x8xf32>
  return %e0_out : tensor<4x8xf32>
}

// -----

// The whole block (3 experts, top-2 of a softmax router, renormalised,
// traced counts 3, 3, 2): every term densified, then the sum raised to
// llm.moe.
// CHECK-LABEL: func.func @mixtral_sparse
// CHECK:       %[[WR:.*]] = llm.weight "gate.weight"
// CHECK:       %[[Y:.*]] = llm.moe %arg0 router %[[WR]] experts gate[%{{.*}}, %{{.*}}, %{{.*}}] up[{{.*}}] down[{{.*}}] {renormalize = true, top_k = 2 : i64}
// CHECK-NOT:   llm.nonzero
// CHECK-NOT:   llm.gated_mlp
// CHECK:       return %[[Y]]
func.func @mixtral_sparse(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<3x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x3xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x3xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  %me0_c = arith.constant dense<0> : tensor<4x2xi64>
  %me0_mask = llm.compare eq %idx, %me0_c : tensor<4x2xi64> -> tensor<4x2xi1>
  %me0_nz = llm.nonzero %me0_mask : (tensor<4x2xi1>) -> tensor<3x2xi64>
  %me0_r2 = llm.slice %me0_nz {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %me0_s2 = llm.slice %me0_nz {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %me0_rows = llm.reshape %me0_r2 : tensor<3x1xi64> -> tensor<3xi64>
  %me0_slots = llm.reshape %me0_s2 : tensor<3x1xi64> -> tensor<3xi64>
  %me0_xr = llm.gather %x, %me0_rows {axis = 0 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  %me0_g = llm.weight "e0.gate" : tensor<16x8xf32>
  %me0_u = llm.weight "e0.up" : tensor<16x8xf32>
  %me0_d = llm.weight "e0.down" : tensor<8x16xf32>
  %me0_y = llm.gated_mlp %me0_xr, %me0_g, %me0_u, %me0_d : (tensor<3x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<3x8xf32>
  %me0_wf = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %me0_mf = llm.convert %me0_rows : tensor<3xi64> -> tensor<3xf32>
  %me0_k = arith.constant dense<2.0> : tensor<3xf32>
  %me0_mk = llm.mul %me0_mf, %me0_k : tensor<3xf32>
  %me0_nf = llm.convert %me0_slots : tensor<3xi64> -> tensor<3xf32>
  %me0_flat = llm.add %me0_nf, %me0_mk : tensor<3xf32>
  %me0_fi = llm.convert %me0_flat : tensor<3xf32> -> tensor<3xi64>
  %me0_wg = llm.gather %me0_wf, %me0_fi {axis = 0 : i64} : (tensor<8x1xf32>, tensor<3xi64>) -> tensor<3x1xf32>
  %me0_wb = llm.broadcast %me0_wg : tensor<3x1xf32> -> tensor<3x8xf32>
  %me0_src = llm.mul %me0_y, %me0_wb : tensor<3x8xf32>
  %me0_ib = llm.broadcast %me0_r2 : tensor<3x1xi64> -> tensor<3x8xi64>
  %me0_iv = llm.reshape %me0_ib : tensor<3x8xi64> -> tensor<1x3x8xi64>
  %me0_iw = llm.broadcast %me0_iv : tensor<1x3x8xi64> -> tensor<4x3x8xi64>
  %me0_iota = arith.constant dense<[[[0]], [[1]], [[2]], [[3]]]> : tensor<4x1x1xi64>
  %me0_iob = llm.broadcast %me0_iota : tensor<4x1x1xi64> -> tensor<4x3x8xi64>
  %me0_hit = llm.compare eq %me0_iw, %me0_iob : tensor<4x3x8xi64> -> tensor<4x3x8xi1>
  %me0_uv = llm.reshape %me0_src : tensor<3x8xf32> -> tensor<1x3x8xf32>
  %me0_ub = llm.broadcast %me0_uv : tensor<1x3x8xf32> -> tensor<4x3x8xf32>
  %me0_z3 = arith.constant dense<0.0> : tensor<4x3x8xf32>
  %me0_sel = llm.select %me0_hit, %me0_ub, %me0_z3 : tensor<4x3x8xi1>, tensor<4x3x8xf32>
  %me0_sum3 = llm.reduce sum %me0_sel {axis = 1 : i64, keep_dim = true} : tensor<4x3x8xf32> -> tensor<4x1x8xf32>
  %me0_sum = llm.reshape %me0_sum3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %me0_o3 = arith.constant dense<1.0> : tensor<4x3x8xf32>
  %me0_cnt = llm.select %me0_hit, %me0_o3, %me0_z3 : tensor<4x3x8xi1>, tensor<4x3x8xf32>
  %me0_cs3 = llm.reduce sum %me0_cnt {axis = 1 : i64, keep_dim = true} : tensor<4x3x8xf32> -> tensor<4x1x8xf32>
  %me0_cs = llm.reshape %me0_cs3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %me0_z2 = arith.constant dense<0.0> : tensor<4x8xf32>
  %me0_cov = llm.compare gt %me0_cs, %me0_z2 : tensor<4x8xf32> -> tensor<4x8xi1>
  %me0_sc = llm.select %me0_cov, %me0_sum, %me0_z2 : tensor<4x8xi1>, tensor<4x8xf32>
  %me0_out = llm.add %zero, %me0_sc : tensor<4x8xf32>
  %me1_c = arith.constant dense<1> : tensor<4x2xi64>
  %me1_mask = llm.compare eq %idx, %me1_c : tensor<4x2xi64> -> tensor<4x2xi1>
  %me1_nz = llm.nonzero %me1_mask : (tensor<4x2xi1>) -> tensor<3x2xi64>
  %me1_r2 = llm.slice %me1_nz {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %me1_s2 = llm.slice %me1_nz {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %me1_rows = llm.reshape %me1_r2 : tensor<3x1xi64> -> tensor<3xi64>
  %me1_slots = llm.reshape %me1_s2 : tensor<3x1xi64> -> tensor<3xi64>
  %me1_xr = llm.gather %x, %me1_rows {axis = 0 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  %me1_g = llm.weight "e1.gate" : tensor<16x8xf32>
  %me1_u = llm.weight "e1.up" : tensor<16x8xf32>
  %me1_d = llm.weight "e1.down" : tensor<8x16xf32>
  %me1_y = llm.gated_mlp %me1_xr, %me1_g, %me1_u, %me1_d : (tensor<3x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<3x8xf32>
  %me1_wf = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %me1_mf = llm.convert %me1_rows : tensor<3xi64> -> tensor<3xf32>
  %me1_k = arith.constant dense<2.0> : tensor<3xf32>
  %me1_mk = llm.mul %me1_mf, %me1_k : tensor<3xf32>
  %me1_nf = llm.convert %me1_slots : tensor<3xi64> -> tensor<3xf32>
  %me1_flat = llm.add %me1_nf, %me1_mk : tensor<3xf32>
  %me1_fi = llm.convert %me1_flat : tensor<3xf32> -> tensor<3xi64>
  %me1_wg = llm.gather %me1_wf, %me1_fi {axis = 0 : i64} : (tensor<8x1xf32>, tensor<3xi64>) -> tensor<3x1xf32>
  %me1_wb = llm.broadcast %me1_wg : tensor<3x1xf32> -> tensor<3x8xf32>
  %me1_src = llm.mul %me1_y, %me1_wb : tensor<3x8xf32>
  %me1_ib = llm.broadcast %me1_r2 : tensor<3x1xi64> -> tensor<3x8xi64>
  %me1_iv = llm.reshape %me1_ib : tensor<3x8xi64> -> tensor<1x3x8xi64>
  %me1_iw = llm.broadcast %me1_iv : tensor<1x3x8xi64> -> tensor<4x3x8xi64>
  %me1_iota = arith.constant dense<[[[0]], [[1]], [[2]], [[3]]]> : tensor<4x1x1xi64>
  %me1_iob = llm.broadcast %me1_iota : tensor<4x1x1xi64> -> tensor<4x3x8xi64>
  %me1_hit = llm.compare eq %me1_iw, %me1_iob : tensor<4x3x8xi64> -> tensor<4x3x8xi1>
  %me1_uv = llm.reshape %me1_src : tensor<3x8xf32> -> tensor<1x3x8xf32>
  %me1_ub = llm.broadcast %me1_uv : tensor<1x3x8xf32> -> tensor<4x3x8xf32>
  %me1_z3 = arith.constant dense<0.0> : tensor<4x3x8xf32>
  %me1_sel = llm.select %me1_hit, %me1_ub, %me1_z3 : tensor<4x3x8xi1>, tensor<4x3x8xf32>
  %me1_sum3 = llm.reduce sum %me1_sel {axis = 1 : i64, keep_dim = true} : tensor<4x3x8xf32> -> tensor<4x1x8xf32>
  %me1_sum = llm.reshape %me1_sum3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %me1_o3 = arith.constant dense<1.0> : tensor<4x3x8xf32>
  %me1_cnt = llm.select %me1_hit, %me1_o3, %me1_z3 : tensor<4x3x8xi1>, tensor<4x3x8xf32>
  %me1_cs3 = llm.reduce sum %me1_cnt {axis = 1 : i64, keep_dim = true} : tensor<4x3x8xf32> -> tensor<4x1x8xf32>
  %me1_cs = llm.reshape %me1_cs3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %me1_z2 = arith.constant dense<0.0> : tensor<4x8xf32>
  %me1_cov = llm.compare gt %me1_cs, %me1_z2 : tensor<4x8xf32> -> tensor<4x8xi1>
  %me1_sc = llm.select %me1_cov, %me1_sum, %me1_z2 : tensor<4x8xi1>, tensor<4x8xf32>
  %me1_out = llm.add %me0_out, %me1_sc : tensor<4x8xf32>
  %me2_c = arith.constant dense<2> : tensor<4x2xi64>
  %me2_mask = llm.compare eq %idx, %me2_c : tensor<4x2xi64> -> tensor<4x2xi1>
  %me2_nz = llm.nonzero %me2_mask : (tensor<4x2xi1>) -> tensor<2x2xi64>
  %me2_r2 = llm.slice %me2_nz {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<2x2xi64> -> tensor<2x1xi64>
  %me2_s2 = llm.slice %me2_nz {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<2x2xi64> -> tensor<2x1xi64>
  %me2_rows = llm.reshape %me2_r2 : tensor<2x1xi64> -> tensor<2xi64>
  %me2_slots = llm.reshape %me2_s2 : tensor<2x1xi64> -> tensor<2xi64>
  %me2_xr = llm.gather %x, %me2_rows {axis = 0 : i64} : (tensor<4x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %me2_g = llm.weight "e2.gate" : tensor<16x8xf32>
  %me2_u = llm.weight "e2.up" : tensor<16x8xf32>
  %me2_d = llm.weight "e2.down" : tensor<8x16xf32>
  %me2_y = llm.gated_mlp %me2_xr, %me2_g, %me2_u, %me2_d : (tensor<2x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
  %me2_wf = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %me2_mf = llm.convert %me2_rows : tensor<2xi64> -> tensor<2xf32>
  %me2_k = arith.constant dense<2.0> : tensor<2xf32>
  %me2_mk = llm.mul %me2_mf, %me2_k : tensor<2xf32>
  %me2_nf = llm.convert %me2_slots : tensor<2xi64> -> tensor<2xf32>
  %me2_flat = llm.add %me2_nf, %me2_mk : tensor<2xf32>
  %me2_fi = llm.convert %me2_flat : tensor<2xf32> -> tensor<2xi64>
  %me2_wg = llm.gather %me2_wf, %me2_fi {axis = 0 : i64} : (tensor<8x1xf32>, tensor<2xi64>) -> tensor<2x1xf32>
  %me2_wb = llm.broadcast %me2_wg : tensor<2x1xf32> -> tensor<2x8xf32>
  %me2_src = llm.mul %me2_y, %me2_wb : tensor<2x8xf32>
  %me2_ib = llm.broadcast %me2_r2 : tensor<2x1xi64> -> tensor<2x8xi64>
  %me2_iv = llm.reshape %me2_ib : tensor<2x8xi64> -> tensor<1x2x8xi64>
  %me2_iw = llm.broadcast %me2_iv : tensor<1x2x8xi64> -> tensor<4x2x8xi64>
  %me2_iota = arith.constant dense<[[[0]], [[1]], [[2]], [[3]]]> : tensor<4x1x1xi64>
  %me2_iob = llm.broadcast %me2_iota : tensor<4x1x1xi64> -> tensor<4x2x8xi64>
  %me2_hit = llm.compare eq %me2_iw, %me2_iob : tensor<4x2x8xi64> -> tensor<4x2x8xi1>
  %me2_uv = llm.reshape %me2_src : tensor<2x8xf32> -> tensor<1x2x8xf32>
  %me2_ub = llm.broadcast %me2_uv : tensor<1x2x8xf32> -> tensor<4x2x8xf32>
  %me2_z3 = arith.constant dense<0.0> : tensor<4x2x8xf32>
  %me2_sel = llm.select %me2_hit, %me2_ub, %me2_z3 : tensor<4x2x8xi1>, tensor<4x2x8xf32>
  %me2_sum3 = llm.reduce sum %me2_sel {axis = 1 : i64, keep_dim = true} : tensor<4x2x8xf32> -> tensor<4x1x8xf32>
  %me2_sum = llm.reshape %me2_sum3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %me2_o3 = arith.constant dense<1.0> : tensor<4x2x8xf32>
  %me2_cnt = llm.select %me2_hit, %me2_o3, %me2_z3 : tensor<4x2x8xi1>, tensor<4x2x8xf32>
  %me2_cs3 = llm.reduce sum %me2_cnt {axis = 1 : i64, keep_dim = true} : tensor<4x2x8xf32> -> tensor<4x1x8xf32>
  %me2_cs = llm.reshape %me2_cs3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %me2_z2 = arith.constant dense<0.0> : tensor<4x8xf32>
  %me2_cov = llm.compare gt %me2_cs, %me2_z2 : tensor<4x8xf32> -> tensor<4x8xi1>
  %me2_sc = llm.select %me2_cov, %me2_sum, %me2_z2 : tensor<4x8xi1>, tensor<4x8xf32>
  %me2_out = llm.add %me1_out, %me2_sc : tensor<4x8xf32>
  return %me2_out : tensor<4x8xf32>
}

// -----

// The same with no tokens in the trace (nonzero [0, 2]): checked on a copy
// re-typed to 3 tokens, densified.
// CHECK-LABEL: func.func @scatter_none_no_tokens
// CHECK-NOT:  llm.nonzero
// CHECK:      %[[PICK:.*]] = llm.select %{{.*}}, %arg1, %{{.*}} : tensor<4x2xi1>, tensor<4x2xf32>
// CHECK:      llm.gated_mlp %arg0, {{.*}} -> tensor<4x8xf32>
// CHECK:      llm.add %arg3, %{{.*}} : tensor<4x8xf32>
func.func @scatter_none_no_tokens(%x: tensor<4x8xf32>, %w: tensor<4x2xf32>, %idx: tensor<4x2xi64>, %acc: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e0_c = arith.constant dense<0> : tensor<4x2xi64>
  %e0_mask = llm.compare eq %idx, %e0_c : tensor<4x2xi64> -> tensor<4x2xi1>
  %e0_nz = llm.nonzero %e0_mask : (tensor<4x2xi1>) -> tensor<0x2xi64>
  %e0_r2 = llm.slice %e0_nz {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<0x2xi64> -> tensor<0x1xi64>
  %e0_s2 = llm.slice %e0_nz {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<0x2xi64> -> tensor<0x1xi64>
  %e0_rows = llm.reshape %e0_r2 : tensor<0x1xi64> -> tensor<0xi64>
  %e0_slots = llm.reshape %e0_s2 : tensor<0x1xi64> -> tensor<0xi64>
  %e0_xr = llm.gather %x, %e0_rows {axis = 0 : i64} : (tensor<4x8xf32>, tensor<0xi64>) -> tensor<0x8xf32>
  %e0_g = llm.weight "e0.gate" : tensor<16x8xf32>
  %e0_u = llm.weight "e0.up" : tensor<16x8xf32>
  %e0_d = llm.weight "e0.down" : tensor<8x16xf32>
  %e0_y = llm.gated_mlp %e0_xr, %e0_g, %e0_u, %e0_d : (tensor<0x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<0x8xf32>
  %e0_wf = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %e0_mf = llm.convert %e0_rows : tensor<0xi64> -> tensor<0xf32>
  %e0_k = arith.constant dense<2.0> : tensor<0xf32>
  %e0_mk = llm.mul %e0_mf, %e0_k : tensor<0xf32>
  %e0_nf = llm.convert %e0_slots : tensor<0xi64> -> tensor<0xf32>
  %e0_flat = llm.add %e0_nf, %e0_mk : tensor<0xf32>
  %e0_fi = llm.convert %e0_flat : tensor<0xf32> -> tensor<0xi64>
  %e0_wg = llm.gather %e0_wf, %e0_fi {axis = 0 : i64} : (tensor<8x1xf32>, tensor<0xi64>) -> tensor<0x1xf32>
  %e0_wb = llm.broadcast %e0_wg : tensor<0x1xf32> -> tensor<0x8xf32>
  %e0_src = llm.mul %e0_y, %e0_wb : tensor<0x8xf32>
  %e0_ib = llm.broadcast %e0_r2 : tensor<0x1xi64> -> tensor<0x8xi64>
  %e0_iv = llm.reshape %e0_ib : tensor<0x8xi64> -> tensor<1x0x8xi64>
  %e0_iw = llm.broadcast %e0_iv : tensor<1x0x8xi64> -> tensor<4x0x8xi64>
  %e0_iota = arith.constant dense<[[[0]], [[1]], [[2]], [[3]]]> : tensor<4x1x1xi64>
  %e0_iob = llm.broadcast %e0_iota : tensor<4x1x1xi64> -> tensor<4x0x8xi64>
  %e0_hit = llm.compare eq %e0_iw, %e0_iob : tensor<4x0x8xi64> -> tensor<4x0x8xi1>
  %e0_uv = llm.reshape %e0_src : tensor<0x8xf32> -> tensor<1x0x8xf32>
  %e0_ub = llm.broadcast %e0_uv : tensor<1x0x8xf32> -> tensor<4x0x8xf32>
  %e0_z3 = arith.constant dense<0.0> : tensor<4x0x8xf32>
  %e0_sel = llm.select %e0_hit, %e0_ub, %e0_z3 : tensor<4x0x8xi1>, tensor<4x0x8xf32>
  %e0_sum3 = llm.reduce sum %e0_sel {axis = 1 : i64, keep_dim = true} : tensor<4x0x8xf32> -> tensor<4x1x8xf32>
  %e0_sum = llm.reshape %e0_sum3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %e0_o3 = arith.constant dense<1.0> : tensor<4x0x8xf32>
  %e0_cnt = llm.select %e0_hit, %e0_o3, %e0_z3 : tensor<4x0x8xi1>, tensor<4x0x8xf32>
  %e0_cs3 = llm.reduce sum %e0_cnt {axis = 1 : i64, keep_dim = true} : tensor<4x0x8xf32> -> tensor<4x1x8xf32>
  %e0_cs = llm.reshape %e0_cs3 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  %e0_z2 = arith.constant dense<0.0> : tensor<4x8xf32>
  %e0_cov = llm.compare gt %e0_cs, %e0_z2 : tensor<4x8xf32> -> tensor<4x8xi1>
  %e0_sc = llm.select %e0_cov, %e0_sum, %e0_z2 : tensor<4x8xi1>, tensor<4x8xf32>
  %e0_out = llm.add %acc, %e0_sc : tensor<4x8xf32>
  return %e0_out : tensor<4x8xf32>
}

