//===- LLMRecurrentOps.td - recurrent layers (Mamba, DeltaNet) -*- tablegen -*-===//
//
// The recurrent mixers of the hybrid families (Falcon-H1, Granite-4.0-H,
// Jamba, Qwen3-Next): a causal depthwise convolution, the selective scan
// (Mamba-1 and Mamba-2/SSD) and the gated delta rule, each carrying its
// per-layer state (!llm.recurrent_state) from one step to the next, and the
// gated RMS norm that follows them. docs/llm-dialect.md, "Recurrent layers".
//
// Every op takes the T tokens of the step ([T, ...], T = 1 in decode) and
// the step's `offset`; it scans them in order, starting from the state,
// and returns the state after the last one. A state holds the positions
// [0, offset): the interpreter checks it at run time, since a recurrence
// cannot be rewound. A state given as a tensor is a plain value (the
// backend's host functions): the op reads it and returns the next one.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_LLM_RECURRENT_OPS
#define PIMC_LLM_RECURRENT_OPS

// A state operand: the step's linear !llm.recurrent_state, or (inside a
// function the backend outlines for the host) the state's value as an f32
// tensor of its shape, the new state then a tensor result.
def LLM_StateValue : AnyTypeOf<[LLM_RecurrentStateType, RankedTensorOf<[F32]>]>;

