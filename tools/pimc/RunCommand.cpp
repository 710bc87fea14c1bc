//===- RunCommand.cpp - `pimc run` ----------------------------------------===//
//
//   pimc run model.pimb --weights <checkpoint-dir> --prompt-ids 1,2,3
//            [--target <target.json>] [--max-new-tokens N]
//            [--mode functional|timing] [--start-pos N]
//            [--temperature T --top-k K --top-p P --seed S]
//            [--stats out.json] [--trace out.json] [--json]
//
//===----------------------------------------------------------------------===//
#include "RunCommand.h"
#include "Targets.h"

#include "pimc/Runtime/Device.h"
#include "pimc/Runtime/Report.h"
#include "pimc/Runtime/Session.h"

#include "pimsim/Program.h"
#include "pimsim/Target.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace llvm;
using namespace pimc;

namespace {

const char *kUsage =
    R"(OVERVIEW: pimc run: run a compiled model (.pimb) on the pimsim PIM simulator

USAGE: pimc run <model.pimb> --prompt-ids <ids> [options]

Prefill runs entry 'decode' once per prompt token; then --max-new-tokens
tokens are sampled, each fed back through 'decode'. Prints the generated
token ids, then a performance report (simulated time per token, traffic,
roofline, PIM / host split, top streams and host kernels).

OPTIONS:
  --target <file>          Target description (default: targets/<name>.json,
                           <name> being the program's target, if it exists)
  --weights <dir>          Checkpoint directory (safetensors) with the weights
                           the program was compiled for; needed in functional
                           mode, checked (not loaded) in timing mode
  --prompt-ids <ids>       Comma-separated prompt token ids (required)
  --max-new-tokens <n>     Tokens to generate (default: 16)
  --mode <m>               functional (default): compute tokens on the device
                           model; timing: only time them (no weights needed;
                           each step is fed token 0 after the prompt)
  --start-pos <n>          Position of the first prompt token (timing mode;
                           e.g. time decode at context 2048; default: 0)
  --temperature <t>        Sampling temperature; 0 = greedy (default: 0)
  --top-k <k>              Keep the k most likely tokens (0 = all; default 0)
  --top-p <p>              Keep the smallest set of tokens with probability
                           >= p (1 = all; default 1)
  --seed <s>               Sampling seed (std::mt19937_64; default: 0)
  --stats <file>           Write the report and every step as JSON
  --trace <file>           Write a Chrome/Perfetto trace (streams and host
                           kernels per token)
  --logits-out <file>      Write the logits of every generated token (f32
                           little-endian, [tokens, vocab])
  --json                   Print the result as JSON instead of text
  --top <n>                Streams / kernels listed in the report (default 8)
  --allow-target-mismatch  Accept a target with the program's organisation
                           but another name (e.g. a timing variant)
  -v, --verbose            Print each step to stderr as it completes
  -h, --help               Show this help
)";

int fail(const Twine &msg) {
  WithColor::error(errs(), "pimc run") << msg << "\n";
  return 1;
}

struct Options {
  std::string program, target, weights, promptIds, mode = "functional";
  std::string stats, trace, logitsOut;
  int64_t maxNewTokens = 16, startPos = 0, top = 8;
  rt::SamplingOptions sampling;
  bool json = false, help = false, allowMismatch = false, verbose = false;
};

/// Parses argv (argv[0] is the subcommand). Accepts `--opt value` and
/// `--opt=value`.
Error parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    StringRef arg = argv[i];
    if (arg == "-h" || arg == "--help" || arg == "-help") {
      o.help = true;
      return Error::success();
    }
    if (!arg.starts_with("-")) {
      if (!o.program.empty())
        return createStringError(
            formatv("unexpected argument '{0}' (the program is '{1}')", arg,
                    o.program));
      o.program = arg.str();
      continue;
    }
    StringRef name = arg, inlineValue;
    bool hasInline = false;
    if (size_t eq = arg.find('='); eq != StringRef::npos) {
      name = arg.substr(0, eq);
      inlineValue = arg.substr(eq + 1);
      hasInline = true;
    }
    if (name.starts_with("--"))
      name = name.drop_front(2);
    else
      name = name.drop_front(1);
    // Flags.
    if (name == "json" || name == "allow-target-mismatch" || name == "v" ||
        name == "verbose") {
      if (hasInline)
        return createStringError("--" + name + " takes no value");
      if (name == "json")
        o.json = true;
      else if (name == "allow-target-mismatch")
        o.allowMismatch = true;
      else
        o.verbose = true;
      continue;
    }
    static const char *const valueOptions[] = {
        "target", "weights",    "prompt-ids",     "mode",      "stats",
        "trace",  "logits-out", "max-new-tokens", "start-pos", "top",
        "top-k",  "seed",       "temperature",    "top-p"};
    if (!llvm::is_contained(valueOptions, name))
      return createStringError("unknown option '" + arg +
                               "' (see 'pimc run --help')");
    StringRef value;
    if (hasInline)
      value = inlineValue;
    else if (i + 1 < argc)
      value = argv[++i];
    else
      return createStringError("--" + name + " needs a value");
    auto integer = [&](int64_t &out, int64_t min) -> Error {
      if (value.trim().getAsInteger(10, out) || out < min)
        return createStringError(
            formatv("--{0}: '{1}' is not an integer >= {2}", name, value, min));
      return Error::success();
    };
    auto number = [&](double &out) -> Error {
      if (!to_float(value.trim(), out))
        return createStringError(
            formatv("--{0}: '{1}' is not a number", name, value));
      return Error::success();
    };
    Error e = Error::success();
    if (name == "target")
      o.target = value.str();
    else if (name == "weights")
      o.weights = value.str();
    else if (name == "prompt-ids")
      o.promptIds = value.str();
    else if (name == "mode")
      o.mode = value.str();
    else if (name == "stats")
      o.stats = value.str();
    else if (name == "trace")
      o.trace = value.str();
    else if (name == "logits-out")
      o.logitsOut = value.str();
    else if (name == "max-new-tokens")
      e = integer(o.maxNewTokens, 1);
    else if (name == "start-pos")
      e = integer(o.startPos, 0);
    else if (name == "top")
      e = integer(o.top, 0);
    else if (name == "top-k")
      e = integer(o.sampling.topK, 0);
    else if (name == "seed") {
      uint64_t seed;
      if (value.trim().getAsInteger(10, seed))
        e = createStringError(formatv(
            "--seed: '{0}' is not a non-negative 64-bit integer", value));
      else
        o.sampling.seed = seed;
    } else if (name == "temperature")
      e = number(o.sampling.temperature);
    else if (name == "top-p")
      e = number(o.sampling.topP);
    else
      return createStringError("unknown option '" + arg +
                               "' (see 'pimc run --help')");
    if (e)
      return e;
  }
  return Error::success();
}

