//===- pimsim.cpp - the PIM simulator's command line ----------------------===//
//
//   pimsim run <program.pimb> --target <file> [--mode timing|functional]
//              [--entry name] [--param name=value]... [--stats f]
//   pimsim trace <requests.trace> --target <file> [--stats f] [--trace f]
//   pimsim asm <program.s> -o <program.pimb>
//   pimsim disasm <program.pimb> [-o <program.s>]
//
//===----------------------------------------------------------------------===//
#include "pimsim/Engine.h"
#include "pimsim/Program.h"
#include "pimsim/Simulator.h"
#include "pimsim/Target.h"
#include "pimsim/Trace.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace llvm;
using namespace pimsim;

namespace {

cl::OptionCategory category("pimsim options");
cl::SubCommand runCmd("run", "Run a program's entry point on a target");
cl::SubCommand traceCmd("trace",
                        "Run a memory-request or AttAcc PIM request trace");
cl::SubCommand asmCmd("asm", "Assemble program text into a .pimb program");
cl::SubCommand disasmCmd("disasm", "Print a .pimb program as text");

cl::opt<std::string> runInput(cl::Positional, cl::sub(runCmd), cl::Required,
                              cl::desc("<program.pimb>"), cl::cat(category));
cl::opt<std::string> traceInput(cl::Positional, cl::sub(traceCmd), cl::Required,
                                cl::desc("<requests.trace>"),
                                cl::cat(category));
cl::opt<std::string> asmInput(cl::Positional, cl::sub(asmCmd), cl::Required,
                              cl::desc("<program.s>"), cl::cat(category));
cl::opt<std::string> disasmInput(cl::Positional, cl::sub(disasmCmd),
                                 cl::Required, cl::desc("<program.pimb>"),
                                 cl::cat(category));
cl::opt<std::string> targetPath("target", cl::sub(runCmd), cl::sub(traceCmd),
                                cl::Required, cl::value_desc("file"),
                                cl::desc("Target description (targets/*.json)"),
                                cl::cat(category));
cl::opt<std::string> statsPath("stats", cl::sub(runCmd), cl::sub(traceCmd),
                               cl::value_desc("file"),
                               cl::desc("Write statistics as JSON"),
                               cl::cat(category));
cl::opt<std::string>
    tracePath("trace", cl::sub(runCmd), cl::sub(traceCmd),
              cl::value_desc("file"),
              cl::desc("Write a Chrome/Perfetto trace (one track per channel)"),
              cl::cat(category));
cl::opt<bool> noRefresh("no-refresh", cl::sub(traceCmd),
                        cl::desc("Disable periodic refresh"),
                        cl::cat(category));
cl::opt<bool> allowTargetMismatch(
    "allow-target-mismatch", cl::sub(runCmd),
    cl::desc("Run even if the target differs from the one the program was "
             "compiled for (name or content hash)"),
    cl::cat(category));
cl::opt<std::string> modeName("mode", cl::sub(runCmd), cl::init("timing"),
                              cl::value_desc("functional|timing"),
                              cl::desc("Simulation mode (default: timing)"),
                              cl::cat(category));
cl::opt<std::string> entryName("entry", cl::sub(runCmd), cl::init("decode"),
                               cl::value_desc("name"),
                               cl::desc("Entry point to run (default: decode)"),
                               cl::cat(category));
cl::list<std::string>
    paramValues("param", cl::sub(runCmd), cl::value_desc("name=value"),
                cl::desc("Input parameter of the entry (repeatable)"),
                cl::cat(category));
cl::opt<std::string> outputPath("o", cl::sub(asmCmd), cl::sub(disasmCmd),
                                cl::value_desc("file"), cl::init("-"),
                                cl::desc("Output file (default: stdout)"),
                                cl::cat(category));

int fail(const Twine &msg) {
  WithColor::error(errs(), "pimsim") << msg << "\n";
  return 1;
}

/// Records every command as a Perfetto/Chrome trace event.
class TraceRecorder : public CommandObserver {
public:
  TraceRecorder(const Target &t) : tgt(t) {}
  void onCommand(int64_t cycle, Command cmd, const DecodedAddress &a,
                 const Request *) override {
    double us = cycle * tgt.tCKps * 1e-6;
    events.push_back(json::Object{
        {"name", commandName(cmd)},
        {"ph", "X"},
        {"ts", us},
        {"dur", tgt.tCKps * 1e-6},
        {"pid", a.stack},
        {"tid", a.channel},
        {"args",
         json::Object{{"row", a.row},
                      {"col", a.column},
                      {"bank", ((a.pseudoChannel * tgt.org.sids + a.sid) *
                                    tgt.org.bankGroups +
                                a.bankGroup) *
                                       tgt.org.banks +
                                   a.bank}}}});
  }
  json::Array events;

private:
  const Target &tgt;
};

Error writeJSON(StringRef path, json::Value value) {
  if (std::optional<std::string> bad = nonFiniteField(value))
    return createStringError(formatv("{0}: {1} is not a finite number; "
                                     "refusing to write invalid JSON",
                                     path, *bad));
  return writeToOutput(path, [&](raw_ostream &os) -> Error {
    os << formatv("{0:2}", value) << "\n";
    return Error::success();
  });
}

void printSummary(const Target &t, const Stats &s, double hostSeconds,
                  double nearMemorySeconds = 0) {
  outs() << formatv("target:     {0}\n", t.name);
  outs() << formatv("requests:   {0}\n", s.requests);
  outs() << formatv("cycles:     {0} ({1:F3} us at tCK {2} ps)\n", s.cycles,
                    s.seconds * 1e6, t.tCKps);
  // Peaks of the channels the run used (a one-stack trace on a five-stack
  // device is measured against one stack).
  int64_t active = 0;
  for (const ChannelStats &c : s.channels)
    active += c.columnSlotBusy > 0;
  double share = active ? double(active) / t.org.totalChannels() : 1.0;
  double extPeak = t.externalPeakBytesPerSec() * share;
  double inPeak = t.internalPeakBytesPerSec() * share;
  double ext = s.externalBandwidth(), in = s.internalBandwidth();
  outs() << formatv("channels:   {0} of {1} used\n", active,
                    t.org.totalChannels());
  outs() << formatv("external:   {0:F2} GB/s ({1:F1}% of {2:F1} GB/s peak)\n",
                    ext / 1e9, 100 * ext / extPeak, extPeak / 1e9);
  outs() << formatv("internal:   {0:F2} GB/s ({1:F1}% of {2:F1} GB/s "
                    "power-capped peak)\n",
                    in / 1e9, 100 * in / inPeak, inPeak / 1e9);
  int64_t accesses = s.rowHits + s.rowMisses;
  outs() << formatv("row hits:   {0:F1}% of {1} accesses\n",
                    accesses ? 100.0 * s.rowHits / accesses : 0.0, accesses);
  outs() << "commands:  ";
  for (unsigned c = 0; c < kNumCommands; ++c)
    if (s.commandCounts[c])
      outs() << " " << commandName(static_cast<Command>(c)) << "="
             << s.commandCounts[c];
  outs() << "\n";
  outs() << formatv("energy:     {0:F3} uJ\n", s.energyPj * 1e-6);
  if (hostSeconds > 0)
    outs() << formatv("host:       {0:F3} ms of simulation time\n",
                      hostSeconds * 1e3);
  if (nearMemorySeconds > 0)
    outs() << formatv("near-memory: {0:F3} us of simulation time\n",
                      nearMemorySeconds * 1e6);
}

/// The end of `trace` and `run`: simulator speed, then --stats / --trace.
int finishRun(const Stats &stats, double hostSeconds, json::Value statsJSON,
              TraceRecorder &recorder) {
  int64_t commands = 0;
  for (int64_t n : stats.commandCounts)
    commands += n;
  outs() << formatv(
      "simulator:  {0:F3} s host time, {1:F2} M DRAM commands/s\n", hostSeconds,
      hostSeconds > 0 ? commands / hostSeconds / 1e6 : 0.0);
  if (!statsPath.empty())
    if (Error e = writeJSON(statsPath, std::move(statsJSON)))
      return fail(toString(std::move(e)));
  if (!tracePath.empty())
    if (Error e = writeJSON(
            tracePath, json::Object{{"traceEvents", std::move(recorder.events)},
                                    {"displayTimeUnit", "ns"}}))
      return fail(toString(std::move(e)));
  return 0;
}

int runTraceCommand() {
  auto target = loadTarget(targetPath);
  if (!target)
    return fail(toString(target.takeError()));
  auto requests = loadTrace(traceInput);
  if (!requests)
    return fail(toString(requests.takeError()));
  TraceRecorder recorder(*target);
  EngineOptions options;
  options.refresh = !noRefresh;
  if (!tracePath.empty())
    options.observer = &recorder;
  Engine engine(*target, options);
  auto start = std::chrono::steady_clock::now();
  auto stats = engine.runTrace(*requests);
  double host =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!stats)
    return fail(formatv("{0}: {1}", traceInput, toString(stats.takeError())));
  printSummary(*target, *stats, 0);
  return finishRun(*stats, host, stats->toJSON(*target), recorder);
}