def LLM_CausalConv1dOp : LLM_Op<"causal_conv1d",
    [Pure, AllTypesMatch<["state", "new_state"]>]> {
  let summary = "causal depthwise 1-D convolution over the tokens, with its state";
  let description = [{
    `input` u [T, C], `weight` [C, K] (or the checkpoint's [C, 1, K]),
    optional `bias` [C], `state` [C, K - 1]: the inputs of the K - 1
    positions before the step (zero before position 0). For token t:
    `y_t[c] = sum_{j<K} w[c, j] * u_{t-K+1+j}[c] (+ b[c])`, summed in f32 in
    increasing j, the bias added last, then SiLU when `silu` is set. The new
    state holds the last K - 1 inputs, oldest first. (transformers keeps K
    columns, the current input included; the first is never read.)
  }];
  let arguments = (ins LLM_Activations:$input, LLM_StateValue:$state,
                       LLM_WidenedFloat:$weight,
                       Optional<LLM_WidenedFloat>:$bias, Index:$offset,
                       DefaultValuedAttr<BoolAttr, "true">:$silu);
  let results = (outs LLM_Activations:$result,
                      LLM_StateValue:$new_state);
  let assemblyFormat = [{
    $input `,` $state `,` $weight (`bias` $bias^)? `,` $offset attr-dict `:`
    type($input) `,` type($state) `,` type($weight) (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def LLM_SSMScanOp : LLM_Op<"ssm_scan",
    [Pure, AllTypesMatch<["state", "new_state"]>]> {
  let summary = "the selective state-space scan (Mamba-1, Mamba-2 / SSD)";
  let description = [{
    nh heads of `head_dim` P, state size N, G `groups`: `x` [T, nh P], `dt`
    [T, nh], `b` and `c` [T, G N], `a_log` [nh] (Mamba-2: one decay per head)
    or [nh, N] (Mamba-1: one per channel and state index), `d` [nh],
    `dt_bias` [nh], `state` S [nh, P, N]. Head h reads group
    `g = h / (nh / G)`. Per token, all f32:
    ```
    delta_h = clamp(softplus(dt_h + dt_bias_h), dt_min, dt_max)
    A[h, n] = -exp(a_log[h] or a_log[h, n])
    S[h, p, n] = exp(delta_h * A[h, n]) * S[h, p, n]
                 + (delta_h * B[g, n]) * x[h, p]
    y[h, p] = sum_n S[h, p, n] * C[g, n]  (increasing n)  + D_h * x[h, p]
    ```
    softplus(v) = v when v > 20, else log1p(exp(v)) (torch's threshold).
    `dt_min` / `dt_max` default to 0 / inf (no clamp). Mamba-1 (Jamba) is
    nh = d_inner channels with P = 1 and G = 1, `dt_bias` its dt_proj bias.
    The result y is [T, nh P].
  }];
  let arguments = (ins LLM_Activations:$x, LLM_Activations:$dt,
                       LLM_Activations:$b, LLM_Activations:$c,
                       LLM_WidenedFloat:$a_log, LLM_WidenedFloat:$d,
                       LLM_WidenedFloat:$dt_bias,
                       LLM_StateValue:$state, Index:$offset,
                       LLM_I64Attr:$groups,
                       DefaultValuedAttr<F32Attr, "0.0f">:$dt_min,
                       OptionalAttr<F32Attr>:$dt_max);
  let results = (outs LLM_Activations:$result,
                      LLM_StateValue:$new_state);
  let assemblyFormat = [{
    $x `,` $dt `,` $b `,` $c `,` $a_log `,` $d `,` $dt_bias `,` $state `,`
    $offset attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumHeads();
    int64_t getHeadDim();
    int64_t getStateSize();
  }];
}

def LLM_GatedDeltaRuleOp : LLM_Op<"gated_delta_rule",
    [Pure, AllTypesMatch<["state", "new_state"]>]> {
  let summary = "the gated delta rule (Gated DeltaNet, Qwen3-Next)";
  let description = [{
    nk key heads of dim dk, nv value heads of dim dv (nv a multiple of nk;
    value head h reads key head `h / (nv / nk)`): `query`, `key` [T, nk dk],
    `value` [T, nv dv], `a`, `b` [T, nv], `a_log`, `dt_bias` [nv], `state`
    S [nv, dk, dv]. Per token and value head, all f32:
    ```
    q = l2norm(q_kh) / sqrt(dk),  k = l2norm(k_kh),  l2norm(x) = x * rsqrt(sum x^2 + 1e-6)
    beta = sigmoid(b_h),  g = -exp(a_log_h) * softplus(a_h + dt_bias_h)
    S  = exp(g) * S                                  (decay first)
    e  = (v_h - S^T k) * beta                        ([dv], sums over dk)
    S  = S + k (x) e
    o_h = S^T q                                      ([dv], sums over dk)
    ```
    softplus as in llm.ssm_scan. The result is [T, nv dv].
  }];
  let arguments = (ins LLM_Activations:$query, LLM_Activations:$key,
                       LLM_Activations:$value, LLM_Activations:$a,
                       LLM_Activations:$b, LLM_WidenedFloat:$a_log,
                       LLM_WidenedFloat:$dt_bias,
                       LLM_StateValue:$state, Index:$offset,
                       LLM_I64Attr:$key_heads);
  let results = (outs LLM_Activations:$result,
                      LLM_StateValue:$new_state);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $a `,` $b `,` $a_log `,` $dt_bias `,`
    $state `,` $offset attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_GatedRMSNormOp : LLM_Op<"gated_rms_norm",
    [Pure, AllTypesMatch<["input", "gate", "result"]>]> {
  let summary = "RMS norm and SiLU gate of a recurrent mixer's output";
  let description = [{
    `input` y and `gate` z [T, D], `weight` w [D] or [group_size]. The norm
    runs over groups of `group_size` consecutive features (D by default),
    `rms(v) = v * rsqrt(mean(v^2) + eps)`, f32:
    `norm_before_gate` (Qwen3-Next, Falcon-H1): `w * rms(y) * silu(z)`;
    otherwise (Mamba-2, Granite-4.0-H): `w * rms(y * silu(z))`.
    A weight of group_size features is shared by every group (Qwen3-Next's
    per-head norm).
  }];
  let arguments = (ins LLM_Activations:$input, LLM_Activations:$gate,
                       LLM_WidenedFloat:$weight, F32Attr:$epsilon,
                       OptionalAttr<LLM_I64Attr>:$group_size,
                       BoolAttr:$norm_before_gate);
  let results = (outs LLM_Activations:$result);
  let assemblyFormat = [{
    $input `,` $gate `,` $weight attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

#endif // PIMC_LLM_RECURRENT_OPS
