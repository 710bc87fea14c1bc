// RUN: pimc-opt %s | FileCheck %s
// RUN: pimc-opt %s | pimc-opt | FileCheck %s
// RUN: pimc-opt %s --mlir-print-op-generic | pimc-opt | FileCheck %s

// CHECK-LABEL: pim.program
// CHECK: pim.param @pos {max = 2047 : i64, min = 0 : i64}
// CHECK: pim.param @kv_len {add = 1 : i64, max = 2048 : i64, min = 1 : i64, src = @pos}
// CHECK: pim.region @weights
// CHECK: pim.weight "w" {{.*}}layout = #pim.gemv_rows<n0 = 0, ch0 = 0, nch = 4, row0 = 4, k_rows = 2, k0 = 0, k_len = 1024>
// CHECK: pim.kernel @norm
// CHECK-NEXT: pim.host_op "rms_norm"
// CHECK-NEXT: pim.host_op "moe_route" {experts = {fmt = "i32", n = 2 : i64, off = 96 : i64}, in = {fmt = "f32", n = 8 : i64, off = 0 : i64}, out = {fmt = "f32", n = 2 : i64, off = 128 : i64}, renormalize = true, top_k = 2 : i64}
// CHECK: pim.stream @gemv
// CHECK: pim.macro "wr_gb" {bytes = 1024 : i64, data = #pim.data<@act, 0 : i64>, offset = 0 : i64}
// CHECK: pim.loop 2 : i64 {
// CHECK-NEXT: pim.macro "mac_ab" {col = 0 : i64, count = 32 : i64, offset = 1024 : i64, row = #pim.index<(d0, d1) -> (d1 * 2 + 4), []>}
// CHECK-NEXT: pim.macro "rd_acc" {count = 8 : i64, data = #pim.data<@act, #pim.index<(d0, d1) -> (d0 * 256 + d1 * 1024 + 1024), []>>}
// CHECK: pim.loop #pim.index<()[s0] -> (s0), [@kv_len]> {
// CHECK: pim.macro "sfm" {fn = "exp", length = #pim.index<()[s0] -> (s0), [@kv_len]>}
// CHECK: pim.entry @decode [@norm, "barrier", @gemv]
pim.program attributes {target = "hbm3-pim", target_hash = "sha256:0"} {
  pim.param @pos {min = 0 : i64, max = 2047 : i64}
  pim.param @kv_len {src = @pos, add = 1 : i64, min = 1 : i64, max = 2048 : i64}
  pim.region @weights {kind = "weights", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 4, 4>, bytes = 1048576 : i64}
  pim.region @act {kind = "activations", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 8, 1>, bytes = 4096 : i64}
  pim.weight "w" {region = @weights, format = "fp16", shape = array<i64: 512, 1024>, layout = #pim.gemv_rows<n0 = 0, ch0 = 0, nch = 4, row0 = 4, k_rows = 2, k0 = 0, k_len = 1024>, rows = array<i64: 4, 4>, bytes = 1048576 : i64}
  pim.kernel @norm attributes {kind = "rmsnorm", flops = 10 : i64, bytes = 10 : i64} {
    pim.host_op "rms_norm" {in = {off = 0 : i64, n = 8 : i64, fmt = "f32"}, out = {off = 64 : i64, n = 8 : i64, fmt = "f32"}, weight = {tensor = "n", shape = [8]}, eps = 1.0e-5 : f64}
    pim.host_op "moe_route" {in = {off = 0 : i64, n = 8 : i64, fmt = "f32"}, out = {off = 128 : i64, n = 2 : i64, fmt = "f32"}, experts = {off = 96 : i64, n = 2 : i64, fmt = "i32"}, top_k = 2 : i64, renormalize = true}
  }
  pim.stream @gemv attributes {channels = array<i64: 0, 4>} {
    pim.macro "wr_gb" {offset = 0 : i64, bytes = 1024 : i64, data = #pim.data<@act, 0 : i64>}
    pim.macro "barrier" {}
    // d0 is ch, d1 the loop's iteration.
    pim.loop 2 : i64 {
      pim.macro "mac_ab" {row = #pim.index<(d0, d1) -> (4 + 2 * d1), []>, col = 0 : i64, count = 32 : i64, offset = 1024 : i64}
      pim.macro "rd_acc" {count = 8 : i64, data = #pim.data<@act, #pim.index<(d0, d1) -> (1024 + 256 * d0 + 1024 * d1), []>>}
    }
    pim.loop #pim.index<()[s0] -> (s0), [@kv_len]> {
      pim.macro "mv_sb" {bank = 0 : i64, count = 8 : i64}
    }
    pim.macro "sfm" {length = #pim.index<()[s0] -> (s0), [@kv_len]>, fn = "exp"}
  }
  pim.entry @decode [@norm, "barrier", @gemv]
}
