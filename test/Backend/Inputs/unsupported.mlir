module attributes {llm.max_context = 64 : i64} {
  func.func @forward(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
    %0 = llm.transpose %x {permutation = array<i64: 0, 2, 1>} : tensor<1x4x8xf32> -> tensor<1x8x4xf32>
    %1 = llm.softmax %0 {axis = 2 : i64} : tensor<1x8x4xf32>
    %2 = llm.transpose %1 {permutation = array<i64: 0, 2, 1>} : tensor<1x8x4xf32> -> tensor<1x4x8xf32>
    return %2 : tensor<1x4x8xf32>
  }
}
