//===- LLMOps.td - llm dialect operations --------------------*- tablegen -*-===//
#ifndef PIMC_LLM_OPS
#define PIMC_LLM_OPS

include "pimc/Dialect/LLM/IR/LLMBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def LLM_Activations : TensorOf<[F32]>;
def LLM_FloatWeight : RankedTensorOf<[F32, F16, BF16]>;
def LLM_Weight : AnyTypeOf<[LLM_FloatWeight, LLM_QuantizedWeightType]>;
def LLM_TokenIds : RankedTensorOf<[I32, I64]>;
// Tensors that only move or compare data: f32 activations, i64 integers, i1
// booleans (the graph frontends' index and mask tensors), and f16/bf16
// weights on their way to an op that widens them.
def LLM_AnyTensor : RankedTensorOf<[F32, F16, BF16, I64, I1]>;
// Operands that an op widens exactly to f32 before computing.
def LLM_WidenedFloat : RankedTensorOf<[F32, F16, BF16]>;

// A signless i64 attribute read as int64_t (MLIR's I64Attr reads uint64_t,
// which would turn negative axes, starts and sizes into huge numbers).
def LLM_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t",
                                               "64-bit signless integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

def LLM_WeightOp : LLM_Op<"weight", [Pure]> {
  let summary = "a checkpoint tensor, referred to by name";
  let description = [{
    Produces the checkpoint tensor `name` without copying its data into the
    IR. For a dense weight the result type states the stored shape and
    element type (f32, f16, bf16); for a quantized weight it is a
    `!llm.qweight` whose `packing` says which checkpoint tensors make it up
    (for "gptq": `<name>.qweight`, `<name>.qzeros`, `<name>.scales`).
    Integer (i64, stored I64) and boolean (i1, stored BOOL) tensors are
    allowed for graph buffers and initializers. The shape must be static.

    Example:
    ```mlir
    %w = llm.weight "model.layers.0.self_attn.q_proj.weight" : tensor<4096x4096xbf16>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs AnyTypeOf<[LLM_Weight, RankedTensorOf<[I64, I1]>]>:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Model layers
//===----------------------------------------------------------------------===//

def LLM_EmbeddingOp : LLM_Op<"embedding", [Pure]> {
  let summary = "token embedding lookup";
  let description = [{
    `result[t, :] = table[ids[t], :]`, widened exactly to f32. `table` is
    [vocab, hidden]; `ids` is [T]. An id outside [0, vocab) is a runtime
    error naming the id.
  }];
  let arguments = (ins LLM_FloatWeight:$table, LLM_TokenIds:$ids);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$table `,` $ids attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_PositionsOp : LLM_Op<"positions", [Pure]> {
  let summary = "the positions of a step's tokens";
  let description = [{
    `result[t] = offset + t` for t in [0, T): the absolute positions of the
    T tokens a step processes, for learned position embeddings (GPT-2) and
    position-dependent masks. T is the result's static size, or `count`
    when the result is dynamic (the step's token count, as the Hugging Face
    importer's prefill-or-decode forward has it). llm-synthesize-decode
    writes it where a graph traced at positions 0..T-1 had the constant
    `arange(T)`.

    Example:
    ```mlir
    %p = llm.positions %offset : tensor<1xi64>
    %q = llm.positions %offset, %count : tensor<?xi64>
    ```
  }];
  let arguments = (ins Index:$offset, Optional<Index>:$count);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = "$offset (`,` $count^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def LLM_LinearOp : LLM_Op<"linear", [Pure]> {
  let summary = "y = x W^T (+ b) with a dense or quantized weight";
  let description = [{
    `result[..., n] = sum_k input[..., k] * W[n, k] + bias[n]`. W is [N, K]
    (the Hugging Face / PyTorch nn.Linear layout), dense (f32/f16/bf16,
    widened exactly) or `!llm.qweight` (dequantized per its type). Products
    and the sum are f32; the summation order is unspecified.

    Example:
    ```mlir
    %y = llm.linear %x, %w : (tensor<?x256xf32>, tensor<512x256xbf16>) -> tensor<?x512xf32>
    %z = llm.linear %x, %w, %b : (tensor<?x256xf32>, tensor<512x256xbf16>, tensor<512xbf16>) -> tensor<?x512xf32>
    ```
  }];
  let arguments = (ins LLM_Activations:$input, LLM_Weight:$weight,
                       Optional<LLM_FloatWeight>:$bias);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_LMHeadOp : LLM_Op<"lm_head", [Pure]> {
  let summary = "final projection to vocabulary logits";
  let description = [{
    `logits[t, v] = sum_k input[t, k] * W[v, k]`, f32 accumulation, result
    always f32. W is [vocab, hidden]; with tied embeddings it is the
    embedding table. Kept apart from `llm.linear` so backends can treat the
    (large, once per token) vocabulary projection specially.
  }];
  let arguments = (ins LLM_Activations:$input, LLM_Weight:$weight);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_RMSNormOp : LLM_Op<"rms_norm", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMS normalisation over the last dimension";
  let description = [{
    Over the last dimension (size n) of `input`:
    `r = rsqrt(mean(x^2) + eps)` in f32; `llama` style: `y = w * (x * r)`;
    `gemma` style: `y = (x * r) * (1 + w)`. `weight` is [n]. Used for layer
    norms and for per-head QK norms (input [T, heads, head_dim]). Without a
    weight (Llama 4's L2 QK norm, llama style only) `y = x * r`.
  }];
  let arguments = (ins LLM_Activations:$input,
                       Optional<LLM_FloatWeight>:$weight,
                       F32Attr:$epsilon,
                       DefaultValuedAttr<LLM_NormStyleAttr, "NormStyle::Llama">:$style);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input (`,` $weight^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_RopeOp : LLM_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding";
  let description = [{
    Rotates `input` [T, heads, head_dim]; token t has position `offset + t`.
    The first `rotary_dim` dims rotate, the rest pass through (partial
    rotary). Pairs: `half_split` (j, j + d/2; HF/NeoX) or `interleaved`
    (2j, 2j+1; Meta/GPT-J). Inverse frequencies follow
    specs/llm-architectures.md section 3, computed in f32 as Hugging Face
    does: `default` b^(-2i/d); `linear` divides by `factor`; `dynamic` (NTK)
    rescales the base once offset + T exceeds `max_position_embeddings`;
    `yarn` blends interpolation and extrapolation between beta_fast and
    beta_slow and multiplies cos and sin by the attention factor; `llama3`
    divides low frequencies by `factor` with a smooth band between
    `low_freq_factor` and `high_freq_factor`; `longrope` (Phi-3) divides
    each frequency by its `short_factor`, or by its `long_factor` once
    offset + T exceeds `original_max_position_embeddings`, and multiplies
    cos and sin by `attention_factor` (default sqrt(1 + ln(factor) /
    ln(original_max_position_embeddings)), 1 when factor <= 1). Angles
    `p * inv_freq`, cos and sin in f32.

    Which attributes each kind needs: `linear`: factor; `dynamic`: factor,
    max_position_embeddings; `yarn`: factor, original_max_position_embeddings
    (beta_fast, beta_slow, attention_factor, mscale, mscale_all_dim,
    truncate optional); `llama3`: factor, low_freq_factor,
    high_freq_factor, original_max_position_embeddings; `longrope`: factor,
    original_max_position_embeddings, short_factor and long_factor
    (rotary_dim / 2 values each; attention_factor optional).
  }];
  let arguments = (ins LLM_Activations:$input, Index:$offset,
                       LLM_RopeKindAttr:$kind, LLM_RopeLayoutAttr:$layout,
                       F64Attr:$theta, LLM_I64Attr:$rotary_dim,
                       OptionalAttr<F64Attr>:$factor,
                       OptionalAttr<LLM_I64Attr>:$original_max_position_embeddings,
                       OptionalAttr<LLM_I64Attr>:$max_position_embeddings,
                       OptionalAttr<F64Attr>:$low_freq_factor,
                       OptionalAttr<F64Attr>:$high_freq_factor,
                       OptionalAttr<F64Attr>:$beta_fast,
                       OptionalAttr<F64Attr>:$beta_slow,
                       OptionalAttr<F64Attr>:$attention_factor,
                       OptionalAttr<F64Attr>:$mscale,
                       OptionalAttr<F64Attr>:$mscale_all_dim,
                       OptionalAttr<BoolAttr>:$truncate,
                       OptionalAttr<DenseF64ArrayAttr>:$short_factor,
                       OptionalAttr<DenseF64ArrayAttr>:$long_factor);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input `,` $offset attr-dict `:` type($input)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The attributes the op's kind requires are present.
    ::mlir::LogicalResult verifyRopeAttributesPresent();
  }];
}

def LLM_AttentionOp : LLM_Op<"attention", [Pure]> {
  let summary = "scaled dot-product attention (MHA, GQA, MQA)";
  let description = [{
    `query` [T, nh, hd], `key` [S, nkv, hd], `value` [S, nkv, hdv],
    result [T, nh, hdv]; nh must be a multiple of nkv and query head h reads
    kv head `h / (nh / nkv)` (MHA: nkv = nh; MQA: nkv = 1). Query t sits at
    position `S - T + t`, i.e. the queries are the last T positions of the
    key sequence (prefill: S = T; decode: T = 1). Scores
    `q . k * scale` in f32; with `logit_softcap` c, `c * tanh(s / c)`
    before masking; `causal` hides keys after the query; `sliding_window` W
    also hides keys at or before `pos - W` (the last W keys, self included,
    stay visible). Softmax in f32 with max subtraction; the weighted sum of
    values in f32.

    `alibi_slopes` (ALiBi, Falcon-RW / BLOOM): one slope m_h per query
    head. Query head h's score of the key at absolute position s is
    `(q . k + bf16(m_h * bf16(s))) * scale`: the bias is added before the
    scale, computed in bfloat16 (round to nearest even) as transformers'
    build_alibi_tensor makes it (bf16 slopes times the integer positions:
    the position becomes bf16, exact up to 256, and so does the product). The slopes are those bf16 values (the importer
    computes them as transformers does). s is the absolute key index; a
    bias relative to the query (m_h * (s - pos)) gives the same softmax
    (shift invariance) but not the same bf16 rounding, so the absolute
    form is the definition. Softcap, when both are set, applies to the
    biased, scaled score.

    `sinks` (gpt-oss's learned attention sinks, [nh], one logit per query
    head, widened to f32): the softmax of query head h runs over its
    visible scores and the sink logit z_h, and the sink's column is dropped
    after it: `P[s] = exp(S_s - m) / (exp(z_h - m) + sum_s' exp(S_s' - m))`
    with m the maximum of the visible scores and z_h. The weights need not
    sum to 1; the sink takes the rest. The sink is not scaled, capped or
    biased, and it is visible to every query whatever the mask.

    `chunk_size` C (Llama 4's chunked attention): a query at position p
    sees only the keys of its own chunk, s with s / C == p / C (and s <= p
    when causal), as transformers' chunked mask.

    Temperature tuning (Llama 4's NoPE layers; `temperature_floor_scale` F
    and `temperature_scale` a, both or neither): the query at position p is
    multiplied by `log1p(floor((p + 1) / F)) * a + 1` (f32) before the dot
    products.
  }];
  let arguments = (ins LLM_Activations:$query, LLM_Activations:$key,
                       LLM_Activations:$value,
                       Optional<LLM_WidenedFloat>:$sinks,
                       F32Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "true">:$causal,
                       OptionalAttr<LLM_I64Attr>:$sliding_window,
                       OptionalAttr<F32Attr>:$logit_softcap,
                       OptionalAttr<DenseF32ArrayAttr>:$alibi_slopes,
                       OptionalAttr<LLM_I64Attr>:$chunk_size,
                       OptionalAttr<LLM_I64Attr>:$temperature_floor_scale,
                       OptionalAttr<F32Attr>:$temperature_scale);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`sinks` $sinks^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_KVCacheAppendOp : LLM_Op<"kv_cache_append", [Pure, AllTypesMatch<["cache", "result"]>]> {
  let summary = "write new keys and values into a KV cache";
  let description = [{
    Stores `key` and `value` [T, kv_heads, head_dim] at positions
    [offset, offset + T) and returns the updated cache. Writing past
    `max_length` is a runtime error. The input cache value must not be used
    again (linear use), so the update may happen in place.

    A latent cache (`value_prefix` V) stores the key only; `value` is
    [T, kv_heads, V] and must equal the key's first V dims (MLA: the key
    is llm.concat(c_KV, k_rope), the value c_KV). The interpreter checks
    it at run time; a lowering that stores only the key proves it from the
    IR or refuses.
  }];
  let arguments = (ins LLM_KVCacheType:$cache, LLM_Activations:$key,
                       LLM_Activations:$value, Index:$offset);
  let results = (outs LLM_KVCacheType:$result);
  let assemblyFormat = "$cache `,` $key `,` $value `,` $offset attr-dict `:` type($cache) `,` type($key) `,` type($value)";
  let hasVerifier = 1;
}

def LLM_KVCacheReadOp : LLM_Op<"kv_cache_read", [Pure]> {
  let summary = "read the first `length` positions of a KV cache";
  let description = [{
    Returns keys and values [length, kv_heads, head_dim] for positions
    [0, length) (a latent cache's values: [length, kv_heads, value_prefix],
    the keys' first dims). Reading beyond `max_length` is a runtime error.
  }];
  let arguments = (ins LLM_KVCacheType:$cache, Index:$length);
  let results = (outs LLM_Activations:$key, LLM_Activations:$value);
  let assemblyFormat = "$cache `,` $length attr-dict `:` type($cache) `->` type($key) `,` type($value)";
  let hasVerifier = 1;
}

def LLM_HeadLinearOp : LLM_Op<"head_linear", [Pure]> {
  let summary = "a linear map per head: each head its own matrix";
  let description = [{
    `input` [T, nh, K], `weight` [nh, N, K] (each head's matrix in
    nn.Linear's [out, in] layout), result [T, nh, N]:
    `result[t, h, n] = sum_k input[t, h, k] * weight[h, n, k]`. With
    `transpose_weight` the weight is [nh, K, N] and
    `result[t, h, n] = sum_k input[t, h, k] * weight[h, k, n]`. Weights are
    widened exactly; products and the sum are f32, in increasing k.

    MLA's absorbed decode (spec 2.10) uses both forms on the per-head parts
    of kv_b_proj [nh * (dn + dv), r]: the query's nope part into the latent
    space, q_hat_h = W_UK^h^T q_nope_h (W_UK [nh, dn, r], transposed), and
    the attention's latent output back to values, o_h = W_UV^h o_hat_h
    (W_UV [nh, dv, r]).
  }];
  let arguments = (ins LLM_Activations:$input, LLM_FloatWeight:$weight,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_weight);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_GatedMLPOp : LLM_Op<"gated_mlp", [Pure]> {
  let summary = "gated MLP: down(act(gate(x)) * up(x))";
  let description = [{
    `result = down( act(x W_gate^T) * (x W_up^T) )` with weights in the
    nn.Linear layout: gate and up [I, H], down [H, I]. `silu` gives SwiGLU
    (Llama, Mistral, Qwen), `gelu_tanh` GeGLU (Gemma). All arithmetic f32.
  }];
  let arguments = (ins LLM_Activations:$input, LLM_Weight:$gate,
                       LLM_Weight:$up, LLM_Weight:$down,
                       DefaultValuedAttr<LLM_ActivationAttr, "Activation::Silu">:$activation);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input `,` $gate `,` $up `,` $down attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Element-wise ops (f32)
//===----------------------------------------------------------------------===//

class LLM_BinaryOp<string mnemonic, string formula>
    : LLM_Op<mnemonic, [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "element-wise " # formula;
  let description = "Element-wise `" # formula # "` on same-shaped f32 tensors, IEEE f32 arithmetic.";
  let arguments = (ins LLM_Activations:$lhs, LLM_Activations:$rhs);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}
def LLM_AddOp : LLM_BinaryOp<"add", "lhs + rhs">;
def LLM_SubOp : LLM_BinaryOp<"sub", "lhs - rhs">;
def LLM_MulOp : LLM_BinaryOp<"mul", "lhs * rhs">;
def LLM_DivOp : LLM_BinaryOp<"div", "lhs / rhs">;
def LLM_MaximumOp : LLM_BinaryOp<"maximum", "max(lhs, rhs)">;
def LLM_MinimumOp : LLM_BinaryOp<"minimum", "min(lhs, rhs)">;
def LLM_PowOp : LLM_BinaryOp<"pow", "powf(lhs, rhs)">;

def LLM_ModOp : LLM_Op<"mod", [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "element-wise remainder (ONNX Mod)";
  let description = [{
    With `fmod`, C's `fmodf(lhs, rhs)`: `lhs - trunc(lhs / rhs) * rhs`, exact,
    the sign of lhs. Without, the floor remainder `lhs - floor(lhs / rhs) *
    rhs`, the sign of rhs: `fmodf`'s result plus rhs where the two signs
    differ, a zero taking rhs's sign (Python's `%`, ONNX Mod-28's special
    cases: NaN for an infinite lhs or a zero rhs; a finite lhs over an
    infinite rhs gives lhs when their signs agree, else rhs). f32; integer
    operands converted to f32 are exact below 2^24.
  }];
  let arguments = (ins LLM_Activations:$lhs, LLM_Activations:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$fmod);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

class LLM_UnaryOp<string mnemonic, string formula>
    : LLM_Op<mnemonic, [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "element-wise " # formula;
  let description = "Element-wise `" # formula # "` in f32 (libm for transcendental functions).";
  let arguments = (ins LLM_Activations:$input);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}
def LLM_NegOp : LLM_UnaryOp<"neg", "-x">;
def LLM_ExpOp : LLM_UnaryOp<"exp", "exp(x)">;
def LLM_TanhOp : LLM_UnaryOp<"tanh", "tanh(x)">;
def LLM_RsqrtOp : LLM_UnaryOp<"rsqrt", "1 / sqrt(x)">;
def LLM_SigmoidOp : LLM_UnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
def LLM_SiluOp : LLM_UnaryOp<"silu", "x * sigmoid(x)">;
def LLM_SqrtOp : LLM_UnaryOp<"sqrt", "sqrt(x)">;
def LLM_LogOp : LLM_UnaryOp<"log", "log(x)">;
def LLM_CosOp : LLM_UnaryOp<"cos", "cos(x)">;
def LLM_SinOp : LLM_UnaryOp<"sin", "sin(x)">;
def LLM_AbsOp : LLM_UnaryOp<"abs", "|x|">;
def LLM_ErfOp : LLM_UnaryOp<"erf", "erf(x)">;
def LLM_ReciprocalOp : LLM_UnaryOp<"reciprocal", "1 / x">;
def LLM_ReluOp : LLM_UnaryOp<"relu", "max(x, 0)">;

def LLM_GeluOp : LLM_Op<"gelu", [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "element-wise GELU";
  let description = [{
    Exact `0.5 x (1 + erf(x / sqrt 2))`, or with `approximate = true` the
    tanh form `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, in f32.
  }];
  let arguments = (ins LLM_Activations:$input,
                       DefaultValuedAttr<BoolAttr, "false">:$approximate);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def LLM_ScaleOp : LLM_Op<"scale", [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "multiply by a constant";
  let description = "Element-wise `x * factor` in f32.";
  let arguments = (ins LLM_Activations:$input, F32Attr:$factor);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasFolder = 1;
}

