//===- pimc.cpp - the pimc compiler driver --------------------------------===//
//
//   pimc import <checkpoint-dir | model.onnx> -o model.mlir
//   pimc run-ref <checkpoint-dir> --prompt-ids 1,2,3 --max-new-tokens N
//   pimc run-ref graph.mlir [--weights W] --inputs in.safetensors
//       [--expect out.safetensors --atol A --rtol R] [--outputs
//       got.safetensors]
//   pimc compile <checkpoint-dir | config.json | model.mlir | graph.json>
//       --target t.json -o model.pimb
//   pimc support <model> | --matrix <config-dir>...
//
//===----------------------------------------------------------------------===//
#include "RunCommand.h"
#include "SupportCommand.h"
#include "Targets.h"
#include "pimc/Backend/Backend.h"
#include "pimc/Conversion/LLMToPIM/Passes.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"
#include "pimc/Dialect/PIM/IR/PIMDialect.h"
#include "pimc/Frontend/FX/FXImporter.h"
#include "pimc/Frontend/HF/HFImporter.h"
#include "pimc/Frontend/ONNX/DecoderWithPast.h"
#include "pimc/Frontend/ONNX/ONNXImporter.h"
#include "pimc/Reference/GraphEquivalence.h"
#include "pimc/Reference/HostFunctions.h"
#include "pimc/Reference/HostTensorIO.h"
#include "pimc/Reference/Interpreter.h"
#include "pimc/Runtime/Run.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <map>

using namespace llvm;
using namespace pimc;

