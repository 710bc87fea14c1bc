//===- ProgramBinary.cpp - pimsim programs: the flatbuffers form ----------===//
//
// Writing and reading sim/schema/program.fbs: the writer builds in a fixed
// order (equal programs, equal bytes) into memory and renames a temporary
// file over the destination; the reader checks the size, the identifier and
// the version, verifies the whole buffer and then runs checkProgram. The
// host-op and memory-plan tables are HostOpCodec.cpp's.
//
//===----------------------------------------------------------------------===//

#include "pimsim/Program.h"

#include "HostOpCodec.h"
#include "pimsim/program_generated.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>

using namespace llvm;

namespace pimsim {

namespace {
using detail::load;
using detail::longs;
} // namespace

//===----------------------------------------------------------------------===//
// Binary form: writing
//===----------------------------------------------------------------------===//

namespace {
using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

class Writer {
public:
  std::vector<uint8_t> write(const Program &p) {
    // The organisation first: the first object built ends the buffer and a
    // table starts with no padding, so a file cut anywhere loses bytes the
    // root reaches and fails verification (a string first would leave
    // padding at the end that a cut could drop unnoticed).
    const Organization &o = p.target.org;
    auto org = fb::CreateOrganization(
        fbb, o.stacks, o.channels, o.pseudoChannels, o.sids, o.bankGroups,
        o.banks, o.rows, o.columns, o.accessBytes);
    auto targetName = fbb.CreateString(p.target.name);
    auto targetHash = fbb.CreateString(p.target.hash);
    auto target = fb::CreateTargetIdentity(fbb, targetName, targetHash, org);

    std::vector<Offset<fb::Region>> regions;
    for (const Region &r : p.regions) {
      auto name = fbb.CreateString(r.name);
      fb::Range channels = range(r.channels), banks = range(r.banks),
                rows = range(r.rows);
      regions.push_back(fb::CreateRegion(fbb, name,
                                         static_cast<fb::RegionKind>(r.kind),
                                         &channels, &banks, &rows, r.bytes));
    }
    std::vector<Offset<fb::WeightBinding>> weights;
    for (const WeightBinding &w : p.weights) {
      auto tensor = fbb.CreateString(w.tensor);
      auto format = fbb.CreateString(w.format);
      auto shape = fbb.CreateVector(w.shape);
      auto tile = fbb.CreateVector(w.tile);
      auto layout = optionalString(w.layout);
      fb::Range rows = range(w.rows);
      Offset<fb::GemvRows> gemvRows = 0;
      if (const std::optional<GemvRows> &g = w.gemvRows)
        gemvRows = fb::CreateGemvRows(
            fbb, g->n0, g->ch0, g->nch, g->row0, g->kRows, g->k0, g->kLen,
            static_cast<fb::WeightSource>(g->source), g->bits, g->groupSize,
            g->sym, optionalString(g->packing), optionalString(g->scaleType));
      weights.push_back(fb::CreateWeightBinding(
          fbb, tensor, static_cast<uint32_t>(w.region), format, shape, w.axis,
          tile, static_cast<fb::Interleave>(w.interleave), &rows, w.offset,
          w.bytes, layout, gemvRows));
    }
    std::vector<Offset<fb::HostKernel>> kernels;
    for (const HostKernel &k : p.kernels) {
      auto name = fbb.CreateString(k.name);
      std::vector<fb::KernelOperand> ops;
      for (const KernelOperand &op : k.operands)
        ops.emplace_back(op.offset, op.bytes, static_cast<uint32_t>(op.region),
                         static_cast<fb::OperandRole>(op.role));
      auto operands = fbb.CreateVectorOfStructs(ops);
      auto unit = optionalString(k.unit);
      auto hostOps = detail::encodeHostOps(fbb, k.ops);
      Offset<flatbuffers::Vector<const fb::ParamSet *>> sets = 0;
      if (!k.sets.empty()) {
        std::vector<fb::ParamSet> list;
        for (const ParamSet &set : k.sets)
          list.emplace_back(set.offset, static_cast<uint32_t>(set.param),
                            static_cast<uint32_t>(set.region));
        sets = fbb.CreateVectorOfStructs(list);
      }
      kernels.push_back(fb::CreateHostKernel(
          fbb, name, static_cast<fb::KernelKind>(k.kind), k.m, k.n, k.k,
          k.flops, k.bytes, operands, unit, k.elements, hostOps, sets));
    }
    std::vector<Offset<fb::Stream>> streams;
    for (const Stream &s : p.streams) {
      auto name = fbb.CreateString(s.name);
      auto channels = channelSet(s.channels);
      auto body = instructions(s.body);
      Offset<fb::StreamInfo> info = 0;
      if (!s.info.empty())
        info = fb::CreateStreamInfo(
            fbb, optionalString(s.info.layer), optionalString(s.info.op),
            s.info.part, optionalString(s.info.workClass), s.info.bytes,
            optionalString(s.info.kernel));
      streams.push_back(fb::CreateStream(fbb, name, channels, body, info));
    }
    std::vector<Offset<fb::Entry>> entries;
    for (const Entry &e : p.entries) {
      auto name = fbb.CreateString(e.name);
      std::vector<fb::EntryStep> steps;
      for (const EntryStep &step : e.steps)
        steps.emplace_back(static_cast<uint32_t>(step.index),
                           static_cast<fb::StepKind>(step.kind));
      entries.push_back(
          fb::CreateEntry(fbb, name, fbb.CreateVectorOfStructs(steps)));
    }
    Offset<flatbuffers::Vector<Offset<fb::Param>>> params = 0;
    if (!p.params.empty()) {
      std::vector<Offset<fb::Param>> list;
      for (const Param &prm : p.params) {
        auto name = fbb.CreateString(prm.name);
        list.push_back(fb::CreateParam(fbb, name, prm.min, prm.max, prm.src,
                                       prm.add, prm.div, prm.mod, prm.device,
                                       prm.timing));
      }
      params = fbb.CreateVector(list);
    }
    Offset<fb::ModelIdentity> model = 0;
    if (!p.model.empty())
      model = fb::CreateModelIdentity(fbb, fbb.CreateString(p.model.modelType),
                                      fbb.CreateString(p.model.config),
                                      fbb.CreateString(p.model.tensors));
    auto hostTensors = detail::encodeHostTensors(fbb, p.hostTensors);
    auto memory = detail::encodeMemoryPlan(fbb, p.memory);
    fb::Version version(kProgramVersion.major, kProgramVersion.minor);
    auto root =
        fb::CreateProgram(fbb, &version, target, fbb.CreateVector(regions),
                          fbb.CreateVector(weights), fbb.CreateVector(kernels),
                          fbb.CreateVector(streams), fbb.CreateVector(entries),
                          params, model, hostTensors, memory);
    fb::FinishProgramBuffer(fbb, root);
    return std::vector<uint8_t>(fbb.GetBufferPointer(),
                                fbb.GetBufferPointer() + fbb.GetSize());
  }

private:
  static fb::Range range(const Range &r) { return fb::Range(r.first, r.count); }

