// llm.moe that stays for the host: four tokens at once (prefill), and one
// token with the routing weight on the expert input (Llama 4).
module attributes {llm.max_context = 16 : i64} {
  func.func @forward(%x: tensor<4x16xf32>, %t: tensor<1x16xf32>) -> (tensor<4x16xf32>, tensor<1x16xf32>) {
    %wr = llm.weight "moe.gate.weight" : tensor<2x16xbf16>
    %g0 = llm.weight "moe.experts.0.w1.weight" : tensor<32x16xbf16>
    %g1 = llm.weight "moe.experts.1.w1.weight" : tensor<32x16xbf16>
    %u0 = llm.weight "moe.experts.0.w3.weight" : tensor<32x16xbf16>
    %u1 = llm.weight "moe.experts.1.w3.weight" : tensor<32x16xbf16>
    %d0 = llm.weight "moe.experts.0.w2.weight" : tensor<16x32xbf16>
    %d1 = llm.weight "moe.experts.1.w2.weight" : tensor<16x32xbf16>
    %y = llm.moe %x router %wr experts gate [%g0, %g1] up [%u0, %u1] down [%d0, %d1]
           {top_k = 1, renormalize = true}
           : (tensor<4x16xf32>, tensor<2x16xbf16>, tensor<32x16xbf16>, tensor<32x16xbf16>, tensor<32x16xbf16>,
              tensor<32x16xbf16>, tensor<16x32xbf16>, tensor<16x32xbf16>) -> tensor<4x16xf32>
    %z = llm.moe %t router %wr experts gate [%g0, %g1] up [%u0, %u1] down [%d0, %d1]
           {top_k = 1, scoring = #llm<moe_scoring sigmoid>, order = #llm<moe_order topk_then_score>, weight_on_input = true}
           : (tensor<1x16xf32>, tensor<2x16xbf16>, tensor<32x16xbf16>, tensor<32x16xbf16>, tensor<32x16xbf16>,
              tensor<32x16xbf16>, tensor<16x32xbf16>, tensor<16x32xbf16>) -> tensor<1x16xf32>
    return %y, %z : tensor<4x16xf32>, tensor<1x16xf32>
  }
}