namespace {

cl::OptionCategory pimcCategory("pimc options");

cl::SubCommand importCmd("import",
                         "Import a Hugging Face checkpoint into llm IR (or a "
                         "PyTorch FX graph.json from python/pimc_torch)");
cl::SubCommand
    runRefCmd("run-ref",
              "Run a model greedily on the CPU reference interpreter");

cl::SubCommand runCmd(
    "run",
    "Run a compiled model (.pimb) on the pimsim PIM simulator. Prefill runs "
    "entry 'decode' once per prompt token; then --max-new-tokens tokens are "
    "sampled, each fed back through 'decode'. Prints the generated token "
    "ids, then a performance report (simulated time per token, traffic, "
    "roofline, PIM / host split, top streams and host kernels)");
cl::SubCommand supportCmd(
    "support",
    "Coverage report of a model (Hugging Face checkpoint, or its "
    "config.json alone: no weights read; FX graph.json, .onnx, .mlir): its "
    "config and architecture features or source ops, its llm ops and where "
    "the backend places each or why it cannot, and whether it compiles for "
    "the target. With --matrix, a table of many configs. Exit status 0: all "
    "supported; 3: something unsupported; 1: a model cannot be read");
cl::SubCommand compileCmd("compile",
                          "Compile a model for a PIM target (.pimb program)");

// `pimc support` (SupportCommand.cpp).
cl::list<std::string> supportInputs(cl::Positional, cl::sub(supportCmd),
                                    cl::desc("<model> | --matrix <dir>..."),
                                    cl::cat(pimcCategory));
cl::opt<bool> supportMatrix(
    "matrix", cl::sub(supportCmd), cl::cat(pimcCategory),
    cl::desc("Coverage matrix of several models: one row per config "
             "directory (or config.json, read without weights), one column "
             "per architecture feature: supported, unsupported (why, listed "
             "below the table) or not applicable ('-'); --json gives the "
             "same table as data"));
cl::opt<std::string> supportTarget(
    "target", cl::sub(supportCmd), cl::cat(pimcCategory),
    cl::value_desc("file"),
    cl::desc("Target description for the backend columns (default: "
             "hbm3-pim from ./targets, $PIMC_TARGETS_DIR or pimc's source "
             "tree)"));
cl::opt<bool> supportJSON("json", cl::sub(supportCmd), cl::cat(pimcCategory),
                          cl::desc("Print the report as JSON"));
cl::opt<std::string> supportOutput("o", cl::sub(supportCmd),
                                   cl::cat(pimcCategory), cl::init("-"),
                                   cl::value_desc("file"),
                                   cl::desc("Write the report to a file "
                                            "instead of stdout"));
cl::opt<std::string> supportExampleInputs(
    "example-inputs", cl::sub(supportCmd), cl::cat(pimcCategory),
    cl::value_desc("file"),
    cl::desc("ONNX: example values of the graph inputs (input_0, ... in "
             "graph input order, as 'pimc import --example-inputs') for ops "
             "whose result size depends on the data (NonZero: the import "
             "specialises the count on them)"));

// `pimc run` (RunCommand.cpp).
cl::opt<std::string> simProgram(cl::Positional, cl::sub(runCmd),
                                cl::desc("<model.pimb>"),
                                cl::cat(pimcCategory));
cl::opt<std::string> simTarget(
    "target", cl::sub(runCmd), cl::cat(pimcCategory), cl::value_desc("file"),
    cl::desc("Target description (default: targets/<name>.json, <name> "
             "being the program's target, if it exists)"));
cl::opt<std::string> simWeights(
    "weights", cl::sub(runCmd), cl::cat(pimcCategory),
    cl::value_desc("dir|file"),
    cl::desc("Checkpoint directory (safetensors) with the weights the "
             "program was compiled for, or the .safetensors file of an "
             "imported graph; needed in functional mode, checked (not "
             "loaded) in timing mode"));
cl::opt<std::string>
    simPromptIds("prompt-ids", cl::sub(runCmd), cl::cat(pimcCategory),
                 cl::value_desc("ids"),
                 cl::desc("Comma-separated prompt token ids (required)"));
cl::opt<int64_t> simMaxNewTokens("max-new-tokens", cl::sub(runCmd),
                                 cl::cat(pimcCategory), cl::init(16),
                                 cl::desc("Tokens to generate (default: 16)"));
cl::opt<std::string> simMode(
    "mode", cl::sub(runCmd), cl::cat(pimcCategory), cl::init("functional"),
    cl::value_desc("functional|timing"),
    cl::desc("functional (default): compute tokens on the device model; "
             "timing: only time them (no weights needed; each step is fed "
             "token 0 after the prompt)"));
cl::opt<int64_t> simStartPos(
    "start-pos", cl::sub(runCmd), cl::cat(pimcCategory), cl::init(0),
    cl::desc("Position of the first prompt token (timing mode; e.g. time "
             "decode at context 2048; default: 0)"));
cl::opt<double>
    simTemperature("temperature", cl::sub(runCmd), cl::cat(pimcCategory),
                   cl::init(0.0),
                   cl::desc("Sampling temperature; 0 = greedy (default: 0)"));
cl::opt<int64_t> simTopK("top-k", cl::sub(runCmd), cl::cat(pimcCategory),
                         cl::init(0),
                         cl::desc("Keep the k most likely tokens (0 = all; "
                                  "default 0)"));
cl::opt<double> simTopP("top-p", cl::sub(runCmd), cl::cat(pimcCategory),
                        cl::init(1.0),
                        cl::desc("Keep the smallest set of tokens with "
                                 "probability >= p (1 = all; default 1)"));
cl::opt<uint64_t> simSeed("seed", cl::sub(runCmd), cl::cat(pimcCategory),
                          cl::init(0),
                          cl::desc("Sampling seed (std::mt19937_64; default: "
                                   "0)"));
cl::opt<std::string> simStats("stats", cl::sub(runCmd), cl::cat(pimcCategory),
                              cl::value_desc("file"),
                              cl::desc("Write the report and every step as "
                                       "JSON"));
cl::opt<std::string> simTrace("trace", cl::sub(runCmd), cl::cat(pimcCategory),
                              cl::value_desc("file"),
                              cl::desc("Write a Chrome/Perfetto trace (streams "
                                       "and host kernels per token)"));
cl::opt<std::string>
    simLogitsOut("logits-out", cl::sub(runCmd), cl::cat(pimcCategory),
                 cl::value_desc("file"),
                 cl::desc("Write the logits of every generated token (f32 "
                          "little-endian, [tokens, vocab])"));
cl::opt<bool> simJSON("json", cl::sub(runCmd), cl::cat(pimcCategory),
                      cl::desc("Print the result as JSON instead of text"));
cl::opt<int64_t> simTop("top", cl::sub(runCmd), cl::cat(pimcCategory),
                        cl::init(8),
                        cl::desc("Streams / kernels listed in the report "
                                 "(default 8)"));
cl::opt<bool> simAllowMismatch(
    "allow-target-mismatch", cl::sub(runCmd), cl::cat(pimcCategory),
    cl::desc("Accept a target with the program's organisation but another "
             "name (e.g. a timing variant)"));
cl::opt<bool> simVerbose("verbose", cl::sub(runCmd), cl::cat(pimcCategory),
                         cl::desc("Print each step to stderr as it "
                                  "completes"));
cl::alias simVerboseShort("v", cl::aliasopt(simVerbose),
                          cl::desc("Alias for --verbose"));

int runRun() {
  RunCommandOptions o;
  o.program = simProgram;
  o.target = simTarget;
  o.weights = simWeights;
  o.promptIds = simPromptIds;
  o.mode = simMode;
  o.stats = simStats;
  o.trace = simTrace;
  o.logitsOut = simLogitsOut;
  o.maxNewTokens = simMaxNewTokens;
  o.startPos = simStartPos;
  o.top = simTop;
  o.sampling.temperature = simTemperature;
  o.sampling.topK = simTopK;
  o.sampling.topP = simTopP;
  o.sampling.seed = simSeed;
  o.json = simJSON;
  o.allowMismatch = simAllowMismatch;
  o.verbose = simVerbose;
  o.hostFunctions = ref::createInterpreterHostFunctions;
  return pimcRun(o);
}

// import
cl::opt<std::string> importInput(cl::Positional, cl::sub(importCmd),
                                 cl::cat(pimcCategory),
                                 cl::desc("<checkpoint-dir | model.onnx>"),
                                 cl::Required);
cl::opt<std::string>
    importOutput("o", cl::sub(importCmd), cl::cat(pimcCategory),
                 cl::desc("Output .mlir file (default: stdout)"),
                 cl::value_desc("file"), cl::init("-"));
cl::opt<bool> importNoRaise(
    "no-raise", cl::sub(importCmd), cl::cat(pimcCategory),
    cl::desc("ONNX / FX graphs: keep the imported primitive ops (do not run "
             "the llm-raise pipeline that fuses norms, RoPE, attention, gated "
             "MLPs and MoE)"));
cl::opt<std::string> importWeightsOut(
    "weights-out", cl::sub(importCmd), cl::cat(pimcCategory),
    cl::desc("ONNX: safetensors file for the initializers that become "
             "llm.weight (default: the output path with .safetensors)"),
    cl::value_desc("file"));
cl::opt<int64_t> importInlineLimit(
    "max-inline-elements", cl::sub(importCmd), cl::cat(pimcCategory),
    cl::desc("ONNX: float initializers with more elements become llm.weight "
             "(default 64)"),
    cl::init(64));
cl::list<std::string> importInputShapes(
    "input-shape", cl::sub(importCmd), cl::cat(pimcCategory),
    cl::desc("ONNX: static shape for a graph input with symbolic dimensions, "
             "e.g. --input-shape input_ids=1x8 (repeatable)"),
    cl::value_desc("name=DxDx..."));
cl::opt<std::string> importExampleInputs(
    "example-inputs", cl::sub(importCmd), cl::cat(pimcCategory),
    cl::desc("ONNX: example values of the graph inputs (input_0, input_1, ... "
             "in graph input order, as run-ref --inputs) for ops whose result "
             "size depends on the data (NonZero): the count is specialised on "
             "them and checked at run time"),
    cl::value_desc("in.safetensors"));
cl::list<std::string> importDims(
    "dim", cl::sub(importCmd), cl::cat(pimcCategory),
    cl::desc("FX graph with symbolic dims (torch.export Dim, e.g. "
             "`pimc_torch export --dynamic-seq`): specialise the dim of that "
             "name (or symbol) to N inside its exported range (default: the "
             "example's size); repeatable"),
    cl::value_desc("name=N"));
cl::opt<unsigned> importVerifyRaising(
    "verify-raising", cl::sub(importCmd), cl::cat(pimcCategory),
    cl::desc("ONNX / FX graphs: run the imported and the raised graph on N "
             "fresh seeded random inputs on the reference interpreter and "
             "fail (writing nothing) if raising changed any result (default "
             "0: off; docs/raising.md)"),
    cl::value_desc("N"), cl::init(0));
cl::opt<int64_t> importPromptForm(
    "prompt-form", cl::sub(importCmd), cl::cat(pimcCategory),
    cl::desc("ONNX decoder with past (optimum's layout): import its "
             "cache-less form over an N-token prompt (past empty, "
             "attention_mask ones, position_ids 0..N-1, only logits "
             "returned), the graph llm-synthesize-decode makes a decode step "
             "of (docs/onnx-decoder-with-past.md)"),
    cl::value_desc("N"), cl::init(0));
cl::opt<bool> importPrintLocations(
    "print-locations", cl::sub(importCmd), cl::cat(pimcCategory),
    cl::desc("ONNX: print the locations (node names) of the imported ops"));

// compare-graphs
cl::SubCommand compareCmd("compare-graphs",
                          "Run two graphs (e.g. imported and raised) on fresh "
                          "random inputs and compare their results");
cl::list<std::string>
    compareInputs(cl::Positional, cl::sub(compareCmd), cl::cat(pimcCategory),
                  cl::desc("<reference.mlir> <candidate.mlir>"), cl::OneOrMore);
cl::opt<std::string> compareWeights(
    "weights", cl::sub(compareCmd), cl::cat(pimcCategory),
    cl::desc("safetensors file (or checkpoint directory) of the graphs' "
             "llm.weight tensors"),
    cl::value_desc("path"));
cl::opt<unsigned> compareSamples("samples", cl::sub(compareCmd),
                                 cl::cat(pimcCategory),
                                 cl::desc("fresh inputs (default 3)"),
                                 cl::init(3));
cl::opt<uint64_t> compareSeed("seed", cl::sub(compareCmd),
                              cl::cat(pimcCategory),
                              cl::desc("seed of the first input (input k uses "
                                       "seed + k)"),
                              cl::init(0x5eed));
cl::opt<double> compareAtol("atol", cl::sub(compareCmd), cl::cat(pimcCategory),
                            cl::desc("absolute tolerance (default 1e-4)"),
                            cl::init(1e-4));
cl::opt<double> compareRtol("rtol", cl::sub(compareCmd), cl::cat(pimcCategory),
                            cl::desc("relative tolerance (default 1e-4)"),
                            cl::init(1e-4));

// run-ref
cl::opt<std::string> runInput(cl::Positional, cl::sub(runRefCmd),
                              cl::cat(pimcCategory),
                              cl::desc("<checkpoint-dir | model.mlir>"),
                              cl::Required);
cl::opt<std::string>
    runWeights("weights", cl::sub(runRefCmd), cl::cat(pimcCategory),
               cl::desc("Checkpoint directory or .safetensors file holding "
                        "the weights (needed when a .mlir input uses "
                        "llm.weight)"),
               cl::value_desc("dir | file"));
cl::opt<std::string> promptIds("prompt-ids", cl::sub(runRefCmd),
                               cl::cat(pimcCategory),
                               cl::desc("Comma-separated prompt token ids "
                                        "(language models)"),
                               cl::value_desc("ids"));
// run-ref on a graph (a function of plain tensors, docs/frontend-graphs.md)
cl::opt<std::string> graphInputs(
    "inputs", cl::sub(runRefCmd), cl::cat(pimcCategory),
    cl::desc("Run a function of plain tensors on input_0, input_1, ... of "
             "this safetensors file (instead of --prompt-ids)"),
    cl::value_desc("in.safetensors"));
cl::opt<std::string> graphExpect(
    "expect", cl::sub(runRefCmd), cl::cat(pimcCategory),
    cl::desc("Compare the results with output_0, output_1, ... of this "
             "safetensors file; exit 1 on a mismatch"),
    cl::value_desc("out.safetensors"));
cl::opt<double>
    graphAtol("atol", cl::sub(runRefCmd), cl::cat(pimcCategory),
              cl::desc("Absolute tolerance of --expect (default 1e-5)"),
              cl::init(1e-5));
cl::opt<double>
    graphRtol("rtol", cl::sub(runRefCmd), cl::cat(pimcCategory),
              cl::desc("Relative tolerance of --expect (default 1e-4)"),
              cl::init(1e-4));
cl::opt<std::string> graphOutputs(
    "outputs", cl::sub(runRefCmd), cl::cat(pimcCategory),
    cl::desc("Write the results as output_0, ... to this safetensors file"),
    cl::value_desc("got.safetensors"));
cl::opt<int64_t> maxNewTokens("max-new-tokens", cl::sub(runRefCmd),
                              cl::cat(pimcCategory),
                              cl::desc("Number of tokens to generate"),
                              cl::init(16));
cl::opt<std::string>
    logitsOut("logits-out", cl::sub(runRefCmd), cl::cat(pimcCategory),
              cl::desc("Write the logits of every generated token (f32 "
                       "little-endian, [tokens, vocab]) to this file"),
              cl::value_desc("file"));
cl::opt<bool> jsonOutput("json", cl::sub(runRefCmd), cl::cat(pimcCategory),
                         cl::desc("Print the result as JSON"));

// compile
cl::opt<std::string>
    compileInput(cl::Positional, cl::sub(compileCmd), cl::cat(pimcCategory),
                 cl::desc("<checkpoint-dir | config.json | model.mlir | "
                          "graph.json | model.onnx> (config.json alone: a "
                          "timing-only program, no weights read)"),
                 cl::Required);
cl::opt<std::string> compileTarget(
    "target", cl::sub(compileCmd), cl::cat(pimcCategory),
    cl::desc("Target description (default: hbm3-pim, found in ./targets, "
             "$PIMC_TARGETS_DIR or pimc's source tree)"),
    cl::value_desc("target.json"));
cl::opt<std::string>
    compileOutput("o", cl::sub(compileCmd), cl::cat(pimcCategory),
                  cl::desc("Output file (.pimb program; .mlir or text for "
                           "--compile-to=llm|pim; '-' for stdout)"),
                  cl::value_desc("file"), cl::Required);
cl::opt<std::string> compileTo(
    "compile-to", cl::sub(compileCmd), cl::cat(pimcCategory),
    cl::desc("Stop after a phase: llm (dispatch-annotated llm IR), pim (the "
             "placed pim.program), asm (program assembly text), program "
             "(binary, the default)"),
    cl::init("program"));
cl::opt<std::string>
    dumpPhases("dump-phases-to", cl::sub(compileCmd), cl::cat(pimcCategory),
               cl::desc("Write every phase (llm.mlir, llm-dispatched.mlir, "
                        "pim-tensor.mlir, pim.mlir, program.pimasm) into this "
                        "directory"),
               cl::value_desc("dir"));
cl::list<std::string>
    dispatchForce("dispatch", cl::sub(compileCmd), cl::cat(pimcCategory),
                  cl::desc("Force a placement per op class: linear=pim|host, "
                           "attention=pim|host, elementwise=host, moe=pim|host "
                           "(an MoE; default: as linear), router=pim|host (an "
                           "MoE's router; repeatable)"),
                  cl::value_desc("class=unit"), cl::CommaSeparated);
cl::opt<bool>
    printIRAfterAll("mlir-print-ir-after-all", cl::sub(compileCmd),
                    cl::cat(pimcCategory),
                    cl::desc("Print the IR after each compiler pass (MLIR)"));
cl::opt<bool>
    printIRBeforeAll("mlir-print-ir-before-all", cl::sub(compileCmd),
                     cl::cat(pimcCategory),
                     cl::desc("Print the IR before each compiler pass (MLIR)"));
cl::opt<bool> mlirTiming("mlir-timing", cl::sub(compileCmd),
                         cl::cat(pimcCategory),
                         cl::desc("Report the time of each pass (MLIR)"));
cl::opt<bool> verifyEach(
    "verify-each", cl::sub(compileCmd), cl::cat(pimcCategory),
    cl::desc("Verify the IR after every pass (default: once after each "
             "phase; a 70B model's program takes ~70 ms to verify)"));
cl::opt<std::string> compileReport(
    "report", cl::sub(compileCmd), cl::cat(pimcCategory),
    cl::desc("Write the compile summary as JSON (bytes per token for the "
             "roofline, memory use, estimate, compile time)"),
    cl::value_desc("file.json"));
cl::opt<int64_t> compileChannels(
    "channels", cl::sub(compileCmd), cl::cat(pimcCategory),
    cl::desc("Use only the first N channels of the device (default: all)"),
    cl::init(0));
cl::opt<int64_t> compileAttentionSplit(
    "attention-split", cl::sub(compileCmd), cl::cat(pimcCategory),
    cl::desc("Split each KV head's attention over N parts of the sequence, "
             "each on its own channels (default 0: the cost model decides; "
             "1: no split)"),
    cl::init(0));
cl::opt<std::string> compileKernels(
    "kernels", cl::sub(compileCmd), cl::cat(pimcCategory),
    cl::desc("Per GEMV and attention: the generated lowering or a kernel of "
             "the library (docs/kernel-library.md): generated, library, "
             "library:NAME,... (only those kernels), or auto (default: the "
             "cost model decides)"),
    cl::value_desc("generated|library|auto"), cl::init("auto"));
cl::opt<std::string> compileWeightsOut(
    "weights-out", cl::sub(compileCmd), cl::cat(pimcCategory),
    cl::desc("ONNX input: safetensors file for the model's weights, what "
             "`pimc run --weights` takes (default: the output path with "
             ".safetensors)"),
    cl::value_desc("file"));
cl::opt<bool> compileQuiet("quiet", cl::sub(compileCmd), cl::cat(pimcCategory),
                           cl::desc("Do not print the compile summary"));

// shared
cl::opt<int64_t> maxContext(
    "max-context", cl::sub(importCmd), cl::sub(runRefCmd), cl::sub(compileCmd),
    cl::cat(pimcCategory),
    cl::desc("KV-cache capacity in positions (import, run-ref: default "
             "min(max_position_embeddings, 4096), 4096 for dynamic RoPE; "
             "compile: default min(the model's, what the target's attention "
             "mapping supports))"),
    cl::init(0));

int fail(const Twine &msg) {
  WithColor::error(errs(), "pimc") << msg << "\n";
  return 1;
}

/// The files a command writes, under temporary names beside their final
/// paths (so a rename is atomic) until commit() renames them all: a command
/// that fails at any point leaves none of its outputs, and no temporaries.
class PendingOutputs {
public:
  PendingOutputs() = default;
  PendingOutputs(const PendingOutputs &) = delete;
  PendingOutputs &operator=(const PendingOutputs &) = delete;
  ~PendingOutputs() {
    for (const auto &[tmp, final] : files)
      sys::fs::remove(tmp);
  }

