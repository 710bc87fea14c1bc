// A graph as the FX / ONNX importers write it (plain tensors in and out),
// made only of ops the PIM lowering knows: it is not a decode step.
func.func @forward(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %y = llm.add %x, %x : tensor<1x8xf32>
  return %y : tensor<1x8xf32>
}
