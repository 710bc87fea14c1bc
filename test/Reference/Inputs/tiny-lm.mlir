// The language-model signature (tokens, offset) -> logits, for
// run-ref-bad-inputs.test: it must not be run with --inputs.
func.func @forward(%ids: tensor<?xi64>, %offset: index) -> tensor<1x4xf32> {
  %t = llm.weight "emb" : tensor<4x4xf32>
  %h = llm.embedding %t, %ids : (tensor<4x4xf32>, tensor<?xi64>) -> tensor<?x4xf32>
  %last = llm.slice %h {axis = 0, start = -1, size = 1} : tensor<?x4xf32> -> tensor<1x4xf32>
  return %last : tensor<1x4xf32>
}
