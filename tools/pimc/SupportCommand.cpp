//===- SupportCommand.cpp - `pimc support` --------------------------------===//
//
//   pimc support <checkpoint-dir | config.json | model.mlir>
//                [--target t.json] [--json] [-o file]
//
// A coverage report of one model: every config feature (or source-graph op)
// it uses and every llm op it imports to, each supported or not with the
// reason, and whether the backend compiles it for the target. Unsupported
// constructs are rows of the report, never a crash: the importer's and the
// backend's own checks decide, so the report cannot disagree with them.
//
//===----------------------------------------------------------------------===//
#include "SupportCommand.h"
#include "Targets.h"

#include "pimc/Checkpoint/ArchFeatures.h"
#include "pimc/Checkpoint/HFConfig.h"
#include "pimc/Conversion/LLMToPIM/Passes.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"
#include "pimc/Dialect/PIM/IR/PIMDialect.h"
#include "pimc/Frontend/FX/FXImporter.h"
#include "pimc/Frontend/HF/HFImporter.h"
#include "pimc/Frontend/ONNX/ONNXImporter.h"

#include "pimsim/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm/ADT/StringSet.h"

#include <map>
#include <string>
#include <vector>

using namespace llvm;
using namespace pimc;

namespace {

int fail(const Twine &msg) {
  WithColor::error(errs(), "pimc support") << msg << "\n";
  return 1;
}

/// One op kind of the source graph (an ONNX op type at its opset, an ATen
/// op): does the importer's table have it.
struct SourceOpRow {
  std::string name;
  int64_t count = 0;
  bool supported = false;
  std::string reason; // why it is not supported
  std::string note;   // what a supported op needs
};

/// One llm op kind of the imported module.
struct OpRow {
  std::string name;
  int64_t count = 0;
  std::string placement; // "pim" | "host" | "" (not placed)
  std::string reason;    // why it is not supported
  std::string note;      // how it runs, when not by a lowering of its own
};

struct Report {
  std::string input, format;
  std::string modelType;
  std::vector<ckpt::ConfigFeature> features;
  std::vector<ckpt::FeatureUse> arch; // HF configs: architecture features
  std::vector<SourceOpRow> sourceOps;
  std::string importError; // the model could not be imported
  bool raised = false;     // llm ops are counted after llm-raise
  std::vector<OpRow> ops;
  std::string targetName;
  bool compiles = false;
  std::string compileError;

  bool supported() const {
    if (!importError.empty() || !compiles)
      return false;
    for (const ckpt::ConfigFeature &f : features)
      if (f.status == ckpt::ConfigFeature::Status::Unsupported)
        return false;
    for (const SourceOpRow &r : sourceOps)
      if (!r.supported)
        return false;
    return llvm::all_of(ops, [](const OpRow &r) { return r.reason.empty(); });
  }
};

StringRef statusName(ckpt::ConfigFeature::Status s) {
  switch (s) {
  case ckpt::ConfigFeature::Status::Honoured:
    return "honoured";
  case ckpt::ConfigFeature::Status::NoEffect:
    return "no-effect";
  case ckpt::ConfigFeature::Status::Unsupported:
    return "unsupported";
  case ckpt::ConfigFeature::Status::NotChecked:
    return "not-checked";
  }
  return "";
}

/// Collects the diagnostics emitted while `fn` runs, one line each.
template <typename Fn>
std::vector<std::pair<std::string, mlir::Location>>
captureDiagnostics(mlir::MLIRContext &ctx, Fn fn) {
  std::vector<std::pair<std::string, mlir::Location>> diags;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      diags.emplace_back(d.str(), d.getLocation());
    return mlir::success();
  });
  fn();
  return diags;
}

constexpr const char *kHostCallNote =
    "host call: no device lowering, runs the op's reference numerics";

