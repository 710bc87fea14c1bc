//===- Trace.cpp - AttAcc-format request traces ---------------------------===//
//
// The format is AttAcc's PIMLoadStoreTrace front end: the whole file is read
// first, and any line that is not exactly `<TYPE> <ADDR>` is fatal (here: an
// error naming the file and line) instead of being skipped.
//
//===----------------------------------------------------------------------===//

#include "pimsim/Trace.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;

namespace pimsim {

namespace {

Error lineError(StringRef source, size_t line, const Twine &message) {
  return createStringError(inconvertibleErrorCode(),
                           source + ":" + Twine(line) + ": " + message);
}

/// The request types AttAcc's trace front end accepts (section 7.1). Our
/// own request types (RD_ACC, EWMUL, AF) come from programs, never traces.
bool isTraceType(RequestType type) {
  switch (type) {
  case RequestType::RdAcc:
  case RequestType::EwMul:
  case RequestType::Af:
    return false;
  default:
    return true;
  }
}

} // namespace

Expected<std::vector<Request>> parseTrace(StringRef text,
                                          StringRef sourceName) {
  std::vector<Request> requests;
  size_t lineNo = 0;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    ++lineNo;
    // Tolerate CRLF files; a stray '\r' anywhere else is still an error.
    line.consume_back("\r");

    SmallVector<StringRef, 4> tokens;
    line.split(tokens, ' ', /*MaxSplit=*/-1, /*KeepEmpty=*/true);
    if (tokens.size() < 2 || tokens.size() > 3)
      return lineError(
          sourceName, lineNo,
          "expected '<TYPE> <ADDR>' separated by one space, got '" + line +
              "'");
    for (StringRef tok : tokens)
      if (tok.empty())
        return lineError(sourceName, lineNo,
                         "empty field (fields are separated by exactly one "
                         "space): '" +
                             line + "'");

    std::optional<RequestType> type = parseRequestType(tokens[0]);
    if (!type || !isTraceType(*type))
      return lineError(sourceName, lineNo,
                       "unknown request type '" + tokens[0] + "'");

    Request req;
    req.type = *type;
    req.tag = static_cast<uint32_t>(requests.size());

    StringRef addrText = tokens[1];
    bool bad;
    if (addrText.starts_with("0x") || addrText.starts_with("0X"))
      bad = addrText.drop_front(2).getAsInteger(16, req.addr);
    else
      bad = addrText.getAsInteger(10, req.addr);
    if (bad)
      return lineError(sourceName, lineNo,
                       "invalid address '" + addrText +
                           "' (hexadecimal with 0x, else decimal, 64 bits)");

    if (tokens.size() == 3) {
      if (req.type != RequestType::Read && req.type != RequestType::Write)
        return lineError(sourceName, lineNo,
                         "an arrival cycle is only allowed on LD/ST, not on " +
                             tokens[0]);
      uint64_t arrival;
      if (tokens[2].getAsInteger(10, arrival))
        return lineError(sourceName, lineNo,
                         "invalid arrival cycle '" + tokens[2] + "'");
      if (arrival > static_cast<uint64_t>(kMaxArrivalCycle))
        return lineError(sourceName, lineNo,
                         "arrival cycle " + tokens[2] + " is above the limit " +
                             Twine(kMaxArrivalCycle));
      req.arrival = static_cast<int64_t>(arrival);
    }
    requests.push_back(req);
  }
  return requests;
}

Expected<std::vector<Request>> loadTrace(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(path, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return createStringError(buffer.getError(),
                             path + ": " + buffer.getError().message());
  return parseTrace((*buffer)->getBuffer(), path);
}

} // namespace pimsim