  /// Creates the temporary file for `path` and returns its name.
  Expected<std::string> add(StringRef path) {
    int fd;
    SmallString<256> tmp;
    if (std::error_code ec =
            sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, tmp))
      return createStringError(ec,
                               "cannot write '" + path + "': " + ec.message());
    sys::Process::SafelyCloseFileDescriptor(fd);
    files.emplace_back(std::string(tmp), path.str());
    return std::string(tmp);
  }

  /// Renames every temporary to its final path; on a failure the outputs
  /// renamed so far are removed again.
  Error commit() {
    for (auto [i, f] : enumerate(files)) {
      if (std::error_code ec = sys::fs::rename(f.first, f.second)) {
        for (size_t j = 0; j < i; ++j)
          sys::fs::remove(files[j].second);
        return createStringError(ec, "cannot write '" + f.second +
                                         "': " + ec.message());
      }
    }
    files.clear();
    return Error::success();
  }

private:
  std::vector<std::pair<std::string, std::string>> files; // (tmp, final)
};

/// Prints `module` to `path` ('-': stdout).
Error printModule(mlir::ModuleOp module, StringRef path,
                  const mlir::OpPrintingFlags &flags) {
  if (path == "-") {
    module.print(outs(), flags);
    outs().flush();
    return Error::success();
  }
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_None);
  if (ec)
    return createStringError(ec,
                             "cannot write '" + path + "': " + ec.message());
  module.print(os, flags);
  os.close();
  if (os.has_error())
    return createStringError(os.error(), "cannot write '" + path +
                                             "': " + os.error().message());
  return Error::success();
}