/// The llm ops of @forward, their placement for `target` and, for the ops
/// the backend cannot take, the reason; then whether the model compiles.
void analyzeModule(mlir::ModuleOp module, StringRef targetPath,
                   Report &report) {
  mlir::MLIRContext &ctx = *module.getContext();
  std::map<std::string, OpRow> rows;
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  mlir::Operation *scope =
      forward ? forward.getOperation() : module.getOperation();
  scope->walk([&](mlir::Operation *op) {
    if (!isa<llm::LLMDialect>(op->getDialect()))
      return;
    OpRow &row = rows[op->getName().getStringRef().str()];
    row.name = op->getName().getStringRef().str();
    ++row.count;
    if (isa<llm::WeightOp>(op))
      row.placement = "weight data";
    else if (row.count == 1 && !pim::isLowerableOp(op))
      row.reason = "no PIM-backend lowering for this op";
    else if (row.count == 1 && !pim::hasOwnLowering(op))
      row.note = kHostCallNote;
  });

  // The phases of the pim-backend pipeline that `pimc compile` runs.
  pim::BackendPipelineOptions pipeline;
  pipeline.target = targetPath.str();
  auto runPhases = [&](mlir::ModuleOp m, pim::BackendPhase first,
                       pim::BackendPhase last) {
    mlir::PassManager pm(&ctx);
    pim::buildBackendPipeline(pm, pipeline, first, last);
    return pm.run(m);
  };
  mlir::OwningOpRef<mlir::ModuleOp> clone(module.clone());
  auto dispatchDiags = captureDiagnostics(ctx, [&] {
    (void)runPhases(*clone, pim::BackendPhase::Dispatch,
                    pim::BackendPhase::Dispatch);
  });
  if (auto fwd = clone->lookupSymbol<mlir::func::FuncOp>("forward"))
    fwd.walk([&](mlir::Operation *op) {
      auto it = rows.find(op->getName().getStringRef().str());
      if (it == rows.end())
        return;
      auto d = op->getAttrOfType<mlir::StringAttr>(pim::kDispatchAttrName);
      if (!d)
        return;
      // Whether an MoE is a host call depends on its shape and placement.
      if (isa<llm::MoEOp>(op))
        it->second.note = pim::hasOwnLowering(op) ? "" : kHostCallNote;
      std::string &placement = it->second.placement;
      if (placement.empty() || placement == d.getValue())
        placement = d.getValue().str();
      else
        placement = "pim+host";
    });
  for (auto &[msg, loc] : dispatchDiags)
    for (auto &[name, row] : rows)
      if (row.reason.empty() && StringRef(msg).contains("'" + name + "'"))
        row.reason = msg;

  if (dispatchDiags.empty()) {
    auto lowerDiags = captureDiagnostics(ctx, [&] {
      report.compiles = succeeded(runPhases(*clone, pim::BackendPhase::Convert,
                                            pim::BackendPhase::Program));
    });
    if (!report.compiles)
      report.compileError = lowerDiags.empty() ? "the PIM lowering failed"
                                               : lowerDiags.front().first;
  } else {
    report.compileError = dispatchDiags.front().first;
  }
  for (auto &[name, row] : rows)
    report.ops.push_back(row);
}

/// A Hugging Face checkpoint directory or config.json: the config's keys and
/// architecture features, then the import. A config.json alone is checked
/// as a model without weights: the tensors' shapes come from the config (the
/// timing-only import). Errors only when the config cannot be read.
Error analyzeHF(mlir::MLIRContext &ctx, StringRef input, Report &report,
                mlir::OwningOpRef<mlir::ModuleOp> &module,
                std::unique_ptr<ckpt::WeightStore> &weights) {
  bool isConfigFile = sys::path::filename(input) == "config.json";
  report.format = isConfigFile ? "hf-config" : "hf-checkpoint";
  auto config = ckpt::analyzeConfigSupport(input);
  if (!config)
    return config.takeError();
  report.modelType = config->modelType;
  report.features = config->features;
  auto arch = ckpt::analyzeArchFeatures(input, *config);
  if (!arch)
    return arch.takeError();
  report.arch = std::move(*arch);
  if (!config->fatal.empty()) {
    report.importError = config->fatal;
    return Error::success();
  }
  if (!config->supported()) {
    report.importError = "the config has unsupported features (above)";
    return Error::success();
  }
  auto model = isConfigFile ? hf::importConfigFile(ctx, input, {})
                            : hf::importCheckpointDir(ctx, input, {});
  if (!model) {
    report.importError = toString(model.takeError());
    return Error::success();
  }
  module = std::move(model->module);
  weights = std::move(model->weights);
  return Error::success();
}

