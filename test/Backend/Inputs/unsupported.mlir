module attributes {llm.max_context = 64 : i64} {
  func.func @forward(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
    %0 = arith.mulf %x, %x : tensor<1x4x8xf32>
    %1 = arith.addf %0, %x : tensor<1x4x8xf32>
    %2 = arith.addf %1, %x : tensor<1x4x8xf32>
    return %2 : tensor<1x4x8xf32>
  }
}
