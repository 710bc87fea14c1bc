//===- FuzzHFConfig.cpp - Hugging Face config.json ------------------------===//
//
// The input is a config.json: the importer's parser and validator, and the
// `pimc support` analysis, which re-runs them dropping each rejected key.
//
//===----------------------------------------------------------------------===//
#include "FuzzInput.h"
#include "pimc/Checkpoint/HFConfig.h"

using namespace pimc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto config =
      ckpt::parseModelConfigText(fuzz::asText(data, size), "config.json");
  fuzz::ignore(config);
  std::string path =
      fuzz::writeScratch("config.json", fuzz::asText(data, size));
  auto support = ckpt::analyzeConfigSupport(path);
  fuzz::ignore(support);
  return 0;
}