/// ONNX: every op type against the importer's table, then (when all are
/// there) the import itself and llm-raise, whose ops analyzeModule counts.
/// Errors only when the file cannot be read as a model at all.
Error analyzeONNX(mlir::MLIRContext &ctx, StringRef path, Report &report,
                  mlir::OwningOpRef<mlir::ModuleOp> &module,
                  StringRef exampleInputs) {
  auto summary = onnx::summarizeModelFile(path);
  if (!summary)
    return summary.takeError();
  std::map<std::string, SourceOpRow> rows;
  std::vector<std::string> order;
  for (const std::string &op : summary->opTypes) {
    std::string key = formatv("{0} (opset {1})", op, summary->opset).str();
    auto [it, inserted] = rows.try_emplace(key);
    if (inserted) {
      order.push_back(key);
      it->second.name = key;
      it->second.supported = onnx::isSupportedOp("", op, summary->opset);
      if (!it->second.supported)
        it->second.reason = "no rule in the ONNX importer's op table";
      else if (op == "NonZero")
        it->second.note = "result size depends on the data: needs example "
                          "inputs (--example-inputs)";
    }
    ++it->second.count;
  }
  for (const std::string &key : order)
    report.sourceOps.push_back(rows[key]);
  if (llvm::any_of(report.sourceOps,
                   [](const SourceOpRow &r) { return !r.supported; })) {
    report.importError = "the model has unsupported ops (above)";
    return Error::success();
  }
  onnx::ImportOptions options;
  std::map<std::string, onnx::TensorData> examples;
  if (!exampleInputs.empty()) {
    auto values = onnx::readInputValues(path, exampleInputs);
    if (!values)
      return values.takeError();
    examples = std::move(*values);
    options.exampleInputs = &examples;
  }
  auto model = onnx::importModelFile(ctx, path, options);
  if (!model) {
    report.importError = toString(model.takeError());
    return Error::success();
  }
  // The raising passes read buffer-backed tables (rotary, masks) from the
  // weights file, as `pimc import` does.
  SmallString<128> weightsPath;
  std::vector<std::string> weightFiles;
  if (!model->weights.empty()) {
    if (std::error_code ec = sys::fs::createTemporaryFile(
            "pimc-support", "safetensors", weightsPath))
      return createStringError("cannot create a temporary file: " +
                               ec.message());
    if (Error e = onnx::writeWeights(weightsPath, model->weights)) {
      sys::fs::remove(weightsPath);
      return e;
    }
    weightFiles.push_back(weightsPath.str().str());
  }
  auto diags = captureDiagnostics(ctx, [&] {
    report.raised = succeeded(llm::raiseGraph(*model->module, weightFiles));
  });
  if (!weightsPath.empty())
    sys::fs::remove(weightsPath);
  if (!report.raised)
    report.importError =
        "llm-raise failed" + (diags.empty() ? "" : ": " + diags.front().first);
  module = std::move(model->module);
  return Error::success();
}

