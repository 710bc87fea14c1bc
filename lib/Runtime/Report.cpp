//===- Report.cpp - performance report of a model run ---------------------===//
#include "pimc/Runtime/Report.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace llvm;

namespace pimc::rt {

std::string humanSeconds(double s) {
  double a = std::fabs(s);
  if (a == 0)
    return "0 s";
  if (a >= 1)
    return formatv("{0:F3} s", s).str();
  if (a >= 1e-3)
    return formatv("{0:F3} ms", s * 1e3).str();
  if (a >= 1e-6)
    return formatv("{0:F3} us", s * 1e6).str();
  return formatv("{0:F1} ns", s * 1e9).str();
}

std::string humanBytes(double b) {
  double a = std::fabs(b);
  if (a >= 1e9)
    return formatv("{0:F2} GB", b / 1e9).str();
  if (a >= 1e6)
    return formatv("{0:F2} MB", b / 1e6).str();
  if (a >= 1e3)
    return formatv("{0:F2} KB", b / 1e3).str();
  return formatv("{0:F0} B", b).str();
}

ModelFootprint modelFootprint(const pimsim::Program &program) {
  const pimsim::MemoryPlan &m = program.memory;
  ModelFootprint f;
  f.weightBytes = double(m.weightBytesPerToken());
  f.residentWeightBytes = double(m.weightBytes);
  f.kvBytesPerPosition = double(m.kvBytesPerPosition);
  f.layers = m.kvLayers;
  return f;
}

namespace {

/// Each phase's length on the run's timeline.
std::vector<double> phaseDurations(const pimsim::RunReport &r) {
  std::vector<double> d(r.phases.size());
  for (size_t i = 0; i < r.phases.size(); ++i) {
    double end =
        i + 1 < r.phases.size() ? r.phases[i + 1].startSeconds : r.seconds;
    d[i] = std::max(0.0, end - r.phases[i].startSeconds);
  }
  return d;
}

std::vector<NamedTime> sorted(StringMap<NamedTime> &m) {
  std::vector<NamedTime> v;
  for (auto &kv : m)
    v.push_back(kv.second);
  std::sort(v.begin(), v.end(), [](const NamedTime &a, const NamedTime &b) {
    return a.seconds != b.seconds ? a.seconds > b.seconds : a.name < b.name;
  });
  return v;
}

PartSummary summarize(const pimsim::Program &program,
                      const pimsim::Target &target, const ModelFootprint &fp,
                      double internalPeak, ArrayRef<const StepRecord *> steps) {
  PartSummary s;
  s.tokens = int64_t(steps.size());
  if (steps.empty())
    return s;
  s.firstPos = steps.front()->pos;
  s.lastPos = steps.back()->pos;
  StringMap<NamedTime> streams, kernels;
  double tck = target.tCKps * 1e-12;
  for (const StepRecord *step : steps) {
    const pimsim::RunReport &r = step->report;
    s.seconds += r.seconds;
    s.wallSeconds += step->wallSeconds;
    std::vector<double> dur = phaseDurations(r);
    for (size_t i = 0; i < r.phases.size(); ++i) {
      const pimsim::PhaseReport &p = r.phases[i];
      if (p.pimSeconds >= p.hostSeconds && p.pimSeconds >= p.nearMemorySeconds)
        s.pimBoundSeconds += dur[i];
      else if (p.hostSeconds >= p.nearMemorySeconds)
        s.hostBoundSeconds += dur[i];
      else
        s.nearMemoryBoundSeconds += dur[i];
      s.pimBusySeconds += p.pimSeconds;
      s.hostBusySeconds += p.hostSeconds;
      s.nearMemoryBusySeconds += p.nearMemorySeconds;
      for (size_t j = 0; j < p.streams.size(); ++j) {
        int64_t idx = p.streams[j];
        if (idx < 0 || idx >= int64_t(program.streams.size()))
          continue;
        const pimsim::Stream &stream = program.streams[idx];
        NamedTime &t = streams[stream.name];
        t.name = stream.name;
        t.layer = stream.info.layer;
        t.op = stream.info.op.empty() ? stream.name : stream.info.op;
        t.kernel = stream.info.kernel;
        t.seconds += j < p.streamCycles.size() ? p.streamCycles[j] * tck : 0;
        ++t.count;
      }
      for (size_t j = 0; j < p.kernels.size(); ++j) {
        int64_t idx = p.kernels[j];
        if (idx < 0 || idx >= int64_t(program.kernels.size()))
          continue;
        const pimsim::HostKernel &k = program.kernels[idx];
        NamedTime &t = kernels[k.name];
        t.name = k.name;
        t.unit = k.unit;
        t.seconds += j < p.kernelSeconds.size() ? p.kernelSeconds[j] : 0;
        ++t.count;
      }
    }
    const pimsim::Stats &st = r.pim;
    s.bytesMac += double(st.bytesMac);
    s.bytesRead += double(st.bytesRead);
    s.bytesWritten += double(st.bytesWritten);
    s.energyPj += st.energyPj;
    s.requests += double(st.requests);
    for (int64_t c : st.commandCounts)
      s.commands += double(c);
    s.sfm += double(st.commandCounts[size_t(pimsim::Command::SFM)]);
    s.rowHits += double(st.rowHits);
    s.rowMisses += double(st.rowMisses);
    s.weightBytes += fp.weightBytes;
    s.kvBytes += fp.kvBytesPerPosition * double(step->pos + 1);
  }
  double n = double(s.tokens);
  s.meanSeconds = s.seconds / n;
  s.tokensPerSecond = s.meanSeconds > 0 ? 1.0 / s.meanSeconds : 0;
  for (double *v :
       {&s.pimBoundSeconds, &s.hostBoundSeconds, &s.nearMemoryBoundSeconds,
        &s.pimBusySeconds, &s.hostBusySeconds, &s.nearMemoryBusySeconds,
        &s.bytesMac, &s.bytesRead, &s.bytesWritten, &s.energyPj, &s.requests,
        &s.commands, &s.sfm, &s.rowHits, &s.rowMisses, &s.weightBytes,
        &s.kvBytes})
    *v /= n;
  s.requiredBytes = s.weightBytes + s.kvBytes;
  s.rooflineSeconds = internalPeak > 0 ? s.requiredBytes / internalPeak : 0;
  s.streams = sorted(streams);
  s.kernels = sorted(kernels);
  return s;
}

} // namespace

PerfReport buildReport(const Device &device, const pimsim::Program &program,
                       ArrayRef<StepRecord> steps) {
  const pimsim::Target &target = device.target();
  PerfReport r;
  r.device = device.describe();
  r.target = target.name;
  r.computed = device.functional();
  r.channels = target.org.totalChannels();
  r.internalPeak = target.internalPeakBytesPerSec();
  r.externalPeak = target.externalPeakBytesPerSec();
  r.footprint = modelFootprint(program);
  std::set<size_t> used;
  std::vector<const StepRecord *> prefill, decode;
  for (const StepRecord &s : steps) {
    (s.prefill ? prefill : decode).push_back(&s);
    const auto &ch = s.report.pim.channels;
    // A channel is used when it issued column commands (data or MAC):
    // refresh, a row command, runs on every channel (as pimsim counts).
    for (size_t c = 0; c < ch.size(); ++c)
      if (ch[c].columnSlotBusy > 0)
        used.insert(c);
  }
  r.channelsUsed = int64_t(used.size());
  r.prefill = summarize(program, target, r.footprint, r.internalPeak, prefill);
  r.decode = summarize(program, target, r.footprint, r.internalPeak, decode);
  return r;
}

namespace {

std::string percent(double part, double whole) {
  return whole > 0 ? formatv("{0:F1}%", 100 * part / whole).str() : "-";
}

/// The library kernels an op's streams ran (NamedTime::kernel, "" for
/// none), for the op list: "gemv_fit", "a, b", or "gemv_fit on some
/// streams" when others ran none; empty when none ran one.
std::string kernelNote(const std::set<std::string> &kernels) {
  std::string note;
  for (const std::string &k : kernels)
    if (!k.empty())
      note += (note.empty() ? "" : ", ") + k;
  if (!note.empty() && kernels.count(""))
    note += " on some streams";
  return note;
}

void printPart(raw_ostream &os, StringRef name, const PerfReport &r,
               const PartSummary &s, unsigned top, bool lists) {
  os << formatv("\n{0}, per token (mean of {1}, positions {2}..{3}):\n", name,
                s.tokens, s.firstPos, s.lastPos);
  os << formatv("  time         {0} = PIM-bound {1} ({2}) + host-bound {3} "
                "({4})",
                humanSeconds(s.meanSeconds), humanSeconds(s.pimBoundSeconds),
                percent(s.pimBoundSeconds, s.meanSeconds),
                humanSeconds(s.hostBoundSeconds),
                percent(s.hostBoundSeconds, s.meanSeconds));
  if (s.nearMemoryBusySeconds > 0)
    os << formatv(" + near-memory-bound {0} ({1})",
                  humanSeconds(s.nearMemoryBoundSeconds),
                  percent(s.nearMemoryBoundSeconds, s.meanSeconds));
  os << "\n";
  os << formatv("  busy         PIM streams {0}, host kernels {1}",
                humanSeconds(s.pimBusySeconds),
                humanSeconds(s.hostBusySeconds));
  if (s.nearMemoryBusySeconds > 0)
    os << formatv(", near-memory kernels {0}",
                  humanSeconds(s.nearMemoryBusySeconds));
  os << " (they overlap within a phase)\n";
  os << formatv("  traffic      {0} read in the banks by PIM, {1} over the "
                "pins ({2} read, {3} written)\n",
                humanBytes(s.bytesMac),
                humanBytes(s.bytesRead + s.bytesWritten),
                humanBytes(s.bytesRead), humanBytes(s.bytesWritten));
  // An MoE streams its selected experts of the resident ones.
  std::string resident;
  if (r.footprint.residentWeightBytes > r.footprint.weightBytes)
    resident = formatv(" streamed of {0} resident",
                       humanBytes(r.footprint.residentWeightBytes))
                   .str();
  if (r.footprint.layers > 0)
    os << formatv("  required     {0} = weights {1}{5} + KV {2} ({3} layers, "
                  "{4} per position)\n",
                  humanBytes(s.requiredBytes), humanBytes(s.weightBytes),
                  humanBytes(s.kvBytes), r.footprint.layers,
                  humanBytes(r.footprint.kvBytesPerPosition), resident);
  else
    os << formatv("  required     {0} = weights (the program's memory plan "
                  "has no KV cache)\n",
                  humanBytes(s.requiredBytes));
  double effective = s.meanSeconds > 0 ? s.requiredBytes / s.meanSeconds : 0;
  double macBw = s.meanSeconds > 0 ? s.bytesMac / s.meanSeconds : 0;
  os << formatv("  bandwidth    {0:F1} GB/s effective (required bytes / time); "
                "PIM bank reads {1:F1} GB/s\n",
                effective / 1e9, macBw / 1e9);
  os << formatv("  roofline     {0} per token at the {1:F1} GB/s power-capped "
                "internal peak -> {2} of roofline\n",
                humanSeconds(s.rooflineSeconds), r.internalPeak / 1e9,
                percent(s.rooflineSeconds, s.meanSeconds));
  double accesses = s.rowHits + s.rowMisses;
  os << formatv("  DRAM         {0:F0} requests, {1:F0} commands, row hits {2} "
                "of {3:F0} accesses, {4:F0} SFM (near-memory, inside PIM "
                "time)\n",
                s.requests, s.commands, percent(s.rowHits, accesses), accesses,
                s.sfm);
  os << formatv("  energy       {0:F3} uJ per token\n", s.energyPj * 1e-6);
  double tokens = double(s.tokens);
  auto list = [&](StringRef title, const std::vector<NamedTime> &items) {
    if (items.empty())
      return;
    os << formatv("  top {0} (mean per token, share of the token's time):\n",
                  title);
    for (size_t i = 0; i < items.size() && i < top; ++i) {
      const NamedTime &t = items[i];
      os << formatv("    {0,12}  {1,6}  {2}", humanSeconds(t.seconds / tokens),
                    percent(t.seconds / tokens, s.meanSeconds), t.name);
      if (!t.unit.empty())
        os << " [near-memory " << t.unit << "]";
      if (!t.kernel.empty())
        os << " [kernel " << t.kernel << "]";
      if (t.count > s.tokens)
        os << formatv(" (x{0:F0})", double(t.count) / tokens);
      os << "\n";
    }
    if (items.size() > top)
      os << formatv("    ... and {0} more\n", items.size() - top);
  };
  if (!lists)
    return;
  // The same streams grouped by op over all layers, as the program records
  // them (pimsim::StreamInfo): "L12.gate_up.p3" and "L0.gate_up" are both
  // "gate_up". K-split parts run concurrently, so a group counts its longest
  // part.
  {
    StringMap<NamedTime> byOp;
    StringMap<double> partMax; // per (layer, op): the longest part
    StringMap<std::set<std::string>> opKernels;
    for (const NamedTime &t : s.streams) {
      std::string key = t.layer + "\n" + t.op;
      double &mx = partMax[key];
      NamedTime &g = byOp[t.op];
      g.name = t.op;
      if (t.seconds > mx) {
        g.seconds += t.seconds - mx;
        mx = t.seconds;
      }
      opKernels[t.op].insert(t.kernel);
    }
    std::vector<NamedTime> ops;
    for (auto &e : byOp) {
      e.second.kernel = kernelNote(opKernels[e.first()]);
      ops.push_back(e.second);
    }
    llvm::sort(ops, [](const NamedTime &a, const NamedTime &b) {
      return a.seconds != b.seconds ? a.seconds > b.seconds : a.name < b.name;
    });
    list("ops by stream time (all layers; K-split parts counted once)", ops);
  }
  list("streams by span to their last command", s.streams);
  list("kernels by time", s.kernels);
}

} // namespace

void printReport(const PerfReport &r, raw_ostream &os, unsigned top) {
  os << formatv("\n{0}: {1} of {2} channels used; peaks: internal {3:F1} GB/s "
                "(power-capped), pins {4:F1} GB/s\n",
                r.device, r.channelsUsed, r.channels, r.internalPeak / 1e9,
                r.externalPeak / 1e9);
  os << formatv("\n  {0,-8} {1,7}  {2,-13} {3,16} {4,12} {5,14}\n", "",
                "tokens", "positions", "sim time/token", "tokens/s",
                "sim total");
  for (auto [name, s] :
       {std::pair<StringRef, const PartSummary *>{"prefill", &r.prefill},
        {"decode", &r.decode}}) {
    if (!s->tokens) {
      os << formatv("  {0,-8} {1,7}\n", name, 0);
      continue;
    }
    os << formatv("  {0,-8} {1,7}  {2,-13} {3,16} {4,12:F1} {5,14}\n", name,
                  s->tokens, formatv("{0}..{1}", s->firstPos, s->lastPos).str(),
                  humanSeconds(s->meanSeconds), s->tokensPerSecond,
                  humanSeconds(s->seconds));
  }
  if (r.recomputedTokens)
    os << formatv("  (prefill includes {0} cached tokens run again with "
                  "longrope's long factors when the sequence crossed L0 = "
                  "{1})\n",
                  r.recomputedTokens, r.longRopeL0);
  // The top lists once: for decode, or for prefill when nothing decoded.
  if (r.decode.tokens)
    printPart(os, "decode", r, r.decode, top, true);
  if (r.prefill.tokens)
    printPart(os, "prefill", r, r.prefill, top, !r.decode.tokens);
  double wall = r.prefill.wallSeconds + r.decode.wallSeconds;
  int64_t steps = r.prefill.tokens + r.decode.tokens;
  os << formatv("\nsimulator: {0} host time for {1} step(s), {2} per step\n",
                humanSeconds(wall), steps,
                humanSeconds(steps ? wall / double(steps) : 0));
}

namespace {

json::Object namedTimes(const std::vector<NamedTime> &items, double tokens) {
  json::Object o;
  for (const NamedTime &t : items) {
    json::Object item{{"seconds_per_token", t.seconds / tokens},
                      {"launches", t.count},
                      {"unit", t.unit.empty() ? "host" : t.unit}};
    if (!t.kernel.empty())
      item["kernel"] = t.kernel; // streams: the library kernel (2.1)
    o[t.name] = std::move(item);
  }
  return o;
}

json::Value partJSON(const PartSummary &s) {
  double tokens = std::max<double>(1, double(s.tokens));
  return json::Object{
      {"tokens", s.tokens},
      {"first_pos", s.firstPos},
      {"last_pos", s.lastPos},
      {"seconds", s.seconds},
      {"seconds_per_token", s.meanSeconds},
      {"tokens_per_second", s.tokensPerSecond},
      {"pim_bound_seconds_per_token", s.pimBoundSeconds},
      {"host_bound_seconds_per_token", s.hostBoundSeconds},
      {"pim_busy_seconds_per_token", s.pimBusySeconds},
      {"host_busy_seconds_per_token", s.hostBusySeconds},
      {"near_memory_bound_seconds_per_token", s.nearMemoryBoundSeconds},
      {"near_memory_busy_seconds_per_token", s.nearMemoryBusySeconds},
      {"mac_bytes_per_token", s.bytesMac},
      {"pin_read_bytes_per_token", s.bytesRead},
      {"pin_written_bytes_per_token", s.bytesWritten},
      {"weight_bytes_per_token", s.weightBytes},
      {"kv_bytes_per_token", s.kvBytes},
      {"required_bytes_per_token", s.requiredBytes},
      {"roofline_seconds_per_token", s.rooflineSeconds},
      {"roofline_fraction",
       s.meanSeconds > 0 ? s.rooflineSeconds / s.meanSeconds : 0.0},
      {"effective_bandwidth",
       s.meanSeconds > 0 ? s.requiredBytes / s.meanSeconds : 0.0},
      {"energy_pj_per_token", s.energyPj},
      {"requests_per_token", s.requests},
      {"commands_per_token", s.commands},
      {"row_hits_per_token", s.rowHits},
      {"row_misses_per_token", s.rowMisses},
      {"simulator_wall_seconds", s.wallSeconds},
      {"streams", namedTimes(s.streams, tokens)},
      {"kernels", namedTimes(s.kernels, tokens)},
  };
}

} // namespace

json::Value reportJSON(const PerfReport &r, const GenerationResult &result,
                       const pimsim::Program &program) {
  json::Array steps;
  for (const StepRecord &s : result.steps) {
    const pimsim::Stats &st = s.report.pim;
    json::Array phases;
    for (const pimsim::PhaseReport &p : s.report.phases) {
      json::Array names, kernels;
      for (size_t j = 0; j < p.streams.size(); ++j)
        names.push_back(json::Object{
            {"name", program.streams[p.streams[j]].name},
            {"cycles", j < p.streamCycles.size() ? p.streamCycles[j] : 0}});
      for (size_t j = 0; j < p.kernels.size(); ++j)
        kernels.push_back(json::Object{
            {"name", program.kernels[p.kernels[j]].name},
            {"seconds", j < p.kernelSeconds.size() ? p.kernelSeconds[j] : 0}});
      phases.push_back(
          json::Object{{"start_seconds", p.startSeconds},
                       {"pim_seconds", p.pimSeconds},
                       {"host_seconds", p.hostSeconds},
                       {"near_memory_seconds", p.nearMemorySeconds},
                       {"requests", p.requests},
                       {"streams", std::move(names)},
                       {"kernels", std::move(kernels)}});
    }
    steps.push_back(
        json::Object{{"pos", s.pos},
                     {"token", s.token},
                     {"prefill", s.prefill},
                     {"seconds", s.report.seconds},
                     {"host_seconds", s.report.hostSeconds},
                     {"near_memory_seconds", s.report.nearMemorySeconds},
                     {"pim_seconds", st.seconds},
                     {"pim_cycles", st.cycles},
                     {"mac_bytes", st.bytesMac},
                     {"pin_read_bytes", st.bytesRead},
                     {"pin_written_bytes", st.bytesWritten},
                     {"energy_pj", st.energyPj},
                     {"requests", st.requests},
                     {"wall_seconds", s.wallSeconds},
                     {"phases", std::move(phases)}});
  }
  json::Object o{
      {"device", r.device},
      {"target", r.target},
      {"computed", r.computed},
      {"prompt", json::Array(result.prompt)},
      {"channels", r.channels},
      {"channels_used", r.channelsUsed},
      {"internal_peak_bytes_per_second", r.internalPeak},
      {"external_peak_bytes_per_second", r.externalPeak},
      {"weight_bytes", r.footprint.weightBytes},
      {"resident_weight_bytes", r.footprint.residentWeightBytes},
      {"kv_bytes_per_position", r.footprint.kvBytesPerPosition},
      {"layers", r.footprint.layers},
      {"prefill", partJSON(r.prefill)},
      {"decode", partJSON(r.decode)},
      {"recomputed_tokens", r.recomputedTokens},
      {"steps", std::move(steps)},
  };
  if (r.computed)
    o["tokens"] = json::Array(result.tokens);
  return o;
}

json::Value traceJSON(const pimsim::Program &program,
                      const pimsim::Target &target,
                      ArrayRef<StepRecord> steps) {
  json::Array events;
  auto meta = [&](int64_t pid, StringRef name) {
    events.push_back(json::Object{{"name", "process_name"},
                                  {"ph", "M"},
                                  {"pid", pid},
                                  {"args", json::Object{{"name", name}}}});
  };
  meta(0, "tokens");
  meta(1, "PIM streams");
  meta(2, "host kernels");
  meta(3, "near-memory units");
  std::map<std::string, int64_t> unitTrack;
  for (const pimsim::NearMemoryUnit &u : target.nearMemory)
    unitTrack.emplace(u.name, int64_t(unitTrack.size()));
  double tck = target.tCKps * 1e-12;
  double t0 = 0;
  for (const StepRecord &s : steps) {
    const pimsim::RunReport &r = s.report;
    events.push_back(json::Object{
        {"name",
         formatv("{0} pos {1}", s.prefill ? "prefill" : "decode", s.pos).str()},
        {"ph", "X"},
        {"ts", t0 * 1e6},
        {"dur", r.seconds * 1e6},
        {"pid", 0},
        {"tid", 0},
        {"args", json::Object{{"token", s.token}}}});
    for (const pimsim::PhaseReport &p : r.phases) {
      double start = t0 + p.startSeconds;
      for (size_t j = 0; j < p.streams.size(); ++j) {
        double d = j < p.streamCycles.size() ? p.streamCycles[j] * tck : 0;
        if (d <= 0)
          continue;
        events.push_back(
            json::Object{{"name", program.streams[p.streams[j]].name},
                         {"ph", "X"},
                         {"ts", start * 1e6},
                         {"dur", d * 1e6},
                         {"pid", 1},
                         {"tid", int64_t(j)}});
      }
      // Host kernels back to back on the host; near-memory kernels back to
      // back per unit.
      std::map<int64_t, double> at; // track -> next start
      for (size_t j = 0; j < p.kernels.size(); ++j) {
        const pimsim::HostKernel &k = program.kernels[p.kernels[j]];
        double d = j < p.kernelSeconds.size() ? p.kernelSeconds[j] : 0;
        int64_t pid = 2, tid = 0;
        if (!k.unit.empty()) {
          pid = 3;
          auto it = unitTrack.emplace(k.unit, int64_t(unitTrack.size())).first;
          tid = it->second;
        }
        double &t = at.emplace(pid * 1000 + tid, start).first->second;
        events.push_back(json::Object{{"name", k.name},
                                      {"ph", "X"},
                                      {"ts", t * 1e6},
                                      {"dur", d * 1e6},
                                      {"pid", pid},
                                      {"tid", tid}});
        t += d;
      }
    }
    t0 += r.seconds;
  }
  for (const auto &[unit, tid] : unitTrack)
    events.push_back(json::Object{{"name", "thread_name"},
                                  {"ph", "M"},
                                  {"pid", 3},
                                  {"tid", tid},
                                  {"args", json::Object{{"name", unit}}}});
  return json::Object{{"traceEvents", std::move(events)},
                      {"displayTimeUnit", "ns"}};
}

} // namespace pimc::rt
