// Input of plan-memory.mlir (REUSE): buffers whose lifetimes do not overlap
// share bytes. Each kernel is its own epoch after pim-schedule (each reads
// what the one before wrote).
// a0 lives in epochs [0, 1], a1 [1, 2], a2 [2, 3]; a3 feeds the logits, which
// the runtime reads after the run: live throughout.
// a3 -> 0 (first: live throughout); a0 -> 64; a1 -> 128 (a3 and a0 are
// live); a2 -> 64 (a0 is dead by epoch 2). 192 bytes, not 256.
// REUSE-LABEL: pim.program attributes {pim.act_bytes = 192 : i64
// REUSE: pim.region @act {{{.*}}bytes = 192 : i64
// REUSE-NEXT: pim.buffer @a0 {bytes = 64 : i64, offset = 64 : i64}
// REUSE-NEXT: pim.buffer @a1 {bytes = 64 : i64, offset = 128 : i64}
// REUSE-NEXT: pim.buffer @a2 {bytes = 64 : i64, offset = 64 : i64}
// REUSE-NEXT: pim.buffer @a3 {bytes = 64 : i64, offset = 0 : i64}
// REUSE: pim.entry @decode [@k0, "barrier", @k1, "barrier", @k2, "barrier", @k3, "barrier", @k4, "barrier"]
module {
pim.program attributes {target = "hbm3-pim", target_hash = "sha256:0", pim.max_context = 64 : i64} {
  pim.region @kv {kind = "kv_cache", channels = array<i64: 0, 2>, banks = array<i64: 0, 64>, rows = array<i64: 0, 4>, bytes = 1048576 : i64}
  pim.region @weights {kind = "weights", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 4, 8>, bytes = 1048576 : i64}
  pim.buffer @a0 {bytes = 64 : i64}
  pim.buffer @a1 {bytes = 64 : i64}
  pim.buffer @a2 {bytes = 64 : i64}
  pim.buffer @a3 {bytes = 64 : i64}
  pim.kernel @k0 attributes {kind = "embedding", flops = 0 : i64, bytes = 64 : i64} {
    pim.host_op "embedding" {table = {tensor = "emb", shape = [8, 16]}, out = {buf = @a0, off = 0 : i64, n = 16 : i64, fmt = "f32"}}
  }
  pim.kernel @k1 attributes {kind = "elementwise", flops = 16 : i64, bytes = 64 : i64} {
    pim.host_op "add" {a = {buf = @a0, off = 0 : i64, n = 16 : i64, fmt = "f32"}, b = {buf = @a0, off = 0 : i64, n = 16 : i64, fmt = "f32"}, out = {buf = @a1, off = 0 : i64, n = 16 : i64, fmt = "f32"}}
  }
  pim.kernel @k2 attributes {kind = "elementwise", flops = 16 : i64, bytes = 64 : i64} {
    pim.host_op "add" {a = {buf = @a1, off = 0 : i64, n = 16 : i64, fmt = "f32"}, b = {buf = @a1, off = 0 : i64, n = 16 : i64, fmt = "f32"}, out = {buf = @a2, off = 0 : i64, n = 16 : i64, fmt = "f32"}}
  }
  pim.kernel @k3 attributes {kind = "elementwise", flops = 16 : i64, bytes = 64 : i64} {
    pim.host_op "add" {a = {buf = @a2, off = 0 : i64, n = 16 : i64, fmt = "f32"}, b = {buf = @a2, off = 0 : i64, n = 16 : i64, fmt = "f32"}, out = {buf = @a3, off = 0 : i64, n = 16 : i64, fmt = "f32"}}
  }
  pim.kernel @k4 attributes {kind = "other", flops = 0 : i64, bytes = 64 : i64} {
    pim.host_op "logits" {in = {buf = @a3, off = 0 : i64, n = 16 : i64, fmt = "f32"}}
  }
  pim.entry @decode [@k0, @k1, @k2, @k3, @k4]
}
}

// -----

