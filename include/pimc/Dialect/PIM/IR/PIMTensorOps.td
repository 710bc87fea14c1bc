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

    An expert GEMV (MoE, docs/backend.md "MoE on PIM") has `experts`, the
    i32 [k] expert indices a `pim.moe_route` selected, and `expert_slot`
    j < k: its weights are E groups of one expert's weights each
    (expert-major: E x results), and it computes the results of expert
    `experts[j]` alone. The E experts stay resident; only the selected
    one's weights stream. An expert GEMV's biases are stacked by expert,
    [E, N_i] (gpt-oss): it adds row `experts[j]` of each.
  }];
  let arguments = (ins AnyRankedTensor:$input, Variadic<AnyType>:$weights,
                   Variadic<AnyRankedTensor>:$biases,
                   Optional<AnyRankedTensor>:$experts,
                   DenseBoolArrayAttr:$biased, StrAttr:$source,
                   OptionalAttr<StrAttr>:$name,
                   OptionalAttr<PIM_I64>:$expert_slot);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $input `[` $weights `]` (`bias` `[` $biases^ `]`)?
    (`experts` `(` $experts^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Experts the weights hold (1 for a plain GEMV).
    int64_t getNumExperts() {
      return getWeights().size() / getResults().size();
    }
    /// The weights one output set streams: expert 0's for an expert GEMV
    /// (every expert has the same shapes), all of them otherwise.
    mlir::ValueRange getStreamedWeights() {
      return getWeights().take_front(getResults().size());
    }
  }];
}

def PIM_MoERouteOp : PIM_Op<"moe_route", [Pure]> {
  let summary = "one token's MoE routing from its router logits";
  let description = [{
    llm.moe's steps 2-4 on `logits` [1, E] (the router GEMV's output): the
    scores (softmax, or `sigmoid`), the `top_k` largest (of the scores, or
    with `topk_first` of the logits, then their softmax or sigmoid),
    `renormalize`, times `scale`. Results: the selected experts' weights
    f32 [top_k] and their indices i32 [top_k], in ascending expert index
    (ties to the lower index). pim-build-program lowers it to the
    `moe_route` host op, whose kernel sets the device parameters the
    expert GEMVs address their weights by. With `shared_logit` (Qwen2-MoE's
    shared expert gate, [1, 1]) `weights` has one more element,
    sigmoid(shared_logit): the shared expert's weight in the combine.
  }];
  let arguments = (ins AnyRankedTensor:$logits,
                   Optional<AnyRankedTensor>:$shared_logit, PIM_I64:$top_k,
                   BoolAttr:$sigmoid, BoolAttr:$topk_first,
                   BoolAttr:$renormalize, F32Attr:$scale);
  let results = (outs AnyRankedTensor:$weights, AnyRankedTensor:$experts);
  let assemblyFormat = [{
    $logits (`shared` `(` $shared_logit^ `:` type($shared_logit) `)`)?
    attr-dict `:` type($logits) `->` type($weights) `,` type($experts)
  }];
  let hasVerifier = 1;
}

def PIM_MoECombineOp : PIM_Op<"moe_combine", [Pure]> {
  let summary = "the weighted sum of the selected experts' outputs";
  let description = [{
    `result = ((0 + w_0 outs_0) + w_1 outs_1) + ...` in f32, slot order
    (ascending expert index, llm.moe's order), for `weights` f32 [k] from
    `pim.moe_route` and the k expert slots' outputs [1, H]; with a gated
    shared expert, its output last (weight sigmoid(gate), added after the
    routed sum as llm.moe does).
  }];
  let arguments = (ins AnyRankedTensor:$weights,
                   Variadic<AnyRankedTensor>:$outs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $weights `,` `[` $outs `]` attr-dict `:` type($weights) `,` type($outs)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def PIM_GatedActOp : PIM_Op<"gated_act", [Pure, SameOperandsAndResultType]> {
  let summary = "act(gate) * up, the gated MLP's activation";
  let description = [{
    `activation` is `silu`, `gelu` (erf) or `gelu_tanh`; f32 arithmetic as
    llm.gated_mlp documents it. `clamped_swiglu` (gpt-oss's experts, as
    llm.moe documents it) needs `limit` and `alpha`, which no other
    activation takes.
  }];
  let arguments = (ins AnyRankedTensor:$gate, AnyRankedTensor:$up,
                   StrAttr:$activation, OptionalAttr<F32Attr>:$limit,
                   OptionalAttr<F32Attr>:$alpha);
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
    `causal`, `sliding_window`, `logit_softcap`, `alibi_slopes`,
    `chunk_size` and the temperature tuning, and its `sinks` ([nh] logits,
    one per query head) when it has them. Results: the attention output
    [1, nh, hd] and the updated cache.
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key,
                   AnyRankedTensor:$value, AnyType:$cache,
                   Optional<AnyRankedTensor>:$sinks, F32Attr:$scale,
                   BoolAttr:$causal, OptionalAttr<PIM_I64>:$sliding_window,
                   OptionalAttr<F32Attr>:$logit_softcap,
                   OptionalAttr<DenseF32ArrayAttr>:$alibi_slopes,
                   OptionalAttr<PIM_I64>:$chunk_size,
                   OptionalAttr<PIM_I64>:$temperature_floor_scale,
                   OptionalAttr<F32Attr>:$temperature_scale);
  let results = (outs AnyRankedTensor:$result, AnyType:$new_cache);
  let extraClassDeclaration = [{
    /// The slots of a ring cache: the sliding window or the chunk (0: a
    /// linear cache over the whole context).
    int64_t ringKeys() {
      if (auto w = getSlidingWindow())
        return *w;
      return getChunkSize().value_or(0);
    }
  }];
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $cache (`sinks` $sinks^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // PIMC_PIM_TENSOR_OPS