/// Where `pimc import` writes the weights of an ONNX model ("" when
/// neither --weights-out nor -o FILE says).
std::string onnxWeightsPath() {
  if (!importWeightsOut.empty())
    return importWeightsOut;
  if (importOutput == "-")
    return "";
  SmallString<256> p(importOutput);
  sys::path::replace_extension(p, ".safetensors");
  return std::string(p);
}

/// Raises an imported graph (unless --no-raise) and, with
/// --verify-raising=N, checks that the raised graph computes what the
/// imported one does on N fresh random inputs. `input` names the model in
/// errors; `weightFiles` hold its llm.weight tensors.
int raiseImported(mlir::ModuleOp module, StringRef input,
                  const std::vector<std::string> &weightFiles) {
  if (importNoRaise) {
    if (importVerifyRaising)
      return fail("--verify-raising checks raising; it cannot be combined "
                  "with --no-raise");
    return 0;
  }
  mlir::OwningOpRef<mlir::ModuleOp> imported;
  if (importVerifyRaising)
    imported = module.clone();
  if (failed(llm::raiseGraph(module, weightFiles)))
    return fail(formatv("{0}: raising the imported graph failed", input));
  if (!importVerifyRaising)
    return 0;
  auto store = ckpt::WeightStore::openFiles(weightFiles);
  if (!store)
    return fail(toString(store.takeError()));
  ref::EquivalenceOptions options;
  options.samples = importVerifyRaising;
  auto report = ref::checkEquivalence(*imported, module, **store, options);
  if (!report)
    return fail(formatv("{0}: raising check: {1}", input,
                        toString(report.takeError())));
  errs() << formatv("pimc: raising check: {0}\n", report->summary());
  return 0;
}

// An .onnx file: the graph's IR, plus its large initializers as a
// safetensors file for `pimc run-ref --weights`. Both files are written
// or neither (PendingOutputs).
int runONNXImport(mlir::MLIRContext &ctx) {
  onnx::ImportOptions options;
  options.maxInlineElements = importInlineLimit;
  for (StringRef spec : importInputShapes) {
    auto [name, dims] = spec.rsplit('=');
    SmallVector<StringRef> parts;
    dims.split(parts, 'x');
    SmallVector<int64_t> shape;
    bool ok = !name.empty() && !dims.empty();
    for (StringRef d : parts) {
      int64_t v = 0;
      ok &= !d.getAsInteger(10, v) && v >= 0;
      shape.push_back(v);
    }
    if (!ok)
      return fail(formatv("--input-shape '{0}': expected name=DxDx... with "
                          "non-negative sizes",
                          spec));
    options.inputShapes[name.str()] = shape;
  }
  std::unique_ptr<onnx::PromptForm> prompt;
  if (importPromptForm.getNumOccurrences()) {
    auto form = onnx::decoderPromptForm(importInput, importPromptForm);
    if (!form)
      return fail(toString(form.takeError()));
    if (!*form)
      return fail(formatv("--prompt-form: '{0}' is not a decoder with past "
                          "(it has no past_key_values.* input)",
                          importInput));
    prompt = std::move(*form);
    for (auto &[name, shape] : prompt->options.inputShapes)
      options.inputShapes.try_emplace(name, shape);
    options.constantInputs = prompt->options.constantInputs;
    options.outputs = prompt->options.outputs;
  }
  std::map<std::string, onnx::TensorData> examples;
  if (!importExampleInputs.empty()) {
    auto values = onnx::readInputValues(importInput, importExampleInputs);
    if (!values)
      return fail(toString(values.takeError()));
    examples = std::move(*values);
    options.exampleInputs = &examples;
  }
  auto model = onnx::importModelFile(ctx, importInput, options);
  if (!model)
    return fail(toString(model.takeError()));
  PendingOutputs outputs;
  std::string irPath = importOutput;
  if (importOutput != "-") {
    auto tmp = outputs.add(importOutput);
    if (!tmp)
      return fail(toString(tmp.takeError()));
    irPath = *tmp;
  }
  std::vector<std::string> weightFiles;
  if (!model->weights.empty()) {
    std::string weightsPath = onnxWeightsPath();
    if (weightsPath.empty())
      return fail(formatv("{0}: {1} initializer(s) become llm.weight; give "
                          "-o FILE or --weights-out FILE for their data",
                          importInput, model->weights.size()));
    auto tmp = outputs.add(weightsPath);
    if (!tmp)
      return fail(toString(tmp.takeError()));
    if (Error err = onnx::writeWeights(*tmp, model->weights))
      return fail(toString(std::move(err)));
    weightFiles.push_back(*tmp);
  }
  if (int rc = raiseImported(*model->module, importInput, weightFiles))
    return rc;
  mlir::OpPrintingFlags flags;
  if (importPrintLocations)
    flags.enableDebugInfo();
  if (Error err = printModule(*model->module, irPath, flags))
    return fail(toString(std::move(err)));
  if (Error err = outputs.commit())
    return fail(toString(std::move(err)));
  return 0;
}

// A pimc-fx-graph .json from python/pimc_torch; its parameters stay in the
// safetensors file the graph names (pass it to run-ref --weights).
int runFXImport(mlir::MLIRContext &ctx) {
  fx::DimBindings dims;
  for (StringRef spec : importDims) {
    auto [name, size] = spec.split('=');
    int64_t n;
    if (name.empty() || size.getAsInteger(10, n) || n < 0)
      return fail(formatv("--dim {0}: expected name=N with N a non-negative "
                          "integer",
                          spec));
    if (!dims.try_emplace(name, n).second)
      return fail(formatv("--dim {0}: '{1}' is given twice", spec, name));
  }
  auto graph = fx::importGraphFile(ctx, importInput, dims);
  if (!graph)
    return fail(toString(graph.takeError()));
  std::vector<std::string> weightFiles;
  if (!graph->parametersPath.empty())
    weightFiles.push_back(graph->parametersPath);
  if (int rc = raiseImported(*graph->module, importInput, weightFiles))
    return rc;
  Error err = writeToOutput(importOutput, [&](raw_ostream &os) -> Error {
    graph->module->print(os);
    return Error::success();
  });
  if (err)
    return fail(formatv("cannot write '{0}': {1}", importOutput,
                        toString(std::move(err))));
  return 0;
}