  /// Empty strings are left out (the 1.0 layout).
  Offset<flatbuffers::String> optionalString(const std::string &s) {
    return s.empty() ? 0 : fbb.CreateString(s);
  }

  Offset<flatbuffers::Vector<const fb::Range *>>
  channelSet(const ChannelSet &set) {
    if (set.empty())
      return 0;
    std::vector<fb::Range> ranges;
    for (const Range &r : set)
      ranges.push_back(range(r));
    return fbb.CreateVectorOfStructs(ranges);
  }

  Offset<flatbuffers::Vector<Offset<fb::Instruction>>>
  instructions(const std::vector<Instruction> &insts) {
    if (insts.empty())
      return 0;
    std::vector<Offset<fb::Instruction>> out;
    for (const Instruction &inst : insts) {
      // Children first: flatbuffers builds bottom-up.
      auto body = instructions(inst.body);
      auto channels = channelSet(inst.channels);
      Offset<flatbuffers::Vector<const fb::Stride *>> strides = 0;
      if (!inst.strides.empty()) {
        std::vector<fb::Stride> list;
        for (const Stride &s : inst.strides)
          list.emplace_back(s.step, static_cast<fb::Field>(s.field),
                            static_cast<uint8_t>(s.loop));
        strides = fbb.CreateVectorOfStructs(list);
      }
      Offset<flatbuffers::Vector<float>> alibi = 0;
      if (!inst.alibi.empty())
        alibi = fbb.CreateVector(inst.alibi);
      out.push_back(fb::CreateInstruction(
          fbb, static_cast<fb::Opcode>(inst.op), channels, inst.row, inst.col,
          inst.count, inst.bank, inst.offset, inst.src, inst.bytes, inst.length,
          static_cast<fb::Function>(inst.fn), inst.reg, inst.value,
          static_cast<int32_t>(inst.dataRegion), inst.dataOffset,
          static_cast<uint32_t>(inst.kernel), strides, body, inst.cap, alibi,
          inst.head, inst.key0, inst.alibiScale));
    }
    return fbb.CreateVector(out);
  }

