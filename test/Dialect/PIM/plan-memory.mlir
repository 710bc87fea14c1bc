// pim-plan-memory: each pim.buffer gets its 64-byte aligned range of act in
// program order (its `offset`; host ops' {buf, off} and macro ops'
// #pim.data<@buffer, ..> keep naming it, and serialization resolves them);
// act goes after the last row the other regions use.
// RUN: pimc-opt %s --split-input-file --pim-register-target=target=%targets/hbm3-pim.json --pim-plan-memory --verify-diagnostics | FileCheck %s
// Planned programs are left as they are.
// RUN: pimc-opt %s --split-input-file --pim-register-target=target=%targets/hbm3-pim.json --pim-plan-memory --verify-diagnostics -o %t.once.mlir
// RUN: pimc-opt %t.once.mlir --split-input-file --pim-plan-memory --verify-diagnostics -o %t.twice.mlir
// RUN: pimc-opt %t.once.mlir --split-input-file -o %t.once.printed.mlir
// RUN: diff %t.once.printed.mlir %t.twice.mlir
// Reuse by lifetime, after pim-schedule (the second and third programs).
// RUN: pimc-opt %S/Inputs/plan-memory-reuse.mlir --split-input-file --pim-register-target=target=%targets/hbm3-pim.json --pim-schedule --pim-plan-memory | FileCheck %S/Inputs/plan-memory-reuse.mlir --check-prefix=REUSE

// a0: 40 bytes -> [0, 64); a1: 100 -> [64, 192); a2: 8 -> [192, 256).
// CHECK-LABEL: pim.program
// CHECK: pim.region @weights
// CHECK-NEXT: pim.region @act {banks = array<i64: 0, 64>, bytes = 256 : i64, channels = array<i64: 0, 4>, kind = "activations", rows = array<i64: 12, 1>}
// CHECK-NEXT: pim.buffer @a0 {bytes = 40 : i64, offset = 0 : i64}
// CHECK-NEXT: pim.buffer @a1 {bytes = 100 : i64, offset = 64 : i64}
// CHECK-NEXT: pim.buffer @a2 {bytes = 8 : i64, offset = 192 : i64}
// CHECK: pim.host_op "add" {a = {buf = @a0, fmt = "f32", n = 4 : i64, off = 16 : i64}
// CHECK: pim.macro "wr_gb" {bytes = 32 : i64, data = #pim.data<@a1, 32 : i64>, offset = 0 : i64}
module {
pim.program attributes {target = "hbm3-pim", target_hash = "sha256:0", pim.max_context = 64 : i64} {
  pim.param @pos {min = 0 : i64, max = 63 : i64}
  pim.region @kv {kind = "kv_cache", channels = array<i64: 0, 2>, banks = array<i64: 0, 64>, rows = array<i64: 0, 4>, bytes = 1048576 : i64}
  pim.region @weights {kind = "weights", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 4, 8>, bytes = 1048576 : i64}
  pim.buffer @a0 {bytes = 40 : i64}
  pim.buffer @a1 {bytes = 100 : i64}
  pim.buffer @a2 {bytes = 8 : i64}
  pim.kernel @k0 attributes {kind = "elementwise", flops = 4 : i64, bytes = 48 : i64} {
    pim.host_op "add" {a = {buf = @a0, off = 16 : i64, n = 4 : i64, fmt = "f32"}, b = {buf = @a1, off = 16 : i64, n = 4 : i64, fmt = "f32"}, out = {buf = @a2, off = 0 : i64, n = 2 : i64, fmt = "f32"}}
    pim.host_op "call" {source = "llm.gelu", mlir = "module {}", args = [{buffer = {buf = @a1, off = 0 : i64, n = 10 : i64, fmt = "f32"}, shape = [10]}, {param = "pos", shape = []}], results = [{buffer = {buf = @a2, off = 8 : i64, n = 2 : i64, fmt = "f32"}, shape = [2]}], weight_bytes = 0 : i64, flops = 0 : i64}
  }
  pim.stream @s0 attributes {channels = array<i64: 0, 4>} {
    pim.macro "wr_gb" {offset = 0 : i64, bytes = 32 : i64, data = #pim.data<@a1, 32 : i64>}
    pim.macro "rd_acc" {count = 1 : i64, data = #pim.data<@a2, #pim.index<(d0) -> (32 * d0), []>>}
  }
  pim.entry @decode [@k0, @s0]
}
}

// -----

// The model needs more rows than the target has: the shortfall and what
// takes the rows (hbm3-pim: 16384 rows per bank).
// expected-error@+1 {{model does not fit target 'hbm3-pim': it needs 16385 DRAM rows per bank, the target has 16384 (short by 1 rows = 0.3 MB); weights take 16000 rows (4194.3 MB placed), the KV cache 384 rows (4096 positions; --max-context lowers it), activations 1 rows}}
module {
pim.program attributes {target = "hbm3-pim", target_hash = "sha256:0", pim.max_context = 4096 : i64} {
  pim.region @kv {kind = "kv_cache", channels = array<i64: 0, 2>, banks = array<i64: 0, 64>, rows = array<i64: 0, 384>, bytes = 1048576 : i64}
  pim.region @weights {kind = "weights", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 384, 16000>, bytes = 1048576 : i64}
  pim.buffer @a0 {bytes = 40 : i64}
  pim.entry @decode ["barrier"]
}
}

// -----

module {
pim.program attributes {target = "hbm3-pim", target_hash = "sha256:0"} {
  pim.region @weights {kind = "weights", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 0, 8>, bytes = 1048576 : i64}
  pim.region @act {kind = "activations", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 8, 1>, bytes = 64 : i64}
  // expected-error@+1 {{'pim.buffer' op cannot be placed: the program already has an 'act' region}}
  pim.buffer @a0 {bytes = 40 : i64}
  pim.entry @decode ["barrier"]
}
}