int runImport(mlir::MLIRContext &ctx) {
  if (!importDims.empty() && !fx::isGraphFile(importInput))
    return fail(formatv("--dim is for FX graphs (.json) with symbolic dims; "
                        "'{0}' is not one (ONNX: --input-shape)",
                        importInput));
  if (importPromptForm.getNumOccurrences() &&
      !StringRef(importInput).ends_with(".onnx"))
    return fail(formatv("--prompt-form is for ONNX decoders with past; "
                        "'{0}' is not an .onnx file",
                        importInput));
  if (StringRef(importInput).ends_with(".onnx"))
    return runONNXImport(ctx);
  if (fx::isGraphFile(importInput))
    return runFXImport(ctx);
  hf::ImportOptions options;
  options.maxContext = maxContext;
  auto model = hf::importCheckpointDir(ctx, importInput, options);
  if (!model)
    return fail(toString(model.takeError()));
  // Write to a temporary file and rename, so a failure leaves nothing.
  Error err = writeToOutput(importOutput, [&](raw_ostream &os) -> Error {
    model->module->print(os);
    return Error::success();
  });
  if (err)
    return fail(formatv("cannot write '{0}': {1}", importOutput,
                        toString(std::move(err))));
  return 0;
}

/// The weights of a graph given as --weights: a checkpoint directory, one
/// safetensors file, or none (an empty store, enough for graphs without
/// llm.weight; binding names any weight that is then missing).
Expected<std::unique_ptr<ckpt::WeightStore>> openWeights(StringRef path) {
  if (path.empty())
    return ckpt::WeightStore::openFiles({});
  if (sys::fs::is_directory(path))
    return ckpt::WeightStore::openDirectory(path);
  return ckpt::WeightStore::openFiles({path.str()});
}

/// `pimc run-ref graph.mlir [--weights W] --inputs in.safetensors ...`:
/// one Interpreter::call on plain tensors, optionally checked against
/// expected outputs.
int runGraphReference(mlir::MLIRContext &ctx) {
  if (!promptIds.empty())
    return fail("--inputs and --prompt-ids exclude each other");
  if (!sys::fs::exists(runInput) || sys::fs::is_directory(runInput))
    return fail(formatv("'{0}': --inputs needs an IR file (.mlir)", runInput));
  hf::registerImportDialects(ctx);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(runInput, sourceMgr,
                                            mlir::ParserConfig(&ctx));
  if (!module)
    return fail(formatv("cannot parse '{0}'", runInput));

  Expected<std::unique_ptr<ckpt::WeightStore>> store = openWeights(runWeights);
  if (!store)
    return fail(toString(store.takeError()));
  auto interp = ref::Interpreter::create(*module, **store);
  if (!interp)
    return fail(formatv("{0}: {1}{2}", runInput,
                        runWeights.empty() ? "no --weights given; " : "",
                        toString(interp.takeError())));
  if (!(*interp)->takesPlainTensors())
    return fail(formatv("'{0}' takes token ids and KV caches; run it with "
                        "--prompt-ids, not --inputs",
                        runInput));

  auto inputs = ref::readHostTensors(graphInputs, "input_");
  if (!inputs)
    return fail(toString(inputs.takeError()));
  auto results = (*interp)->call(*inputs);
  if (!results)
    return fail(
        formatv("{0}: {1}", graphInputs, toString(results.takeError())));

  if (!graphOutputs.empty())
    if (Error e = ref::writeHostTensors(graphOutputs, "output_", *results))
      return fail(toString(std::move(e)));

  auto describe = [](const ref::HostTensor &t) {
    std::string s = "[";
    for (auto [i, d] : llvm::enumerate(t.shape))
      s += (i ? ", " : "") + std::to_string(d);
    return s + "] " + t.dtypeName().str();
  };
  if (graphExpect.empty()) {
    for (auto [i, t] : llvm::enumerate(*results))
      outs() << formatv("output_{0}: {1}\n", i, describe(t));
    return 0;
  }
  auto expected = ref::readHostTensors(graphExpect, "output_");
  if (!expected)
    return fail(toString(expected.takeError()));
  if (expected->size() != results->size())
    return fail(formatv("{0} has {1} output(s), the function returns {2}",
                        graphExpect, expected->size(), results->size()));
  bool allOk = true;
  for (auto [i, got] : llvm::enumerate(*results)) {
    auto cmp =
        ref::compareHostTensors(got, (*expected)[i], graphAtol, graphRtol);
    if (!cmp)
      return fail(formatv("output_{0}: {1}", i, toString(cmp.takeError())));
    if (cmp->ok()) {
      outs() << formatv("output_{0}: {1} ok (max |diff| {2:e})\n", i,
                        describe(got), cmp->maxAbsDiff);
      continue;
    }
    allOk = false;
    double diff = std::fabs(cmp->worstGot - cmp->worstExpected);
    // %.9g prints every f32 exactly enough to tell the values apart.
    auto num = [](double v) { return formatv("{0}", format("%.9g", v)).str(); };
    outs() << formatv("output_{0}: {1} MISMATCH: {2} of {3} element(s) "
                      "outside atol {4} + rtol {5} * |expected|; worst at {6}: "
                      "got {7}, expected {8} (|diff| {9})\n",
                      i, describe(got), cmp->mismatches, got.numElements(),
                      format("%g", graphAtol.getValue()),
                      format("%g", graphRtol.getValue()),
                      ref::positionString(got.shape, cmp->worstIndex),
                      num(cmp->worstGot), num(cmp->worstExpected), num(diff));
  }
  return allOk ? 0 : 1;
}

/// `pimc compare-graphs reference.mlir candidate.mlir`: both on fresh
/// random inputs (ref::checkEquivalence).
int runCompareGraphs(mlir::MLIRContext &ctx) {
  if (compareInputs.size() != 2)
    return fail("compare-graphs takes two IR files: <reference.mlir> "
                "<candidate.mlir>");
  hf::registerImportDialects(ctx);
  mlir::OwningOpRef<mlir::ModuleOp> modules[2];
  for (int i = 0; i < 2; ++i) {
    llvm::SourceMgr sourceMgr;
    mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &ctx);
    modules[i] = mlir::parseSourceFile<mlir::ModuleOp>(
        compareInputs[i], sourceMgr, mlir::ParserConfig(&ctx));
    if (!modules[i])
      return fail(formatv("cannot parse '{0}'", compareInputs[i]));
  }
  Expected<std::unique_ptr<ckpt::WeightStore>> store =
      openWeights(compareWeights);
  if (!store)
    return fail(toString(store.takeError()));
  ref::EquivalenceOptions options;
  options.samples = compareSamples;
  options.seed = compareSeed;
  options.atol = compareAtol;
  options.rtol = compareRtol;
  options.referenceName = "reference";
  options.candidateName = "candidate";
  auto report =
      ref::checkEquivalence(*modules[0], *modules[1], **store, options);
  if (!report)
    return fail(formatv("{0} vs {1}: {2}", compareInputs[0], compareInputs[1],
                        toString(report.takeError())));
  outs() << report->summary() << "\n";
  return 0;
}

