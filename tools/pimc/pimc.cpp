//===- pimc.cpp - the pimc compiler driver --------------------------------===//
//
//   pimc import <checkpoint-dir> -o model.mlir
//   pimc run-ref <checkpoint-dir> --prompt-ids 1,2,3 --max-new-tokens N
//
//===----------------------------------------------------------------------===//
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Frontend/HF/HFImporter.h"
#include "pimc/Reference/Interpreter.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace pimc;

namespace {

cl::OptionCategory pimcCategory("pimc options");

cl::SubCommand importCmd("import",
                         "Import a Hugging Face checkpoint into llm IR");
cl::SubCommand
    runRefCmd("run-ref",
              "Run a model greedily on the CPU reference interpreter");

// import
cl::opt<std::string> importInput(cl::Positional, cl::sub(importCmd),
                                 cl::cat(pimcCategory),
                                 cl::desc("<checkpoint-dir>"), cl::Required);
cl::opt<std::string>
    importOutput("o", cl::sub(importCmd), cl::cat(pimcCategory),
                 cl::desc("Output .mlir file (default: stdout)"),
                 cl::value_desc("file"), cl::init("-"));

// run-ref
cl::opt<std::string> runInput(cl::Positional, cl::sub(runRefCmd),
                              cl::cat(pimcCategory),
                              cl::desc("<checkpoint-dir | model.mlir>"),
                              cl::Required);
cl::opt<std::string>
    runWeights("weights", cl::sub(runRefCmd), cl::cat(pimcCategory),
               cl::desc("Checkpoint directory holding the weights (needed "
                        "when the input is a .mlir file)"),
               cl::value_desc("dir"));
cl::opt<std::string> promptIds("prompt-ids", cl::sub(runRefCmd),
                               cl::cat(pimcCategory),
                               cl::desc("Comma-separated prompt token ids"),
                               cl::value_desc("ids"), cl::Required);
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

// shared
cl::opt<int64_t> maxContext(
    "max-context", cl::sub(importCmd), cl::sub(runRefCmd),
    cl::cat(pimcCategory),
    cl::desc("KV-cache capacity in positions (default: "
             "min(max_position_embeddings, 4096); 4096 for dynamic RoPE)"),
    cl::init(0));

int fail(const Twine &msg) {
  WithColor::error(errs(), "pimc") << msg << "\n";
  return 1;
}

Expected<std::vector<int64_t>> parseIds(StringRef text) {
  std::vector<int64_t> ids;
  SmallVector<StringRef> parts;
  text.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef p : parts) {
    int64_t v;
    if (p.trim().getAsInteger(10, v) || v < 0)
      return createStringError(formatv(
          "--prompt-ids: '{0}' is not a non-negative integer", p.trim()));
    ids.push_back(v);
  }
  if (ids.empty())
    return createStringError("--prompt-ids: no token ids given");
  return ids;
}

int runImport(mlir::MLIRContext &ctx) {
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

int runReference(mlir::MLIRContext &ctx) {
  auto prompt = parseIds(promptIds);
  if (!prompt)
    return fail(toString(prompt.takeError()));
  if (maxNewTokens < 1)
    return fail("--max-new-tokens must be at least 1");

  hf::ImportOptions options;
  options.maxContext = maxContext;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<hf::WeightStore> weights;
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
    auto store = hf::WeightStore::openDirectory(runWeights);
    if (!store)
      return fail(toString(store.takeError()));
    weights = std::move(*store);
  }

  auto interp = ref::Interpreter::create(*module, *weights);
  if (!interp)
    return fail(toString(interp.takeError()));
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
  if (keep)
    outs() << formatv("logits: [{0}, {1}] f32 written to {2}\n",
                      result->logits.size(), (*interp)->vocabSize(), logitsOut);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(pimcCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "pimc: compile large language models for processing-in-memory\n\n"
      "  pimc import <checkpoint-dir> -o model.mlir\n"
      "  pimc run-ref <checkpoint-dir> --prompt-ids 1,2,3 --max-new-tokens N\n"
      "\nRun 'pimc <subcommand> --help' for a subcommand's options.\n");
  mlir::MLIRContext ctx;
  if (importCmd)
    return runImport(ctx);
  if (runRefCmd)
    return runReference(ctx);
  errs() << "pimc: no subcommand given; run 'pimc --help'\n";
  return 1;
}