/// A program records the target it was compiled for (name, and the content
/// hash of the file when the compiler wrote it; hand-written programs may
/// leave the hash empty). Running it on another target is refused unless
/// --allow-target-mismatch is given.
Error checkTargetIdentity(const Program &program, const Target &target) {
  auto bytes = MemoryBuffer::getFile(targetPath, /*IsText=*/false,
                                     /*RequiresNullTerminator=*/false);
  if (!bytes)
    return createStringError(bytes.getError(),
                             targetPath + ": " + bytes.getError().message());
  std::string hash = targetContentHash((*bytes)->getBuffer());
  const TargetIdentity &want = program.target;
  bool sameHash = want.hash.empty() || want.hash == hash;
  if ((sameHash && want.name == target.name) || allowTargetMismatch)
    return Error::success();
  return createStringError(formatv(
      "{0}: compiled for target '{1}' ({2}), but --target {3} is '{4}' ({5}); "
      "pass --allow-target-mismatch to run it anyway",
      runInput, want.name, want.hash.empty() ? "no hash" : want.hash,
      targetPath, target.name, hash));
}

int runProgramCommand() {
  SimMode mode;
  if (modeName == "timing")
    mode = SimMode::Timing;
  else if (modeName == "functional")
    mode = SimMode::Functional;
  else
    return fail(formatv("--mode: '{0}' is not functional or timing", modeName));
  auto target = loadTarget(targetPath);
  if (!target)
    return fail(toString(target.takeError()));
  auto program = readProgram(runInput);
  if (!program)
    return fail(toString(program.takeError()));
  if (Error e = checkTargetIdentity(*program, *target))
    return fail(toString(std::move(e)));
  std::map<std::string, int64_t> inputs;
  for (StringRef kv : paramValues) {
    auto [name, text] = kv.split('=');
    int64_t value = 0;
    if (name.empty() || !kv.contains('=') || text.getAsInteger(0, value))
      return fail(formatv("--param: expected name=value, found '{0}'", kv));
    if (!inputs.try_emplace(name.str(), value).second)
      return fail(formatv("--param: '{0}' given twice", name));
  }
  Simulator sim(std::move(*target), mode);
  if (Error e = sim.loadProgram(std::move(*program)))
    return fail(formatv("{0}: {1}", runInput, toString(std::move(e))));
  TraceRecorder recorder(sim.target());
  auto start = std::chrono::steady_clock::now();
  auto report = sim.run(entryName, inputs, nullptr,
                        tracePath.empty() ? nullptr : &recorder);
  double host =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!report)
    return fail(formatv("{0}: {1}", runInput, toString(report.takeError())));
  printSummary(sim.target(), report->pim, report->hostSeconds,
               report->nearMemorySeconds);
  outs() << formatv("total:      {0:F3} us over {1} phase(s)\n",
                    report->seconds * 1e6, report->phases.size());
  // The host's track: one span per phase with host kernels.
  int64_t hostPid = sim.target().org.stacks;
  recorder.events.push_back(
      json::Object{{"name", "process_name"},
                   {"ph", "M"},
                   {"pid", hostPid},
                   {"args", json::Object{{"name", "host"}}}});
  for (const PhaseReport &p : report->phases)
    if (p.hostKernels)
      recorder.events.push_back(json::Object{
          {"name", formatv("{0} host kernel(s)", p.hostKernels).str()},
          {"ph", "X"},
          {"ts", p.startSeconds * 1e6},
          {"dur", p.hostSeconds * 1e6},
          {"pid", hostPid},
          {"tid", 0}});
  // Kernels on near-memory units (1.2): a second thread of that track.
  for (const PhaseReport &p : report->phases)
    if (p.nearMemoryKernels)
      recorder.events.push_back(json::Object{
          {"name",
           formatv("{0} near-memory kernel(s)", p.nearMemoryKernels).str()},
          {"ph", "X"},
          {"ts", p.startSeconds * 1e6},
          {"dur", p.nearMemorySeconds * 1e6},
          {"pid", hostPid},
          {"tid", 1}});
  return finishRun(report->pim, host, report->toJSON(sim.target()), recorder);
}

