// A #pim.target must be a target pimsim accepts.
// RUN: pimc-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{#pim.target 'x': schema_version: missing}}
module attributes {pim.target = #pim.target<name = "x", hash = "sha256:0", spec = {}>} {
}

// -----

// expected-error @+1 {{spec.clock: not a JSON value}}
module attributes {pim.target = #pim.target<name = "x", hash = "sha256:0", spec = {clock = dense<1> : tensor<1xi32>}>} {
}
