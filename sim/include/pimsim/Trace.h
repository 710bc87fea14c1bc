//===- Trace.h - AttAcc-format request traces --------------------*- C++
//-*-===//
//
// Reads the request traces of AttAcc's Ramulator-2.0 front end
// (specs/pim-hardware.md section 7.1): one request per line, `<TYPE> <ADDR>`
// separated by exactly one space. TYPE is LD, ST, PIM_MAC_AB, PIM_MAC_SB,
// PIM_MAC_PB, PIM_WR_GB, PIM_MV_SB, PIM_MV_GB, PIM_SFM, PIM_SET_MODEL,
// PIM_SET_HEAD or PIM_BARRIER; ADDR is a byte address, hexadecimal with a
// 0x/0X prefix, otherwise decimal.
//
// Our extension: a plain memory request (LD/ST) may carry a third token, the
// decimal cycle at which it arrives (Request::arrival); without it a request
// arrives at cycle 0 and the front end feeds requests in order.
//
//===----------------------------------------------------------------------===//
#ifndef PIMSIM_TRACE_H
#define PIMSIM_TRACE_H

#include "pimsim/Engine.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace pimsim {

/// Parses trace text. `sourceName` prefixes errors ("<source>:<line>: ...").
/// Each request's tag is its 0-based line index.
llvm::Expected<std::vector<Request>> parseTrace(llvm::StringRef text,
                                                llvm::StringRef sourceName);

/// Reads and parses a trace file (errors name the file and line).
llvm::Expected<std::vector<Request>> loadTrace(llvm::StringRef path);

} // namespace pimsim

#endif // PIMSIM_TRACE_H
