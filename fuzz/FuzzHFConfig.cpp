//===- FuzzHFConfig.cpp - Hugging Face config.json ------------------------===//
//
// The input is a config.json: the importer's parser and validator, the
// `pimc support` analysis, which re-runs them dropping each rejected key,
// and the architecture-feature detectors of the support matrix.
//
//===----------------------------------------------------------------------===//
#include "FuzzInput.h"
#include "pimc/Checkpoint/ArchFeatures.h"
#include "pimc/Checkpoint/HFConfig.h"

using namespace pimc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto config =
      ckpt::parseModelConfigText(fuzz::asText(data, size), "config.json");
  fuzz::ignore(config);
  std::string path =
      fuzz::writeScratch("config.json", fuzz::asText(data, size));
  auto support = ckpt::analyzeConfigSupport(path);
  if (support) {
    auto arch = ckpt::analyzeArchFeatures(path, *support);
    fuzz::ignore(arch);
  }
  fuzz::ignore(support);
  return 0;
}
