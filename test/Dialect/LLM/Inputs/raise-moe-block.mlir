// The dense-formulation Mixtral MoE block as the FX importer lowers it
// (scatter as one-hot compare / max / sum, stack as views + concat, experts
// as nn.Linear mm). Used by raise-numerics.test.
func.func @forward(%x3: tensor<1x5x16xf32>) -> tensor<1x5x16xf32> {
  %x = llm.reshape %x3 : tensor<1x5x16xf32> -> tensor<5x16xf32>
  %wr = llm.weight "moe.gate.weight" : tensor<4x16xf32>
  %logits = llm.linear %x, %wr : (tensor<5x16xf32>, tensor<4x16xf32>) -> tensor<5x4xf32>
  %probs = llm.softmax %logits {axis = 1 : i64} : tensor<5x4xf32>
  %vals, %idx = llm.topk %probs {k = 2 : i64, axis = 1 : i64} : tensor<5x4xf32> -> tensor<5x2xf32>, tensor<5x2xi64>
  %s = llm.reduce sum %vals {axis = 1 : i64, keep_dim = true} : tensor<5x2xf32> -> tensor<5x1xf32>
  %sb = llm.broadcast %s : tensor<5x1xf32> -> tensor<5x2xf32>
  %w = llm.div %vals, %sb : tensor<5x2xf32>
  %idxc = llm.reshape %idx : tensor<5x2xi64> -> tensor<5x2x1xi64>
  %idxb = llm.broadcast %idxc : tensor<5x2x1xi64> -> tensor<5x2x4xi64>
  %range = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %rangeb = llm.broadcast %range : tensor<4xi64> -> tensor<5x2x4xi64>
  %eq = llm.compare eq %idxb, %rangeb : tensor<5x2x4xi64> -> tensor<5x2x4xi1>
  %hot = llm.convert %eq : tensor<5x2x4xi1> -> tensor<5x2x4xf32>
  %hit = llm.reduce max %hot {axis = 1 : i64} : tensor<5x2x4xf32> -> tensor<5x4xf32>
  %zero = arith.constant dense<0.0> : tensor<5x4xf32>
  %mask = llm.compare ne %hit, %zero : tensor<5x4xf32> -> tensor<5x4xi1>
  %wc = llm.reshape %w : tensor<5x2xf32> -> tensor<5x2x1xf32>
  %wb = llm.broadcast %wc : tensor<5x2x1xf32> -> tensor<5x2x4xf32>
  %prod = llm.mul %hot, %wb : tensor<5x2x4xf32>
  %val = llm.reduce sum %prod {axis = 1 : i64} : tensor<5x2x4xf32> -> tensor<5x4xf32>
  %routing = llm.select %mask, %val, %zero : tensor<5x4xi1>, tensor<5x4xf32>
  %g0 = llm.weight "moe.experts.0.w1.weight" : tensor<24x16xf32>
  %u0 = llm.weight "moe.experts.0.w3.weight" : tensor<24x16xf32>
  %d0 = llm.weight "moe.experts.0.w2.weight" : tensor<16x24xf32>
  %gl0 = llm.linear %x, %g0 : (tensor<5x16xf32>, tensor<24x16xf32>) -> tensor<5x24xf32>
  %ga0 = llm.silu %gl0 : tensor<5x24xf32>
  %ul0 = llm.linear %x, %u0 : (tensor<5x16xf32>, tensor<24x16xf32>) -> tensor<5x24xf32>
  %h0 = llm.mul %ga0, %ul0 : tensor<5x24xf32>
  %e0 = llm.linear %h0, %d0 : (tensor<5x24xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  %r0 = llm.reshape %e0 : tensor<5x16xf32> -> tensor<5x1x16xf32>
  %g1 = llm.weight "moe.experts.1.w1.weight" : tensor<24x16xf32>
  %u1 = llm.weight "moe.experts.1.w3.weight" : tensor<24x16xf32>
  %d1 = llm.weight "moe.experts.1.w2.weight" : tensor<16x24xf32>
  %gl1 = llm.linear %x, %g1 : (tensor<5x16xf32>, tensor<24x16xf32>) -> tensor<5x24xf32>
  %ga1 = llm.silu %gl1 : tensor<5x24xf32>
  %ul1 = llm.linear %x, %u1 : (tensor<5x16xf32>, tensor<24x16xf32>) -> tensor<5x24xf32>
  %h1 = llm.mul %ga1, %ul1 : tensor<5x24xf32>
  %e1 = llm.linear %h1, %d1 : (tensor<5x24xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  %r1 = llm.reshape %e1 : tensor<5x16xf32> -> tensor<5x1x16xf32>
  %g2 = llm.weight "moe.experts.2.w1.weight" : tensor<24x16xf32>
  %u2 = llm.weight "moe.experts.2.w3.weight" : tensor<24x16xf32>
  %d2 = llm.weight "moe.experts.2.w2.weight" : tensor<16x24xf32>
  %gl2 = llm.linear %x, %g2 : (tensor<5x16xf32>, tensor<24x16xf32>) -> tensor<5x24xf32>
  %ga2 = llm.silu %gl2 : tensor<5x24xf32>
  %ul2 = llm.linear %x, %u2 : (tensor<5x16xf32>, tensor<24x16xf32>) -> tensor<5x24xf32>
  %h2 = llm.mul %ga2, %ul2 : tensor<5x24xf32>
  %e2 = llm.linear %h2, %d2 : (tensor<5x24xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  %r2 = llm.reshape %e2 : tensor<5x16xf32> -> tensor<5x1x16xf32>
  %g3 = llm.weight "moe.experts.3.w1.weight" : tensor<24x16xf32>
  %u3 = llm.weight "moe.experts.3.w3.weight" : tensor<24x16xf32>
  %d3 = llm.weight "moe.experts.3.w2.weight" : tensor<16x24xf32>
  %gl3 = llm.linear %x, %g3 : (tensor<5x16xf32>, tensor<24x16xf32>) -> tensor<5x24xf32>
  %ga3 = llm.silu %gl3 : tensor<5x24xf32>
  %ul3 = llm.linear %x, %u3 : (tensor<5x16xf32>, tensor<24x16xf32>) -> tensor<5x24xf32>
  %h3 = llm.mul %ga3, %ul3 : tensor<5x24xf32>
  %e3 = llm.linear %h3, %d3 : (tensor<5x24xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>
  %r3 = llm.reshape %e3 : tensor<5x16xf32> -> tensor<5x1x16xf32>
  %stk = llm.concat %r0, %r1, %r2, %r3 {axis = 1 : i64} : (tensor<5x1x16xf32>, tensor<5x1x16xf32>, tensor<5x1x16xf32>, tensor<5x1x16xf32>) -> tensor<5x4x16xf32>
  %rc = llm.reshape %routing : tensor<5x4xf32> -> tensor<5x4x1xf32>
  %rb = llm.broadcast %rc : tensor<5x4x1xf32> -> tensor<5x4x16xf32>
  %m = llm.mul %rb, %stk : tensor<5x4x16xf32>
  %y = llm.reduce sum %m {axis = 1 : i64} : tensor<5x4x16xf32> -> tensor<5x16xf32>
  %y3 = llm.reshape %y : tensor<5x16xf32> -> tensor<1x5x16xf32>
  return %y3 : tensor<1x5x16xf32>
}
