//===- Session.h - running a compiled model on a Device ---------*- C++ -*-===//
//
// A ModelSession loads a compiled model (a pimsim::Program following
// docs/backend-abi.md) onto a Device, checks it against the target and the
// checkpoint, places the weights into device memory (functional devices),
// and runs the `decode` entry token by token with the host ops of the
// program's host kernels. generate() does prefill (one step per prompt
// token) and then samples new tokens (greedy, or temperature / top-k /
// top-p with a seed). On a timing-only device no data exists: host ops are
// only timed, tokens are not computed, but every position is walked so the
// simulated time per token is real. See docs/runtime.md.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_RUNTIME_SESSION_H
#define PIMC_RUNTIME_SESSION_H

#include "pimc/Checkpoint/GPTQ.h"
#include "pimc/Runtime/Device.h"
#include "pimc/Runtime/HostOps.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace pimc::ckpt {
class WeightStore;
} // namespace pimc::ckpt

namespace pimc::rt {

/// Checks that `program` was compiled for `target`: the organisation must
/// match exactly, and so must the name unless `allowNameMismatch`
/// ("program was compiled for target 'gddr6-aim' (1 stack x 32 channels x
/// 16 banks, 16384 rows x 64 columns of 32 B), this target is 'hbm3-pim'
/// (...)").
llvm::Error checkTargetIdentity(const pimsim::Program &program,
                                const pimsim::Target &target,
                                bool allowNameMismatch = false);
/// "5 stacks x 16 channels x 64 banks, 16384 rows x 32 columns of 32 B".
std::string describeOrganization(const pimsim::Organization &org);

/// A weight binding's `gemv_rows` layout (docs/backend-abi.md), checked: the
/// placement the program records (output row n is group row n0 + n over
/// channels ch0 .. ch0 + nch - 1; elements k0 .. k0 + kLen - 1 of each row
/// fill k_rows DRAM rows from row0) and, for a GPTQ source, the checkpoint
/// scheme it reads (group size -1 resolved to K).
struct GemvRowsLayout : pimsim::GemvRows {
  std::optional<ckpt::GptqScheme> gptq;
};
/// A binding's layout, checked against its tensor's shape, the target and
/// the binding's region.
llvm::Expected<GemvRowsLayout> parseGemvRows(const pimsim::WeightBinding &w,
                                             const pimsim::Program &program,
                                             const pimsim::Target &target);

/// Token sampling. temperature <= 0 is greedy (argmax, lowest index on
/// ties). Otherwise: candidates sorted by logit (descending, ties by
/// index), the first top_k kept (0: all), softmax of logit / temperature in
/// double, the smallest prefix whose probability reaches top_p kept (1:
/// all), and one uniform draw u = (rng() >> 11) * 2^-53 from a
/// std::mt19937_64 seeded with `seed` picks the first candidate whose
/// cumulative probability exceeds u * total. Deterministic for a seed.
struct SamplingOptions {
  double temperature = 0;
  int64_t topK = 0;
  double topP = 1.0;
  uint64_t seed = 0;

  bool greedy() const { return temperature <= 0; }
  llvm::Error validate() const;
};

class Sampler {
public:
  explicit Sampler(SamplingOptions options)
      : opts(options), rng(options.seed) {}
  /// The next token; an error when the logits are empty or contain NaN.
  llvm::Expected<int64_t> sample(llvm::ArrayRef<float> logits);

private:
  SamplingOptions opts;
  std::mt19937_64 rng;
};

/// One `decode` run.
struct StepRecord {
  int64_t pos = 0, token = 0;
  bool prefill = false;
  pimsim::RunReport report; // simulated (or measured) time and statistics
  double wallSeconds = 0;   // host time the step took (simulator + host ops)
};

struct StepResult {
  std::vector<float> logits; // functional devices only
  StepRecord record;
};

struct GenerateOptions {
  int64_t maxNewTokens = 16;
  /// Position of the first prompt token. Positions before it hold no KV
  /// data (meaningful for timing: decode at context N without N steps).
  int64_t startPos = 0;
  SamplingOptions sampling;
  bool keepLogits = false; // keep the logits each new token was drawn from
  std::function<void(const StepRecord &)> onStep; // progress (optional)
};

struct GenerationResult {
  std::vector<int64_t> prompt;
  std::vector<int64_t> tokens; // new tokens; not computed (0) when !computed
  bool computed = true;
  std::vector<std::vector<float>> logits; // keepLogits: one row per token
  std::vector<StepRecord> steps;          // prefill steps, then decode steps
  /// Cached tokens run again (as prefill steps) because a step crossed
  /// longrope's L0 (ref::longRopeRecomputes).
  int64_t recomputedTokens = 0;
};

/// The checkpoint in `dir` (its config.json and tensor table `store`) is the
/// model `id` records, or an error listing every difference (config keys,
/// the tensor-table digest). Nothing recorded: success.
llvm::Error checkModelIdentity(const pimsim::ModelIdentity &id,
                               llvm::StringRef dir,
                               const ckpt::WeightStore &store);

struct SessionOptions {
  /// Accept a target whose name differs from the program's (same
  /// organisation), e.g. a variant with other timings.
  bool allowTargetNameMismatch = false;
  /// Makes the runner of the program's host calls (HostOps.h); needed to
  /// run a program that has any, with weights.
  std::function<std::unique_ptr<HostFunctionRunner>()> hostFunctions;
};

class ModelSession {
public:
  /// Loads `program` onto `device`, checks it against the device's target
  /// and `weights`, and (functional devices) places the weights. `weights`
  /// may be null only on a timing device; when given there, it is checked
  /// but not placed.
  static llvm::Expected<std::unique_ptr<ModelSession>>
  create(Device &device, pimsim::Program program,
         std::unique_ptr<ckpt::WeightStore> weights,
         SessionOptions options = {});
  /// Same, opening the checkpoint directory (empty: no weights).
  static llvm::Expected<std::unique_ptr<ModelSession>>
  open(Device &device, pimsim::Program program, llvm::StringRef checkpointDir,
       SessionOptions options = {});
  ~ModelSession();

  /// Runs `decode` for `token` at position `pos`.
  llvm::Expected<StepResult> step(int64_t token, int64_t pos, bool prefill);
  /// Prefill then decode; see GenerateOptions.
  llvm::Expected<GenerationResult> generate(llvm::ArrayRef<int64_t> prompt,
                                            const GenerateOptions &options);

  Device &device() { return dev; }
  const pimsim::Program &program() const { return *dev.program(); }
  const HostOps &hostOps() const { return ops; }
  bool functional() const { return dev.functional(); }
  /// Logits per step (the `logits` op's length; 0 if the program has none).
  int64_t vocabSize() const { return vocab; }
  /// Valid positions and tokens, from the program's `pos` / `token`
  /// parameters.
  int64_t minPosition() const { return posMin; }
  int64_t maxPosition() const { return posMax; }
  int64_t maxToken() const { return tokenMax; }

private:
  ModelSession(Device &device, HostOps ops,
               std::unique_ptr<ckpt::WeightStore> weights);
  llvm::Error placeWeights();

  Device &dev;
  HostOps ops;
  std::unique_ptr<ckpt::WeightStore> weights;
  int64_t vocab = 0;
  int64_t posMin = 0, posMax = 0, tokenMin = 0, tokenMax = 0;
};

} // namespace pimc::rt

#endif // PIMC_RUNTIME_SESSION_H
