module attributes {llm.max_context = 16 : i64} {
  func.func @forward(%tok: tensor<1xi64>, %off: index) -> tensor<1x32xf32> {
    %wte = llm.weight "wte" : tensor<32x16xf32>
    %wpe = llm.weight "wpe" : tensor<16x16xf32>
    %g = llm.weight "ln.weight" : tensor<16xf32>
    %b = llm.weight "ln.bias" : tensor<16xf32>
    %x = llm.embedding %wte, %tok : (tensor<32x16xf32>, tensor<1xi64>) -> tensor<1x16xf32>
    %p = llm.positions %off : tensor<1xi64>
    %pe = llm.embedding %wpe, %p : (tensor<16x16xf32>, tensor<1xi64>) -> tensor<1x16xf32>
    %h = llm.add %x, %pe : tensor<1x16xf32>
    %n = llm.layer_norm %h weight %g bias %b {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<1x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16xf32>
    %e = llm.erf %n : tensor<1x16xf32>
    %a = llm.tanh %e : tensor<1x16xf32>
    %l = llm.lm_head %a, %wte : (tensor<1x16xf32>, tensor<32x16xf32>) -> tensor<1x32xf32>
    return %l : tensor<1x32xf32>
  }
}
