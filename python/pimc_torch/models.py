"""Plain-PyTorch test models, written the way model code in the wild writes them.

Nothing here is shaped for a tracer: shapes are tuple-unpacked (`B, T, _ = x.shape`), GQA goes
through a `repeat_kv` helper (expand + reshape, as Hugging Face does), RoPE tables come from an
`inv_freq` buffer, attention is `F.scaled_dot_product_attention` (HF's "sdpa") or, with
`attn_implementation="eager"`, matmul-scale-mask-softmax-matmul (HF's "eager"), the sparse MoE dispatches tokens with
`torch.where` + `index_add_` like HF Mixtral. The frontends must cope with all of that.

Sizes are small and every module is float32. Norm weights are seeded-random around 1 (not ones)
so that an importer that drops a norm weight fails the goldens.

    LlamaStack        x [B, T, hidden] -> hidden states [B, T, hidden] (after the final RMSNorm)
    MixtralStack      x [B, T, hidden] -> hidden states [B, T, hidden]; with norm_topk_prob=False
                      and shared_expert_intermediate_size, Qwen2-MoE's block (sigmoid-gated
                      shared expert)
    GPT2Stack         ids [B, T] int64 -> logits [B, T, vocab] (tied head)
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

def _perturb_norm_weights(model, std=0.1):
    # Test models only: norm weights initialised to ones would hide a dropped weight multiply.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (RMSNorm, nn.LayerNorm)):
                m.weight.add_(torch.randn_like(m.weight) * std)
                if getattr(m, "bias", None) is not None:
                    m.bias.add_(torch.randn_like(m.bias) * std)


class RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def _get_mscale(scale, mscale=1.0):
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def compute_yarn_parameters(dim, base, rope_scaling, max_position_embeddings=None):
    """YaRN inverse frequencies and attention factor as Hugging Face's `_compute_yarn_parameters`
    computes them (specs/llm-architectures.md section 3.5): frequencies blended between
    interpolation (inv_freq / factor) and extrapolation (inv_freq) by a linear ramp between the
    correction dims of beta_fast and beta_slow; cos and sin are multiplied by the factor."""
    factor = rope_scaling.get("factor")
    original = rope_scaling.get("original_max_position_embeddings") or max_position_embeddings
    if factor is None:
        factor = max_position_embeddings / original
    attention_factor = rope_scaling.get("attention_factor")
    mscale = rope_scaling.get("mscale")
    mscale_all_dim = rope_scaling.get("mscale_all_dim")
    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = float(_get_mscale(factor, mscale) / _get_mscale(factor, mscale_all_dim))
        else:
            attention_factor = _get_mscale(factor)
    beta_fast = rope_scaling.get("beta_fast") or 32
    beta_slow = rope_scaling.get("beta_slow") or 1
    truncate = rope_scaling.get("truncate", True)

    def find_correction_dim(num_rotations):
        return (dim * math.log(original / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low = find_correction_dim(beta_fast)
    high = find_correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)

    pos_freqs = base ** (torch.arange(0, dim, 2).to(dtype=torch.float) / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)
    extrapolation_factor = 1 - ramp
    inv_freq = (inv_freq_interpolation * (1 - extrapolation_factor)
                + inv_freq_extrapolation * extrapolation_factor)
    return inv_freq, attention_factor


class RotaryEmbedding(nn.Module):
    """Default RoPE, or HF's `rope_scaling` {"rope_type": "yarn", ...} (compute_yarn_parameters)."""

    def __init__(self, dim, base=10000.0, rope_scaling=None):
        super().__init__()
        self.attention_scaling = 1.0
        rope_type = (rope_scaling or {}).get("rope_type", (rope_scaling or {}).get("type", "default"))
        if rope_type == "default":
            inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        elif rope_type == "yarn":
            inv_freq, self.attention_scaling = compute_yarn_parameters(dim, base, rope_scaling)
        else:
            raise ValueError("rope_type must be 'default' or 'yarn', not %r" % (rope_type,))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        # freqs[b, t, i] = position_ids[b, t] * inv_freq[i]
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
        cos = freqs.cos()
        sin = freqs.sin()
        if self.attention_scaling != 1.0:
            cos = cos * self.attention_scaling
            sin = sin * self.attention_scaling
        return cos.to(x.dtype), sin.to(x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    """Half-split layout (HF Llama): pairs are (x[i], x[i + d/2])."""
    emb_cos = torch.cat((cos, cos), dim=-1).unsqueeze(1)
    emb_sin = torch.cat((sin, sin), dim=-1).unsqueeze(1)
    q_embed = (q * emb_cos) + (rotate_half(q) * emb_sin)
    k_embed = (k * emb_cos) + (rotate_half(k) * emb_sin)
    return q_embed, k_embed


def duplicate_interleave(m):
    # [.., d/2] -> [.., d] with every entry repeated twice in place (GPT-J).
    shape = m.shape
    m = m.reshape(-1, 1)
    m = m.repeat(1, 2)
    return m.view(*shape[:-1], -1)


def rotate_every_two(x):
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def apply_rotary_pos_emb_interleaved(q, k, cos, sin):
    """Interleaved layout (GPT-J, Meta's original Llama): pairs are (x[2i], x[2i + 1])."""
    cos = duplicate_interleave(cos).unsqueeze(1)
    sin = duplicate_interleave(sin).unsqueeze(1)
    q_embed = (q * cos) + (rotate_every_two(q) * sin)
    k_embed = (k * cos) + (rotate_every_two(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def make_attention_mask(T, dtype, device, sliding_window=None):
    """Additive mask [T, T]: 0 where query i may see key j (j <= i, and i - j < window), -inf else."""
    allowed = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    if sliding_window is not None:
        allowed = allowed & ~torch.ones(T, T, dtype=torch.bool, device=device).tril(-sliding_window)
    mask = torch.zeros(T, T, dtype=dtype, device=device)
    return mask.masked_fill(~allowed, float("-inf"))


class LlamaAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, num_kv_heads, head_dim, rope_layout, sliding_window,
                 attn_implementation="sdpa"):
        super().__init__()
        if attn_implementation not in ("sdpa", "eager"):
            raise ValueError("attn_implementation must be 'sdpa' or 'eager', not %r"
                             % (attn_implementation,))
        self.attn_implementation = attn_implementation
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.head_dim = head_dim
        self.rope_layout = rope_layout
        self.sliding_window = sliding_window
        self.q_proj = nn.Linear(hidden_size, num_heads * head_dim, bias=False)
        self.k_proj = nn.Linear(hidden_size, num_kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(hidden_size, num_kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * head_dim, hidden_size, bias=False)

    def forward(self, hidden_states, cos, sin):
        B, T, _ = hidden_states.shape
        q = self.q_proj(hidden_states).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2)

        if self.rope_layout == "interleaved":
            q, k = apply_rotary_pos_emb_interleaved(q, k, cos, sin)
        else:
            q, k = apply_rotary_pos_emb(q, k, cos, sin)

        k = repeat_kv(k, self.num_key_value_groups)
        v = repeat_kv(v, self.num_key_value_groups)

        if self.attn_implementation == "sdpa" and self.sliding_window is None:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif self.attn_implementation == "sdpa":
            mask = make_attention_mask(T, q.dtype, q.device, self.sliding_window)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            mask = make_attention_mask(T, q.dtype, q.device, self.sliding_window)
            attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
            attn_weights = attn_weights + mask
            attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
            out = torch.matmul(attn_weights, v)

        out = out.transpose(1, 2).contiguous().reshape(B, T, -1)
        return self.o_proj(out)


class LlamaMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MixtralExpert(nn.Module):
    """HF MixtralBlockSparseTop2MLP: w1 gate, w3 up, w2 down."""

    def __init__(self, hidden_size, ffn_dim):
        super().__init__()
        self.w1 = nn.Linear(hidden_size, ffn_dim, bias=False)
        self.w2 = nn.Linear(ffn_dim, hidden_size, bias=False)
        self.w3 = nn.Linear(hidden_size, ffn_dim, bias=False)

    def forward(self, hidden_states):
        return self.w2(F.silu(self.w1(hidden_states)) * self.w3(hidden_states))


class MixtralSparseMoeBlock(nn.Module):
    """Top-k MoE: router softmax -> topk -> renormalise.

    dispatch="sparse" is HF Mixtral's loop: per expert, torch.where over the routing picks its
    tokens, the expert runs on those rows only and index_add_ scatters them back.
    dispatch="sparse_hf" is the same loop on HF's permuted [E, K, T] expert mask (torch.where
    then yields (slot, token) pairs).
    dispatch="sparse_skip" is DeepSeek's loop (HF DeepseekV3MoE.moe): the same per-expert
    selection, but an expert whose selection is empty is skipped (`if token_indices.numel() > 0`),
    so a trace (make_fx; torch.export refuses the data-dependent branch) holds only the experts
    the example routed tokens to, and an unused nonzero for each of the others.
    dispatch="dense" runs every expert on every token and weights the results with the routing
    weights scattered into a [tokens, experts] matrix (zero for unselected experts).
    """

    def __init__(self, hidden_size, ffn_dim, num_experts, top_k, dispatch, norm_topk_prob=True,
                 shared_expert_intermediate_size=None):
        super().__init__()
        if dispatch not in ("sparse", "sparse_hf", "sparse_skip", "dense"):
            raise ValueError("dispatch must be 'sparse', 'sparse_hf', 'sparse_skip' or 'dense', "
                             "not %r" % (dispatch,))
        self.hidden_dim = hidden_size
        self.num_experts = num_experts
        self.top_k = top_k
        self.dispatch = dispatch
        self.norm_topk_prob = norm_topk_prob
        self.gate = nn.Linear(hidden_size, num_experts, bias=False)
        self.experts = nn.ModuleList([MixtralExpert(hidden_size, ffn_dim) for _ in range(num_experts)])
        # Qwen2-MoE (HF Qwen2MoeSparseMoeBlock): a shared expert gated per token by
        # sigmoid(shared_expert_gate(x)), added after the routed experts.
        self.shared_expert = None
        if shared_expert_intermediate_size:
            self.shared_expert = LlamaMLP(hidden_size, shared_expert_intermediate_size)
            self.shared_expert_gate = nn.Linear(hidden_size, 1, bias=False)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)

        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        if self.norm_topk_prob:
            routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)

        if self.dispatch == "dense":
            routing = torch.zeros_like(router_logits).scatter(1, selected_experts, routing_weights)
            expert_outputs = torch.stack([expert(hidden_states) for expert in self.experts], dim=1)
            final_hidden_states = (routing.unsqueeze(-1) * expert_outputs).sum(dim=1)
        else:
            final_hidden_states = torch.zeros(
                (batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype,
                device=hidden_states.device)
            # HF builds the mask with F.one_hot, which checks its input with .item(): make_fx
            # cannot trace that, so compare with the expert index instead (as DeepSeek's code
            # does). sparse_hf keeps HF's [E, K, T] permuted mask, whose torch.where gives
            # (slot, token) pairs.
            if self.dispatch == "sparse_hf":
                expert_mask = (selected_experts.unsqueeze(-1) == torch.arange(self.num_experts))
                expert_mask = expert_mask.permute(2, 1, 0)
            for expert_idx in range(self.num_experts):
                expert_layer = self.experts[expert_idx]
                if self.dispatch == "sparse_hf":
                    idx, top_x = torch.where(expert_mask[expert_idx])
                else:
                    top_x, idx = torch.where(selected_experts == expert_idx)
                if self.dispatch == "sparse_skip" and top_x.numel() == 0:
                    continue
                current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
                current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
                final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        if self.shared_expert is not None:
            shared_expert_output = self.shared_expert(hidden_states)
            shared_expert_output = F.sigmoid(self.shared_expert_gate(hidden_states)) * shared_expert_output
            final_hidden_states = final_hidden_states + shared_expert_output
        return final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)


