// A graph of primitive ops as the FX/ONNX importers emit them; run by
// run-ref-graph.test against torch (make_prims_case.py).
func.func @forward(%x: tensor<2x4x8xf32>, %y: tensor<8x6xf32>, %pos: tensor<4xi64>)
    -> (tensor<2x4x6xf32>, tensor<2x4x8xf32>, tensor<2x4x3xf32>, tensor<2x4x3xi64>,
        tensor<4x4xf32>, tensor<4xi64>, tensor<2x4x8xf32>) {
  // Batched matmul with a broadcast rhs, then a broadcast bias add.
  %mm = llm.matmul %x, %y : (tensor<2x4x8xf32>, tensor<8x6xf32>) -> tensor<2x4x6xf32>
  %b = llm.weight "bias" : tensor<6xf32>
  %bb = llm.broadcast %b : tensor<6xf32> -> tensor<2x4x6xf32>
  %out0 = llm.add %mm, %bb : tensor<2x4x6xf32>
  // Layer norm with bf16 weight and f32 bias.
  %lw = llm.weight "ln.weight" : tensor<8xbf16>
  %lb = llm.weight "ln.bias" : tensor<8xf32>
  %ln = llm.layer_norm %x weight %lw bias %lb {epsilon = 1.0e-5 : f32} : (tensor<2x4x8xf32>, tensor<8xbf16>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // Top-3 along the last axis.
  %v, %i = llm.topk %x {k = 3} : tensor<2x4x8xf32> -> tensor<2x4x3xf32>, tensor<2x4x3xi64>
  // A causal mask from positions: mask[q, k] = pos[k] > pos[q] ? -inf : 0.
  %row = llm.broadcast %pos : tensor<4xi64> -> tensor<4x4xi64>
  %pc = llm.reshape %pos : tensor<4xi64> -> tensor<4x1xi64>
  %col = llm.broadcast %pc : tensor<4x1xi64> -> tensor<4x4xi64>
  %future = llm.compare gt %row, %col : tensor<4x4xi64> -> tensor<4x4xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<4x4xf32>
  %zero = arith.constant dense<0.0> : tensor<4x4xf32>
  %mask = llm.select %future, %ninf, %zero : tensor<4x4xi1>, tensor<4x4xf32>
  // cumsum of (pos != 0) as i64, the way HF builds position ids.
  %z = arith.constant dense<0> : tensor<4xi64>
  %nz = llm.compare ne %pos, %z : tensor<4xi64> -> tensor<4xi1>
  %nzi = llm.convert %nz : tensor<4xi1> -> tensor<4xi64>
  %cs = llm.cumsum %nzi {axis = 0} : tensor<4xi64>
  // Unary chain: relu, sqrt, log(1 + .), sin, cos, erf, abs, reciprocal, pow, minimum.
  %r = llm.relu %x : tensor<2x4x8xf32>
  %s = llm.sqrt %r : tensor<2x4x8xf32>
  %one = arith.constant dense<1.0> : tensor<2x4x8xf32>
  %s1 = llm.add %s, %one : tensor<2x4x8xf32>
  %l = llm.log %s1 : tensor<2x4x8xf32>
  %sn = llm.sin %l : tensor<2x4x8xf32>
  %cn = llm.cos %sn : tensor<2x4x8xf32>
  %ef = llm.erf %x : tensor<2x4x8xf32>
  %ab = llm.abs %ef : tensor<2x4x8xf32>
  %ab1 = llm.add %ab, %one : tensor<2x4x8xf32>
  %rc = llm.reciprocal %ab1 : tensor<2x4x8xf32>
  %two = arith.constant dense<2.0> : tensor<2x4x8xf32>
  %pw = llm.pow %cn, %two : tensor<2x4x8xf32>
  %mn = llm.minimum %pw, %rc : tensor<2x4x8xf32>
  return %out0, %ln, %v, %i, %mask, %cs, %mn : tensor<2x4x6xf32>, tensor<2x4x8xf32>, tensor<2x4x3xf32>, tensor<2x4x3xi64>, tensor<4x4xf32>, tensor<4xi64>, tensor<2x4x8xf32>
}
