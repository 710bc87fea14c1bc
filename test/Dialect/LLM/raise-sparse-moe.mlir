// RUN: pimc-opt %s --split-input-file --llm-raise-moe | FileCheck %s
// Sparse per-expert dispatch as the FX importer lowers HF Mixtral's loop
// (torch.where -> llm.nonzero at the traced count, x[None, rows] -> gather,
// routing_weights[rows, slots] -> linearized gather, index_add_ -> one-hot
// matmul): densified, then raised to llm.moe. The negative cases keep the
// dispatch as it is (llm.nonzero stays).

// Two experts, softmax router, top-2, renormalised: llm.moe.
// CHECK-LABEL: func.func @sparse_dispatch
// CHECK: %[[WR:.*]] = llm.weight "gate.weight"
// CHECK: %[[Y:.*]] = llm.moe %arg0 router %[[WR]] experts gate[%{{.*}}, %{{.*}}] up[{{.*}}] down[{{.*}}] {renormalize = true, top_k = 2 : i64}
// CHECK-NOT: llm.nonzero
// CHECK-NOT: llm.gated_mlp
// CHECK: return %[[Y]]
func.func @sparse_dispatch(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<2x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<4x2xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x2xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x2xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %e0c = arith.constant dense<0> : tensor<4x2xi64>
  %e1c = arith.constant dense<1> : tensor<4x2xi64>
  %m0 = llm.compare eq %idx, %e0c : tensor<4x2xi64> -> tensor<4x2xi1>
  %m1 = llm.compare eq %idx, %e1c : tensor<4x2xi64> -> tensor<4x2xi1>
  %kconst4 = arith.constant dense<2.0> : tensor<4xf32>
  %iota = arith.constant dense<[[0], [1], [2], [3]]> : tensor<4x1xi64>
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %g1 = llm.weight "e.1.w1" : tensor<16x8xf32>
  %u1 = llm.weight "e.1.w3" : tensor<16x8xf32>
  %d1 = llm.weight "e.1.w2" : tensor<8x16xf32>
  %nz0 = llm.nonzero %m0 : (tensor<4x2xi1>) -> tensor<4x2xi64>
  %c0_0 = llm.slice %nz0 {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<4x2xi64> -> tensor<4x1xi64>
  %c1_0 = llm.slice %nz0 {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<4x2xi64> -> tensor<4x1xi64>
  %r0_0 = llm.reshape %c0_0 : tensor<4x1xi64> -> tensor<4xi64>
  %r1_0 = llm.reshape %c1_0 : tensor<4x1xi64> -> tensor<4xi64>
  %x3_0 = llm.reshape %x : tensor<4x8xf32> -> tensor<1x4x8xf32>
  %xg_0 = llm.gather %x3_0, %r0_0 {axis = 1 : i64} : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x8xf32>
  %xr_0 = llm.reshape %xg_0 : tensor<1x4x8xf32> -> tensor<4x8xf32>
  %mlp0 = llm.gated_mlp %xr_0, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %fa_0 = llm.convert %r0_0 : tensor<4xi64> -> tensor<4xf32>
  %fb_0 = llm.convert %r1_0 : tensor<4xi64> -> tensor<4xf32>
  %fs_0 = llm.mul %fa_0, %kconst4 : tensor<4xf32>
  %fl_0 = llm.add %fs_0, %fb_0 : tensor<4xf32>
  %lin_0 = llm.convert %fl_0 : tensor<4xf32> -> tensor<4xi64>
  %wf_0 = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %wg_0 = llm.gather %wf_0, %lin_0 {axis = 0 : i64} : (tensor<8x1xf32>, tensor<4xi64>) -> tensor<4x1xf32>
  %wb_0 = llm.broadcast %wg_0 : tensor<4x1xf32> -> tensor<4x8xf32>
  %src0 = llm.mul %mlp0, %wb_0 : tensor<4x8xf32>
  %hr_0 = llm.reshape %c0_0 : tensor<4x1xi64> -> tensor<1x4xi64>
  %ib_0 = llm.broadcast %iota : tensor<4x1xi64> -> tensor<4x4xi64>
  %hb_0 = llm.broadcast %hr_0 : tensor<1x4xi64> -> tensor<4x4xi64>
  %heq_0 = llm.compare eq %ib_0, %hb_0 : tensor<4x4xi64> -> tensor<4x4xi1>
  %hot0 = llm.convert %heq_0 : tensor<4x4xi1> -> tensor<4x4xf32>
  %sc0 = llm.matmul %hot0, %src0 : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %a0 = llm.add %zero, %sc0 : tensor<4x8xf32>
  %nz1 = llm.nonzero %m1 : (tensor<4x2xi1>) -> tensor<4x2xi64>
  %c0_1 = llm.slice %nz1 {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<4x2xi64> -> tensor<4x1xi64>
  %c1_1 = llm.slice %nz1 {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<4x2xi64> -> tensor<4x1xi64>
  %r0_1 = llm.reshape %c0_1 : tensor<4x1xi64> -> tensor<4xi64>
  %r1_1 = llm.reshape %c1_1 : tensor<4x1xi64> -> tensor<4xi64>
  %x3_1 = llm.reshape %x : tensor<4x8xf32> -> tensor<1x4x8xf32>
  %xg_1 = llm.gather %x3_1, %r0_1 {axis = 1 : i64} : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x8xf32>
  %xr_1 = llm.reshape %xg_1 : tensor<1x4x8xf32> -> tensor<4x8xf32>
  %mlp1 = llm.gated_mlp %xr_1, %g1, %u1, %d1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %fa_1 = llm.convert %r0_1 : tensor<4xi64> -> tensor<4xf32>
  %fb_1 = llm.convert %r1_1 : tensor<4xi64> -> tensor<4xf32>
  %fs_1 = llm.mul %fa_1, %kconst4 : tensor<4xf32>
  %fl_1 = llm.add %fs_1, %fb_1 : tensor<4xf32>
  %lin_1 = llm.convert %fl_1 : tensor<4xf32> -> tensor<4xi64>
  %wf_1 = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %wg_1 = llm.gather %wf_1, %lin_1 {axis = 0 : i64} : (tensor<8x1xf32>, tensor<4xi64>) -> tensor<4x1xf32>
  %wb_1 = llm.broadcast %wg_1 : tensor<4x1xf32> -> tensor<4x8xf32>
  %src1 = llm.mul %mlp1, %wb_1 : tensor<4x8xf32>
  %hr_1 = llm.reshape %c0_1 : tensor<4x1xi64> -> tensor<1x4xi64>
  %ib_1 = llm.broadcast %iota : tensor<4x1xi64> -> tensor<4x4xi64>
  %hb_1 = llm.broadcast %hr_1 : tensor<1x4xi64> -> tensor<4x4xi64>
  %heq_1 = llm.compare eq %ib_1, %hb_1 : tensor<4x4xi64> -> tensor<4x4xi1>
  %hot1 = llm.convert %heq_1 : tensor<4x4xi1> -> tensor<4x4xf32>
  %sc1 = llm.matmul %hot1, %src1 : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = llm.add %a0, %sc1 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Any mask and any weights densify (the rewrite is exact for a row-wise
// expert): gate = sum over slots of (mask ? w : 0), the expert on every
// token. Not a top-k router, so no llm.moe.
// CHECK-LABEL: func.func @densify_any_mask
// CHECK: %[[W:.*]] = llm.reshape %arg1 : tensor<8xf32> -> tensor<4x2xf32>
// CHECK: %[[M:.*]] = llm.compare gt %[[W]]
// CHECK: %[[P:.*]] = llm.select %[[M]], %[[W]], %{{.*}} : tensor<4x2xi1>, tensor<4x2xf32>
// CHECK: %[[G:.*]] = llm.reduce sum %[[P]] {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
// CHECK: %[[E:.*]] = llm.gated_mlp %arg0, {{.*}} -> tensor<4x8xf32>
// CHECK: %[[B:.*]] = llm.broadcast %[[G]] : tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK: %[[T:.*]] = llm.mul %[[B]], %[[E]]
// CHECK: llm.add %{{.*}}, %[[T]]
// CHECK-NOT: llm.nonzero
// CHECK-NOT: llm.matmul
func.func @densify_any_mask(%x: tensor<4x8xf32>, %wt: tensor<8xf32>) -> tensor<4x8xf32> {
  %w = llm.reshape %wt : tensor<8xf32> -> tensor<4x2xf32>
  %th = arith.constant dense<0.0> : tensor<4x2xf32>
  %m0 = llm.compare gt %w, %th : tensor<4x2xf32> -> tensor<4x2xi1>
  %kconst3 = arith.constant dense<2.0> : tensor<3xf32>
  %iota = arith.constant dense<[[0], [1], [2], [3]]> : tensor<4x1xi64>
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %nz0 = llm.nonzero %m0 : (tensor<4x2xi1>) -> tensor<3x2xi64>
  %c0_0 = llm.slice %nz0 {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %c1_0 = llm.slice %nz0 {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<3x2xi64> -> tensor<3x1xi64>
  %r0_0 = llm.reshape %c0_0 : tensor<3x1xi64> -> tensor<3xi64>
  %r1_0 = llm.reshape %c1_0 : tensor<3x1xi64> -> tensor<3xi64>
  %x3_0 = llm.reshape %x : tensor<4x8xf32> -> tensor<1x4x8xf32>
  %xg_0 = llm.gather %x3_0, %r0_0 {axis = 1 : i64} : (tensor<1x4x8xf32>, tensor<3xi64>) -> tensor<1x3x8xf32>
  %xr_0 = llm.reshape %xg_0 : tensor<1x3x8xf32> -> tensor<3x8xf32>
  %mlp0 = llm.gated_mlp %xr_0, %g0, %u0, %d0 : (tensor<3x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<3x8xf32>
  %fa_0 = llm.convert %r0_0 : tensor<3xi64> -> tensor<3xf32>
  %fb_0 = llm.convert %r1_0 : tensor<3xi64> -> tensor<3xf32>
  %fs_0 = llm.mul %fa_0, %kconst3 : tensor<3xf32>
  %fl_0 = llm.add %fs_0, %fb_0 : tensor<3xf32>
  %lin_0 = llm.convert %fl_0 : tensor<3xf32> -> tensor<3xi64>
  %wf_0 = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %wg_0 = llm.gather %wf_0, %lin_0 {axis = 0 : i64} : (tensor<8x1xf32>, tensor<3xi64>) -> tensor<3x1xf32>
  %wb_0 = llm.broadcast %wg_0 : tensor<3x1xf32> -> tensor<3x8xf32>
  %src0 = llm.mul %mlp0, %wb_0 : tensor<3x8xf32>
  %hr_0 = llm.reshape %c0_0 : tensor<3x1xi64> -> tensor<1x3xi64>
  %ib_0 = llm.broadcast %iota : tensor<4x1xi64> -> tensor<4x3xi64>
  %hb_0 = llm.broadcast %hr_0 : tensor<1x3xi64> -> tensor<4x3xi64>
  %heq_0 = llm.compare eq %ib_0, %hb_0 : tensor<4x3xi64> -> tensor<4x3xi1>
  %hot0 = llm.convert %heq_0 : tensor<4x3xi1> -> tensor<4x3xf32>
  %sc0 = llm.matmul %hot0, %src0 : (tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
  %y = llm.add %zero, %sc0 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The weights gathered as w[slots, rows]: not the routing weight of each
// selected (token, slot), must not fire.
// CHECK-LABEL: func.func @weights_by_slot_then_row
// CHECK: llm.nonzero
// CHECK: llm.gated_mlp %{{.*}} : (tensor<4x8xf32>
// CHECK: llm.matmul
// CHECK-NOT: llm.moe
func.func @weights_by_slot_then_row(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<2x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<4x2xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x2xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x2xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %e0c = arith.constant dense<0> : tensor<4x2xi64>
  %e1c = arith.constant dense<1> : tensor<4x2xi64>
  %m0 = llm.compare eq %idx, %e0c : tensor<4x2xi64> -> tensor<4x2xi1>
  %m1 = llm.compare eq %idx, %e1c : tensor<4x2xi64> -> tensor<4x2xi1>
  %kconst4 = arith.constant dense<2.0> : tensor<4xf32>
  %iota = arith.constant dense<[[0], [1], [2], [3]]> : tensor<4x1xi64>
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %nz0 = llm.nonzero %m0 : (tensor<4x2xi1>) -> tensor<4x2xi64>
  %c0_0 = llm.slice %nz0 {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<4x2xi64> -> tensor<4x1xi64>
  %c1_0 = llm.slice %nz0 {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<4x2xi64> -> tensor<4x1xi64>
  %r0_0 = llm.reshape %c0_0 : tensor<4x1xi64> -> tensor<4xi64>
  %r1_0 = llm.reshape %c1_0 : tensor<4x1xi64> -> tensor<4xi64>
  %x3_0 = llm.reshape %x : tensor<4x8xf32> -> tensor<1x4x8xf32>
  %xg_0 = llm.gather %x3_0, %r0_0 {axis = 1 : i64} : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x8xf32>
  %xr_0 = llm.reshape %xg_0 : tensor<1x4x8xf32> -> tensor<4x8xf32>
  %mlp0 = llm.gated_mlp %xr_0, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %fa_0 = llm.convert %r1_0 : tensor<4xi64> -> tensor<4xf32>
  %fb_0 = llm.convert %r0_0 : tensor<4xi64> -> tensor<4xf32>
  %fs_0 = llm.mul %fa_0, %kconst4 : tensor<4xf32>
  %fl_0 = llm.add %fs_0, %fb_0 : tensor<4xf32>
  %lin_0 = llm.convert %fl_0 : tensor<4xf32> -> tensor<4xi64>
  %wf_0 = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %wg_0 = llm.gather %wf_0, %lin_0 {axis = 0 : i64} : (tensor<8x1xf32>, tensor<4xi64>) -> tensor<4x1xf32>
  %wb_0 = llm.broadcast %wg_0 : tensor<4x1xf32> -> tensor<4x8xf32>
  %src0 = llm.mul %mlp0, %wb_0 : tensor<4x8xf32>
  %hr_0 = llm.reshape %c0_0 : tensor<4x1xi64> -> tensor<1x4xi64>
  %ib_0 = llm.broadcast %iota : tensor<4x1xi64> -> tensor<4x4xi64>
  %hb_0 = llm.broadcast %hr_0 : tensor<1x4xi64> -> tensor<4x4xi64>
  %heq_0 = llm.compare eq %ib_0, %hb_0 : tensor<4x4xi64> -> tensor<4x4xi1>
  %hot0 = llm.convert %heq_0 : tensor<4x4xi1> -> tensor<4x4xf32>
  %sc0 = llm.matmul %hot0, %src0 : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = llm.add %zero, %sc0 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// index_add at the slot column instead of the token column.
// CHECK-LABEL: func.func @scatter_by_slot
// CHECK: llm.nonzero
// CHECK: llm.matmul
// CHECK-NOT: llm.moe
func.func @scatter_by_slot(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<2x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<4x2xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x2xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x2xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %e0c = arith.constant dense<0> : tensor<4x2xi64>
  %e1c = arith.constant dense<1> : tensor<4x2xi64>
  %m0 = llm.compare eq %idx, %e0c : tensor<4x2xi64> -> tensor<4x2xi1>
  %m1 = llm.compare eq %idx, %e1c : tensor<4x2xi64> -> tensor<4x2xi1>
  %kconst4 = arith.constant dense<2.0> : tensor<4xf32>
  %iota = arith.constant dense<[[0], [1], [2], [3]]> : tensor<4x1xi64>
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %nz0 = llm.nonzero %m0 : (tensor<4x2xi1>) -> tensor<4x2xi64>
  %c0_0 = llm.slice %nz0 {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<4x2xi64> -> tensor<4x1xi64>
  %c1_0 = llm.slice %nz0 {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<4x2xi64> -> tensor<4x1xi64>
  %r0_0 = llm.reshape %c0_0 : tensor<4x1xi64> -> tensor<4xi64>
  %r1_0 = llm.reshape %c1_0 : tensor<4x1xi64> -> tensor<4xi64>
  %x3_0 = llm.reshape %x : tensor<4x8xf32> -> tensor<1x4x8xf32>
  %xg_0 = llm.gather %x3_0, %r0_0 {axis = 1 : i64} : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x8xf32>
  %xr_0 = llm.reshape %xg_0 : tensor<1x4x8xf32> -> tensor<4x8xf32>
  %mlp0 = llm.gated_mlp %xr_0, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %fa_0 = llm.convert %r0_0 : tensor<4xi64> -> tensor<4xf32>
  %fb_0 = llm.convert %r1_0 : tensor<4xi64> -> tensor<4xf32>
  %fs_0 = llm.mul %fa_0, %kconst4 : tensor<4xf32>
  %fl_0 = llm.add %fs_0, %fb_0 : tensor<4xf32>
  %lin_0 = llm.convert %fl_0 : tensor<4xf32> -> tensor<4xi64>
  %wf_0 = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %wg_0 = llm.gather %wf_0, %lin_0 {axis = 0 : i64} : (tensor<8x1xf32>, tensor<4xi64>) -> tensor<4x1xf32>
  %wb_0 = llm.broadcast %wg_0 : tensor<4x1xf32> -> tensor<4x8xf32>
  %src0 = llm.mul %mlp0, %wb_0 : tensor<4x8xf32>
  %hr_0 = llm.reshape %c1_0 : tensor<4x1xi64> -> tensor<1x4xi64>
  %ib_0 = llm.broadcast %iota : tensor<4x1xi64> -> tensor<4x4xi64>
  %hb_0 = llm.broadcast %hr_0 : tensor<1x4xi64> -> tensor<4x4xi64>
  %heq_0 = llm.compare eq %ib_0, %hb_0 : tensor<4x4xi64> -> tensor<4x4xi1>
  %hot0 = llm.convert %heq_0 : tensor<4x4xi1> -> tensor<4x4xf32>
  %sc0 = llm.matmul %hot0, %src0 : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = llm.add %zero, %sc0 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The expert runs on x[slots], not on the tokens it scatters to.
// CHECK-LABEL: func.func @rows_gathered_by_slot
// CHECK: llm.nonzero
// CHECK: llm.matmul
// CHECK-NOT: llm.select
// CHECK-NOT: llm.moe
func.func @rows_gathered_by_slot(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<2x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<4x2xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x2xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x2xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %e0c = arith.constant dense<0> : tensor<4x2xi64>
  %e1c = arith.constant dense<1> : tensor<4x2xi64>
  %m0 = llm.compare eq %idx, %e0c : tensor<4x2xi64> -> tensor<4x2xi1>
  %m1 = llm.compare eq %idx, %e1c : tensor<4x2xi64> -> tensor<4x2xi1>
  %kconst4 = arith.constant dense<2.0> : tensor<4xf32>
  %iota = arith.constant dense<[[0], [1], [2], [3]]> : tensor<4x1xi64>
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %nz0 = llm.nonzero %m0 : (tensor<4x2xi1>) -> tensor<4x2xi64>
  %c0_0 = llm.slice %nz0 {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<4x2xi64> -> tensor<4x1xi64>
  %c1_0 = llm.slice %nz0 {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<4x2xi64> -> tensor<4x1xi64>
  %r0_0 = llm.reshape %c0_0 : tensor<4x1xi64> -> tensor<4xi64>
  %r1_0 = llm.reshape %c1_0 : tensor<4x1xi64> -> tensor<4xi64>
  %x3_0 = llm.reshape %x : tensor<4x8xf32> -> tensor<1x4x8xf32>
  %xg_0 = llm.gather %x3_0, %r1_0 {axis = 1 : i64} : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x8xf32>
  %xr_0 = llm.reshape %xg_0 : tensor<1x4x8xf32> -> tensor<4x8xf32>
  %mlp0 = llm.gated_mlp %xr_0, %g0, %u0, %d0 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %fa_0 = llm.convert %r0_0 : tensor<4xi64> -> tensor<4xf32>
  %fb_0 = llm.convert %r1_0 : tensor<4xi64> -> tensor<4xf32>
  %fs_0 = llm.mul %fa_0, %kconst4 : tensor<4xf32>
  %fl_0 = llm.add %fs_0, %fb_0 : tensor<4xf32>
  %lin_0 = llm.convert %fl_0 : tensor<4xf32> -> tensor<4xi64>
  %wf_0 = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %wg_0 = llm.gather %wf_0, %lin_0 {axis = 0 : i64} : (tensor<8x1xf32>, tensor<4xi64>) -> tensor<4x1xf32>
  %wb_0 = llm.broadcast %wg_0 : tensor<4x1xf32> -> tensor<4x8xf32>
  %src0 = llm.mul %mlp0, %wb_0 : tensor<4x8xf32>
  %hr_0 = llm.reshape %c0_0 : tensor<4x1xi64> -> tensor<1x4xi64>
  %ib_0 = llm.broadcast %iota : tensor<4x1xi64> -> tensor<4x4xi64>
  %hb_0 = llm.broadcast %hr_0 : tensor<1x4xi64> -> tensor<4x4xi64>
  %heq_0 = llm.compare eq %ib_0, %hb_0 : tensor<4x4xi64> -> tensor<4x4xi1>
  %hot0 = llm.convert %heq_0 : tensor<4x4xi1> -> tensor<4x4xf32>
  %sc0 = llm.matmul %hot0, %src0 : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = llm.add %zero, %sc0 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The expert received no tokens in the trace (nonzero [0, 2]): nothing to
// evaluate, so the pieces are checked on a copy of the subgraph re-typed to
// 3 tokens, and the dispatch densifies (one expert of a two-expert router:
// no llm.moe).
// CHECK-LABEL: func.func @no_tokens
// CHECK: %[[P:.*]] = llm.select
// CHECK: %[[G:.*]] = llm.reduce sum %[[P]] {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
// CHECK: llm.gated_mlp %arg0, {{.*}} -> tensor<4x8xf32>
// CHECK-NOT: llm.nonzero
// CHECK-NOT: llm.matmul
func.func @no_tokens(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<2x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<4x2xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x2xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x2xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %e0c = arith.constant dense<0> : tensor<4x2xi64>
  %e1c = arith.constant dense<1> : tensor<4x2xi64>
  %m0 = llm.compare eq %idx, %e0c : tensor<4x2xi64> -> tensor<4x2xi1>
  %m1 = llm.compare eq %idx, %e1c : tensor<4x2xi64> -> tensor<4x2xi1>
  %kconst0 = arith.constant dense<2.0> : tensor<0xf32>
  %iota = arith.constant dense<[[0], [1], [2], [3]]> : tensor<4x1xi64>
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %nz0 = llm.nonzero %m0 : (tensor<4x2xi1>) -> tensor<0x2xi64>
  %c0_0 = llm.slice %nz0 {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<0x2xi64> -> tensor<0x1xi64>
  %c1_0 = llm.slice %nz0 {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<0x2xi64> -> tensor<0x1xi64>
  %r0_0 = llm.reshape %c0_0 : tensor<0x1xi64> -> tensor<0xi64>
  %r1_0 = llm.reshape %c1_0 : tensor<0x1xi64> -> tensor<0xi64>
  %x3_0 = llm.reshape %x : tensor<4x8xf32> -> tensor<1x4x8xf32>
  %xg_0 = llm.gather %x3_0, %r0_0 {axis = 1 : i64} : (tensor<1x4x8xf32>, tensor<0xi64>) -> tensor<1x0x8xf32>
  %xr_0 = llm.reshape %xg_0 : tensor<1x0x8xf32> -> tensor<0x8xf32>
  %mlp0 = llm.gated_mlp %xr_0, %g0, %u0, %d0 : (tensor<0x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<0x8xf32>
  %fa_0 = llm.convert %r0_0 : tensor<0xi64> -> tensor<0xf32>
  %fb_0 = llm.convert %r1_0 : tensor<0xi64> -> tensor<0xf32>
  %fs_0 = llm.mul %fa_0, %kconst0 : tensor<0xf32>
  %fl_0 = llm.add %fs_0, %fb_0 : tensor<0xf32>
  %lin_0 = llm.convert %fl_0 : tensor<0xf32> -> tensor<0xi64>
  %wf_0 = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %wg_0 = llm.gather %wf_0, %lin_0 {axis = 0 : i64} : (tensor<8x1xf32>, tensor<0xi64>) -> tensor<0x1xf32>
  %wb_0 = llm.broadcast %wg_0 : tensor<0x1xf32> -> tensor<0x8xf32>
  %src0 = llm.mul %mlp0, %wb_0 : tensor<0x8xf32>
  %hr_0 = llm.reshape %c0_0 : tensor<0x1xi64> -> tensor<1x0xi64>
  %ib_0 = llm.broadcast %iota : tensor<4x1xi64> -> tensor<4x0xi64>
  %hb_0 = llm.broadcast %hr_0 : tensor<1x0xi64> -> tensor<4x0xi64>
  %heq_0 = llm.compare eq %ib_0, %hb_0 : tensor<4x0xi64> -> tensor<4x0xi1>
  %hot0 = llm.convert %heq_0 : tensor<4x0xi1> -> tensor<4x0xf32>
  %sc0 = llm.matmul %hot0, %src0 : (tensor<4x0xf32>, tensor<0x8xf32>) -> tensor<4x8xf32>
  %y = llm.add %zero, %sc0 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// No tokens in the trace and the weights gathered as w[slots, rows]: the
// re-typed copy fails the check, the dispatch stays.
// CHECK-LABEL: func.func @no_tokens_weights_swapped
// CHECK: llm.nonzero %{{.*}} -> tensor<0x2xi64>
// CHECK: llm.matmul
// CHECK-NOT: llm.select
func.func @no_tokens_weights_swapped(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wr = llm.weight "gate.weight" : tensor<2x8xf32>
  %logits = llm.linear %x, %wr : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<4x2xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<4x2xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<4x2xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<4x2xf32> -> tensor<4x1xf32>
  %sb = llm.broadcast %s : tensor<4x1xf32> -> tensor<4x2xf32>
  %w = llm.div %vals, %sb : tensor<4x2xf32>
  %e0c = arith.constant dense<0> : tensor<4x2xi64>
  %e1c = arith.constant dense<1> : tensor<4x2xi64>
  %m0 = llm.compare eq %idx, %e0c : tensor<4x2xi64> -> tensor<4x2xi1>
  %m1 = llm.compare eq %idx, %e1c : tensor<4x2xi64> -> tensor<4x2xi1>
  %kconst0 = arith.constant dense<2.0> : tensor<0xf32>
  %iota = arith.constant dense<[[0], [1], [2], [3]]> : tensor<4x1xi64>
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  %g0 = llm.weight "e.0.w1" : tensor<16x8xf32>
  %u0 = llm.weight "e.0.w3" : tensor<16x8xf32>
  %d0 = llm.weight "e.0.w2" : tensor<8x16xf32>
  %nz0 = llm.nonzero %m0 : (tensor<4x2xi1>) -> tensor<0x2xi64>
  %c0_0 = llm.slice %nz0 {axis = 1 : i64, size = 1 : i64, start = 0 : i64} : tensor<0x2xi64> -> tensor<0x1xi64>
  %c1_0 = llm.slice %nz0 {axis = 1 : i64, size = 1 : i64, start = 1 : i64} : tensor<0x2xi64> -> tensor<0x1xi64>
  %r0_0 = llm.reshape %c0_0 : tensor<0x1xi64> -> tensor<0xi64>
  %r1_0 = llm.reshape %c1_0 : tensor<0x1xi64> -> tensor<0xi64>
  %x3_0 = llm.reshape %x : tensor<4x8xf32> -> tensor<1x4x8xf32>
  %xg_0 = llm.gather %x3_0, %r0_0 {axis = 1 : i64} : (tensor<1x4x8xf32>, tensor<0xi64>) -> tensor<1x0x8xf32>
  %xr_0 = llm.reshape %xg_0 : tensor<1x0x8xf32> -> tensor<0x8xf32>
  %mlp0 = llm.gated_mlp %xr_0, %g0, %u0, %d0 : (tensor<0x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<0x8xf32>
  %fa_0 = llm.convert %r1_0 : tensor<0xi64> -> tensor<0xf32>
  %fb_0 = llm.convert %r0_0 : tensor<0xi64> -> tensor<0xf32>
  %fs_0 = llm.mul %fa_0, %kconst0 : tensor<0xf32>
  %fl_0 = llm.add %fs_0, %fb_0 : tensor<0xf32>
  %lin_0 = llm.convert %fl_0 : tensor<0xf32> -> tensor<0xi64>
  %wf_0 = llm.reshape %w : tensor<4x2xf32> -> tensor<8x1xf32>
  %wg_0 = llm.gather %wf_0, %lin_0 {axis = 0 : i64} : (tensor<8x1xf32>, tensor<0xi64>) -> tensor<0x1xf32>
  %wb_0 = llm.broadcast %wg_0 : tensor<0x1xf32> -> tensor<0x8xf32>
  %src0 = llm.mul %mlp0, %wb_0 : tensor<0x8xf32>
  %hr_0 = llm.reshape %c0_0 : tensor<0x1xi64> -> tensor<1x0xi64>
  %ib_0 = llm.broadcast %iota : tensor<4x1xi64> -> tensor<4x0xi64>
  %hb_0 = llm.broadcast %hr_0 : tensor<1x0xi64> -> tensor<4x0xi64>
  %heq_0 = llm.compare eq %ib_0, %hb_0 : tensor<4x0xi64> -> tensor<4x0xi1>
  %hot0 = llm.convert %heq_0 : tensor<4x0xi1> -> tensor<4x0xf32>
  %sc0 = llm.matmul %hot0, %src0 : (tensor<4x0xf32>, tensor<0x8xf32>) -> tensor<4x8xf32>
  %y = llm.add %zero, %sc0 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

