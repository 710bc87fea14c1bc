// Qwen2-MoE-style llm.moe (softmax, top-2, not renormalised, shared expert
// gated by sigmoid(shared_expert_gate x)); run by run-ref-moe.test against
// the HF-style torch loop of make_prims_case.py (case "moe_qwen2").
func.func @forward(%x: tensor<6x16xf32>) -> tensor<6x16xf32> {
  %wr = llm.weight "router" : tensor<4x16xf32>
  %g0 = llm.weight "e0.gate" : tensor<8x16xf32>
  %u0 = llm.weight "e0.up" : tensor<8x16xf32>
  %d0 = llm.weight "e0.down" : tensor<16x8xf32>
  %g1 = llm.weight "e1.gate" : tensor<8x16xf32>
  %u1 = llm.weight "e1.up" : tensor<8x16xf32>
  %d1 = llm.weight "e1.down" : tensor<16x8xf32>
  %g2 = llm.weight "e2.gate" : tensor<8x16xf32>
  %u2 = llm.weight "e2.up" : tensor<8x16xf32>
  %d2 = llm.weight "e2.down" : tensor<16x8xf32>
  %g3 = llm.weight "e3.gate" : tensor<8x16xf32>
  %u3 = llm.weight "e3.up" : tensor<8x16xf32>
  %d3 = llm.weight "e3.down" : tensor<16x8xf32>
  %sg = llm.weight "shared.gate" : tensor<12x16xf32>
  %su = llm.weight "shared.up" : tensor<12x16xf32>
  %sd = llm.weight "shared.down" : tensor<16x12xf32>
  %wg = llm.weight "shared_expert_gate" : tensor<1x16xf32>
  %y = llm.moe %x router %wr experts gate [%g0, %g1, %g2, %g3] up [%u0, %u1, %u2, %u3] down [%d0, %d1, %d2, %d3]
         shared (%sg, %su, %sd) shared_expert_gate %wg {top_k = 2}
         : (tensor<6x16xf32>, tensor<4x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<12x16xf32>, tensor<12x16xf32>, tensor<16x12xf32>, tensor<1x16xf32>) -> tensor<6x16xf32>
  return %y : tensor<6x16xf32>
}
