// Gemma 2 style attention: pre-scaled queries, soft-capped logits, causal
// mask. Used by raise-numerics.test.
func.func @forward(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32> {
  %c = arith.constant dense<0.25> : tensor<1x2x4x16xf32>
  %qs = llm.mul %q, %c : tensor<1x2x4x16xf32>
  %kt = llm.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x4x16xf32> -> tensor<1x2x16x4xf32>
  %s = llm.matmul %qs, %kt : (tensor<1x2x4x16xf32>, tensor<1x2x16x4xf32>) -> tensor<1x2x4x4xf32>
  %cap = arith.constant dense<50.0> : tensor<1x2x4x4xf32>
  %sd = llm.div %s, %cap : tensor<1x2x4x4xf32>
  %t = llm.tanh %sd : tensor<1x2x4x4xf32>
  %sc = llm.mul %t, %cap : tensor<1x2x4x4xf32>
  %mask = arith.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %mb = llm.broadcast %mask : tensor<4x4xf32> -> tensor<1x2x4x4xf32>
  %sm = llm.add %sc, %mb : tensor<1x2x4x4xf32>
  %p = llm.softmax %sm {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = llm.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32>
  return %o : tensor<1x2x4x16xf32>
}
