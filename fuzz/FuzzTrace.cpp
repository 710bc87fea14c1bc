//===- FuzzTrace.cpp - request traces (plain and AttAcc PIM) --------------===//
#include "FuzzInput.h"
#include "pimsim/Trace.h"

using namespace pimc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto requests = pimsim::parseTrace(fuzz::asText(data, size), "input.trace");
  if (requests)
    fuzz::sink(requests->size());
  fuzz::ignore(requests);
  return 0;
}