class DecoderLayer(nn.Module):
    def __init__(self, hidden_size, num_heads, num_kv_heads, head_dim, eps, rope_layout,
                 sliding_window, mlp, attn_implementation="sdpa"):
        super().__init__()
        self.input_layernorm = RMSNorm(hidden_size, eps=eps)
        self.self_attn = LlamaAttention(hidden_size, num_heads, num_kv_heads, head_dim, rope_layout,
                                        sliding_window, attn_implementation)
        self.post_attention_layernorm = RMSNorm(hidden_size, eps=eps)
        self.mlp = mlp

    def forward(self, hidden_states, cos, sin):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, cos, sin)
        hidden_states = residual + hidden_states

        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


def _run_decoder(stack, x):
    """The decoder stacks' forward: positions 0..T-1, shared cos/sin, layers, final norm."""
    B, T, _ = x.shape
    position_ids = torch.arange(T, device=x.device).unsqueeze(0).expand(B, -1)
    cos, sin = stack.rotary_emb(x, position_ids)
    hidden_states = x
    for layer in stack.layers:
        hidden_states = layer(hidden_states, cos, sin)
    return stack.norm(hidden_states)


class LlamaStack(nn.Module):
    """Llama decoder layers over hidden states: GQA, RoPE (half-split or interleaved), causal or
    sliding-window mask, SwiGLU, final RMSNorm."""

    def __init__(self, hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=16,
                 intermediate_size=128, rms_norm_eps=1e-5, rope_theta=10000.0, rope_layout="half",
                 sliding_window=None, rope_scaling=None, attn_implementation="sdpa"):
        super().__init__()
        if rope_layout not in ("half", "interleaved"):
            raise ValueError("rope_layout must be 'half' or 'interleaved', not %r" % (rope_layout,))
        self.layers = nn.ModuleList([
            DecoderLayer(hidden_size, num_heads, num_kv_heads, head_dim, rms_norm_eps, rope_layout,
                         sliding_window, LlamaMLP(hidden_size, intermediate_size),
                         attn_implementation)
            for _ in range(num_layers)])
        self.norm = RMSNorm(hidden_size, eps=rms_norm_eps)
        self.rotary_emb = RotaryEmbedding(head_dim, base=rope_theta, rope_scaling=rope_scaling)
        _perturb_norm_weights(self)

    def forward(self, x):
        return _run_decoder(self, x)


