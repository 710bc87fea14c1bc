// pim-register-target puts the whole target on the module; the attribute
// prints, parses back and verifies through pimsim's target reader.
// RUN: pimc-opt %s --pim-register-target=target=%targets/hbm3-pim.json | FileCheck %s
// RUN: pimc-opt %s --pim-register-target=target=%targets/hbm3-pim.json | pimc-opt | FileCheck %s
// Registering the same target again keeps it.
// RUN: pimc-opt %s --pim-register-target=target=%targets/hbm3-pim.json --pim-register-target=target=%targets/hbm3-pim.json | FileCheck %s
// RUN: not pimc-opt %s --pim-register-target=target=%targets/hbm3-pim.json --pim-register-target=target=%targets/gddr6-aim.json 2>&1 | FileCheck %s --check-prefix=OTHER
// RUN: not pimc-opt %s --pim-register-target 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not pimc-opt %s --pim-register-target=target=%t.missing.json 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: echo '{"name": "x"}' > %t.bad.json
// RUN: not pimc-opt %s --pim-register-target=target=%t.bad.json 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK: module attributes {pim.target = #pim.target<name = "hbm3-pim", hash = "sha256:{{[0-9a-f]+}}", spec = {
// CHECK-SAME: clock = {tck_ps = 769 : i64}
// CHECK-SAME: organization = {access_bytes = 32 : i64, bank_groups = 4 : i64, banks = 4 : i64, channels = 16 : i64
// OTHER: error: the module is already compiled for target 'hbm3-pim' (sha256:{{.*}}), not {{.*}}gddr6-aim.json ('gddr6-aim', sha256:
// NOFILE: error: pim-register-target needs a target file (target=targets/<name>.json)
// MISSING: error: {{.*}}missing.json: No such file or directory
// BAD: error: {{.*}}bad.json: {{.*}}missing
module {
}
