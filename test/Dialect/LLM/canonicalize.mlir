// RUN: pimc-opt %s --canonicalize --split-input-file | FileCheck %s

// Pure ops with unused results are erased by --canonicalize, so every value
// under test is returned.

//===----------------------------------------------------------------------===//
// llm.reshape
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reshape_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: llm.reshape
// CHECK: return %[[X]] : tensor<4x8xf32>
func.func @reshape_same_type(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = llm.reshape %x : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// With one dynamic dimension and equal static dimensions the shape is the
// same at run time too.
// CHECK-LABEL: func.func @reshape_same_dynamic_type
// CHECK-SAME: (%[[X:.*]]: tensor<?x256xf32>)
// CHECK-NOT: llm.reshape
// CHECK: return %[[X]] : tensor<?x256xf32>
func.func @reshape_same_dynamic_type(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %r = llm.reshape %x : tensor<?x256xf32> -> tensor<?x256xf32>
  return %r : tensor<?x256xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_real
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[R:.*]] = llm.reshape %[[X]] : tensor<4x8xf32> -> tensor<32xf32>
// CHECK: return %[[R]]
func.func @reshape_real(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %r = llm.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  return %r : tensor<32xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_chain_static
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[R:.*]] = llm.reshape %[[X]] : tensor<4x8xf32> -> tensor<2x16xf32>
// CHECK-NEXT: return %[[R]] : tensor<2x16xf32>
func.func @reshape_chain_static(%x: tensor<4x8xf32>) -> tensor<2x16xf32> {
  %a = llm.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  %b = llm.reshape %a : tensor<32xf32> -> tensor<2x16xf32>
  return %b : tensor<2x16xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_chain_dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x256xf32>)
// CHECK-NEXT: %[[R:.*]] = llm.reshape %[[X]] : tensor<?x256xf32> -> tensor<?x4x64xf32>
// CHECK-NEXT: return %[[R]] : tensor<?x4x64xf32>
func.func @reshape_chain_dynamic(%x: tensor<?x256xf32>) -> tensor<?x4x64xf32> {
  %a = llm.reshape %x : tensor<?x256xf32> -> tensor<?x8x32xf32>
  %b = llm.reshape %a : tensor<?x8x32xf32> -> tensor<?x4x64xf32>
  return %b : tensor<?x4x64xf32>
}

// -----

// Three reshapes collapse to one.
// CHECK-LABEL: func.func @reshape_chain_three
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = llm.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<4x6xf32>
// CHECK-NEXT: return %[[R]] : tensor<4x6xf32>
func.func @reshape_chain_three(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %a = llm.reshape %x : tensor<2x3x4xf32> -> tensor<24xf32>
  %b = llm.reshape %a : tensor<24xf32> -> tensor<6x4xf32>
  %c = llm.reshape %b : tensor<6x4xf32> -> tensor<4x6xf32>
  return %c : tensor<4x6xf32>
}

// -----

// A chain back to the input type becomes a same-type reshape, which folds.
// CHECK-LABEL: func.func @reshape_chain_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<?x256xf32>)
// CHECK-NOT: llm.reshape
// CHECK: return %[[X]] : tensor<?x256xf32>
func.func @reshape_chain_round_trip(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %a = llm.reshape %x : tensor<?x256xf32> -> tensor<?x8x32xf32>
  %b = llm.reshape %a : tensor<?x8x32xf32> -> tensor<?x256xf32>
  return %b : tensor<?x256xf32>
}

// -----

// The intermediate value has another use, so it stays; the outer reshape
// still reads the original input.
// CHECK-LABEL: func.func @reshape_chain_shared
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-DAG: %[[A:.*]] = llm.reshape %[[X]] : tensor<4x8xf32> -> tensor<32xf32>
// CHECK-DAG: %[[B:.*]] = llm.reshape %[[X]] : tensor<4x8xf32> -> tensor<2x16xf32>
// CHECK: return %[[A]], %[[B]]
func.func @reshape_chain_shared(%x: tensor<4x8xf32>) -> (tensor<32xf32>, tensor<2x16xf32>) {
  %a = llm.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  %b = llm.reshape %a : tensor<32xf32> -> tensor<2x16xf32>
  return %a, %b : tensor<32xf32>, tensor<2x16xf32>
}

// -----

// The producer is not a reshape: nothing to combine.
// CHECK-LABEL: func.func @reshape_of_other_op
// CHECK: %[[T:.*]] = llm.transpose
// CHECK: %[[R:.*]] = llm.reshape %[[T]] : tensor<8x4xf32> -> tensor<32xf32>
// CHECK: return %[[R]]
func.func @reshape_of_other_op(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %t = llm.transpose %x {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %r = llm.reshape %t : tensor<8x4xf32> -> tensor<32xf32>
  return %r : tensor<32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.transpose
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NOT: llm.transpose
// CHECK: return %[[X]] : tensor<2x3x4xf32>
func.func @transpose_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %r = llm.transpose %x {permutation = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}

// -----

// An identity permutation that refines the type is not a no-op on types.
// CHECK-LABEL: func.func @transpose_identity_refines_type
// CHECK: %[[R:.*]] = llm.transpose %{{.*}} {permutation = array<i64: 0, 1>} : tensor<?x8xf32> -> tensor<4x8xf32>
// CHECK: return %[[R]]
func.func @transpose_identity_refines_type(%x: tensor<?x8xf32>) -> tensor<4x8xf32> {
  %r = llm.transpose %x {permutation = array<i64: 0, 1>} : tensor<?x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_real
// CHECK: %[[R:.*]] = llm.transpose %{{.*}} {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK: return %[[R]]
func.func @transpose_real(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %r = llm.transpose %x {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// [1, 2, 0] twice is [2, 0, 1]: result dimension i is input dimension
// p1[p2[i]].
// CHECK-LABEL: func.func @transpose_compose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = llm.transpose %[[X]] {permutation = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[R]] : tensor<4x2x3xf32>
func.func @transpose_compose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %a = llm.transpose %x {permutation = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %b = llm.transpose %a {permutation = array<i64: 1, 2, 0>} : tensor<3x4x2xf32> -> tensor<4x2x3xf32>
  return %b : tensor<4x2x3xf32>
}

// -----

// A non-commuting pair: [1, 0, 2] then [0, 2, 1] is [1, 2, 0], not [2, 0, 1].
// CHECK-LABEL: func.func @transpose_compose_order
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = llm.transpose %[[X]] {permutation = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
// CHECK-NEXT: return %[[R]] : tensor<3x4x2xf32>
func.func @transpose_compose_order(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %a = llm.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %b = llm.transpose %a {permutation = array<i64: 0, 2, 1>} : tensor<3x2x4xf32> -> tensor<3x4x2xf32>
  return %b : tensor<3x4x2xf32>
}

// -----

// Two swaps compose to the identity, which then folds away.
// CHECK-LABEL: func.func @transpose_compose_to_identity
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: llm.transpose
// CHECK: return %[[X]] : tensor<4x8xf32>
func.func @transpose_compose_to_identity(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = llm.transpose %x {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %b = llm.transpose %a {permutation = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// The attention head shuffle [T, H, D] -> [H, T, D] and back.
// CHECK-LABEL: func.func @transpose_heads_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<?x8x32xf32>)
// CHECK-NOT: llm.transpose
// CHECK: return %[[X]] : tensor<?x8x32xf32>
func.func @transpose_heads_round_trip(%x: tensor<?x8x32xf32>) -> tensor<?x8x32xf32> {
  %a = llm.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<?x8x32xf32> -> tensor<8x?x32xf32>
  %b = llm.transpose %a {permutation = array<i64: 1, 0, 2>} : tensor<8x?x32xf32> -> tensor<?x8x32xf32>
  return %b : tensor<?x8x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.concat
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @concat_single
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: llm.concat
// CHECK: return %[[X]] : tensor<4x8xf32>
func.func @concat_single(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = llm.concat %x {axis = 0} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// A single input whose type differs from the result type cannot simply be
// forwarded.
// CHECK-LABEL: func.func @concat_single_refines_type
// CHECK: %[[R:.*]] = llm.concat %{{.*}} {axis = 0 : i64} : (tensor<?x8xf32>) -> tensor<4x8xf32>
// CHECK: return %[[R]]
func.func @concat_single_refines_type(%x: tensor<?x8xf32>) -> tensor<4x8xf32> {
  %r = llm.concat %x {axis = 0} : (tensor<?x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @concat_two
// CHECK: %[[R:.*]] = llm.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
// CHECK: return %[[R]]
func.func @concat_two(%x: tensor<4x8xf32>) -> tensor<8x8xf32> {
  %r = llm.concat %x, %x {axis = 0} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.slice
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @slice_full
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: llm.slice
// CHECK: return %[[X]] : tensor<4x8xf32>
func.func @slice_full(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = llm.slice %x {axis = 1, start = 0, size = 8} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// start = -size counted from the end is the whole dimension too.
// CHECK-LABEL: func.func @slice_full_from_end
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: llm.slice
// CHECK: return %[[X]] : tensor<4x8xf32>
func.func @slice_full_from_end(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = llm.slice %x {axis = 0, start = -4, size = 4} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @slice_partial
// CHECK: %[[R:.*]] = llm.slice %{{.*}} {axis = 1 : i64, size = 4 : i64, start = 2 : i64} : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK: return %[[R]]
func.func @slice_partial(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %r = llm.slice %x {axis = 1, start = 2, size = 4} : tensor<4x8xf32> -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

// The last position of a dynamic sequence: the size of the dimension is
// unknown, so this is not known to be the whole tensor.
// CHECK-LABEL: func.func @slice_last_dynamic
// CHECK: %[[R:.*]] = llm.slice %{{.*}} {axis = 0 : i64, size = 1 : i64, start = -1 : i64} : tensor<?x8xf32> -> tensor<1x8xf32>
// CHECK: return %[[R]]
func.func @slice_last_dynamic(%x: tensor<?x8xf32>) -> tensor<1x8xf32> {
  %r = llm.slice %x {axis = 0, start = -1, size = 1} : tensor<?x8xf32> -> tensor<1x8xf32>
  return %r : tensor<1x8xf32>
}

// -----

// Covers the whole slice axis, but refines a dynamic dimension elsewhere:
// the result type differs from the input type.
// CHECK-LABEL: func.func @slice_full_refines_type
// CHECK: %[[R:.*]] = llm.slice %{{.*}} : tensor<?x8xf32> -> tensor<4x8xf32>
// CHECK: return %[[R]]
func.func @slice_full_refines_type(%x: tensor<?x8xf32>) -> tensor<4x8xf32> {
  %r = llm.slice %x {axis = 1, start = 0, size = 8} : tensor<?x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.scale
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @scale_by_one
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: llm.scale
// CHECK: return %[[X]] : tensor<4x8xf32>
func.func @scale_by_one(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = llm.scale %x {factor = 1.0 : f32} : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @scale_by_two
// CHECK: %[[R:.*]] = llm.scale %{{.*}} {factor = 2.000000e+00 : f32} : tensor<4x8xf32>
// CHECK: return %[[R]]
func.func @scale_by_two(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = llm.scale %x {factor = 2.0 : f32} : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// -1 is not the identity either.
// CHECK-LABEL: func.func @scale_by_minus_one
// CHECK: %[[R:.*]] = llm.scale %{{.*}} {factor = -1.000000e+00 : f32} : tensor<4x8xf32>
// CHECK: return %[[R]]
func.func @scale_by_minus_one(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = llm.scale %x {factor = -1.0 : f32} : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.cast
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @cast_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: llm.cast
// CHECK: return %[[X]] : tensor<4x8xf32>
func.func @cast_same_type(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = llm.cast %x : tensor<4x8xf32> to tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @cast_to_bf16
// CHECK: %[[R:.*]] = llm.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: return %[[R]]
func.func @cast_to_bf16(%x: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  %r = llm.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  return %r : tensor<4x8xbf16>
}

// -----

// f32 -> bf16 -> f32 rounds: the pair is not the identity and must stay.
// CHECK-LABEL: func.func @cast_round_trip_rounds
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[A:.*]] = llm.cast %[[X]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT: %[[B:.*]] = llm.cast %[[A]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT: return %[[B]] : tensor<4x8xf32>
func.func @cast_round_trip_rounds(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = llm.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  %b = llm.cast %a : tensor<4x8xbf16> to tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// ?x6 -> ?x2 -> ?x4 folds into one reshape; the element count is checked at
// run time.
// CHECK-LABEL: func.func @reshape_chain_dynamic_uneven
// CHECK-NEXT: %[[R:.*]] = llm.reshape %arg0 : tensor<?x6xf32> -> tensor<?x4xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_chain_dynamic_uneven(%x: tensor<?x6xf32>) -> tensor<?x4xf32> {
  %0 = llm.reshape %x : tensor<?x6xf32> -> tensor<?x2xf32>
  %1 = llm.reshape %0 : tensor<?x2xf32> -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// llm.broadcast, llm.convert
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @broadcast_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xi64>)
// CHECK-NOT: llm.broadcast
// CHECK: return %[[X]] : tensor<4x8xi64>
func.func @broadcast_same_type(%x: tensor<4x8xi64>) -> tensor<4x8xi64> {
  %r = llm.broadcast %x : tensor<4x8xi64> -> tensor<4x8xi64>
  return %r : tensor<4x8xi64>
}

// -----

// CHECK-LABEL: func.func @broadcast_expands
// CHECK: llm.broadcast %{{.*}} : tensor<1x8xf32> -> tensor<4x8xf32>
func.func @broadcast_expands(%x: tensor<1x8xf32>) -> tensor<4x8xf32> {
  %r = llm.broadcast %x : tensor<1x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @convert_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<4xi1>)
// CHECK-NOT: llm.convert
// CHECK: return %[[X]] : tensor<4xi1>
func.func @convert_same_type(%x: tensor<4xi1>) -> tensor<4xi1> {
  %r = llm.convert %x : tensor<4xi1> -> tensor<4xi1>
  return %r : tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @convert_changes_type
// CHECK: llm.convert %{{.*}} : tensor<4xi1> -> tensor<4xf32>
func.func @convert_changes_type(%x: tensor<4xi1>) -> tensor<4xf32> {
  %r = llm.convert %x : tensor<4xi1> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_chain
// CHECK-SAME: (%[[X:.*]]: tensor<1x4xi64>)
// CHECK-NEXT: %[[B:.*]] = llm.broadcast %[[X]] : tensor<1x4xi64> -> tensor<2x3x4xi64>
// CHECK-NEXT: return %[[B]]
func.func @broadcast_chain(%x: tensor<1x4xi64>) -> tensor<2x3x4xi64> {
  %a = llm.broadcast %x : tensor<1x4xi64> -> tensor<3x4xi64>
  %b = llm.broadcast %a : tensor<3x4xi64> -> tensor<2x3x4xi64>
  return %b : tensor<2x3x4xi64>
}