/// FX graph (pimc-fx-graph JSON): every ATen op against the importer's
/// table, then the import and llm-raise with the graph's parameters.
Error analyzeFX(mlir::MLIRContext &ctx, StringRef path, Report &report,
                mlir::OwningOpRef<mlir::ModuleOp> &module,
                std::unique_ptr<ckpt::WeightStore> &weights) {
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buf)
    return createStringError(path +
                             ": cannot read: " + buf.getError().message());
  auto graph = fx::parseGraph((*buf)->getBuffer(), path);
  if (!graph)
    return graph.takeError();
  llvm::StringSet<> supported;
  for (const fx::OpSupport &op : fx::supportedOps())
    supported.insert(op.op);
  std::map<std::string, size_t> index;
  for (const fx::Node &node : graph->nodes) {
    if (node.op != fx::Node::Op::CallFunction)
      continue;
    std::string op = node.qualifiedOp();
    auto [it, inserted] = index.try_emplace(op, report.sourceOps.size());
    if (inserted) {
      SourceOpRow row;
      row.name = op;
      row.supported = supported.contains(op);
      if (!row.supported) {
        StringRef why = fx::unsupportedOpReason(op);
        row.reason =
            why.empty() ? "no entry in the FX importer's op table" : why.str();
      }
      report.sourceOps.push_back(row);
    }
    ++report.sourceOps[it->second].count;
  }
  if (llvm::any_of(report.sourceOps,
                   [](const SourceOpRow &r) { return !r.supported; })) {
    report.importError = "the graph has unsupported ops (above)";
    return Error::success();
  }
  auto imported = fx::importGraphFile(ctx, path);
  if (!imported) {
    report.importError = toString(imported.takeError());
    return Error::success();
  }
  std::vector<std::string> weightFiles;
  if (!imported->parametersPath.empty())
    weightFiles.push_back(imported->parametersPath);
  auto diags = captureDiagnostics(ctx, [&] {
    report.raised = succeeded(llm::raiseGraph(*imported->module, weightFiles));
  });
  if (!report.raised)
    report.importError =
        "llm-raise failed" + (diags.empty() ? "" : ": " + diags.front().first);
  module = std::move(imported->module);
  weights = std::move(imported->weights);
  return Error::success();
}

json::Value archJSON(ArrayRef<ckpt::FeatureUse> arch) {
  json::Object o;
  for (const ckpt::FeatureUse &use : arch)
    o[use.feature] = ckpt::toJSON(use);
  return json::Value(std::move(o));
}

json::Value toJSON(const Report &r) {
  json::Array features, ops, sourceOps;
  for (const SourceOpRow &row : r.sourceOps) {
    json::Object o{
        {"name", row.name}, {"count", row.count}, {"supported", row.supported}};
    if (!row.reason.empty())
      o["reason"] = row.reason;
    if (!row.note.empty())
      o["note"] = row.note;
    sourceOps.push_back(std::move(o));
  }
  for (const ckpt::ConfigFeature &f : r.features) {
    json::Object o{{"name", f.field},
                   {"value", f.value},
                   {"status", statusName(f.status)}};
    if (!f.reason.empty())
      o["reason"] = f.reason;
    features.push_back(std::move(o));
  }
  for (const OpRow &row : r.ops) {
    json::Object o{{"name", row.name},
                   {"count", row.count},
                   {"supported", row.reason.empty()}};
    if (!row.placement.empty())
      o["placement"] = row.placement;
    if (!row.note.empty())
      o["note"] = row.note;
    if (!row.reason.empty())
      o["reason"] = row.reason;
    ops.push_back(std::move(o));
  }
  json::Object root{{"input", r.input},
                    {"format", r.format},
                    {"supported", r.supported()},
                    {"config_features", std::move(features)},
                    {"arch_features", archJSON(r.arch)},
                    {"source_ops", std::move(sourceOps)},
                    {"raised", r.raised},
                    {"llm_ops", std::move(ops)},
                    {"target", r.targetName},
                    {"compiles", r.compiles}};
  if (!r.modelType.empty())
    root["model_type"] = r.modelType;
  if (!r.importError.empty())
    root["import_error"] = r.importError;
  if (!r.compileError.empty())
    root["compile_error"] = r.compileError;
  return json::Value(std::move(root));
}

