//===- Pipeline.cpp - pim-backend: the one backend pipeline ---------------===//
//
// pimc compile, pimc support and pimc-opt all build the backend from here.
//
//===----------------------------------------------------------------------===//
#include "pimc/Conversion/LLMToPIM/Passes.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"
#include "pimc/Dialect/PIM/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace pimc::pim;

void pimc::pim::buildBackendPipeline(OpPassManager &pm,
                                     const BackendPipelineOptions &options,
                                     BackendPhase first, BackendPhase last) {
  if (first <= BackendPhase::Dispatch && last >= BackendPhase::Dispatch) {
    // A graph traced over a prompt becomes a decode step first (a decode
    // step from the HF importer passes unchanged).
    llm::SynthesizeDecodeOptions decode;
    if (options.maxContext > 0)
      decode.maxContext = options.maxContext;
    pm.addPass(llm::createSynthesizeDecode(decode));
    PIMRegisterTargetOptions target;
    target.targetFile = options.target;
    pm.addPass(createPIMRegisterTarget(target));
    PIMDispatchOptions dispatch;
    dispatch.force.assign(options.dispatch.begin(), options.dispatch.end());
    pm.addPass(createPIMDispatch(dispatch));
  }
  if (first <= BackendPhase::Convert && last >= BackendPhase::Convert) {
    pm.addPass(createPIMCheckContract());
    pm.addPass(createConvertLLMToPIM());
    PIMTileOptions tile;
    tile.maxContext = options.maxContext;
    tile.channels = options.channels;
    tile.attentionSplit = options.attentionSplit;
    pm.addPass(createPIMTile(tile));
    PIMSelectKernelsOptions select;
    select.kernels = options.kernels;
    pm.addPass(createPIMSelectKernels(select));
  }
  if (first <= BackendPhase::Program && last >= BackendPhase::Program) {
    pm.addPass(createPIMFuseHostCalls());
    pm.addPass(createPIMBuildProgram());
    pm.addPass(createPIMFuseHostKernels());
    pm.addPass(createPIMSchedule());
    pm.addPass(createPIMPlanMemory());
  }
}

namespace {
#define GEN_PASS_REGISTRATION
#include "pimc/Conversion/LLMToPIM/Passes.h.inc"
} // namespace

void pimc::pim::registerBackendPasses() {
  registerPIMPasses();
  registerLLMToPIMPasses();
  PassPipelineRegistration<BackendPipelineOptions>(
      "pim-backend",
      "The backend: synthesize a decode step (graphs traced over a prompt), "
      "register the target, dispatch, check the contract, "
      "convert the device work to pim ops, tile them, build the pim.program "
      "(docs/backend.md)",
      [](OpPassManager &pm, const BackendPipelineOptions &options) {
        buildBackendPipeline(pm, options);
      });
}
