//===- RunCommand.cpp - `pimc run` ----------------------------------------===//
//
//   pimc run model.pimb --weights <checkpoint-dir> --prompt-ids 1,2,3
//            [--target <target.json>] [--max-new-tokens N]
//            [--mode functional|timing] [--start-pos N]
//            [--temperature T --top-k K --top-p P --seed S]
//            [--stats out.json] [--trace out.json] [--json]
//
// Everything between the options and the printout is the runtime's
// (pimc/Runtime/Run.h).
//
//===----------------------------------------------------------------------===//
#include "RunCommand.h"
#include "Targets.h"

#include "pimc/Runtime/Run.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace pimc;

namespace {

int fail(const Twine &msg) {
  WithColor::error(errs(), "pimc run") << msg << "\n";
  return 1;
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

/// The request the options describe, or the first problem with them.
Expected<rt::RunRequest> requestOf(const RunCommandOptions &o) {
  rt::RunRequest r;
  r.program = o.program;
  r.target = o.target;
  r.findTarget = findTarget;
  r.weights = o.weights;
  r.hostFunctions = o.hostFunctions;
  if (o.mode == "functional")
    r.functional = true;
  else if (o.mode == "timing")
    r.functional = false;
  else
    return createStringError(
        formatv("--mode: '{0}' is not functional or timing", o.mode));
  if (o.maxNewTokens < 1)
    return createStringError(formatv(
        "--max-new-tokens: '{0}' is not an integer >= 1", o.maxNewTokens));
  if (o.startPos < 0)
    return createStringError(
        formatv("--start-pos: '{0}' is not an integer >= 0", o.startPos));
  if (!o.promptIds.empty()) { // none: the runtime says it is required
    auto prompt = rt::parsePromptIds(o.promptIds);
    if (!prompt)
      return prompt.takeError();
    r.prompt = std::move(*prompt);
  }
  r.maxNewTokens = o.maxNewTokens;
  r.startPos = o.startPos;
  r.sampling = o.sampling;
  r.keepLogits = !o.logitsOut.empty();
  r.allowTargetMismatch = o.allowMismatch;
  r.onWarning = [](StringRef msg) {
    WithColor::warning(errs(), "pimc run") << msg << "\n";
  };
  if (o.verbose)
    r.onStep = [](const rt::StepRecord &s, int64_t done, int64_t total) {
      errs() << formatv("step {0}/{1}: {2} pos {3} token {4}: {5} simulated, "
                        "{6} wall\n",
                        done, total, s.prefill ? "prefill" : "decode", s.pos,
                        s.token, rt::humanSeconds(s.report.seconds),
                        rt::humanSeconds(s.wallSeconds));
    };
  return r;
}

} // namespace

int pimcRun(const RunCommandOptions &o) {
  auto request = requestOf(o);
  if (!request)
    return fail(toString(request.takeError()));
  auto outcome = rt::runCompiledModel(*request);
  if (!outcome)
    return fail(toString(outcome.takeError()));
  const pimsim::Program &prog = outcome->session->program();
  if (!o.logitsOut.empty())
    if (Error e = rt::writeLogits(o.logitsOut, outcome->result))
      return fail(toString(std::move(e)));
  if (!o.stats.empty())
    if (Error e = writeJSONFile(
            o.stats, rt::reportJSON(outcome->report, outcome->result, prog)))
      return fail(toString(std::move(e)));
  if (!o.trace.empty())
    if (Error e = writeJSONFile(o.trace,
                                rt::traceJSON(prog, outcome->device->target(),
                                              outcome->result.steps)))
      return fail(toString(std::move(e)));
  if (o.json) {
    outs() << formatv("{0:2}",
                      rt::reportJSON(outcome->report, outcome->result, prog))
           << "\n";
    return 0;
  }
  rt::printRunOutcome(*outcome, outs(), unsigned(o.top));
  if (!o.logitsOut.empty())
    outs() << formatv("logits: [{0}, {1}] f32 written to {2}\n",
                      outcome->result.logits.size(),
                      outcome->session->vocabSize(), o.logitsOut);
  return 0;
}
