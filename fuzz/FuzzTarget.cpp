//===- FuzzTarget.cpp - target JSON ---------------------------------------===//
#include "FuzzInput.h"
#include "pimsim/Target.h"

using namespace pimc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto target = pimsim::parseTarget(fuzz::asText(data, size), "target.json");
  fuzz::ignore(target);
  return 0;
}
