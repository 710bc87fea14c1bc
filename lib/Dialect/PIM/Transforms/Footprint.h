//===- Footprint.h - what a step of an entry may touch ----------*- C++ -*-===//
//
// A step's footprint: byte ranges of the host-visible regions (a kernel's
// host-op buffers, a macro op's `data`) and DRAM rows on the stream's
// channels (`row` of MACs, loads and stores), each over every value its
// loop variables, `ch` and the parameters can take. An op whose effect is
// not modelled touches everything. A device parameter (2.3) is a location
// of its own: the kernels that set it write it, the streams whose fields
// use it (directly or through a derived parameter) read it, so a barrier
// separates a router kernel from the expert GEMVs it selects. The PIM
// units of a stream's channels (global buffer, accumulators) are a location
// too ("@units", by channel), written by every stream that uses them: two
// such streams on a shared channel are never concurrent.
//
// Activation buffers are bytes of `act`: a placed pim.buffer at its offset,
// and before pim-plan-memory at its range in the layout without reuse
// (each buffer its own 64-byte aligned range, in program order), so that
// distinct buffers never overlap. pim-schedule orders steps by footprints;
// pim-plan-memory reads buffer lifetimes from them.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_DIALECT_PIM_TRANSFORMS_FOOTPRINT_H
#define PIMC_DIALECT_PIM_TRANSFORMS_FOOTPRINT_H

#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "llvm/ADT/StringMap.h"

namespace pimc::pim {

/// [lo, hi): half-open, so an empty range overlaps nothing.
struct Range {
  int64_t lo = 0, hi = 0;
  bool overlaps(const Range &o) const {
    return lo < hi && o.lo < o.hi && lo < o.hi && o.lo < hi;
  }
};

/// One access: bytes of a host-visible region (`region` set), or rows of
/// the DRAM on a channel range.
struct Access {
  mlir::StringAttr region; // null: DRAM rows
  Range where;             // bytes of the region, or rows
  Range channels;          // DRAM only
  bool written = false;
  /// Every byte of `where` is accessed, in every run (otherwise some may
  /// be: `where` bounds them).
  bool exact = false;
  bool conflicts(const Access &o) const {
    if (!written && !o.written)
      return false;
    if (region != o.region || !where.overlaps(o.where))
      return false;
    return region || channels.overlaps(o.channels);
  }
};

/// What one step may touch, its accesses in program order (an op's reads
/// before its writes).
struct Footprint {
  llvm::SmallVector<Access> accesses;
  bool everything = false; // an effect that is not modelled
  bool conflicts(const Footprint &o) const;
};

/// Each pim.buffer's offset in act: where pim-plan-memory placed it, or,
/// while any buffer is unplaced, the layout without reuse.
struct BufferLayout {
  llvm::StringMap<int64_t> offsets;
  bool placed = true; // every buffer has its offset
};
BufferLayout bufferLayout(ProgramOp program);

/// Footprints of a program's streams and kernels.
class FootprintBuilder {
public:
  FootprintBuilder(ProgramOp program, int64_t accessBytes);

  Footprint of(KernelOp kernel);
  Footprint of(StreamOp stream);
  /// The step `name` of an entry (a kernel or a stream; anything else
  /// touches everything).
  Footprint of(mlir::SymbolTable &symbols, llvm::StringRef name);

  const BufferLayout &layout() const { return buffers; }
  mlir::StringAttr actRegion() const { return act; }

private:
  mlir::FailureOr<Range> bounds(mlir::Attribute value);
  bool dense(mlir::Attribute value, int64_t width);
  int64_t maxOf(mlir::DictionaryAttr fields, llvm::StringRef key,
                int64_t dflt = 1);
  void walk(mlir::Block &body, Footprint &f);
  void add(MacroOp m, Footprint &f);
  void addRows(mlir::DictionaryAttr fields, bool written, Footprint &f);
  void addData(mlir::DictionaryAttr fields, int64_t bytes, bool written,
               Footprint &f);
  /// The access to device parameter `name` (a location no region has).
  Access deviceParam(llvm::StringRef name, bool written) const;

  int64_t accessBytes;
  mlir::MLIRContext *ctx;
  mlir::StringAttr act;
  llvm::StringMap<Range> params; // values [min, max + 1)
  /// Of each parameter set by or derived from a device parameter: that one.
  llvm::StringMap<std::string> deviceRoots;
  BufferLayout buffers;
  Range channels;                   // of the current stream
  bool usesUnits = false;           // the current stream uses its PIM units
  llvm::SmallVector<int64_t> loops; // trip counts (maximum) of enclosing loops
  llvm::SmallVector<bool> fixedLoops; // whether each trip count is fixed
};

} // namespace pimc::pim

#endif // PIMC_DIALECT_PIM_TRANSFORMS_FOOTPRINT_H