void printText(const Report &r, raw_ostream &os) {
  os << "pimc support: " << r.input << " (" << r.format;
  if (!r.modelType.empty())
    os << ", model_type " << r.modelType;
  os << ")\n";
  if (!r.features.empty()) {
    size_t bad = llvm::count_if(r.features, [](const ckpt::ConfigFeature &f) {
      return f.status == ckpt::ConfigFeature::Status::Unsupported;
    });
    os << formatv("\nconfig features: {0} used, {1} unsupported\n",
                  r.features.size(), bad);
    for (const ckpt::ConfigFeature &f : r.features) {
      os << formatv("  {0,-12} {1} = {2}\n", statusName(f.status), f.field,
                    f.value);
      if (!f.reason.empty())
        os << "               " << f.reason << "\n";
    }
  }
  if (!r.arch.empty()) {
    size_t used = llvm::count_if(r.arch, [](const ckpt::FeatureUse &u) {
      return u.status != ckpt::FeatureUse::Status::NotApplicable;
    });
    size_t bad = llvm::count_if(r.arch, [](const ckpt::FeatureUse &u) {
      return u.status == ckpt::FeatureUse::Status::Unsupported;
    });
    os << formatv("\narchitecture features: {0} used, {1} unsupported\n", used,
                  bad);
    for (const ckpt::FeatureUse &u : r.arch) {
      if (u.status == ckpt::FeatureUse::Status::NotApplicable)
        continue;
      os << formatv("  {0,-12} {1,-13} {2}\n",
                    ckpt::featureStatusName(u.status), u.feature, u.value);
      if (!u.reason.empty())
        os << "               " << u.reason << "\n";
    }
  }
  if (!r.sourceOps.empty()) {
    size_t bad = llvm::count_if(
        r.sourceOps, [](const SourceOpRow &row) { return !row.supported; });
    os << formatv("\nsource ops: {0} kinds, {1} unsupported by the importer\n",
                  r.sourceOps.size(), bad);
    for (const SourceOpRow &row : r.sourceOps)
      os << formatv("  {0,-12} {1,-32} x{2}{3}\n",
                    row.supported ? "supported" : "unsupported", row.name,
                    row.count,
                    !row.reason.empty() ? "  " + row.reason
                    : !row.note.empty() ? "  " + row.note
                                        : std::string());
  }
  if (!r.importError.empty())
    os << "\nimport: not possible: " << r.importError << "\n";
  if (!r.ops.empty()) {
    size_t bad = llvm::count_if(
        r.ops, [](const OpRow &row) { return !row.reason.empty(); });
    os << formatv("\nllm ops{3}: {0} kinds, {1} unsupported by the backend "
                  "for target '{2}'\n",
                  r.ops.size(), bad, r.targetName,
                  r.raised ? " (after llm-raise)" : "");
    os << "  (placement: pim = the PIM units; host = the host or the target's "
          "near-memory unit)\n";
    os << formatv("  {0,-24} {1,7}  {2}\n", "op", "count", "placement");
    for (const OpRow &row : r.ops)
      os << formatv("  {0,-24} {1,7}  {2}\n", row.name, row.count,
                    !row.reason.empty() ? "unsupported: " + row.reason
                    : row.note.empty()  ? row.placement
                                       : row.placement + " (" + row.note + ")");
  }
  if (r.importError.empty()) {
    os << "\nbackend: ";
    if (r.compiles)
      os << "compiles for target '" << r.targetName << "'\n";
    else
      os << "does not compile for target '" << r.targetName
         << "': " << r.compileError << "\n";
  }
  os << "\nsupported: " << (r.supported() ? "yes" : "no") << "\n";
}

/// The first reason a report is not supported.
std::string firstReason(const Report &r) {
  if (!r.importError.empty())
    return r.importError;
  for (const OpRow &row : r.ops)
    if (!row.reason.empty())
      return row.name + ": " + row.reason;
  return r.compileError;
}

/// Sets up a context for one model's analysis.
void loadDialects(mlir::MLIRContext &ctx) {
  hf::registerImportDialects(ctx);
  onnx::registerImportDialects(ctx);
  ctx.loadDialect<pim::PIMDialect>();
  ctx.printOpOnDiagnostic(false);
}

} // namespace

