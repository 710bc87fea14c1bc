//===- JSON.cpp - JSON parsing with a nesting limit -----------------------===//
#include "pimc/Support/JSON.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

/// Position of byte `offset` as llvm::json reports it (1-based line, column).
static std::string position(StringRef text, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return formatv("[{0}:{1}, byte={2}]", line, col, offset);
}

Expected<json::Value> pimc::parseJSON(StringRef text, unsigned maxDepth) {
  // Brackets inside strings do not nest; a string's end is its first
  // unescaped quote. Malformed text is left to the parser to report.
  unsigned depth = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < e && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return createStringError(formatv("{0}: nesting deeper than {1} levels",
                                         position(text, i), maxDepth));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return json::parse(text);
}