  FlatBufferBuilder fbb{4096};
};
} // namespace

Expected<std::vector<uint8_t>> serializeProgram(const Program &program) {
  if (Error err = checkProgram(program))
    return createStringError(inconvertibleErrorCode(),
                             "cannot write an invalid program:\n%s",
                             toString(std::move(err)).c_str());
  return Writer().write(program);
}

Error writeProgram(const Program &program, StringRef path) {
  auto bytes = serializeProgram(program);
  if (!bytes)
    return createStringError(inconvertibleErrorCode(), "%s: %s",
                             path.str().c_str(),
                             toString(bytes.takeError()).c_str());
  // writeToOutput writes a temporary file and renames it when complete.
  if (Error err = writeToOutput(path, [&](raw_ostream &os) {
        os.write(reinterpret_cast<const char *>(bytes->data()), bytes->size());
        return Error::success();
      }))
    return createStringError(inconvertibleErrorCode(), "%s: cannot write: %s",
                             path.str().c_str(),
                             toString(std::move(err)).c_str());
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Binary form: reading
//===----------------------------------------------------------------------===//

namespace {
std::string str(const flatbuffers::String *s) {
  return s ? s->str() : std::string();
}

Range range(const fb::Range *r) {
  if (!r)
    return Range{};
  fb::Range copy = load<fb::Range>(r);
  return Range{copy.first(), copy.count()};
}
ChannelSet channelSet(const flatbuffers::Vector<const fb::Range *> *v) {
  ChannelSet set;
  if (v)
    for (const fb::Range *r : *v)
      set.push_back(range(r));
  return set;
}

std::vector<Instruction> instructions(
    const flatbuffers::Vector<flatbuffers::Offset<fb::Instruction>> *v) {
  std::vector<Instruction> out;
  if (!v)
    return out;
  out.reserve(v->size());
  for (const fb::Instruction *in : *v) {
    Instruction inst;
    inst.op = static_cast<Opcode>(in->op());
    inst.channels = channelSet(in->channels());
    inst.row = in->row();
    inst.col = in->col();
    inst.count = in->count();
    inst.bank = in->bank();
    inst.offset = in->offset();
    inst.src = in->src();
    inst.bytes = in->bytes();
    inst.length = in->length();
    inst.fn = static_cast<Function>(in->fn());
    inst.reg = in->reg();
    inst.value = in->value();
    inst.dataRegion = in->data_region();
    inst.dataOffset = in->data_offset();
    inst.kernel = in->kernel();
    inst.cap = in->cap(); // (2.2) absent in older programs: 0, no cap
    if (in->alibi())      // (2.2) ALiBi; absent: none
      inst.alibi.assign(in->alibi()->begin(), in->alibi()->end());
    inst.head = in->head();
    inst.key0 = in->key0();
    inst.alibiScale = in->alibi_scale();
    if (in->strides())
      for (const fb::Stride *ptr : *in->strides()) {
        fb::Stride s = load<fb::Stride>(ptr);
        inst.strides.push_back(
            {static_cast<Field>(s.field()), s.loop(), s.step()});
      }
    // Recursion depth is bounded by the verifier's table depth limit.
    inst.body = instructions(in->body());
    out.push_back(std::move(inst));
  }
  return out;
}

Program convert(const fb::Program &in) {
  Program p;
  p.version = {in.version()->major(), in.version()->minor()};
  if (const fb::TargetIdentity *t = in.target()) {
    p.target.name = str(t->name());
    p.target.hash = str(t->hash());
    if (const fb::Organization *o = t->org()) {
      Organization &org = p.target.org;
      org.stacks = o->stacks();
      org.channels = o->channels();
      org.pseudoChannels = o->pseudo_channels();
      org.sids = o->sids();
      org.bankGroups = o->bank_groups();
      org.banks = o->banks();
      org.rows = o->rows();
      org.columns = o->columns();
      org.accessBytes = o->access_bytes();
    }
  }
  if (in.regions())
    for (const fb::Region *r : *in.regions())
      p.regions.push_back({str(r->name()), static_cast<RegionKind>(r->kind()),
                           range(r->channels()), range(r->banks()),
                           range(r->rows()), r->bytes()});
  if (in.weights())
    for (const fb::WeightBinding *w : *in.weights()) {
      WeightBinding b;
      b.tensor = str(w->tensor());
      b.region = w->region();
      b.format = str(w->format());
      b.shape = longs(w->shape());
      b.axis = w->axis();
      b.tile = longs(w->tile());
      b.interleave = static_cast<Interleave>(w->interleave());
      b.rows = range(w->rows());
      b.offset = w->offset();
      b.bytes = w->bytes();
      b.layout = str(w->layout());
      if (const fb::GemvRows *g = w->gemv_rows())
        b.gemvRows = GemvRows{g->n0(),
                              g->ch0(),
                              g->nch(),
                              g->row0(),
                              g->k_rows(),
                              g->k0(),
                              g->k_len(),
                              static_cast<GemvRows::Source>(g->source()),
                              g->bits(),
                              g->group_size(),
                              g->sym(),
                              str(g->packing()),
                              str(g->scale_type())};
      p.weights.push_back(std::move(b));
    }
  if (in.kernels())
    for (const fb::HostKernel *k : *in.kernels()) {
      HostKernel h;
      h.name = str(k->name());
      h.kind = static_cast<KernelKind>(k->kind());
      h.m = k->m();
      h.n = k->n();
      h.k = k->k();
      h.flops = k->flops();
      h.bytes = k->bytes();
      h.unit = str(k->unit());
      h.elements = k->elements();
      h.ops = detail::decodeHostOps(k->ops());
      if (k->operands())
        for (const fb::KernelOperand *ptr : *k->operands()) {
          fb::KernelOperand op = load<fb::KernelOperand>(ptr);
          h.operands.push_back({static_cast<OperandRole>(op.role()),
                                op.region(), op.offset(), op.bytes()});
        }
      if (k->sets())
        for (const fb::ParamSet *ptr : *k->sets()) {
          fb::ParamSet set = load<fb::ParamSet>(ptr);
          h.sets.push_back({set.param(), set.region(), set.offset()});
        }
      p.kernels.push_back(std::move(h));
    }
  if (in.streams())
    for (const fb::Stream *s : *in.streams()) {
      Stream stream{str(s->name()),
                    channelSet(s->channels()),
                    instructions(s->body()),
                    {}};
      if (const fb::StreamInfo *info = s->info())
        stream.info = {str(info->layer()), str(info->op()),
                       info->part(),       str(info->work_class()),
                       info->bytes(),      str(info->kernel())};
      p.streams.push_back(std::move(stream));
    }
  if (in.entries())
    for (const fb::Entry *e : *in.entries()) {
      Entry entry;
      entry.name = str(e->name());
      if (e->steps())
        for (const fb::EntryStep *ptr : *e->steps()) {
          fb::EntryStep step = load<fb::EntryStep>(ptr);
          entry.steps.push_back(
              {static_cast<StepKind>(step.kind()), step.index()});
        }
      p.entries.push_back(std::move(entry));
    }
  if (in.params())
    for (const fb::Param *prm : *in.params())
      p.params.push_back({str(prm->name()), prm->min(), prm->max(), prm->src(),
                          prm->add(), prm->div(), prm->mod(), prm->device(),
                          prm->timing()});
  if (const fb::ModelIdentity *m = in.model())
    p.model = {str(m->model_type()), str(m->config()), str(m->tensors())};
  p.hostTensors = detail::decodeHostTensors(in.host_tensors());
  p.memory = detail::decodeMemoryPlan(in.memory());
  return p;
}

Error fail(StringRef source, const Twine &msg) {
  return createStringError(inconvertibleErrorCode(),
                           (source + ": " + msg).str());
}

std::string printableIdentifier(const uint8_t *id) {
  std::string out;
  for (int i = 0; i < 4; ++i) {
    if (isPrint(id[i]) && id[i] != '\\' && id[i] != '"')
      out += static_cast<char>(id[i]);
    else
      out += "\\x" + toHex(ArrayRef<uint8_t>(id + i, 1), true);
  }
  return out;
}
} // namespace

Expected<Program> parseProgramBuffer(ArrayRef<uint8_t> buffer,
                                     StringRef sourceName) {
  constexpr size_t kHeader =
      sizeof(flatbuffers::uoffset_t) + flatbuffers::kFileIdentifierLength;
  if (buffer.size() < kHeader)
    return fail(sourceName, "not a pimsim program: " + Twine(buffer.size()) +
                                " bytes, too short for a header");
  if (buffer.size() >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return fail(sourceName, "program is larger than 2 GiB");
  if (!flatbuffers::BufferHasIdentifier(buffer.data(), fb::ProgramIdentifier()))
    return fail(sourceName, "not a pimsim program (file identifier \"" +
                                printableIdentifier(buffer.data() + 4) +
                                "\", expected \"" + fb::ProgramIdentifier() +
                                "\")");

  // Flatbuffers reads scalars in place; keep them aligned.
  std::vector<uint64_t> aligned;
  const uint8_t *data = buffer.data();
  if (reinterpret_cast<uintptr_t>(data) % alignof(uint64_t) != 0) {
    aligned.resize((buffer.size() + 7) / 8);
    std::memcpy(aligned.data(), buffer.data(), buffer.size());
    data = reinterpret_cast<const uint8_t *>(aligned.data());
  }

  // The version first, verifying only the root table's start and field 0:
  // a newer major version may differ everywhere else.
  {
    flatbuffers::Verifier v(data, buffer.size());
    if (!v.VerifyOffset(0))
      return fail(sourceName, "truncated or corrupt program (bad root offset)");
    auto *root = reinterpret_cast<const flatbuffers::Table *>(
        flatbuffers::GetRoot<fb::Program>(data));
    if (!root->VerifyTableStart(v) ||
        !root->VerifyField<fb::Version>(v, fb::Program::VT_VERSION,
                                        alignof(fb::Version)))
      return fail(sourceName, "truncated or corrupt program (bad root table)");
    const fb::Version *version = fb::GetProgram(data)->version();
    if (!version)
      return fail(sourceName, "program has no version");
    if (version->major() != kProgramVersion.major)
      return fail(sourceName, "program version " + Twine(version->major()) +
                                  "." + Twine(version->minor()) +
                                  ", this pimsim reads " +
                                  Twine(kProgramVersion.major) + ".x");
  }

  flatbuffers::Verifier::Options opts;
  opts.max_depth = 128;
  opts.max_tables = static_cast<flatbuffers::uoffset_t>(
      std::max<size_t>(opts.max_tables, buffer.size() / 4));
  flatbuffers::Verifier verifier(data, buffer.size(), opts);
  if (!fb::VerifyProgramBuffer(verifier))
    return fail(sourceName,
                "truncated or corrupt program (flatbuffer verification "
                "failed)");

  Program program = convert(*fb::GetProgram(data));
  if (Error err = checkProgram(program))
    return fail(sourceName, toString(std::move(err)));
  return program;
}

Expected<Program> readProgram(StringRef path) {
  auto file = MemoryBuffer::getFile(path, /*IsText=*/false,
                                    /*RequiresNullTerminator=*/false);
  if (!file)
    return fail(path, "cannot read: " + file.getError().message());
  return parseProgramBuffer(arrayRefFromStringRef((*file)->getBuffer()), path);
}

} // namespace pimsim
