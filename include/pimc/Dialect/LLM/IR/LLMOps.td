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
    The shape must be static.

    Example:
    ```mlir
    %w = llm.weight "model.layers.0.self_attn.q_proj.weight" : tensor<4096x4096xbf16>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs LLM_Weight:$result);
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
    norms and for per-head QK norms (input [T, heads, head_dim]).
  }];
  let arguments = (ins LLM_Activations:$input, LLM_FloatWeight:$weight,
                       F32Attr:$epsilon,
                       DefaultValuedAttr<LLM_NormStyleAttr, "NormStyle::Llama">:$style);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` functional-type(operands, results)";
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
    `low_freq_factor` and `high_freq_factor`. Angles `p * inv_freq`, cos
    and sin in f32.

    Which attributes each kind needs: `linear`: factor; `dynamic`: factor,
    max_position_embeddings; `yarn`: factor, original_max_position_embeddings
    (beta_fast, beta_slow, attention_factor, mscale, mscale_all_dim,
    truncate optional); `llama3`: factor, low_freq_factor,
    high_freq_factor, original_max_position_embeddings.
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
                       OptionalAttr<BoolAttr>:$truncate);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input `,` $offset attr-dict `:` type($input)";
  let hasVerifier = 1;
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
  }];
  let arguments = (ins LLM_Activations:$query, LLM_Activations:$key,
                       LLM_Activations:$value, F32Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "true">:$causal,
                       OptionalAttr<LLM_I64Attr>:$sliding_window,
                       OptionalAttr<F32Attr>:$logit_softcap);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$query `,` $key `,` $value attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_KVCacheAppendOp : LLM_Op<"kv_cache_append", [Pure, AllTypesMatch<["cache", "result"]>]> {
  let summary = "write new keys and values into a KV cache";
  let description = [{
    Stores `key` and `value` [T, kv_heads, head_dim] at positions
    [offset, offset + T) and returns the updated cache. Writing past
    `max_length` is a runtime error. The input cache value must not be used
    again (linear use), so the update may happen in place.
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
    [0, length). Reading beyond `max_length` is a runtime error.
  }];
  let arguments = (ins LLM_KVCacheType:$cache, Index:$length);
  let results = (outs LLM_Activations:$key, LLM_Activations:$value);
  let assemblyFormat = "$cache `,` $length attr-dict `:` type($cache) `->` type($key) `,` type($value)";
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
  let summary = "sum, max or mean along one axis";
  let description = [{
    Reduces `input` along `axis` (f32 accumulation); the reduced dimension
    is kept with size 1 when `keep_dim`, else removed.
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
  let arguments = (ins LLM_Activations:$input);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def LLM_TransposeOp : LLM_Op<"transpose", [Pure]> {
  let summary = "permute dimensions";
  let description = "`result` dimension i is `input` dimension `permutation[i]`.";
  let arguments = (ins LLM_Activations:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def LLM_ConcatOp : LLM_Op<"concat", [Pure]> {
  let summary = "concatenate along one axis";
  let description = "Joins the inputs along `axis`; other dimensions must agree.";
  let arguments = (ins Variadic<LLM_Activations>:$inputs, LLM_I64Attr:$axis);
  let results = (outs LLM_Activations:$result);
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
  let arguments = (ins LLM_Activations:$input, LLM_I64Attr:$axis, LLM_I64Attr:$start,
                       LLM_I64Attr:$size);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def LLM_GatherOp : LLM_Op<"gather", [Pure]> {
  let summary = "select slices along one axis by index";
  let description = [{
    `result` takes, along `axis`, the slices of `input` named by `indices`
    (a 1-D tensor); the result has `indices`' length in that dimension.
    An index out of range is a runtime error.
  }];
  let arguments = (ins LLM_Activations:$input, LLM_TokenIds:$indices, LLM_I64Attr:$axis);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = "$input `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // PIMC_LLM_OPS
