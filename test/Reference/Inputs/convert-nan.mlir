func.func @forward(%a: tensor<3xf32>) -> tensor<3xi64> {
  %i = llm.convert %a : tensor<3xf32> -> tensor<3xi64> loc("to_int")
  return %i : tensor<3xi64>
}
