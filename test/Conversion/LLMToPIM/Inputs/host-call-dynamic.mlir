module attributes {llm.max_context = 16 : i64} {
  func.func @forward(%tok: tensor<?xi64>, %off: index) -> tensor<1x32xf32> {
    %wte = llm.weight "wte" : tensor<32x16xf32>
    %x = llm.embedding %wte, %tok : (tensor<32x16xf32>, tensor<?xi64>) -> tensor<?x16xf32>
    %s = llm.scale %x {factor = 4.0 : f32} : tensor<?x16xf32>
    %last = llm.slice %s {axis = 0, start = -1, size = 1} : tensor<?x16xf32> -> tensor<1x16xf32>
    %l = llm.lm_head %last, %wte : (tensor<1x16xf32>, tensor<32x16xf32>) -> tensor<1x32xf32>
    return %l : tensor<1x32xf32>
  }
}
