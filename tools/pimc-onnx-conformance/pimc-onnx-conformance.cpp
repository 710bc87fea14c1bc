//===- pimc-onnx-conformance.cpp - ONNX node tests on the interpreter -----===//
//
//   pimc-onnx-conformance [--data DIR] [--xfail FILE] [--filter REGEX] [-v]
//
// Runs the ONNX backend node tests (model.onnx + test_data_set_*/input_N.pb,
// output_N.pb) whose ops are in scope: import with the ONNX importer, run
// the forward function on the reference interpreter, compare with the ONNX
// backend tolerance. A test is in scope when every op of its model is in
// kScopeOps (the ops LLMs use, fixed here independently of what the
// importer supports, so an unsupported op counts as a failure). Each test
// runs in a child process, so a crash or a hang fails that test only.
//
// Exit status 1 when a test not in the expected-failure list fails, when a
// listed test passes (the list only shrinks), or when a list entry names no
// in-scope test.
//
//===----------------------------------------------------------------------===//
#include "pimc/Frontend/ONNX/ONNXImporter.h"
#include "pimc/Reference/Interpreter.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <sys/wait.h>
#include <unistd.h>

using namespace llvm;
using namespace pimc;

namespace {

// --help lists these only (main hides the options of linked libraries).
cl::OptionCategory conformanceCategory("pimc-onnx-conformance options");
cl::opt<std::string> dataDir("data", cl::desc("ONNX node test directory"),
                             cl::init("/usr/share/libonnx-testdata/data/node"),
                             cl::cat(conformanceCategory));
cl::opt<std::string> xfailFile("xfail",
                               cl::desc("Expected-failure list (one 'test "
                                        "reason' line per test)"),
                               cl::cat(conformanceCategory));
cl::opt<std::string> filter("filter", cl::desc("Only tests matching REGEX"),
                            cl::cat(conformanceCategory));
cl::opt<bool> verbose("v", cl::desc("Print every test's result"),
                      cl::cat(conformanceCategory));
cl::opt<bool> printFailures(
    "print-failures",
    cl::desc("Print every failing test as an expected-failure line"),
    cl::cat(conformanceCategory));
cl::opt<unsigned> timeoutSeconds("timeout", cl::init(60),
                                 cl::desc("Per-test time limit (seconds)"),
                                 cl::cat(conformanceCategory));

/// The ops in scope (issue 5): the operators LLM graphs are made of.
const char *const kScopeOps[] = {"MatMul",
                                 "Gemm",
                                 "Add",
                                 "Sub",
                                 "Mul",
                                 "Div",
                                 "Pow",
                                 "Neg",
                                 "Sqrt",
                                 "Reciprocal",
                                 "Exp",
                                 "Log",
                                 "Tanh",
                                 "Erf",
                                 "Sigmoid",
                                 "Relu",
                                 "Abs",
                                 "Cos",
                                 "Sin",
                                 "Min",
                                 "Max",
                                 "Softmax",
                                 "LogSoftmax",
                                 "LayerNormalization",
                                 "Gather",
                                 "Reshape",
                                 "Transpose",
                                 "Concat",
                                 "Split",
                                 "Slice",
                                 "Squeeze",
                                 "Unsqueeze",
                                 "Expand",
                                 "Tile",
                                 "ScatterElements",
                                 "Where",
                                 "Equal",
                                 "Less",
                                 "Greater",
                                 "LessOrEqual",
                                 "GreaterOrEqual",
                                 "Not",
                                 "And",
                                 "Or",
                                 "Cast",
                                 "ReduceMean",
                                 "ReduceSum",
                                 "ReduceMax",
                                 "ReduceMin",
                                 "ReduceProd",
                                 "TopK",
                                 "CumSum",
                                 "Trilu",
                                 "Shape",
                                 "ConstantOfShape",
                                 "Range",
                                 "Constant",
                                 "Identity",
                                 "Flatten",
                                 "Gelu",
                                 "SimplifiedLayerNormalization",
                                 "RMSNormalization",
                                 "Einsum",
                                 "NonZero",
                                 "QuantizeLinear",
                                 "DequantizeLinear",
                                 "Mod",
                                 "Size",
                                 "CastLike",
                                 "IsNaN",
                                 "Attention",
                                 "RotaryEmbedding"};

constexpr double kRtol = 1e-3, kAtol = 1e-7;

ref::HostTensor toHost(const onnx::TensorData &d) {
  std::vector<int64_t> shape(d.shape.begin(), d.shape.end());
  switch (d.kind) {
  case onnx::TensorData::Kind::F32:
    return ref::HostTensor::fromF32(std::move(shape), d.f32);
  case onnx::TensorData::Kind::I64:
    return ref::HostTensor::fromI64(std::move(shape), d.i64);
  case onnx::TensorData::Kind::I1:
    break;
  }
  return ref::HostTensor::fromBool(std::move(shape), d.i64);
}

/// Compares one output; an empty string means it matches.
std::string compare(const onnx::TensorData &expect,
                    const ref::HostTensor &got) {
  SmallVector<int64_t> gotShape(got.shape.begin(), got.shape.end());
  if (ArrayRef<int64_t>(gotShape) != ArrayRef<int64_t>(expect.shape))
    return formatv("shape [{0}], expected [{1}]",
                   join(map_range(gotShape,
                                  [](int64_t v) { return std::to_string(v); }),
                        ","),
                   join(map_range(expect.shape,
                                  [](int64_t v) { return std::to_string(v); }),
                        ","))
        .str();
  bool expectFloat = expect.kind == onnx::TensorData::Kind::F32;
  size_t n = expectFloat ? expect.f32.size() : expect.i64.size();
  for (size_t i = 0; i < n; ++i) {
    double e = expectFloat ? expect.f32[i] : double(expect.i64[i]);
    double g = got.isInteger() ? double(got.i64[i]) : double(got.f32[i]);
    if (std::isnan(e) && std::isnan(g))
      continue;
    if (std::isinf(e) || std::isinf(g)) {
      if (e == g)
        continue;
    } else if (std::fabs(g - e) <= kAtol + kRtol * std::fabs(e)) {
      continue;
    }
    return formatv("element {0} is {1}, expected {2}", i, format("%.9g", g),
                   format("%.9g", e))
        .str();
  }
  return "";
}

/// Imports and runs one test (in the child process); "" on success. The
/// model is imported once per data set, specialized on that set's inputs
/// where an op needs a constant (the node tests pass shapes, axes and k as
/// graph inputs; pimc needs them at compile time).
std::string runTest(StringRef dir) {
  SmallString<256> modelPath(dir);
  sys::path::append(modelPath, "model.onnx");
  auto summary = onnx::summarizeModelFile(modelPath);
  if (!summary)
    return toString(summary.takeError());
  for (size_t i = 0; i < summary->inputs.size(); ++i)
    if (summary->inputTypes[i] == 0)
      return "graph input '" + summary->inputs[i] +
             "' is not a tensor (sequences and optionals are not supported)";
  std::error_code ec;
  SmallVector<std::string> sets;
  for (sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (sys::path::filename(it->path()).starts_with("test_data_set_"))
      sets.push_back(it->path());
  llvm::sort(sets);
  if (sets.empty())
    return "no test_data_set_* directory";
  auto weights = ckpt::WeightStore::openFiles({});
  if (!weights)
    return "weights: " + toString(weights.takeError());
  for (const std::string &set : sets) {
    auto readAll = [&](StringRef prefix, ArrayRef<int32_t> types,
                       std::vector<onnx::TensorData> &out) -> std::string {
      for (int i = 0;; ++i) {
        SmallString<256> p(set);
        sys::path::append(p, (prefix + Twine(i) + ".pb").str());
        if (!sys::fs::exists(p))
          return "";
        auto t =
            onnx::readTensorFile(p, size_t(i) < types.size() ? types[i] : 0);
        if (!t)
          return toString(t.takeError());
        out.push_back(std::move(*t));
      }
    };
    std::vector<onnx::TensorData> inputs, outputs;
    if (std::string e = readAll("input_", summary->inputTypes, inputs);
        !e.empty())
      return e;
    if (std::string e = readAll("output_", summary->outputTypes, outputs);
        !e.empty())
      return e;
    if (inputs.size() != summary->inputs.size())
      return formatv("{0} has {1} inputs, the model takes {2}",
                     sys::path::filename(set), inputs.size(),
                     summary->inputs.size());
    std::map<std::string, onnx::TensorData> values;
    for (size_t i = 0; i < inputs.size(); ++i)
      values[summary->inputs[i]] = inputs[i];

    mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
    onnx::ImportOptions options;
    // Node tests are small: every initializer inline, no weight file.
    options.maxInlineElements = std::numeric_limits<int64_t>::max();
    options.inputValues = &values;
    options.exampleInputs = &values; // NonZero's count
    auto model = onnx::importModelFile(ctx, modelPath, options);
    if (!model)
      return "import: " + toString(model.takeError());
    auto interp = ref::Interpreter::create(model->module.get(), **weights);
    if (!interp)
      return "interpreter: " + toString(interp.takeError());
    std::vector<ref::HostTensor> args;
    for (const auto &t : inputs)
      args.push_back(toHost(t));
    auto results = (*interp)->call(args);
    if (!results)
      return "run: " + toString(results.takeError());
    if (results->size() != outputs.size())
      return formatv("{0} results, expected {1}", results->size(),
                     outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i)
      if (std::string e = compare(outputs[i], (*results)[i]); !e.empty())
        return formatv("{0}: output {1} ({2}): {3}", sys::path::filename(set),
                       i, outputs[i].name, e);
  }
  return "";
}

/// Runs runTest in a child so that crashes and hangs fail one test only.
std::string runIsolated(StringRef dir) {
  int fds[2];
  if (pipe(fds) != 0)
    return "pipe failed";
  pid_t pid = fork();
  if (pid < 0)
    return "fork failed";
  if (pid == 0) {
    close(fds[0]);
    alarm(timeoutSeconds);
    std::string r = runTest(dir);
    size_t off = 0;
    while (off < r.size()) {
      ssize_t w = write(fds[1], r.data() + off, r.size() - off);
      if (w <= 0)
        break;
      off += w;
    }
    close(fds[1]);
    _exit(r.empty() ? 0 : 1);
  }
  close(fds[1]);
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0)
    msg.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    return WTERMSIG(status) == SIGALRM
               ? formatv("timed out after {0} s", unsigned(timeoutSeconds))
                     .str()
               : formatv("crashed (signal {0})", WTERMSIG(status)).str();
  if (WEXITSTATUS(status) != 0 && msg.empty())
    return "failed without a message";
  // One line per test: the importer's messages name the file and node.
  std::replace(msg.begin(), msg.end(), '\n', ' ');
  return msg;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(conformanceCategory);
  cl::ParseCommandLineOptions(argc, argv,
                              "ONNX node conformance on the reference "
                              "interpreter\n");
  StringSet<> scope;
  for (const char *op : kScopeOps)
    scope.insert(op);

  StringMap<std::string> xfail;
  if (!xfailFile.empty()) {
    auto buf = MemoryBuffer::getFile(xfailFile);
    if (!buf) {
      errs() << xfailFile << ": cannot open: " << buf.getError().message()
             << "\n";
      return 1;
    }
    SmallVector<StringRef> lines;
    (*buf)->getBuffer().split(lines, '\n');
    for (auto [i, line] : enumerate(lines)) {
      line = line.trim();
      if (line.empty() || line.starts_with("#"))
        continue;
      auto [name, reason] = line.split(' ');
      if (reason.trim().empty()) {
        errs() << formatv("{0}:{1}: '{2}' has no reason\n", xfailFile, i + 1,
                          name);
        return 1;
      }
      xfail[name] = reason.trim().str();
    }
  }
  std::optional<Regex> re;
  if (!filter.empty()) {
    re.emplace(filter);
    std::string err;
    if (!re->isValid(err)) {
      errs() << "--filter: " << err << "\n";
      return 1;
    }
  }

  std::error_code ec;
  std::vector<std::string> tests;
  for (sys::fs::directory_iterator it(dataDir, ec), end; it != end && !ec;
       it.increment(ec))
    tests.push_back(std::string(sys::path::filename(it->path())));
  if (ec || tests.empty()) {
    errs() << dataDir << ": no tests (" << ec.message() << ")\n";
    return 1;
  }
  llvm::sort(tests);

  unsigned inScope = 0, outOfScope = 0, pass = 0, xfailed = 0, failed = 0,
           xpassed = 0;
  StringSet<> seen;
  for (const std::string &test : tests) {
    if (re && !re->match(test))
      continue;
    SmallString<256> dir(dataDir);
    sys::path::append(dir, test);
    SmallString<256> modelPath(dir);
    sys::path::append(modelPath, "model.onnx");
    auto summary = onnx::summarizeModelFile(modelPath);
    if (!summary) {
      consumeError(summary.takeError());
      ++outOfScope;
      continue;
    }
    bool all = !summary->opTypes.empty();
    for (const std::string &op : summary->opTypes)
      all &= scope.contains(op);
    if (!all) {
      ++outOfScope;
      continue;
    }
    ++inScope;
    seen.insert(test);
    std::string result = runIsolated(dir);
    auto it = xfail.find(test);
    bool listed = it != xfail.end();
    if (result.empty() && !listed) {
      ++pass;
      if (verbose)
        outs() << "PASS  " << test << "\n";
    } else if (result.empty()) {
      ++pass;
      ++xpassed;
      outs() << "XPASS " << test << " (remove it from the expected-failure "
             << "list)\n";
    } else if (listed) {
      ++xfailed;
      if (verbose)
        outs() << "XFAIL " << test << ": " << result << "\n";
    } else {
      ++failed;
      outs() << "FAIL  " << test << ": " << result << "\n";
    }
    if (printFailures && !result.empty())
      errs() << test << " " << result << "\n";
  }
  unsigned stale = 0;
  if (!re)
    for (const auto &entry : xfail)
      if (!seen.contains(entry.getKey())) {
        ++stale;
        outs() << "STALE " << entry.getKey()
               << " is listed but is not an in-scope test\n";
      }
  outs() << formatv("in scope: {0} (out of scope: {1}); pass: {2}, xfail: "
                    "{3}, unexpected fail: {4}, xpass: {5}; pass rate "
                    "{6:F1}%\n",
                    inScope, outOfScope, pass, xfailed, failed, xpassed,
                    inScope ? 100.0 * pass / inScope : 0.0);
  return failed || xpassed || stale ? 1 : 0;
}