int runAsmCommand() {
  auto text = MemoryBuffer::getFileOrSTDIN(asmInput, /*IsText=*/true);
  if (!text)
    return fail(formatv("{0}: {1}", asmInput, text.getError().message()));
  auto program = parseProgramText((*text)->getBuffer(), asmInput);
  if (!program)
    return fail(toString(program.takeError()));
  if (Error e = writeProgram(*program, outputPath))
    return fail(toString(std::move(e)));
  return 0;
}

int runDisasmCommand() {
  auto program = readProgram(disasmInput);
  if (!program)
    return fail(toString(program.takeError()));
  Error e = writeToOutput(outputPath, [&](raw_ostream &os) -> Error {
    printProgram(*program, os);
    return Error::success();
  });
  if (e)
    return fail(toString(std::move(e)));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "pimsim: cycle-level simulator of processing-in-memory devices\n\n"
      "  pimsim run <program.pimb> --target targets/hbm3-pim.json\n"
      "  pimsim trace <requests.trace> --target targets/hbm3-pim.json\n"
      "  pimsim asm <program.s> -o <program.pimb>\n"
      "  pimsim disasm <program.pimb>\n");
  if (runCmd)
    return runProgramCommand();
  if (traceCmd)
    return runTraceCommand();
  if (asmCmd)
    return runAsmCommand();
  if (disasmCmd)
    return runDisasmCommand();
  errs() << "pimsim: no subcommand given; run 'pimsim --help'\n";
  return 1;
}