Expected<ModelSupport> analyzeModelSupport(const std::string &configPath,
                                           const std::string &target) {
  mlir::MLIRContext ctx;
  loadDialects(ctx);
  Report report;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<ckpt::WeightStore> weights;
  if (Error e = analyzeHF(ctx, configPath, report, module, weights))
    return e;
  if (module)
    analyzeModule(*module, target, report);
  ModelSupport row;
  row.modelType = report.modelType;
  row.supported = report.supported();
  if (!row.supported)
    row.why = firstReason(report);
  row.arch = std::move(report.arch);
  return row;
}

int pimcSupport(const SupportCommandOptions &options) {
  SupportCommandOptions opt = options;
  if (opt.inputs.empty())
    return fail(opt.matrix ? "--matrix: no config directories given"
                           : "no model given (see 'pimc support --help')");
  if (opt.output.empty())
    opt.output = "-";
  if (opt.target.empty()) {
    Expected<std::string> found = findTarget(kDefaultTarget);
    if (!found)
      return fail(toString(found.takeError()));
    opt.target = *found;
  }
  if (opt.matrix) {
    if (!opt.exampleInputs.empty())
      return fail("--example-inputs applies to one ONNX model, not --matrix");
    return pimcSupportMatrix(opt);
  }
  if (opt.inputs.size() != 1)
    return fail(formatv("{0} models given; one at a time, or --matrix for "
                        "a table of configs",
                        opt.inputs.size()));
  const std::string &input = opt.inputs.front();
  if (!sys::fs::exists(input))
    return fail("'" + input + "': no such file or directory");

  StringRef ext = sys::path::extension(input);
  bool isConfigFile = sys::path::filename(input) == "config.json";
  bool isCheckpoint = sys::fs::is_directory(input) || isConfigFile;
  bool isGraph = !isCheckpoint && fx::isGraphFile(input);
  if (!isCheckpoint && !isGraph && ext != ".mlir" && ext != ".onnx")
    return fail("'" + input +
                "': unknown model format (expected a Hugging Face checkpoint "
                "directory, config.json, an FX graph .json, .onnx or .mlir)");
  if (!opt.exampleInputs.empty() && ext != ".onnx")
    return fail("--example-inputs applies to ONNX models (.onnx) only");
  auto target = pimsim::loadTarget(opt.target);
  if (!target)
    return fail(toString(target.takeError()));

  mlir::MLIRContext ctx;
  loadDialects(ctx);

  Report report;
  report.input = input;
  report.targetName = target->name;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<ckpt::WeightStore> weights;

  if (isCheckpoint) {
    if (Error e = analyzeHF(ctx, input, report, module, weights))
      return fail(toString(std::move(e)));
  } else if (isGraph) {
    report.format = "fx-graph";
    if (Error e = analyzeFX(ctx, input, report, module, weights))
      return fail(toString(std::move(e)));
  } else if (ext == ".onnx") {
    report.format = "onnx";
    if (Error e = analyzeONNX(ctx, input, report, module, opt.exampleInputs))
      return fail(toString(std::move(e)));
  } else {
    report.format = "llm-ir";
    llvm::SourceMgr sourceMgr;
    std::string parseError;
    auto diags = captureDiagnostics(ctx, [&] {
      module = mlir::parseSourceFile<mlir::ModuleOp>(input, sourceMgr,
                                                     mlir::ParserConfig(&ctx));
    });
    if (!module)
      return fail("cannot parse '" + input + "'" +
                  (diags.empty() ? "" : ": " + diags.front().first));
  }

  if (module)
    analyzeModule(*module, opt.target, report);

  std::error_code ec;
  ToolOutputFile out(opt.output, ec, sys::fs::OF_Text);
  if (ec)
    return fail("cannot write '" + opt.output + "': " + ec.message());
  if (opt.json)
    out.os() << formatv("{0:2}", toJSON(report)) << "\n";
  else
    printText(report, out.os());
  out.keep();
  return report.supported() ? 0 : 3;
}
