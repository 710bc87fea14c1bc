// Partial rotary (rope on the first half of each head). Used by
// raise-numerics.test.
func.func @forward(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %emb = arith.constant dense<[[0.0, 0.0, 0.0, 0.0], [1.0, 0.01, 1.0, 0.01], [2.0, 0.02, 2.0, 0.02], [3.0, 0.03, 3.0, 0.03]]> : tensor<4x4xf32>
  %cos = llm.cos %emb : tensor<4x4xf32>
  %sin = llm.sin %emb : tensor<4x4xf32>
  %cosb = llm.broadcast %cos : tensor<4x4xf32> -> tensor<1x2x4x4xf32>
  %sinb = llm.broadcast %sin : tensor<4x4xf32> -> tensor<1x2x4x4xf32>
  %xr = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %xp = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %x1 = llm.slice %xr {axis = 3 : i64, start = 0 : i64, size = 2 : i64} : tensor<1x2x4x4xf32> -> tensor<1x2x4x2xf32>
  %x2 = llm.slice %xr {axis = 3 : i64, start = 2 : i64, size = 2 : i64} : tensor<1x2x4x4xf32> -> tensor<1x2x4x2xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x2xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %qc = llm.mul %xr, %cosb : tensor<1x2x4x4xf32>
  %qs = llm.mul %rot, %sinb : tensor<1x2x4x4xf32>
  %re = llm.add %qc, %qs : tensor<1x2x4x4xf32>
  %out = llm.concat %re, %xp {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  return %out : tensor<1x2x4x8xf32>
}