class MixtralStack(nn.Module):
    """Mixtral decoder layers: Llama attention (GQA, RoPE) + top-k MoE feed-forward."""

    def __init__(self, hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=16,
                 intermediate_size=96, num_experts=4, top_k=2, rms_norm_eps=1e-5,
                 rope_theta=1000000.0, dispatch="sparse", norm_topk_prob=True,
                 shared_expert_intermediate_size=None, attn_implementation="sdpa"):
        super().__init__()
        self.layers = nn.ModuleList([
            DecoderLayer(hidden_size, num_heads, num_kv_heads, head_dim, rms_norm_eps, "half", None,
                         MixtralSparseMoeBlock(hidden_size, intermediate_size, num_experts, top_k,
                                               dispatch, norm_topk_prob,
                                               shared_expert_intermediate_size),
                         attn_implementation)
            for _ in range(num_layers)])
        self.norm = RMSNorm(hidden_size, eps=rms_norm_eps)
        self.rotary_emb = RotaryEmbedding(head_dim, base=rope_theta)
        _perturb_norm_weights(self)

    def forward(self, x):
        return _run_decoder(self, x)


class Conv1D(nn.Module):
    """GPT-2's transposed linear: weight is [in, out], y = x @ W + b."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=1.0 / math.sqrt(nx))
        nn.init.normal_(self.bias, std=0.02)

    def forward(self, x):
        return x @ self.weight + self.bias


class GPT2Attention(nn.Module):
    def __init__(self, n_embd, n_head, n_positions):
        super().__init__()
        self.n_head = n_head
        self.n_embd = n_embd
        self.c_attn = Conv1D(3 * n_embd, n_embd)
        self.c_proj = Conv1D(n_embd, n_embd)
        self.attn_implementation = "sdpa"      # nanoGPT's flash path; "eager" masks `bias`
        # nanoGPT / HF GPT-2: the causal mask is a buffer, sliced to the sequence length.
        self.register_buffer("bias", torch.tril(torch.ones(n_positions, n_positions))
                             .view(1, 1, n_positions, n_positions), persistent=False)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.attn_implementation == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class GPT2MLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = Conv1D(4 * n_embd, n_embd)
        self.c_proj = Conv1D(n_embd, 4 * n_embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class GPT2Block(nn.Module):
    def __init__(self, n_embd, n_head, n_positions, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, eps=eps)
        self.attn = GPT2Attention(n_embd, n_head, n_positions)
        self.ln_2 = nn.LayerNorm(n_embd, eps=eps)
        self.mlp = GPT2MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT2Stack(nn.Module):
    """GPT-2: token + learned absolute position embeddings, pre-LN blocks with MHA and GELU-tanh,
    final LayerNorm, lm_head tied to the token embedding."""

    def __init__(self, vocab_size=96, n_positions=32, n_embd=64, n_layer=2, n_head=4,
                 layer_norm_epsilon=1e-5):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(n_positions, n_embd)
        self.h = nn.ModuleList([GPT2Block(n_embd, n_head, n_positions, layer_norm_epsilon)
                                for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd, eps=layer_norm_epsilon)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        _perturb_norm_weights(self)

    def forward(self, input_ids):
        B, T = input_ids.size()
        pos = torch.arange(0, T, dtype=torch.long, device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return self.lm_head(x)

    def forward_cached(self, input_ids, past=None):
        """Eager decoding with a KV cache, on the same parameters as forward: input_ids [B, T]
        are the tokens at positions past_len .. past_len + T - 1, past a per-layer list of
        (k, v) [B, n_head, past_len, head_dim] (None at the start). Returns (logits [B, T, V],
        the per-layer (k, v) extended by these tokens). Not traced: the golden side of
        make_decoders.py."""
        return _gpt2_forward_cached(self, input_ids, past)


# ---------------------------------------------------------------------------------------------
# Decoder language models (python/pimc_torch/make_decoders.py, docs/torch-bridge.md "Decoder
# fixtures"). Appended after the models above so that their stack-trace line numbers, and so
# the torch fixture's graph.json files, stay as they were.
#
#   DecoderLM         ids [B, T] int64 -> logits [B, T, vocab]: nn.Embedding, a LlamaStack or
#                     MixtralStack (ends with its final RMSNorm), lm_head (untied)
#   LlamaStaticStep   one decode step of a DecoderLM over a static KV cache, as a pure function:
#                     (input_ids [1, 1], cache_position [1], k_0, v_0, ...) -> (logits, k_0', ...)
#
# forward_cached (DecoderLM, GPT2Stack) is an eager KV-cache path written apart from forward but
# on the same parameters: make_decoders.py takes its greedy tokens as the goldens and checks it
# against the cache-less forward at every step.

import inspect    # noqa: E402  (here, not at the top: see above)

_STACKS = {"LlamaStack": LlamaStack, "MixtralStack": MixtralStack}


def _positions_mask(q_pos, k_pos, sliding_window, dtype):
    """Additive mask [Tq, Tk] from absolute positions, the rule of make_attention_mask: a query
    at position p sees a key at position j iff j <= p (and p - j < window)."""
    allowed = k_pos[None, :] <= q_pos[:, None]
    if sliding_window is not None:
        allowed = allowed & (q_pos[:, None] - k_pos[None, :] < sliding_window)
    return torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, float("-inf"))


def _masked_attention(q, k, v, mask):
    """softmax(q k^T / sqrt(d) + mask) v, written out (q [B, H, Tq, D], k and v [B, H, Tk, D])."""
    scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(q.shape[-1])
    weights = F.softmax(scores + mask, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(weights, v)


def _llama_attention_cached(attn, hidden_states, cos, sin, past_kv, past_len):
    """LlamaAttention's computation for new tokens over past + new keys. The cache holds keys
    after RoPE and before repeat_kv, [B, kv_heads, S, head_dim]."""
    B, T, _ = hidden_states.shape
    q = attn.q_proj(hidden_states).view(B, T, attn.num_heads, attn.head_dim).transpose(1, 2)
    k = attn.k_proj(hidden_states).view(B, T, attn.num_key_value_heads, attn.head_dim).transpose(1, 2)
    v = attn.v_proj(hidden_states).view(B, T, attn.num_key_value_heads, attn.head_dim).transpose(1, 2)
    if attn.rope_layout == "interleaved":
        q, k = apply_rotary_pos_emb_interleaved(q, k, cos, sin)
    else:
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
    if past_kv is not None:
        k = torch.cat([past_kv[0], k], dim=2)
        v = torch.cat([past_kv[1], v], dim=2)
    mask = _positions_mask(torch.arange(past_len, past_len + T), torch.arange(k.shape[2]),
                           attn.sliding_window, q.dtype)
    out = _masked_attention(q, repeat_kv(k, attn.num_key_value_groups),
                            repeat_kv(v, attn.num_key_value_groups), mask)
    out = out.transpose(1, 2).contiguous().reshape(B, T, -1)
    return attn.o_proj(out), (k, v)


def _run_decoder_cached(stack, x, past):
    """_run_decoder for new tokens at positions past_len.. with a per-layer (k, v) cache."""
    B, T, _ = x.shape
    past_len = 0 if past is None else past[0][0].shape[2]
    position_ids = torch.arange(past_len, past_len + T).unsqueeze(0).expand(B, -1)
    cos, sin = stack.rotary_emb(x, position_ids)
    hidden_states = x
    new_past = []
    for i, layer in enumerate(stack.layers):
        residual = hidden_states
        h = layer.input_layernorm(hidden_states)
        h, kv = _llama_attention_cached(layer.self_attn, h, cos, sin,
                                        None if past is None else past[i], past_len)
        new_past.append(kv)
        hidden_states = residual + h
        residual = hidden_states
        # The MoE block routes each token on its own, so it runs as it is on the new tokens.
        hidden_states = residual + layer.mlp(layer.post_attention_layernorm(hidden_states))
    return stack.norm(hidden_states), new_past


def _gpt2_forward_cached(gpt2, input_ids, past):
    B, T = input_ids.shape
    past_len = 0 if past is None else past[0][0].shape[2]
    pos = torch.arange(past_len, past_len + T)
    if past_len + T > gpt2.wpe.num_embeddings:
        raise ValueError("GPT2Stack: position %d is past the %d learned positions"
                         % (past_len + T - 1, gpt2.wpe.num_embeddings))
    x = gpt2.wte(input_ids) + gpt2.wpe(pos)
    new_past = []
    for i, block in enumerate(gpt2.h):
        attn = block.attn
        C = attn.n_embd
        q, k, v = attn.c_attn(block.ln_1(x)).split(C, dim=2)
        q = q.view(B, T, attn.n_head, C // attn.n_head).transpose(1, 2)
        k = k.view(B, T, attn.n_head, C // attn.n_head).transpose(1, 2)
        v = v.view(B, T, attn.n_head, C // attn.n_head).transpose(1, 2)
        if past is not None:
            k = torch.cat([past[i][0], k], dim=2)
            v = torch.cat([past[i][1], v], dim=2)
        new_past.append((k, v))
        mask = _positions_mask(pos, torch.arange(k.shape[2]), None, q.dtype)
        y = _masked_attention(q, k, v, mask).transpose(1, 2).contiguous().view(B, T, C)
        x = x + attn.c_proj(y)
        x = x + block.mlp(block.ln_2(x))
    return gpt2.lm_head(gpt2.ln_f(x)), new_past


class DecoderLM(nn.Module):
    """A causal LM around a hidden-state stack: embed_tokens (nn.Embedding(vocab_size, hidden)),
    `model` (LlamaStack or MixtralStack with stack_kwargs; it ends with the final RMSNorm),
    lm_head (nn.Linear(hidden, vocab_size, bias=False), not tied). Constructed in that order."""

    def __init__(self, stack="LlamaStack", vocab_size=96, **stack_kwargs):
        super().__init__()
        if isinstance(stack, str):
            if stack not in _STACKS:
                raise ValueError("stack must be one of %s, not %r" % (", ".join(_STACKS), stack))
            stack = _STACKS[stack]
        hidden_size = stack_kwargs.get(
            "hidden_size", inspect.signature(stack).parameters["hidden_size"].default)
        self.vocab_size = vocab_size
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.model = stack(**stack_kwargs)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(self, input_ids):
        return self.lm_head(self.model(self.embed_tokens(input_ids)))

    def forward_cached(self, input_ids, past=None):
        """Eager decoding with a KV cache on the same parameters: input_ids [B, T] are the
        tokens at positions past_len .. past_len + T - 1; past is a per-layer list of (k, v)
        [B, kv_heads, past_len, head_dim] (keys after RoPE), None at the start. Returns
        (logits [B, T, V], the per-layer (k, v) extended by these tokens)."""
        hidden_states, new_past = _run_decoder_cached(self.model, self.embed_tokens(input_ids), past)
        return self.lm_head(hidden_states), new_past


def _static_cache_update(cache, cache_position, new):
    """cache [B, H, L, D] with new [B, H, T, D] written at the positions cache_position [T],
    out of place: index_copy along the position dim (StaticCache's update, aten.index_copy in
    the bridge's graph). For torch.onnx.export the same update is a scatter with an explicit
    index: the TorchScript exporter's index_copy builds its index shape with an int64
    ScatterElements on Shape(...), which pimc's ONNX importer does not take."""
    if torch.onnx.is_in_onnx_export():
        index = cache_position.view(1, 1, -1, 1).expand(new.shape)
        return cache.scatter(2, index, new)
    return cache.index_copy(2, cache_position, new)


class LlamaStaticStep(nn.Module):
    """One decode step of a DecoderLM with a static cache, as a pure function of its inputs:

        forward(input_ids [1, 1] int64, cache_position [1] int64, k_0, v_0, k_1, v_1, ...)
            -> (logits [1, 1, V], k_0', v_0', k_1', v_1', ...)

    Caches are [1, kv_heads, max_cache_len, head_dim] (keys after RoPE). The new key and value
    are written at cache_position out of place with index_copy along the position dim (what
    transformers' StaticCache does in place; a scatter under torch.onnx.export, see
    _static_cache_update), and the query attends over all max_cache_len slots with an additive
    mask (zeros.masked_fill, as make_attention_mask) that hides slots after cache_position (and,
    with a sliding window, those at or before cache_position - window). Shares the wrapped
    model's modules, so its state_dict keys and tensors are the DecoderLM's."""

    def __init__(self, lm, max_cache_len=24):
        super().__init__()
        self.embed_tokens = lm.embed_tokens
        self.model = lm.model
        self.lm_head = lm.lm_head
        self.max_cache_len = max_cache_len

    def cache_shapes(self):
        attn = self.model.layers[0].self_attn
        shape = [1, attn.num_key_value_heads, self.max_cache_len, attn.head_dim]
        return [list(shape) for _ in range(2 * len(self.model.layers))]

    def forward(self, input_ids, cache_position, *caches):
        stack = self.model
        x = self.embed_tokens(input_ids)
        B, T, _ = x.shape
        cos, sin = stack.rotary_emb(x, cache_position.unsqueeze(0))
        slots = torch.arange(self.max_cache_len)
        visible = slots[None, :] <= cache_position[:, None]               # [T, L]
        window = stack.layers[0].self_attn.sliding_window
        if window is not None:
            visible = visible & (cache_position[:, None] - slots[None, :] < window)
        mask = torch.zeros(visible.shape, dtype=x.dtype).masked_fill(~visible, float("-inf"))
        mask = mask[None, None]                                            # [1, 1, T, L]
        hidden_states = x
        new_caches = []
        for i, layer in enumerate(stack.layers):
            attn = layer.self_attn
            residual = hidden_states
            h = layer.input_layernorm(hidden_states)
            q = attn.q_proj(h).view(B, T, attn.num_heads, attn.head_dim).transpose(1, 2)
            k = attn.k_proj(h).view(B, T, attn.num_key_value_heads, attn.head_dim).transpose(1, 2)
            v = attn.v_proj(h).view(B, T, attn.num_key_value_heads, attn.head_dim).transpose(1, 2)
            if attn.rope_layout == "interleaved":
                q, k = apply_rotary_pos_emb_interleaved(q, k, cos, sin)
            else:
                q, k = apply_rotary_pos_emb(q, k, cos, sin)
            k_cache = _static_cache_update(caches[2 * i], cache_position, k)
            v_cache = _static_cache_update(caches[2 * i + 1], cache_position, v)
            new_caches += [k_cache, v_cache]
            k_all = repeat_kv(k_cache, attn.num_key_value_groups)
            v_all = repeat_kv(v_cache, attn.num_key_value_groups)
            if attn.attn_implementation == "sdpa":
                out = F.scaled_dot_product_attention(q, k_all, v_all, attn_mask=mask)
            else:
                out = _masked_attention(q, k_all, v_all, mask)
            out = out.transpose(1, 2).contiguous().reshape(B, T, -1)
            hidden_states = residual + attn.o_proj(out)
            residual = hidden_states
            hidden_states = residual + layer.mlp(layer.post_attention_layernorm(hidden_states))
        return (self.lm_head(stack.norm(hidden_states)),) + tuple(new_caches)
