//===- JSON.h - JSON parsing with a nesting limit ---------------*- C++ -*-===//
//
// llvm::json::parse recurses once per nesting level, so a small hostile file
// ("[[[[...") overflows the stack. Every JSON input pimc and pimsim read
// (config.json, safetensors headers and indexes, FX graphs, targets, program
// parameters) goes through parseJSON, which rejects nesting deeper than
// kMaxJSONDepth before parsing. Errors keep llvm::json's form,
// "[line:col, byte=N]: message", which callers prefix with the file.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_SUPPORT_JSON_H
#define PIMC_SUPPORT_JSON_H

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace pimc {

/// The deepest nesting of arrays and objects any pimc input needs is about
/// 10 (FX graph arguments); 64 leaves room and keeps recursion shallow.
inline constexpr unsigned kMaxJSONDepth = 64;

llvm::Expected<llvm::json::Value> parseJSON(llvm::StringRef text,
                                            unsigned maxDepth = kMaxJSONDepth);

} // namespace pimc

#endif // PIMC_SUPPORT_JSON_H
