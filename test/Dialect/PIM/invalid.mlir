// RUN: pimc-opt %s --split-input-file --verify-diagnostics

// Every diagnostic of the pim verifiers (lib/Dialect/PIM/IR/PIMDialect.cpp).

pim.program attributes {target = "", target_hash = ""} {
// expected-error@-1 {{needs a target name}}
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  // expected-error@+1 {{min 5 > max 4}}
  pim.param @p {min = 5 : i64, max = 4 : i64}
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  // expected-error@+1 {{div must be >= 1}}
  pim.param @p {min = 0 : i64, max = 4 : i64, div = 0 : i64}
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  // expected-error@+1 {{mod must be >= 0}}
  pim.param @p {min = 0 : i64, max = 4 : i64, mod = -1 : i64}
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  // expected-error@+1 {{source parameter 'q' is not defined before it}}
  pim.param @p {min = 0 : i64, max = 4 : i64, src = @q}
  pim.param @q {min = 0 : i64, max = 4 : i64}
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  // expected-error@+1 {{unknown region kind 'dram'}}
  pim.region @r {kind = "dram", channels = array<i64: 0, 1>, banks = array<i64: 0, 1>, rows = array<i64: 0, 1>, bytes = 1 : i64}
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  // expected-error@+1 {{'banks' must be [first, count]}}
  pim.region @r {kind = "weights", channels = array<i64: 0, 1>, banks = array<i64: 0, 0>, rows = array<i64: 0, 1>, bytes = 1 : i64}
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  // expected-error@+1 {{bytes must be positive}}
  pim.region @r {kind = "weights", channels = array<i64: 0, 1>, banks = array<i64: 0, 1>, rows = array<i64: 0, 1>, bytes = 0 : i64}
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  // expected-error@+1 {{region 'nowhere' is not defined}}
  pim.weight "w" {region = @nowhere, format = "fp16", shape = array<i64: 2, 2>, layout = #pim.gemv_rows<n0 = 0, ch0 = 0, nch = 1, row0 = 0, k_rows = 1, k0 = 0, k_len = 2>, rows = array<i64: 0, 1>, bytes = 1 : i64}
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.region @r {kind = "weights", channels = array<i64: 0, 1>, banks = array<i64: 0, 1>, rows = array<i64: 0, 1>, bytes = 1 : i64}
  // expected-error@+1 {{shape must be [N, K]}}
  pim.weight "w" {region = @r, format = "fp16", shape = array<i64: 2>, layout = #pim.gemv_rows<n0 = 0, ch0 = 0, nch = 1, row0 = 0, k_rows = 1, k0 = 0, k_len = 2>, rows = array<i64: 0, 1>, bytes = 1 : i64}
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.region @r {kind = "weights", channels = array<i64: 0, 1>, banks = array<i64: 0, 1>, rows = array<i64: 0, 1>, bytes = 1 : i64}
  // expected-error@+1 {{layout elements [1, 1 + 2) are outside the rows' K = 2}}
  pim.weight "w" {region = @r, format = "fp16", shape = array<i64: 2, 2>, layout = #pim.gemv_rows<n0 = 0, ch0 = 0, nch = 1, row0 = 0, k_rows = 1, k0 = 1, k_len = 2>, rows = array<i64: 0, 1>, bytes = 1 : i64}
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.region @r {kind = "weights", channels = array<i64: 0, 1>, banks = array<i64: 0, 1>, rows = array<i64: 0, 1>, bytes = 1 : i64}
  // expected-error@+1 {{#pim.gemv_rows: nch is 0, must be at least 1; bits is 3, expected 4 or 8; packing 'awq' is not gptq or gptq_v2}}
  pim.weight "w" {region = @r, format = "fp16", shape = array<i64: 2, 2>, layout = #pim.gemv_rows<n0 = 0, ch0 = 0, nch = 0, row0 = 0, k_rows = 1, k0 = 0, k_len = 2, gptq = #pim.gptq<bits = 3, group_size = 32, sym = false, packing = "awq">>, rows = array<i64: 0, 1>, bytes = 1 : i64}
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  // expected-error@+1 {{unknown kernel kind 'magic'}}
  pim.kernel @k attributes {kind = "magic", flops = 0 : i64, bytes = 0 : i64} {
    pim.host_op "logits" {in = {off = 0 : i64, n = 4 : i64, fmt = "f32"}}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  // expected-error@+1 {{flops and bytes must be >= 0}}
  pim.kernel @k attributes {kind = "other", flops = -1 : i64, bytes = 0 : i64} {
    pim.host_op "logits" {in = {off = 0 : i64, n = 4 : i64, fmt = "f32"}}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  // expected-error@+1 {{has no host ops}}
  pim.kernel @k attributes {kind = "other", flops = 0 : i64, bytes = 0 : i64} {
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.kernel @k attributes {kind = "other", flops = 0 : i64, bytes = 0 : i64} {
    // expected-error@+1 {{unknown host op 'fft' (known: embedding, rms_norm, add, rope, gated_act, pack, v_stage, sum, linear, logits, attn_combine, call, layer_norm, moe_route)}}
    pim.host_op "fft" {}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.kernel @k attributes {kind = "other", flops = 0 : i64, bytes = 0 : i64} {
    // expected-error@+1 {{host op 'add' needs 'out'}}
    pim.host_op "add" {a = {off = 0 : i64, n = 4 : i64, fmt = "f32"}, b = {off = 0 : i64, n = 4 : i64, fmt = "f32"}}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.kernel @k attributes {kind = "other", flops = 0 : i64, bytes = 0 : i64} {
    // expected-error@+1 {{'in' needs off, n (integers) and fmt (a string)}}
    pim.host_op "logits" {in = {off = 0 : i64, fmt = "f32"}}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.kernel @k attributes {kind = "other", flops = 0 : i64, bytes = 0 : i64} {
    // expected-error@+1 {{'in' has unknown format 'int3' (f32, fp16, bf16)}}
    pim.host_op "logits" {in = {off = 0 : i64, n = 4 : i64, fmt = "int3"}}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  // expected-error@+1 {{'channels' must be [first, count]}}
  pim.stream @s attributes {channels = array<i64: 0>} {
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{unknown macro-op 'fly'}}
    pim.macro "fly" {}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{'mac_ab' needs field 'count'}}
    pim.macro "mac_ab" {row = 0 : i64, col = 0 : i64}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{'mac_ab' has no field 'bytes'}}
    pim.macro "mac_ab" {row = 0 : i64, col = 0 : i64, count = 1 : i64, bytes = 2 : i64}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{field 'fn' must name a function}}
    pim.macro "sfm" {length = 4 : i64, fn = "cosh"}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{field 'data' names unknown region or buffer @act}}
    pim.macro "rd_acc" {count = 1 : i64, data = #pim.data<@act, 0 : i64>}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.region @act {kind = "activations", channels = array<i64: 0, 1>, banks = array<i64: 0, 1>, rows = array<i64: 0, 1>, bytes = 64 : i64}
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{field 'data' must be a #pim.data}}
    pim.macro "rd_acc" {count = 1 : i64, data = 0 : i64}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    pim.loop 2 : i64 {
      // expected-error@+1 {{field 'row' uses d2, but only 1 loops enclose it (d0 is 'ch')}}
      pim.macro "mac_ab" {row = #pim.index<(d0, d1, d2) -> (d2), []>, col = 0 : i64, count = 1 : i64}
    }
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.region @kv_len {kind = "activations", channels = array<i64: 0, 1>, banks = array<i64: 0, 1>, rows = array<i64: 0, 1>, bytes = 64 : i64}
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{field 'count' uses @kv_len, which is not a pim.param}}
    pim.macro "mac_ab" {row = 0 : i64, col = 0 : i64, count = #pim.index<()[s0] -> (s0), [@kv_len]>}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{#pim.index: 'mod', 'floordiv' and 'ceildiv' are not linear}}
    pim.macro "mac_ab" {row = #pim.index<(d0) -> (d0 mod 2), []>, col = 0 : i64, count = 1 : i64}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.param @a {min = 0 : i64, max = 4 : i64}
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{#pim.index: a product of two variables is not linear}}
    pim.macro "mac_ab" {row = #pim.index<(d0)[s0] -> (d0 * s0), [@a]>, col = 0 : i64, count = 1 : i64}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{#pim.index: the map has 1 symbols but 0 parameters are bound}}
    pim.macro "mac_ab" {row = #pim.index<()[s0] -> (s0), []>, col = 0 : i64, count = 1 : i64}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{#pim.index: a coefficient overflows int64}}
    pim.macro "mac_ab" {row = #pim.index<(d0) -> ((d0 + 1) * 9223372036854775807 + 9223372036854775807), []>, col = 0 : i64, count = 1 : i64}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{field 'col' must be an integer or a #pim.index}}
    pim.macro "mac_ab" {row = 0 : i64, col = 1.0 : f32, count = 1 : i64}
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{field 'count' uses d1, but only 0 loops enclose it (d0 is 'ch')}}
    pim.loop #pim.index<(d0, d1) -> (d1), []> {
      pim.macro "barrier" {}
    }
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{count must be >= 1}}
    pim.loop 0 : i64 {
      pim.macro "barrier" {}
    }
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
    // expected-error@+1 {{has an empty body}}
    pim.loop 2 : i64 {
    }
  }
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.stream @s attributes {channels = array<i64: 0, 1>} {
  }
  // expected-error@+1 {{has no steps}}
  pim.entry @decode []
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  // expected-error@+1 {{step "wait" is not a symbol or "barrier"}}
  pim.entry @decode ["wait"]
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.param @p {min = 0 : i64, max = 1 : i64}
  // expected-error@+1 {{step @p is not a stream or kernel}}
  pim.entry @decode [@p]
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.param @pos {min = 0 : i64, max = 7 : i64}
  // expected-error@+1 {{a device parameter is not derived (no src, add, div or mod)}}
  pim.param @e0 {device, src = @pos, min = 0 : i64, max = 7 : i64}
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  // expected-error@+1 {{timing 9 is outside [0, 7]}}
  pim.param @e0 {device, timing = 9 : i64, min = 0 : i64, max = 7 : i64}
}

// -----
pim.program attributes {target = "t", target_hash = ""} {
  pim.param @e0 {device, min = 0 : i64, max = 7 : i64}
  // expected-error@+1 {{sets @e0 from an offset that is not a non-negative multiple of 4}}
  pim.kernel @k attributes {kind = "other", flops = 0 : i64, bytes = 0 : i64, sets = [{param = @e0, data = #pim.data<@act, 6 : i64>}]} {
    pim.host_op "logits" {in = {off = 0 : i64, n = 4 : i64, fmt = "f32"}}
  }
}
