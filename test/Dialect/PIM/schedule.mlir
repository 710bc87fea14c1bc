// pim-schedule: a barrier before each step that touches what an earlier step
// of its phase writes (or writes what it touches), one at the end; none
// between independent steps.
// RUN: pimc-opt %s --pim-register-target=target=%targets/hbm3-pim.json --pim-schedule | FileCheck %s
// The pass keeps the barriers it finds: a second run changes nothing.
// RUN: pimc-opt %s --pim-register-target=target=%targets/hbm3-pim.json --pim-schedule -o %t.once.mlir
// RUN: pimc-opt %t.once.mlir --pim-schedule -o %t.twice.mlir
// RUN: diff %t.once.mlir %t.twice.mlir

// k0 writes act[128, 144), which s0 broadcasts: a barrier. s1 (other
// channels, other bytes) and k1 (other bytes) run with s0. s1's readout
// covers act[2048, 2176) over its 4 channels (32 bytes each): k2 reads just
// past it and runs on; k3 reads its last channel's slot and waits.
// st0 stores KV rows 1-2 on channels 0-3; at1 reads row 1 on channels 4-7
// (no conflict), at0 row 2 on channels 0-3 (a barrier).
// CHECK: pim.entry @decode [@k0, "barrier", @s0, @s1, @k1, @k2, "barrier", @k3, @st0, @at1, "barrier", @at0, "barrier"]
pim.program attributes {target = "hbm3-pim", target_hash = "sha256:0"} {
  pim.param @pos {min = 0 : i64, max = 2047 : i64}
  pim.region @kv {kind = "kv_cache", channels = array<i64: 0, 8>, banks = array<i64: 0, 64>, rows = array<i64: 0, 4>, bytes = 1048576 : i64}
  pim.region @act {kind = "activations", channels = array<i64: 0, 8>, banks = array<i64: 0, 64>, rows = array<i64: 8, 1>, bytes = 16384 : i64}
  pim.kernel @k0 attributes {kind = "elementwise", flops = 4 : i64, bytes = 48 : i64} {
    pim.host_op "add" {a = {off = 0 : i64, n = 4 : i64, fmt = "f32"}, b = {off = 64 : i64, n = 4 : i64, fmt = "f32"}, out = {off = 128 : i64, n = 4 : i64, fmt = "f32"}}
  }
  pim.stream @s0 attributes {channels = array<i64: 0, 4>} {
    pim.macro "wr_gb" {offset = 0 : i64, bytes = 32 : i64, data = #pim.data<@act, 128 : i64>}
    pim.macro "rd_acc" {count = 1 : i64, data = #pim.data<@act, #pim.index<(d0) -> (4096 + 32 * d0), []>>}
  }
  pim.stream @s1 attributes {channels = array<i64: 4, 4>} {
    pim.macro "wr_gb" {offset = 0 : i64, bytes = 32 : i64, data = #pim.data<@act, 1024 : i64>}
    pim.macro "rd_acc" {count = 1 : i64, data = #pim.data<@act, #pim.index<(d0) -> (2048 + 32 * d0), []>>}
  }
  pim.kernel @k1 attributes {kind = "elementwise", flops = 4 : i64, bytes = 48 : i64} {
    pim.host_op "add" {a = {off = 8192 : i64, n = 4 : i64, fmt = "f32"}, b = {off = 8256 : i64, n = 4 : i64, fmt = "f32"}, out = {off = 8320 : i64, n = 4 : i64, fmt = "f32"}}
  }
  pim.kernel @k2 attributes {kind = "elementwise", flops = 4 : i64, bytes = 48 : i64} {
    pim.host_op "add" {a = {off = 2176 : i64, n = 4 : i64, fmt = "f32"}, b = {off = 8256 : i64, n = 4 : i64, fmt = "f32"}, out = {off = 8448 : i64, n = 4 : i64, fmt = "f32"}}
  }
  pim.kernel @k3 attributes {kind = "elementwise", flops = 4 : i64, bytes = 48 : i64} {
    pim.host_op "add" {a = {off = 2144 : i64, n = 4 : i64, fmt = "f32"}, b = {off = 8256 : i64, n = 4 : i64, fmt = "f32"}, out = {off = 8512 : i64, n = 4 : i64, fmt = "f32"}}
  }
  pim.stream @st0 attributes {channels = array<i64: 0, 4>} {
    pim.loop 2 : i64 {
      pim.macro "st" {bank = 0 : i64, row = #pim.index<(d0, d1) -> (1 + d1), []>, col = 0 : i64, count = 1 : i64, data = #pim.data<@act, 12288 : i64>}
    }
  }
  pim.stream @at1 attributes {channels = array<i64: 4, 4>} {
    pim.macro "mac_ab" {row = 1 : i64, col = 0 : i64, count = 4 : i64}
  }
  pim.stream @at0 attributes {channels = array<i64: 0, 4>} {
    pim.macro "mac_ab" {row = 2 : i64, col = 0 : i64, count = 4 : i64}
  }
  pim.entry @decode [@k0, @s0, @s1, @k1, @k2, @k3, @st0, @at1, @at0]
}

// (2.3) Device parameters: @route sets @e0; @expert's MAC row uses @e1,
// derived from @e0, and @dense uses neither. @expert waits for @route (its
// rows are chosen when it is expanded, after the phase in which @route ran);
// @dense runs with @route. The next layer's router @route2 sets @e0 again:
// it waits for @expert, which read it.
// CHECK: pim.entry @decode [@route, @dense, "barrier", @expert, "barrier", @route2, "barrier"]
pim.program attributes {target = "hbm3-pim", target_hash = "sha256:0"} {
  pim.param @e0 {device, min = 0 : i64, max = 7 : i64}
  pim.param @e1 {src = @e0, add = 1 : i64, min = 1 : i64, max = 8 : i64}
  pim.region @w {kind = "weights", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 0, 64>, bytes = 16777216 : i64}
  pim.region @act {kind = "activations", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 100, 1>, bytes = 16384 : i64}
  pim.kernel @route attributes {kind = "other", flops = 0 : i64, bytes = 0 : i64, sets = [{param = @e0, data = #pim.data<@act, 64 : i64>}]} {
    pim.host_op "moe_route" {in = {off = 0 : i64, n = 8 : i64, fmt = "f32"}, out = {off = 96 : i64, n = 1 : i64, fmt = "f32"}, experts = {off = 64 : i64, n = 1 : i64, fmt = "i32"}, top_k = 1 : i64}
  }
  pim.stream @dense attributes {channels = array<i64: 0, 4>} {
    pim.macro "mac_ab" {row = 60 : i64, col = 0 : i64, count = 32 : i64}
  }
  pim.stream @expert attributes {channels = array<i64: 0, 4>} {
    pim.macro "mac_ab" {row = #pim.index<()[s0] -> (s0 * 4), [@e1]>, col = 0 : i64, count = 32 : i64}
  }
  pim.kernel @route2 attributes {kind = "other", flops = 0 : i64, bytes = 0 : i64, sets = [{param = @e0, data = #pim.data<@act, 128 : i64>}]} {
    pim.host_op "moe_route" {in = {off = 256 : i64, n = 8 : i64, fmt = "f32"}, out = {off = 160 : i64, n = 1 : i64, fmt = "f32"}, experts = {off = 128 : i64, n = 1 : i64, fmt = "i32"}, top_k = 1 : i64}
  }
  pim.entry @decode [@route, @dense, @expert, @route2]
}

// The PIM units of a channel are exclusive: @m0 and @m1 touch disjoint rows
// and bytes but both MAC on channels 2-3 (the accumulators and global buffer
// of those channels), so @m1 waits; @m2 (channels 4-7) runs with @m0; @ld0
// only loads rows on channels 0-3 (no PIM unit) and runs with @m0.
// CHECK: pim.entry @decode [@m0, @m2, @ld0, "barrier", @m1, "barrier"]
pim.program attributes {target = "hbm3-pim", target_hash = "sha256:0"} {
  pim.region @act {kind = "activations", channels = array<i64: 0, 8>, banks = array<i64: 0, 64>, rows = array<i64: 100, 1>, bytes = 16384 : i64}
  pim.stream @m0 attributes {channels = array<i64: 0, 4>} {
    pim.macro "mac_ab" {row = 10 : i64, col = 0 : i64, count = 32 : i64}
  }
  pim.stream @m1 attributes {channels = array<i64: 2, 2>} {
    pim.macro "mac_ab" {row = 20 : i64, col = 0 : i64, count = 32 : i64}
  }
  pim.stream @m2 attributes {channels = array<i64: 4, 4>} {
    pim.macro "mac_ab" {row = 30 : i64, col = 0 : i64, count = 32 : i64}
  }
  pim.stream @ld0 attributes {channels = array<i64: 0, 4>} {
    pim.macro "ld" {bank = 0 : i64, row = 40 : i64, col = 0 : i64, count = 1 : i64, data = #pim.data<@act, 0 : i64>}
  }
  pim.entry @decode [@m0, @m2, @ld0, @m1]
}
