//===- Run.cpp - run a compiled model end to end --------------------------===//
//
// The session driver behind `pimc run` (Run.h).
//
//===----------------------------------------------------------------------===//
#include "pimc/Runtime/Run.h"

#include "pimsim/Program.h"
#include "pimsim/Target.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstring>

using namespace llvm;
using namespace pimc;
using namespace pimc::rt;

namespace {

Error fail(const Twine &msg) { return createStringError(msg.str()); }

/// The request's options, checked before any file is read.
Error checkRequest(const RunRequest &r) {
  if (r.program.empty())
    return fail("no program given (usage: pimc run <model.pimb> --prompt-ids "
                "<ids> ...; see --help)");
  if (r.prompt.empty())
    return fail("--prompt-ids is required");
  if (r.functional && r.weights.empty())
    return fail("functional mode needs --weights <checkpoint-dir | "
                "file.safetensors> (or use "
                "--mode timing)");
  if (r.functional && r.startPos != 0)
    return fail("--start-pos needs --mode timing (in functional mode the "
                "positions before it would attend to an empty KV cache)");
  if (Error e = r.sampling.validate())
    return fail("sampling: " + toString(std::move(e)));
  if (!r.weights.empty() && !sys::fs::is_directory(r.weights) &&
      !sys::fs::is_regular_file(r.weights))
    return fail(formatv("--weights: '{0}' is neither a checkpoint directory "
                        "nor a .safetensors file",
                        r.weights));
  if (r.keepLogits && !r.functional)
    return fail("--logits-out needs functional mode (timing computes no "
                "logits)");
  return Error::success();
}

/// The target the program runs on: the request's file, or the program's
/// target by name; checked against the program.
Expected<pimsim::Target> openTarget(const RunRequest &r,
                                    const pimsim::Program &program) {
  std::string path = r.target;
  if (path.empty()) {
    if (!r.findTarget)
      return fail("no --target given");
    Expected<std::string> found = r.findTarget(program.target.name);
    if (!found)
      return fail(
          formatv("no --target given: {0}", toString(found.takeError())));
    path = *found;
  }
  auto bytes = MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!bytes)
    return fail(formatv("{0}: {1}", path, bytes.getError().message()));
  auto target = pimsim::parseTarget((*bytes)->getBuffer(), path);
  if (!target)
    return target.takeError();
  if (Error e = checkTargetIdentity(program, *target, r.allowTargetMismatch))
    return fail(formatv("{0}: {1}", path, toString(std::move(e))));
  StringRef hash = program.target.hash;
  std::string fileHash = pimsim::targetContentHash((*bytes)->getBuffer());
  if (!hash.empty() && hash != "sha256:0" && hash != fileHash && r.onWarning)
    r.onWarning(formatv("{0} differs from the target file the program was "
                        "compiled with (content hash {1}, program: {2})",
                        path, fileHash, hash)
                    .str());
  return target;
}

} // namespace

Expected<RunOutcome> pimc::rt::runCompiledModel(const RunRequest &r) {
  if (Error e = checkRequest(r))
    return e;
  auto program = pimsim::readProgram(r.program);
  if (!program)
    return program.takeError();
  auto target = openTarget(r, *program);
  if (!target)
    return target.takeError();

  RunOutcome out;
  out.device = std::make_unique<SimDevice>(std::move(*target), r.functional);
  SessionOptions sessionOptions;
  sessionOptions.allowTargetNameMismatch = r.allowTargetMismatch;
  sessionOptions.hostFunctions = r.hostFunctions;
  auto session = ModelSession::open(*out.device, std::move(*program), r.weights,
                                    sessionOptions);
  if (!session)
    return fail(formatv("{0}: {1}", r.program, toString(session.takeError())));
  out.session = std::move(*session);

  GenerateOptions gen;
  gen.maxNewTokens = r.maxNewTokens;
  gen.startPos = r.startPos;
  gen.sampling = r.sampling;
  gen.keepLogits = r.keepLogits;
  int64_t total = int64_t(r.prompt.size()) + r.maxNewTokens - 1, done = 0;
  if (r.onStep)
    gen.onStep = [&](const StepRecord &s) { r.onStep(s, ++done, total); };
  auto result = out.session->generate(r.prompt, gen);
  if (!result)
    return fail(formatv("{0}: {1}", r.program, toString(result.takeError())));
  out.result = std::move(*result);
  out.report =
      buildReport(*out.device, out.session->program(), out.result.steps);
  out.report.recomputedTokens = out.result.recomputedTokens;
  out.report.longRopeL0 = out.session->hostOps().longRopeL0();
  return out;
}

Expected<std::vector<int64_t>> pimc::rt::parsePromptIds(StringRef text) {
  std::vector<int64_t> ids;
  SmallVector<StringRef> parts;
  text.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef p : parts) {
    int64_t v;
    if (p.trim().getAsInteger(10, v) || v < 0)
      return fail(formatv("--prompt-ids: '{0}' is not a non-negative integer",
                          p.trim()));
    ids.push_back(v);
  }
  if (ids.empty())
    return fail("--prompt-ids: no token ids given");
  return ids;
}

Error pimc::rt::writeLogits(StringRef path, const GenerationResult &result) {
  Error e = writeToOutput(path, [&](raw_ostream &os) -> Error {
    for (const std::vector<float> &row : result.logits)
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
    return fail(
        formatv("cannot write '{0}': {1}", path, toString(std::move(e))));
  return Error::success();
}

void pimc::rt::printRunOutcome(const RunOutcome &o, raw_ostream &os,
                               unsigned top) {
  os << "prompt:";
  for (int64_t t : o.result.prompt)
    os << " " << t;
  os << "\n";
  if (o.result.computed) {
    os << "tokens:";
    for (int64_t t : o.result.tokens)
      os << " " << t;
    os << "\n";
  } else {
    os << formatv("tokens: not computed (timing mode; {0} new token(s) "
                  "timed, each fed as token 0)\n",
                  o.result.tokens.size());
  }
  printReport(o.report, os, top);
}