int runReference(mlir::MLIRContext &ctx) {
  if (!graphInputs.empty())
    return runGraphReference(ctx);
  if (!graphExpect.empty() || !graphOutputs.empty())
    return fail("--expect and --outputs need --inputs");
  if (promptIds.empty())
    return fail("run-ref needs --prompt-ids (language model) or --inputs "
                "(a function of plain tensors)");
  auto prompt = rt::parsePromptIds(promptIds);
  if (!prompt)
    return fail(toString(prompt.takeError()));
  if (maxNewTokens < 1)
    return fail("--max-new-tokens must be at least 1");

  hf::ImportOptions options;
  options.maxContext = maxContext;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<ckpt::WeightStore> weights;
  if (!sys::fs::exists(runInput))
    return fail(
        formatv("'{0}': no such checkpoint directory or IR file", runInput));
  if (sys::fs::is_directory(runInput)) {
    auto model = hf::importCheckpointDir(ctx, runInput, options);
    if (!model)
      return fail(toString(model.takeError()));
    module = std::move(model->module);
    weights = std::move(model->weights);
  } else {
    if (runWeights.empty())
      return fail(formatv(
          "'{0}' is an IR file; pass --weights <checkpoint-dir>", runInput));
    hf::registerImportDialects(ctx);
    llvm::SourceMgr sourceMgr;
    mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &ctx);
    module = mlir::parseSourceFile<mlir::ModuleOp>(runInput, sourceMgr,
                                                   mlir::ParserConfig(&ctx));
    if (!module)
      return fail(formatv("cannot parse '{0}'", runInput));
    auto store = sys::fs::is_directory(runWeights)
                     ? ckpt::WeightStore::openDirectory(runWeights)
                     : ckpt::WeightStore::openFiles({runWeights});
    if (!store)
      return fail(toString(store.takeError()));
    weights = std::move(*store);
  }

  auto interp = ref::Interpreter::create(*module, *weights);
  if (!interp)
    return fail(toString(interp.takeError()));
  if ((*interp)->takesPlainTensors())
    return fail(formatv("'{0}' takes plain tensors; run it with --inputs, not "
                        "--prompt-ids",
                        runInput));
  for (int64_t id : *prompt)
    if (id >= (*interp)->vocabSize())
      return fail(formatv("--prompt-ids: token {0} is outside the vocabulary "
                          "(size {1})",
                          id, (*interp)->vocabSize()));
  bool keep = !logitsOut.empty();
  auto result = ref::generateGreedy(**interp, *prompt, maxNewTokens, keep);
  if (!result)
    return fail(toString(result.takeError()));

  if (keep) {
    Error err = writeToOutput(logitsOut, [&](raw_ostream &os) -> Error {
      for (const std::vector<float> &row : result->logits)
        os.write(reinterpret_cast<const char *>(row.data()),
                 row.size() * sizeof(float));
      return Error::success();
    });
    if (err)
      return fail(formatv("cannot write '{0}': {1}", logitsOut,
                          toString(std::move(err))));
  }

  size_t decodeSteps = result->tokens.size() - 1;
  double decodeRate = decodeSteps && result->decodeSeconds > 0
                          ? decodeSteps / result->decodeSeconds
                          : 0.0;
  if (jsonOutput) {
    json::Object obj;
    obj["prompt_ids"] = json::Array(*prompt);
    obj["tokens"] = json::Array(result->tokens);
    obj["prefill_seconds"] = result->prefillSeconds;
    obj["decode_seconds"] = result->decodeSeconds;
    obj["decode_tokens_per_second"] = decodeRate;
    obj["recomputed_tokens"] = result->recomputedTokens;
    obj["weight_bytes"] = static_cast<int64_t>(weights->totalBytes());
    outs() << formatv("{0:2}", json::Value(std::move(obj))) << "\n";
    return 0;
  }
  outs() << "tokens:";
  for (int64_t t : result->tokens)
    outs() << " " << t;
  outs() << "\n";
  double weightGB = weights->totalBytes() / 1e9;
  outs() << formatv("prefill: {0} tokens in {1:F1} ms ({2:F1} tokens/s)\n",
                    prompt->size(), result->prefillSeconds * 1e3,
                    prompt->size() / std::max(result->prefillSeconds, 1e-9));
  outs() << formatv("decode:  {0} tokens in {1:F1} ms ({2:F2} tokens/s; "
                    "weights {3:F3} GB, {4:F2} GB/s if streamed once per "
                    "token)\n",
                    decodeSteps, result->decodeSeconds * 1e3, decodeRate,
                    weightGB, weightGB * decodeRate);
  if (result->recomputedTokens)
    outs() << formatv("longrope: the step that crossed L0 = {0} recomputed "
                      "{1} cached tokens with the long factors\n",
                      (*interp)->longRopeL0(), result->recomputedTokens);
  if (keep)
    outs() << formatv("logits: [{0}, {1}] f32 written to {2}\n",
                      result->logits.size(), (*interp)->vocabSize(), logitsOut);
  return 0;
}

Error writeText(StringRef path, function_ref<void(raw_ostream &)> fn) {
  return writeToOutput(path, [&](raw_ostream &os) -> Error {
    fn(os);
    return Error::success();
  });
}

/// Prompt length of a decoder with past's prompt form in `pimc compile`: the
/// synthesized decode step does not depend on it (any length >= 2 traces the
/// same per-position graph).
constexpr int64_t kCompilePromptForm = 8;
/// The compile summary's line on an ONNX model's weights.
std::string onnxWeightsNote;

/// `pimc compile model.onnx`: imported (a decoder with past in its prompt
/// form), its weights staged in `outputs` for `pimc run --weights`, and
/// raised.
Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importONNXForCompile(mlir::MLIRContext &ctx, PendingOutputs &outputs) {
  auto prompt = onnx::decoderPromptForm(compileInput, kCompilePromptForm);
  if (!prompt)
    return prompt.takeError();
  onnx::ImportOptions defaults;
  const onnx::ImportOptions &options = *prompt ? (*prompt)->options : defaults;
  auto model = onnx::importModelFile(ctx, compileInput, options);
  if (!model)
    return model.takeError();
  std::string weightsPath = compileWeightsOut;
  if (weightsPath.empty()) {
    if (compileOutput == "-")
      return createStringError(inconvertibleErrorCode(),
                               "%s: give -o FILE or --weights-out FILE for "
                               "the model's weights",
                               compileInput.c_str());
    SmallString<256> p(compileOutput);
    sys::path::replace_extension(p, ".safetensors");
    weightsPath = std::string(p);
  }
  auto tmp = outputs.add(weightsPath);
  if (!tmp)
    return tmp.takeError();
  if (Error err = onnx::writeWeights(*tmp, model->weights))
    return err;
  if (failed(llm::raiseGraph(*model->module, {*tmp})))
    return createStringError(inconvertibleErrorCode(),
                             "%s: raising the imported graph failed",
                             compileInput.c_str());
  onnxWeightsNote =
      formatv("  weights:   {0} tensors -> {1} (pimc run --weights){2}\n",
              model->weights.size(), weightsPath,
              *prompt ? formatv("; decoder with past ({0} layers): past and "
                                "present are the KV caches, attention_mask "
                                "all ones, position_ids the positions",
                                (*prompt)->layers)
                            .str()
                      : "")
          .str();
  return std::move(model->module);
}