def LLM_CastOp : LLM_Op<"cast", [Pure, SameOperandsAndResultShape]> {
  let summary = "round to another float format";
  let description = [{
    Rounds each element to the result element type (round to nearest even)
    and back to f32 storage semantics of that type. Used to model the
    activation-dtype rounding points of a checkpoint's native precision.
  }];
  let arguments = (ins TensorOf<[F32, F16, BF16]>:$input);
  let results = (outs TensorOf<[F32, F16, BF16]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def LLM_ReduceOp : LLM_Op<"reduce", [Pure]> {
  let summary = "sum, max, mean, min or prod along one axis";
  let description = [{
    Reduces `input` along `axis` (f32 accumulation, in index order); the
    reduced dimension is kept with size 1 when `keep_dim`, else removed.
    `max`/`min` of a NaN-free row are exact; `mean` is the f32 sum divided
    by the count; `prod` multiplies in index order starting from 1.
  }];
  let arguments = (ins LLM_Activations:$input, LLM_ReduceKindAttr:$kind,
                       LLM_I64Attr:$axis, DefaultValuedAttr<BoolAttr, "false">:$keep_dim);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def LLM_SoftmaxOp : LLM_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax along one axis";
  let description = "`exp(x - max) / sum(exp(x - max))` along `axis`, in f32.";
  let arguments = (ins LLM_Activations:$input, LLM_I64Attr:$axis);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def LLM_ArgmaxOp : LLM_Op<"argmax", [Pure]> {
  let summary = "index of the maximum along the last axis";
  let description = [{
    For each row of the last dimension, the index of the largest element;
    ties go to the lowest index (greedy decoding). Result has the input
    shape without its last dimension, element type i64.
  }];
  let arguments = (ins LLM_Activations:$input);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tensor ops
//===----------------------------------------------------------------------===//

def LLM_ReshapeOp : LLM_Op<"reshape", [Pure]> {
  let summary = "reinterpret a row-major tensor with a new shape";
  let description = [{
    Same elements in the same row-major order. At most one result dimension
    may be dynamic; it is inferred from the element count at run time.
  }];
  let arguments = (ins LLM_AnyTensor:$input);
  let results = (outs LLM_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def LLM_TransposeOp : LLM_Op<"transpose", [Pure]> {
  let summary = "permute dimensions";
  let description = "`result` dimension i is `input` dimension `permutation[i]`.";
  let arguments = (ins LLM_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs LLM_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def LLM_ConcatOp : LLM_Op<"concat", [Pure]> {
  let summary = "concatenate along one axis";
  let description = "Joins the inputs along `axis`; other dimensions must agree.";
  let arguments = (ins Variadic<LLM_AnyTensor>:$inputs, LLM_I64Attr:$axis);
  let results = (outs LLM_AnyTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def LLM_SliceOp : LLM_Op<"slice", [Pure]> {
  let summary = "a contiguous range along one axis";
  let description = [{
    Elements [start, start + size) along `axis`; a negative `start` counts
    from the end (start = -1, size = 1 is the last position). Out-of-range
    slices are a runtime error when the dimension is dynamic.
  }];
  let arguments = (ins LLM_AnyTensor:$input, LLM_I64Attr:$axis, LLM_I64Attr:$start,
                       LLM_I64Attr:$size);
  let results = (outs LLM_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def LLM_GatherOp : LLM_Op<"gather", [Pure]> {
  let summary = "select slices along one axis by index";
  let description = [{
    `result` takes, along `axis`, the slices of `input` named by `indices`
    (numpy `take` / ONNX Gather): the result shape is
    `input.shape[:axis] + indices.shape + input.shape[axis+1:]`, so 1-D
    indices keep the rank and 0-D indices drop the axis. A negative index
    counts from the end (-n <= i < n); anything outside is a runtime error
    naming the index. Any element type moves unchanged.
  }];
  let arguments = (ins LLM_AnyTensor:$input, RankedTensorOf<[I32, I64]>:$indices, LLM_I64Attr:$axis);
  let results = (outs LLM_AnyTensor:$result);
  let assemblyFormat = "$input `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Primitive ops of the graph frontends (docs/frontend-graphs.md section 3)
//===----------------------------------------------------------------------===//

def LLM_MatmulOp : LLM_Op<"matmul", [Pure]> {
  let summary = "batched matrix product with numpy batch broadcasting";
  let description = [{
    `result[..., m, n] = sum_k lhs[..., m, k] * rhs[..., k, n]`. Both
    operands have rank >= 2; the leading (batch) dimensions broadcast by
    numpy rules (right-aligned, size 1 or missing expands). f16/bf16
    operands (weights) are widened exactly; products and the sum are f32,
    summed in increasing k. A product with a parameter in the nn.Linear
    layout is `llm.linear`; this op is every other product.

    Example:
    ```mlir
    %s = llm.matmul %q, %k : (tensor<2x8x4x16xf32>, tensor<2x8x16x4xf32>) -> tensor<2x8x4x4xf32>
    ```
  }];
  let arguments = (ins LLM_WidenedFloat:$lhs, LLM_WidenedFloat:$rhs);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_BroadcastOp : LLM_Op<"broadcast", [Pure]> {
  let summary = "expand size-1 and missing leading dimensions";
  let description = [{
    numpy broadcasting of `input` to the result shape: dimensions are
    right-aligned; an input dimension of size 1 repeats, a missing leading
    dimension is added, every other dimension must be equal. Any element
    type; the element type does not change. The graph importers insert it
    so that element-wise ops always see equal shapes.

    Example:
    ```mlir
    %b = llm.broadcast %bias : tensor<64xf32> -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins LLM_AnyTensor:$input);
  let results = (outs LLM_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def LLM_CompareOp : LLM_Op<"compare", [Pure, SameTypeOperands]> {
  let summary = "element-wise comparison to a boolean tensor";
  let description = [{
    `result[i] = lhs[i] <predicate> rhs[i]` for same-typed f32, i64 or i1
    operands; the result has their shape and element type i1. f32
    comparisons are IEEE: with a NaN operand every predicate but `ne` is
    false.

    Example:
    ```mlir
    %m = llm.compare lt %a, %b : tensor<4x4xi64> -> tensor<4x4xi1>
    ```
  }];
  let arguments = (ins LLM_ComparePredicateAttr:$predicate,
                       RankedTensorOf<[F32, I64, I1]>:$lhs,
                       RankedTensorOf<[F32, I64, I1]>:$rhs);
  let results = (outs RankedTensorOf<[I1]>:$result);
  let assemblyFormat = "$predicate $lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)";
  let hasVerifier = 1;
}

def LLM_SelectOp : LLM_Op<"select", [Pure,
    AllTypesMatch<["true_value", "false_value", "result"]>]> {
  let summary = "element-wise choice between two tensors";
  let description = [{
    `result[i] = condition[i] ? true_value[i] : false_value[i]`; the
    condition is an i1 tensor of the same shape as the values (which may be
    f32, i64 or i1). Used for masks (`masked_fill`, `where`).

    Example:
    ```mlir
    %y = llm.select %mask, %x, %neg_inf : tensor<4x4xi1>, tensor<4x4xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I1]>:$condition,
                       RankedTensorOf<[F32, I64, I1]>:$true_value,
                       RankedTensorOf<[F32, I64, I1]>:$false_value);
  let results = (outs RankedTensorOf<[F32, I64, I1]>:$result);
  let assemblyFormat = "$condition `,` $true_value `,` $false_value attr-dict `:` type($condition) `,` type($result)";
  let hasVerifier = 1;
}

def LLM_ConvertOp : LLM_Op<"convert", [Pure, SameOperandsAndResultShape]> {
  let summary = "element type conversion between f32, i64 and i1";
  let description = [{
    Converts every element to the result element type (f32, i64 or i1):
    integer to f32 rounds to nearest even (exact below 2^24); f32 to i64
    truncates toward zero (NaN and values outside the i64 range are a
    runtime error naming the value); to i1 is `x != 0`; from i1 gives 0 or
    1. f16/bf16 inputs (weights) are widened exactly first. Rounding to a
    narrower float format is `llm.cast`.

    Example:
    ```mlir
    %f = llm.convert %ids : tensor<8xi64> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins LLM_AnyTensor:$input);
  let results = (outs RankedTensorOf<[F32, I64, I1]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

// Not Pure: the traced count is a run-time check, like an assertion, and
// stays when the result is unused (the write effect keeps DCE and
// canonicalization from dropping it).
def LLM_NonzeroOp : LLM_Op<"nonzero", [MemoryEffects<[MemWrite]>]> {
  let summary = "multi-indices of the nonzero elements, with a traced count";
  let description = [{
    Row i of `result` is the multi-index of the i-th nonzero (true) element
    of `input` in row-major order: `[count, rank(input)]` i64, as
    `torch.nonzero` (the transpose of ONNX NonZero). The count depends on
    the data; the op carries the count its frontend traced in the static
    result type, and running it on data with another count is a runtime
    error naming both (the graph is specialised to the traced routing).

    The count check is the op's side effect: it stays when the result is
    unused. A trace that skipped code for an empty selection (DeepSeek's
    `if token_indices.numel() > 0:` per expert) leaves such an unused
    nonzero behind; it is what makes the graph fail, instead of dropping
    that expert, on data that selects it. Raising removes a nonzero only
    where it proves the check unnecessary: `llm-raise-moe` rewrites a sparse
    per-expert dispatch (nonzero + gather + index_add) into the dense
    formulation, exact for any selection, and erases the nonzero with it.

    Example:
    ```mlir
    %nz = llm.nonzero %mask : (tensor<8x2xi1>) -> tensor<4x2xi64>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I1, I64, F32]>:$input);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_TopkOp : LLM_Op<"topk", [Pure]> {
  let summary = "the k largest (or smallest) elements along one axis";
  let description = [{
    Along `axis` (negative counts from the end), the `k` largest elements
    of `input` (the k smallest with `largest = false`), sorted: descending
    for largest, ascending otherwise. Equal values are ordered by lower
    index first, so the result is deterministic (torch.topk and ONNX TopK
    on distinct values agree). NaN compares larger than every number.
    `values` has the input shape with `k` in the axis dimension, `indices`
    the same shape in i64 (positions along the axis).

    Example:
    ```mlir
    %v, %i = llm.topk %probs {k = 2} : tensor<8x4xf32> -> tensor<8x2xf32>, tensor<8x2xi64>
    ```
  }];
  let arguments = (ins LLM_Activations:$input, LLM_I64Attr:$k,
                       DefaultValuedAttr<LLM_I64Attr, "-1">:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$largest);
  let results = (outs RankedTensorOf<[F32]>:$values, RankedTensorOf<[I64]>:$indices);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($values) `,` type($indices)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// `axis` in [0, rank).
    int64_t getNormalizedAxis();
  }];
}

def LLM_CumsumOp : LLM_Op<"cumsum", [Pure, SameOperandsAndResultType]> {
  let summary = "prefix sum along one axis";
  let description = [{
    Inclusive prefix sum along `axis` (negative counts from the end):
    `result[..., j, ...] = sum_{i <= j} input[..., i, ...]`, in index order
    (f32 or exact i64 arithmetic, wrapping on overflow like numpy).
    `exclusive` leaves out element j itself (the first is 0); `reverse`
    sums from the end (ONNX CumSum's attributes).

    Example:
    ```mlir
    %p = llm.cumsum %mask {axis = 1} : tensor<2x8xi64>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32, I64]>:$input, LLM_I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs RankedTensorOf<[F32, I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def LLM_LayerNormOp : LLM_Op<"layer_norm", [Pure, AttrSizedOperandSegments,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "layer normalisation with optional affine weight and bias";
  let description = [{
    Normalises over the trailing dimensions from `axis` (default -1: the
    last dimension; negative counts from the end), n elements per row:
    `mean = sum(x) / n`, `var = sum((x - mean)^2) / n` (biased, two passes),
    `y = (x - mean) * (1 / sqrt(var + epsilon))`, then `y * weight` and
    `+ bias` when present. All f32; weight and bias have the normalised
    shape `input.shape[axis:]` and are widened exactly from f16/bf16.
    torch `F.layer_norm` and ONNX LayerNormalization (without its optional
    mean/inv-std outputs).

    Example:
    ```mlir
    %y = llm.layer_norm %x weight %w bias %b {epsilon = 1.0e-5 : f32} : (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins LLM_Activations:$input,
                       Optional<LLM_WidenedFloat>:$weight,
                       Optional<LLM_WidenedFloat>:$bias,
                       F32Attr:$epsilon,
                       DefaultValuedAttr<LLM_I64Attr, "-1">:$axis);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = [{
    $input (`weight` $weight^)? (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// `axis` in [0, rank).
    int64_t getNormalizedAxis();
  }];
}

def LLM_MoEOp : LLM_Op<"moe", [Pure, AttrSizedOperandSegments,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "mixture of experts: router, top-k routing, gated experts";
  let description = [{
    A sparse MoE block (specs/llm-architectures.md sections 4.1-4.3) on
    `input` x [T, H] -> [T, H]. E experts, each a gated MLP
    `E_e(v) = down_e(act(gate_e v) * up_e v)` with gate_e, up_e [I, H] and
    down_e [H, I] (nn.Linear layout, dense or quantized) and `activation`
    as in `llm.gated_mlp`. Per token, in f32 throughout (routers compute in
    fp32 in every reference implementation, so there is no cast point
    inside the op; a checkpoint's native-precision rounding is an explicit
    `llm.cast` on the input or result):

    1. logits `l = router_weight x (+ router_bias)`, router_weight [E, H].
    2. `order = score_then_topk` (Mixtral, Qwen-MoE, DeepSeek): scores
       `s = softmax(l)` over the E experts (or `sigmoid(l)` element-wise),
       then the set S of the `top_k` largest scores, w_e = s_e.
       `order = topk_then_score` (gpt-oss, Llama 4): S = the `top_k`
       largest logits, then w = softmax over the k selected logits (or
       sigmoid of each).
       Ties in top-k go to the lower expert index (as `llm.topk`).
       Selection with a `score_correction_bias` b [E] (DeepSeek-V3's
       e_score_correction_bias; score_then_topk only): S is chosen on
       s + b, the weights stay s. Group-limited (`n_group` G > 1, DeepSeek
       V2 group_limited_greedy and V3 noaux_tc; score_then_topk only): the
       E experts form G groups of E / G consecutive ones; a group's score
       is the sum of its `group_score_topk` largest choice scores (V2: 1,
       the maximum; V3: 2); the `topk_group` best groups are kept (ties to
       the lower group) and S is the top-k of the choice scores of their
       experts only.
    3. `renormalize`: w_e = w_e / (sum_{e' in S} w_e' +
       `renormalize_epsilon`) (Mixtral; Qwen with norm_topk_prob;
       DeepSeek-V3 with sigmoid scores and epsilon 1e-20), in f32.
    4. w_e = w_e * `routed_scaling_factor` (default 1; DeepSeek).
    5. y = sum over e in S, in increasing expert index, of
       `w_e * E_e(x)`; with `weight_on_input` (Llama 4) of `E_e(w_e * x)`
       instead (the scale is not moved through the non-linear expert).
       The sum starts from 0 and adds experts in index order, as the
       reference loops (`index_add_`) do.
    6. With a shared expert (`shared_gate`, `shared_up`, `shared_down`,
       all three or none; gate/up [Is, H], down [H, Is]): y += Shared(x)
       (ungated, DeepSeek / Llama 4).
    7. With `shared_expert_gate` as well (Qwen2-MoE; weight [1, H],
       nn.Linear layout, only allowed with a shared expert): the shared
       term is gated per token, y += sigmoid(shared_expert_gate . x) *
       Shared(x), the scalar gate computed in f32 from the same x and
       applied to the shared expert's output before it is added to the
       routed sum.

    Operand order: input, router_weight, optional router_bias [E], the E
    gate weights, the E up weights, the E down weights, then the optional
    shared expert and the optional shared expert gate.

    Example (2 experts, top-1):
    ```mlir
    %y = llm.moe %x router %wr experts gate [%g0, %g1] up [%u0, %u1] down [%d0, %d1]
           {top_k = 1, scoring = #llm<moe_scoring softmax>, order = #llm<moe_order score_then_topk>}
           : (tensor<4x16xf32>, tensor<2x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>,
              tensor<32x16xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<16x32xf32>)
           -> tensor<4x16xf32>
    ```
    With a gated shared expert (Qwen2-MoE) the shared weights follow the
    experts: `... down [%d0, %d1] shared (%sg, %su, %sd) shared_expert_gate %wg`.

    Expert biases (gpt-oss): `biases (%bg, %bu, %bd)`, all three or none,
    stacked by expert as checkpoints store them: gate and up [E, I], down
    [E, H] (widened to f32); expert e's are row e. An expert is then
    `E_e(v) = down_e(act(gate_e v + bg[e], up_e v + bu[e])) + bd[e]`: the
    down bias is inside the expert, so it is scaled by the routing weight.

    `activation = clamped_swiglu` (gpt-oss, needs `swiglu_limit` L > 0 and
    `swiglu_alpha` a): with g = min(gate, L) and u = clamp(up, -L, L),
    `act(g, u) = (u + 1) * g * sigmoid(a * g)`, in f32. The other
    activations are `act(gate) * up`. The two attributes are set exactly
    when the activation is clamped_swiglu, which takes no shared expert.
  }];
  let arguments = (ins LLM_Activations:$input,
                       LLM_WidenedFloat:$router_weight,
                       Optional<LLM_WidenedFloat>:$router_bias,
                       Optional<LLM_WidenedFloat>:$score_correction_bias,
                       Variadic<LLM_Weight>:$gate,
                       Variadic<LLM_Weight>:$up,
                       Variadic<LLM_Weight>:$down,
                       Optional<LLM_WidenedFloat>:$gate_bias,
                       Optional<LLM_WidenedFloat>:$up_bias,
                       Optional<LLM_WidenedFloat>:$down_bias,
                       Optional<LLM_Weight>:$shared_gate,
                       Optional<LLM_Weight>:$shared_up,
                       Optional<LLM_Weight>:$shared_down,
                       Optional<LLM_Weight>:$shared_expert_gate,
                       LLM_I64Attr:$top_k,
                       DefaultValuedAttr<LLM_MoEScoringAttr, "MoEScoring::Softmax">:$scoring,
                       DefaultValuedAttr<LLM_MoERoutingOrderAttr, "MoERoutingOrder::ScoreThenTopk">:$order,
                       DefaultValuedAttr<BoolAttr, "false">:$renormalize,
                       DefaultValuedAttr<F32Attr, "1.0f">:$routed_scaling_factor,
                       DefaultValuedAttr<LLM_ActivationAttr, "Activation::Silu">:$activation,
                       DefaultValuedAttr<BoolAttr, "false">:$weight_on_input,
                       OptionalAttr<F32Attr>:$swiglu_limit,
                       OptionalAttr<F32Attr>:$swiglu_alpha,
                       DefaultValuedAttr<LLM_I64Attr, "1">:$n_group,
                       OptionalAttr<LLM_I64Attr>:$topk_group,
                       DefaultValuedAttr<LLM_I64Attr, "1">:$group_score_topk,
                       DefaultValuedAttr<F32Attr, "0.0f">:$renormalize_epsilon);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = [{
    $input `router` $router_weight (`bias` $router_bias^)?
    (`correction_bias` $score_correction_bias^)?
    `experts` `gate` `[` $gate `]` `up` `[` $up `]` `down` `[` $down `]`
    (`biases` `(` $gate_bias^ `,` $up_bias `,` $down_bias `)`)?
    (`shared` `(` $shared_gate^ `,` $shared_up `,` $shared_down `)`)?
    (`shared_expert_gate` $shared_expert_gate^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumExperts() { return getGate().size(); }
    bool hasSharedExpert() { return static_cast<bool>(getSharedGate()); }
    bool hasSharedExpertGate() {
      return static_cast<bool>(getSharedExpertGate());
    }
    bool hasExpertBiases() { return static_cast<bool>(getGateBias()); }
    mlir::LogicalResult verifyExpertBiases();
    mlir::LogicalResult verifyActivation();
    mlir::LogicalResult verifyRouting();
    /// Group-limited routing or a correction bias (DeepSeek).
    bool hasDeepSeekRouting() {
      return getNGroup() > 1 || static_cast<bool>(getScoreCorrectionBias());
    }
  }];
}

include "pimc/Dialect/LLM/IR/LLMRecurrentOps.td"

#endif // PIMC_LLM_OPS
