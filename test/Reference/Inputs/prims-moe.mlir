// Mixtral-style and Llama 4-style llm.moe; run by run-ref-moe.test against
// the HF-style torch loops of make_prims_case.py (case "moe").
func.func @forward(%x: tensor<6x16xf32>) -> (tensor<6x16xf32>, tensor<6x16xf32>) {
  %wr = llm.weight "router" : tensor<4x16xf32>
  %br = llm.weight "router_bias" : tensor<4xf32>
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
  %sg = llm.weight "shared.gate" : tensor<8x16xf32>
  %su = llm.weight "shared.up" : tensor<8x16xf32>
  %sd = llm.weight "shared.down" : tensor<16x8xf32>
  %mix = llm.moe %x router %wr experts gate [%g0, %g1, %g2, %g3] up [%u0, %u1, %u2, %u3] down [%d0, %d1, %d2, %d3]
         {top_k = 2, scoring = #llm<moe_scoring softmax>, order = #llm<moe_order score_then_topk>, renormalize = true}
         : (tensor<6x16xf32>, tensor<4x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<6x16xf32>
  %l4 = llm.moe %x router %wr bias %br experts gate [%g0, %g1, %g2, %g3] up [%u0, %u1, %u2, %u3] down [%d0, %d1, %d2, %d3] shared (%sg, %su, %sd)
         {top_k = 1, scoring = #llm<moe_scoring sigmoid>, order = #llm<moe_order topk_then_score>,
          weight_on_input = true, activation = #llm<activation gelu>}
         : (tensor<6x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<6x16xf32>
  return %mix, %l4 : tensor<6x16xf32>, tensor<6x16xf32>
}