int runCompile(mlir::MLIRContext &ctx) {
  if (compileTo != "llm" && compileTo != "pim" && compileTo != "asm" &&
      compileTo != "program")
    return fail(formatv("--compile-to={0}: expected llm, pim, asm or program",
                        compileTo));
  std::string targetPath = compileTarget;
  if (targetPath.empty()) {
    Expected<std::string> found = findTarget(kDefaultTarget);
    if (!found)
      return fail(toString(found.takeError()));
    targetPath = *found;
  }
  auto targetBuf = MemoryBuffer::getFile(targetPath);
  if (!targetBuf)
    return fail(formatv("cannot read target '{0}': {1}", targetPath,
                        targetBuf.getError().message()));
  auto target = pimsim::parseTarget((*targetBuf)->getBuffer(), targetPath);
  if (!target)
    return fail(toString(target.takeError()));

  if (compileAttentionSplit < 0)
    return fail(formatv("--attention-split {0}: must be 0 (the cost model "
                        "decides) or a number of parts",
                        compileAttentionSplit));
  if (compileChannels < 0 || compileChannels > target->org.totalChannels())
    return fail(formatv("--channels {0}: the target has {1} channels",
                        compileChannels, target->org.totalChannels()));
  if (auto overrides = pim::parseDispatchOverrides(dispatchForce); !overrides)
    return fail(toString(overrides.takeError()));
  if (compileKernels != "generated" && compileKernels != "library" &&
      compileKernels != "auto" &&
      !StringRef(compileKernels).starts_with("library:"))
    return fail(formatv("--kernels {0}: expected generated, library, "
                        "library:NAME,... or auto",
                        compileKernels));
  pim::BackendPipelineOptions pipeline;
  pipeline.target = targetPath;
  pipeline.dispatch = std::vector<std::string>(dispatchForce);
  pipeline.maxContext = maxContext;
  pipeline.channels = compileChannels;
  pipeline.attentionSplit = compileAttentionSplit;
  pipeline.kernels = compileKernels;

  auto start = std::chrono::steady_clock::now();
  PendingOutputs outputs;
  hf::registerImportDialects(ctx);
  ctx.loadDialect<pim::PIMDialect>();
  // Diagnostics name the op; printing the whole module with them does not help.
  ctx.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (!sys::fs::exists(compileInput))
    return fail(formatv("'{0}': no such checkpoint directory or IR file",
                        compileInput));
  bool timingOnly = sys::path::filename(compileInput) == "config.json";
  if (timingOnly) {
    // Shapes from the config alone: the program is timed, never run on
    // values (docs/families.md, "Models without weights").
    auto model = hf::importConfigFile(ctx, compileInput, {});
    if (!model)
      return fail(toString(model.takeError()));
    module = std::move(model->module);
  } else if (sys::fs::is_directory(compileInput)) {
    hf::ImportOptions io;
    // The importer's cache capacity follows the model; the backend decides
    // what it provisions.
    auto model = hf::importCheckpointDir(ctx, compileInput, io);
    if (!model)
      return fail(toString(model.takeError()));
    module = std::move(model->module);
  } else if (fx::isGraphFile(compileInput)) {
    // A torch-bridge graph: imported and raised as `pimc import` does; its
    // weights stay in the graph's safetensors file (`pimc run --weights`).
    auto graph = fx::importGraphFile(ctx, compileInput, {});
    if (!graph)
      return fail(toString(graph.takeError()));
    std::vector<std::string> weightFiles;
    if (!graph->parametersPath.empty())
      weightFiles.push_back(graph->parametersPath);
    if (failed(llm::raiseGraph(*graph->module, weightFiles)))
      return fail(
          formatv("{0}: raising the imported graph failed", compileInput));
    module = std::move(graph->module);
  } else if (StringRef(compileInput).ends_with(".onnx")) {
    auto imported = importONNXForCompile(ctx, outputs);
    if (!imported)
      return fail(toString(imported.takeError()));
    module = std::move(*imported);
  } else {
    module = mlir::parseSourceFile<mlir::ModuleOp>(compileInput, sourceMgr,
                                                   mlir::ParserConfig(&ctx));
    if (!module)
      return fail(formatv("cannot parse '{0}'", compileInput));
  }
  if (!dumpPhases.empty()) {
    if (std::error_code ec = sys::fs::create_directories(dumpPhases))
      return fail(
          formatv("cannot create '{0}': {1}", dumpPhases, ec.message()));
    if (Error e = writeText(dumpPhases + "/llm.mlir",
                            [&](raw_ostream &os) { module->print(os); }))
      return fail(toString(std::move(e)));
  }

  auto runPhase = [&](pim::BackendPhase phase) -> bool {
    mlir::PassManager pm(&ctx);
    if (printIRAfterAll || printIRBeforeAll) {
      // MLIR prints IR only from a single-threaded pass manager.
      ctx.disableMultithreading();
      pm.enableIRPrinting(
          [&](mlir::Pass *, mlir::Operation *) {
            return printIRBeforeAll.getValue();
          },
          [&](mlir::Pass *, mlir::Operation *) {
            return printIRAfterAll.getValue();
          },
          /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
    }
    if (mlirTiming)
      pm.enableTiming();
    // The IR is verified once at the end of the phase, not after each pass
    // (unless --verify-each): verification costs about a pass.
    pm.enableVerifier(verifyEach);
    pim::buildBackendPipeline(pm, pipeline, phase, phase);
    return succeeded(pm.run(*module)) && succeeded(mlir::verify(*module));
  };
  if (!runPhase(pim::BackendPhase::Dispatch))
    return fail(formatv("'{0}' cannot be compiled for target '{1}' (errors "
                        "above)",
                        compileInput, target->name));
  if (!dumpPhases.empty())
    if (Error e = writeText(dumpPhases + "/llm-dispatched.mlir",
                            [&](raw_ostream &os) { module->print(os); }))
      return fail(toString(std::move(e)));
  if (compileTo == "llm") {
    if (Error e = writeText(compileOutput,
                            [&](raw_ostream &os) { module->print(os); }))
      return fail(toString(std::move(e)));
    return 0;
  }
  if (!runPhase(pim::BackendPhase::Convert))
    return fail(formatv("'{0}' cannot be compiled for target '{1}' (errors "
                        "above)",
                        compileInput, target->name));
  if (!dumpPhases.empty())
    if (Error e = writeText(dumpPhases + "/pim-tensor.mlir",
                            [&](raw_ostream &os) { module->print(os); }))
      return fail(toString(std::move(e)));
  if (!runPhase(pim::BackendPhase::Program))
    return fail(formatv("'{0}' cannot be compiled for target '{1}' (errors "
                        "above)",
                        compileInput, target->name));
  pim::ProgramOp program;
  module->walk([&](pim::ProgramOp p) { program = p; });
  if (!dumpPhases.empty())
    if (Error e = writeText(dumpPhases + "/pim.mlir",
                            [&](raw_ostream &os) { program->print(os); }))
      return fail(toString(std::move(e)));
  if (compileTo == "pim") {
    if (Error e = writeText(compileOutput,
                            [&](raw_ostream &os) { program->print(os); }))
      return fail(toString(std::move(e)));
    return 0;
  }
  auto prog = backend::serialize(program, *target);
  if (!prog)
    return fail(formatv("internal error: the compiled program is invalid: {0}",
                        toString(prog.takeError())));
  if (!dumpPhases.empty())
    if (Error e =
            writeText(dumpPhases + "/program.pimasm", [&](raw_ostream &os) {
              pimsim::printProgram(*prog, os);
            }))
      return fail(toString(std::move(e)));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  auto attrI64 = [&](StringRef k) {
    auto a = program->getAttrOfType<mlir::IntegerAttr>(k);
    return a ? a.getInt() : 0;
  };
  // The program, the report and an ONNX model's weights are written together
  // or not at all.
  std::string programPath = compileOutput;
  if (compileOutput != "-") {
    auto tmp = outputs.add(compileOutput);
    if (!tmp)
      return fail(toString(tmp.takeError()));
    programPath = *tmp;
  }
  if (compileTo == "asm") {
    if (Error e = writeText(programPath, [&](raw_ostream &os) {
          pimsim::printProgram(*prog, os);
        }))
      return fail(toString(std::move(e)));
  } else if (Error e = pimsim::writeProgram(*prog, programPath)) {
    return fail(formatv("cannot write '{0}': {1}", compileOutput,
                        toString(std::move(e))));
  }
  // The kernel each GEMV and attention stream came from
  // (pim-select-kernels): "generated" or "library:<name>", with counts.
  std::map<std::string, int64_t> streamKernels;
  program.walk([&](pim::StreamOp s) {
    if (auto k = s->getAttrOfType<mlir::StringAttr>("pim.kernel"))
      ++streamKernels[k.str()];
  });
  if (!compileReport.empty()) {
    json::Object r;
    r["input"] = compileInput.getValue();
    r["target"] = target->name;
    r["timing_only"] = timingOnly;
    r["compile_seconds"] = seconds;
    r["max_context"] = attrI64("pim.max_context");
    r["weight_bytes"] = attrI64("pim.weight_bytes");
    // Per token: fewer than weight_bytes when an MoE streams its selected
    // experts only.
    r["streamed_weight_bytes"] = attrI64("pim.streamed_weight_bytes")
                                     ? attrI64("pim.streamed_weight_bytes")
                                     : attrI64("pim.weight_bytes");
    r["kv_bytes"] = attrI64("pim.kv_bytes");
    r["kv_bytes_per_position"] =
        attrI64("pim.max_context")
            ? attrI64("pim.kv_bytes") / attrI64("pim.max_context")
            : 0;
    r["act_bytes"] = attrI64("pim.act_bytes");
    r["internal_peak_bytes_per_s"] = target->internalPeakBytesPerSec();
    r["streams"] = int64_t(prog->streams.size());
    r["kernels"] = int64_t(prog->kernels.size());
    json::Object sk;
    for (auto &[k, n] : streamKernels)
      sk[k] = n;
    r["stream_kernels"] = std::move(sk);
    std::string reportPath = compileReport;
    if (compileReport != "-") {
      auto tmp = outputs.add(compileReport);
      if (!tmp)
        return fail(toString(tmp.takeError()));
      reportPath = *tmp;
    }
    if (Error e = writeText(reportPath, [&](raw_ostream &os) {
          os << formatv("{0:2}", json::Value(std::move(r))) << "\n";
        }))
      return fail(toString(std::move(e)));
  }
  if (Error e = outputs.commit())
    return fail(toString(std::move(e)));
  if (compileQuiet || compileOutput == "-")
    return 0;

  // Summary: placement, memory use, estimated time per token.
  auto i64 = [&](StringRef k) {
    auto a = program->getAttrOfType<mlir::IntegerAttr>(k);
    return a ? a.getInt() : 0;
  };
  double pimNs = 0, hostNs = 0;
  int64_t gemvs = 0, attn = 0;
  program.walk([&](pim::StreamOp s) {
    // One count per op (the stream metadata): the parts of a K-split GEMV
    // or a split attention share part 0's cost; the cache appends belong to
    // their attention.
    auto d = s.getDispatchAttr();
    auto c = d ? d.getAs<mlir::FloatAttr>("pim_ns") : mlir::FloatAttr();
    if (!c || s.getOp() == "kv_append" || s.getPart().value_or(0) != 0)
      return;
    pimNs += c.getValueAsDouble();
    (s.getOp() == "attention" ? attn : gemvs)++;
  });
  int64_t kernels = 0;
  program.walk([&](pim::KernelOp k) {
    ++kernels;
    if (auto c = k.getCostNsAttr())
      hostNs += c.getValueAsDouble();
  });
  // Ops without a device lowering, run as host calls (docs/backend.md).
  std::map<std::string, int64_t> calls;
  program.walk([&](pim::HostOp h) {
    if (h.getName() == "call")
      if (auto src = h.getArgs().getAs<mlir::StringAttr>("source"))
        ++calls[src.str()];
  });
  int64_t rowsUsed = 0;
  program.walk([&](pim::RegionOp r) {
    rowsUsed = std::max(rowsUsed, r.getRows()[0] + r.getRows()[1]);
  });
  outs() << formatv("compiled {0} for {1} in {2:F2} s -> {3}\n", compileInput,
                    target->name, seconds, compileOutput);
  outs() << formatv("  placement: {0} fused GEMVs and {1} attention layers on "
                    "the PIM units, {2} host kernels; max context {3}\n",
                    gemvs, attn, kernels, i64("pim.max_context"));
  if (!streamKernels.empty()) {
    std::string list;
    for (auto &[k, n] : streamKernels)
      list += formatv("{0}{1} x{2}", list.empty() ? "" : ", ", k, n).str();
    outs() << "  kernels:   " << list << " (streams; --kernels "
           << compileKernels << ")\n";
  }
  if (!calls.empty()) {
    std::string list;
    for (auto &[op, n] : calls)
      list += formatv("{0}{1} x{2}", list.empty() ? "" : ", ", op, n).str();
    outs() << "  host calls (no device lowering; reference numerics): " << list
           << "\n";
  }
  outs() << onnxWeightsNote;
  if (timingOnly)
    outs() << "  weights:   none (timing-only: shapes from config.json; run "
              "it with 'pimc run --mode timing' or 'pimsim run --mode "
              "timing')\n";
  double devGB = target->org.totalBytes() / 1e9;
  outs() << formatv("  memory:    weights {0:F3} GB, KV cache {1:F3} GB, "
                    "activations {2:F1} KB; {3} of {4} rows per bank "
                    "({5:F1}% of {6:F0} GB)\n",
                    i64("pim.weight_bytes") / 1e9, i64("pim.kv_bytes") / 1e9,
                    i64("pim.act_bytes") / 1e3, rowsUsed, target->org.rows,
                    100.0 * rowsUsed / target->org.rows, devGB);
  outs() << formatv("  estimate:  {0:F1} us per token ({1:F1} us PIM at "
                    "the capped internal peak + {2:F1} us host); simulate "
                    "with 'pimc run'\n",
                    (pimNs + hostNs) / 1e3, pimNs / 1e3, hostNs / 1e3);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(pimcCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "pimc: compile large language models for processing-in-memory\n\n"
      "  pimc import <checkpoint-dir | model.onnx> -o model.mlir\n"
      "  pimc run-ref <checkpoint-dir> --prompt-ids 1,2,3 --max-new-tokens N\n"
      "  pimc run-ref graph.mlir [--weights W] --inputs in.safetensors "
      "[--expect out.safetensors]\n"
      "  pimc compile <checkpoint-dir | config.json | model.mlir | "
      "graph.json> --target t.json -o m.pimb\n"
      "  pimc run m.pimb --weights <checkpoint-dir> --prompt-ids 1,2,3 "
      "--max-new-tokens N\n"
      "  pimc support <checkpoint-dir | config.json | model.mlir> "
      "[--target t.json] [--json]\n"
      "  pimc support --matrix <config-dir>... [--json]\n"
      "\nRun 'pimc <subcommand> --help' for a subcommand's options.\n");
  if (runCmd)
    return runRun(); // no MLIR: the runtime only
  if (supportCmd)
    return pimcSupport({supportInputs, supportTarget, supportOutput,
                        supportExampleInputs, supportJSON, supportMatrix});
  mlir::MLIRContext ctx;
  if (importCmd)
    return runImport(ctx);
  if (runRefCmd)
    return runReference(ctx);
  if (compareCmd)
    return runCompareGraphs(ctx);
  if (compileCmd)
    return runCompile(ctx);
  errs() << "pimc: no subcommand given; run 'pimc --help'\n";
  return 1;
}