// b1 is read before the run writes it (its value would be an earlier run's):
// live throughout, so it keeps bytes no later buffer takes. b0 [0, 1], b1
// throughout, b2 [1, 2], b3 [2, 2]: b1 -> 0, b0 -> 64, b2 -> 128, b3 -> 64
// (b0's bytes; b1's, were it not live throughout, would be free too).
// REUSE-LABEL: pim.program attributes {pim.act_bytes = 192 : i64
// REUSE: pim.buffer @b0 {bytes = 64 : i64, offset = 64 : i64}
// REUSE-NEXT: pim.buffer @b1 {bytes = 64 : i64, offset = 0 : i64}
// REUSE-NEXT: pim.buffer @b2 {bytes = 64 : i64, offset = 128 : i64}
// REUSE-NEXT: pim.buffer @b3 {bytes = 64 : i64, offset = 64 : i64}
// REUSE: pim.entry @decode [@k0, "barrier", @k1, "barrier", @k2, "barrier"]
module {
pim.program attributes {target = "hbm3-pim", target_hash = "sha256:0", pim.max_context = 64 : i64} {
  pim.region @weights {kind = "weights", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 0, 8>, bytes = 1048576 : i64}
  pim.buffer @b0 {bytes = 64 : i64}
  pim.buffer @b1 {bytes = 64 : i64}
  pim.buffer @b2 {bytes = 64 : i64}
  pim.buffer @b3 {bytes = 64 : i64}
  pim.kernel @k0 attributes {kind = "embedding", flops = 0 : i64, bytes = 64 : i64} {
    pim.host_op "embedding" {table = {tensor = "emb", shape = [8, 16]}, out = {buf = @b0, off = 0 : i64, n = 16 : i64, fmt = "f32"}}
  }
  pim.kernel @k1 attributes {kind = "elementwise", flops = 16 : i64, bytes = 64 : i64} {
    pim.host_op "add" {a = {buf = @b0, off = 0 : i64, n = 16 : i64, fmt = "f32"}, b = {buf = @b1, off = 0 : i64, n = 16 : i64, fmt = "f32"}, out = {buf = @b2, off = 0 : i64, n = 16 : i64, fmt = "f32"}}
  }
  pim.kernel @k2 attributes {kind = "elementwise", flops = 16 : i64, bytes = 64 : i64} {
    pim.host_op "add" {a = {buf = @b2, off = 0 : i64, n = 16 : i64, fmt = "f32"}, b = {buf = @b2, off = 0 : i64, n = 16 : i64, fmt = "f32"}, out = {buf = @b3, off = 0 : i64, n = 16 : i64, fmt = "f32"}}
  }
  pim.entry @decode [@k0, @k1, @k2]
}
}

// -----

// Macro-op writes: the rd_acc of s0 covers c0 (32 bytes per channel, 32
// apart); the one of s1 leaves gaps in c1 (32 bytes every 64), so the add
// reads bytes of c1 the run has not written: c1 is live throughout. s0 and
// s1 use the PIM units of the same channels: one epoch each. c0 [0, 2], c1
// throughout, c2 [2, 3], c3 [3, 3]: c1 -> 0, c0 -> 256, c2 -> 384, c3 -> 256
// (c0's bytes).
// REUSE-LABEL: pim.program attributes {pim.act_bytes = 448 : i64
// REUSE: pim.buffer @c0 {bytes = 128 : i64, offset = 256 : i64}
// REUSE-NEXT: pim.buffer @c1 {bytes = 256 : i64, offset = 0 : i64}
// REUSE-NEXT: pim.buffer @c2 {bytes = 64 : i64, offset = 384 : i64}
// REUSE-NEXT: pim.buffer @c3 {bytes = 64 : i64, offset = 256 : i64}
// REUSE: pim.entry @decode [@s0, "barrier", @s1, "barrier", @k2, "barrier", @k3, "barrier"]
module {
pim.program attributes {target = "hbm3-pim", target_hash = "sha256:0", pim.max_context = 64 : i64} {
  pim.region @weights {kind = "weights", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 0, 8>, bytes = 1048576 : i64}
  pim.buffer @c0 {bytes = 128 : i64}
  pim.buffer @c1 {bytes = 256 : i64}
  pim.buffer @c2 {bytes = 64 : i64}
  pim.buffer @c3 {bytes = 64 : i64}
  pim.stream @s0 attributes {channels = array<i64: 0, 4>} {
    pim.macro "rd_acc" {count = 1 : i64, data = #pim.data<@c0, #pim.index<(d0) -> (d0 * 32), []>>}
  }
  pim.stream @s1 attributes {channels = array<i64: 0, 4>} {
    pim.macro "rd_acc" {count = 1 : i64, data = #pim.data<@c1, #pim.index<(d0) -> (d0 * 64), []>>}
  }
  pim.kernel @k2 attributes {kind = "elementwise", flops = 16 : i64, bytes = 64 : i64} {
    pim.host_op "add" {a = {buf = @c0, off = 0 : i64, n = 16 : i64, fmt = "f32"}, b = {buf = @c1, off = 0 : i64, n = 16 : i64, fmt = "f32"}, out = {buf = @c2, off = 0 : i64, n = 16 : i64, fmt = "f32"}}
  }
  pim.kernel @k3 attributes {kind = "elementwise", flops = 16 : i64, bytes = 64 : i64} {
    pim.host_op "add" {a = {buf = @c2, off = 0 : i64, n = 16 : i64, fmt = "f32"}, b = {buf = @c2, off = 0 : i64, n = 16 : i64, fmt = "f32"}, out = {buf = @c3, off = 0 : i64, n = 16 : i64, fmt = "f32"}}
  }
  pim.entry @decode [@s0, @s1, @k2, @k3]
}
}
