//===- PIMTensorOps.td - the pim dialect's tensor level -----*- tablegen -*-===//
//
// Between the llm dialect and the placed program: the device work that
// convert-llm-to-pim decided, still on tensors inside @forward. Nothing is
// placed yet; pim-build-program tiles, places, schedules and emits these
// ops (with the llm ops left for the host) as a pim.program.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_PIM_TENSOR_OPS
#define PIMC_PIM_TENSOR_OPS

include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def PIM_GemvOp : PIM_Op<"gemv", [Pure, AttrSizedOperandSegments]> {
  let summary = "GEMVs that share one input: weights stacked along N";
  let description = [{
    `results[i] = input W_i^T (+ bias_i)` for the weights W_i [N_i, K] in
    the nn.Linear layout (dense or quantized). The weights are stacked
    along N into one GEMV with one input broadcast (Q/K/V, gate/up).
    `biased[i]` says whether weight i has a bias; `biases` holds those, in
    order. `source` is the llm op the GEMV came from (the report's op),
    `name` the stream name when the role fixes it (`gate_up`, `down`,
    `lm_head`; otherwise pim-build-program names it). A `pim.dispatch` of
    "host" runs it as host ops.
  }];
  let arguments = (ins AnyRankedTensor:$input, Variadic<AnyType>:$weights,
                   Variadic<AnyRankedTensor>:$biases,
                   DenseBoolArrayAttr:$biased, StrAttr:$source,
                   OptionalAttr<StrAttr>:$name);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $input `[` $weights `]` (`bias` `[` $biases^ `]`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def PIM_GatedActOp : PIM_Op<"gated_act", [Pure, SameOperandsAndResultType]> {
  let summary = "act(gate) * up, the gated MLP's activation";
  let description = [{
    `activation` is `silu`, `gelu` (erf) or `gelu_tanh`; f32 arithmetic as
    llm.gated_mlp documents it.
  }];
  let arguments = (ins AnyRankedTensor:$gate, AnyRankedTensor:$up,
                   StrAttr:$activation);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def PIM_AttentionOp : PIM_Op<"attention", [Pure]> {
  let summary = "append one token's key and value to its cache, attend";
  let description = [{
    One decode step of llm.kv_cache_append, llm.kv_cache_read and
    llm.attention: `key` and `value` [1, nkv, hd] are written at the
    current position of `cache` (a @forward argument), then `query`
    [1, nh, hd] attends over the cache with llm.attention's `scale`,
    `causal`, `sliding_window`, `logit_softcap` and `alibi_slopes`. Results: the attention
    output [1, nh, hd] and the updated cache.
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key,
                   AnyRankedTensor:$value, AnyType:$cache, F32Attr:$scale,
                   BoolAttr:$causal, OptionalAttr<PIM_I64>:$sliding_window,
                   OptionalAttr<F32Attr>:$logit_softcap,
                   OptionalAttr<DenseF32ArrayAttr>:$alibi_slopes);
  let results = (outs AnyRankedTensor:$result, AnyType:$new_cache);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $cache attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // PIMC_PIM_TENSOR_OPS
