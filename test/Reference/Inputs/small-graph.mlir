// Two inputs (f32 and i64), a weight, an i1 result: for run-ref-bad-inputs.test.
func.func @forward(%a: tensor<2x3xf32>, %idx: tensor<2xi64>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
  %w = llm.weight "w" : tensor<3xf32>
  %wb = llm.broadcast %w : tensor<3xf32> -> tensor<2x3xf32>
  %g = llm.gather %a, %idx {axis = 0} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %s = llm.mul %g, %wb : tensor<2x3xf32>
  %z = arith.constant dense<0.0> : tensor<2x3xf32>
  %pos = llm.compare gt %s, %z : tensor<2x3xf32> -> tensor<2x3xi1>
  return %s, %pos : tensor<2x3xf32>, tensor<2x3xi1>
}