Error writeJSONFile(StringRef path, json::Value value) {
  Error e = writeToOutput(path, [&](raw_ostream &os) -> Error {
    os << formatv("{0:2}", value) << "\n";
    return Error::success();
  });
  if (e)
    return createStringError(
        formatv("cannot write '{0}': {1}", path, toString(std::move(e))));
  return Error::success();
}

int run(const Options &o) {
  if (o.program.empty())
    return fail("no program given (usage: pimc run <model.pimb> --prompt-ids "
                "<ids> ...; see --help)");
  bool functional;
  if (o.mode == "functional")
    functional = true;
  else if (o.mode == "timing")
    functional = false;
  else
    return fail(formatv("--mode: '{0}' is not functional or timing", o.mode));
  if (o.promptIds.empty())
    return fail("--prompt-ids is required");
  auto prompt = pimcParsePromptIds(o.promptIds);
  if (!prompt)
    return fail(toString(prompt.takeError()));
  if (functional && o.weights.empty())
    return fail("functional mode needs --weights <checkpoint-dir> (or use "
                "--mode timing)");
  if (functional && o.startPos != 0)
    return fail("--start-pos needs --mode timing (in functional mode the "
                "positions before it would attend to an empty KV cache)");
  if (Error e = o.sampling.validate())
    return fail("sampling: " + toString(std::move(e)));
  if (!o.weights.empty() && !sys::fs::is_directory(o.weights))
    return fail(formatv("--weights: '{0}' is not a directory", o.weights));

  auto program = pimsim::readProgram(o.program);
  if (!program)
    return fail(toString(program.takeError()));

  // The target: --target, or targets/<program target>.json.
  std::string targetPath = o.target;
  if (targetPath.empty()) {
    Expected<std::string> found = findTarget(program->target.name);
    if (!found)
      return fail(
          formatv("no --target given: {0}", toString(found.takeError())));
    targetPath = *found;
  }
  auto targetBytes = MemoryBuffer::getFile(targetPath, /*IsText=*/true);
  if (!targetBytes)
    return fail(
        formatv("{0}: {1}", targetPath, targetBytes.getError().message()));
  auto target = pimsim::parseTarget((*targetBytes)->getBuffer(), targetPath);
  if (!target)
    return fail(toString(target.takeError()));
  if (Error e = rt::checkTargetIdentity(*program, *target, o.allowMismatch))
    return fail(formatv("{0}: {1}", targetPath, toString(std::move(e))));
  StringRef hash = program->target.hash;
  std::string fileHash = pimsim::targetContentHash((*targetBytes)->getBuffer());
  if (!hash.empty() && hash != "sha256:0" && hash != fileHash)
    WithColor::warning(errs(), "pimc run")
        << targetPath
        << " differs from the target file the program was compiled with "
           "(content hash "
        << fileHash << ", program: " << hash << ")\n";

  rt::SimDevice device(std::move(*target), functional);
  rt::SessionOptions sessionOptions;
  sessionOptions.allowTargetNameMismatch = o.allowMismatch;
  auto session = rt::ModelSession::open(device, std::move(*program), o.weights,
                                        sessionOptions);
  if (!session)
    return fail(formatv("{0}: {1}", o.program, toString(session.takeError())));

  rt::GenerateOptions gen;
  gen.maxNewTokens = o.maxNewTokens;
  gen.startPos = o.startPos;
  gen.sampling = o.sampling;
  gen.keepLogits = !o.logitsOut.empty();
  if (!o.logitsOut.empty() && !functional)
    return fail("--logits-out needs functional mode (timing computes no "
                "logits)");
  int64_t total = int64_t(prompt->size()) + o.maxNewTokens - 1, done = 0;
  if (o.verbose)
    gen.onStep = [&](const rt::StepRecord &s) {
      errs() << formatv("step {0}/{1}: {2} pos {3} token {4}: {5} simulated, "
                        "{6} wall\n",
                        ++done, total, s.prefill ? "prefill" : "decode", s.pos,
                        s.token, rt::humanSeconds(s.report.seconds),
                        rt::humanSeconds(s.wallSeconds));
    };
  auto result = (*session)->generate(*prompt, gen);
  if (!result)
    return fail(formatv("{0}: {1}", o.program, toString(result.takeError())));

  const pimsim::Program &prog = (*session)->program();
  rt::PerfReport report =
      rt::buildReport(device, prog, (*session)->hostOps(), result->steps);

  if (!o.logitsOut.empty()) {
    Error e = writeToOutput(o.logitsOut, [&](raw_ostream &os) -> Error {
      for (const std::vector<float> &row : result->logits)
        for (float v : row) {
          uint32_t bits;
          std::memcpy(&bits, &v, 4);
          char b[4] = {char(bits), char(bits >> 8), char(bits >> 16),
                       char(bits >> 24)};
          os.write(b, 4);
        }
      return Error::success();
    });
    if (e)
      return fail(formatv("cannot write '{0}': {1}", o.logitsOut,
                          toString(std::move(e))));
  }
  if (!o.stats.empty())
    if (Error e = writeJSONFile(o.stats, rt::reportJSON(report, *result, prog)))
      return fail(toString(std::move(e)));
  if (!o.trace.empty())
    if (Error e = writeJSONFile(
            o.trace, rt::traceJSON(prog, device.target(), result->steps)))
      return fail(toString(std::move(e)));

  if (o.json) {
    outs() << formatv("{0:2}", rt::reportJSON(report, *result, prog)) << "\n";
    return 0;
  }
  outs() << "prompt:";
  for (int64_t t : result->prompt)
    outs() << " " << t;
  outs() << "\n";
  if (result->computed) {
    outs() << "tokens:";
    for (int64_t t : result->tokens)
      outs() << " " << t;
    outs() << "\n";
  } else {
    outs() << formatv("tokens: not computed (timing mode; {0} new token(s) "
                      "timed, each fed as token 0)\n",
                      result->tokens.size());
  }
  rt::printReport(report, outs(), unsigned(o.top));
  if (!o.logitsOut.empty())
    outs() << formatv("logits: [{0}, {1}] f32 written to {2}\n",
                      result->logits.size(), (*session)->vocabSize(),
                      o.logitsOut);
  return 0;
}

} // namespace

int pimcRunMain(int argc, char **argv) {
  Options o;
  if (Error e = parseArgs(argc, argv, o))
    return fail(toString(std::move(e)));
  if (o.help) {
    outs() << kUsage;
    return 0;
  }
  return run(o);
}

Expected<std::vector<int64_t>> pimcParsePromptIds(StringRef text) {
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
