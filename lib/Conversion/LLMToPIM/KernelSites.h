//===- KernelSites.h - where library kernels meet the backend --*- C++ -*-===//
//
// Internal to lib/Conversion/LLMToPIM. The arguments the backend passes to
// the kernels of each op kind (docs/kernel-library.md lists them), the
// generated lowerings' cycle estimates the kernels' `.cost` is compared
// with (pim-select-kernels, SelectKernels.cpp), and the instantiation of a
// kernel into pim.macro / pim.loop ops of a stream body (KernelEmit.cpp,
// called by pim-build-program).
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CONVERSION_LLMTOPIM_KERNELSITES_H
#define PIMC_CONVERSION_LLMTOPIM_KERNELSITES_H

#include "CostModel.h"
#include "pimc/Conversion/LLMToPIM/KernelLibrary.h"
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "mlir/IR/Builders.h"

#include <functional>
#include <map>

namespace pimc::pim::detail {

/// On the op: the estimated cycles of one stream, {generated = ..,
/// <kernel> = ..} for each kernel that serves it.
inline constexpr llvm::StringLiteral kKernelCyclesAttrName =
    "pim.kernel_cycles";

using KernelArgs = std::map<std::string, int64_t>;

/// The target's organisation and cost constants (every op kind).
KernelArgs machineArgs(const Machine &m);
/// The wr_gb split of `bytes` over the pseudo-channel x bank-group paths
/// (as pim-build-program's broadcast): bc_pch, bc_bgs, bc_chunk, pch_stride,
/// bg_stride.
void addBroadcastArgs(const Machine &m, int64_t bytes, KernelArgs &args);

/// A fused GEMV as pim-build-program places it: K in P parts of partRows
/// DRAM rows on C / P channels each, nch of them used, I output groups.
struct GemvShape {
  int64_t K, N, P, kRows, nch, I, partRows;
};
GemvShape gemvShape(const Machine &m, int64_t K, int64_t N, int64_t P);
/// The shape arguments of part `part`'s stream (before placement).
KernelArgs gemvArgs(const Machine &m, const GemvShape &s, int64_t part);
/// The same for a stream over kLen elements of K (pim-build-program).
KernelArgs gemvStreamArgs(const Machine &m, int64_t kLen, int64_t I,
                          int64_t nch, int64_t P);
/// The generated stream's estimated cycles (pim-tile's GEMV model).
double gemvGeneratedCycles(const Machine &m, const KernelArgs &a);

/// The shape arguments of an attention's stream (before placement): H q
/// heads over KVH KV heads of head dim hd, S sequence parts, maxT keys.
KernelArgs attentionArgs(const Machine &m, int64_t H, int64_t KVH, int64_t hd,
                         int64_t S, int64_t maxT);
double attentionGeneratedCycles(const Machine &m, const KernelArgs &a);

/// The library kernel pim-select-kernels chose for `op`, or nullptr
/// (generated, or no choice recorded).
const kernels::KernelFile *libraryKernel(mlir::Operation *op);

/// Where a kernel is instantiated: the stream body's builder, the
/// program's parameters (`param`: a parameter by its program name;
/// `declare`: creates a derived one, or finds the same one) and the program
/// name of each of the kernel's `.runtime` names.
struct KernelSite {
  mlir::OpBuilder &body;
  mlir::Location loc;
  const llvm::SmallVectorImpl<mlir::FlatSymbolRefAttr> &paramRefs; // grows
  std::map<std::string, std::string> runtimeNames;
  std::function<mlir::AffineExpr(llvm::StringRef)> param;
  std::function<void(const kernels::DerivedValues &)> declare;
  /// Each `.data` name of the kernel: the pim.buffer and the byte in it
  /// where the kernel's offset 0 is.
  struct Data {
    mlir::FlatSymbolRefAttr buffer;
    int64_t offset = 0;
  };
  std::map<std::string, Data> data;
  /// The op's logit softcap (attention), 0: none. Every `sfm fn=softmax` of
  /// the kernel gets `cap=` it: the cap is per score, ahead of the softmax,
  /// so a kernel's softmax over the scores carries it unchanged.
  float softmaxCap = 0.0f;
};

/// Instantiates `kernel` with `args` into `site` as pim.macro / pim.loop
/// ops. An error (arguments outside the kernel's shape class, a body that
/// does not assemble) is a diagnostic on `op`.
mlir::LogicalResult emitKernel(mlir::Operation *op,
                               const kernels::KernelFile &kernel,
                               const KernelArgs &args, KernelSite &site);

} // namespace pimc::pim::detail

#endif // PIMC_CONVERSION_LLMTOPIM_KERNELSITES_H
