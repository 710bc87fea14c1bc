//===- membw.cpp - the machine's memory bandwidth, for roofline bounds ----===//
//
// Measures copy bandwidth (bytes copied per second by memcpy over buffers
// far larger than the caches) with 1 and with all hardware threads, and read
// bandwidth (a streaming sum). Prints one JSON object. Used by
// bench/interpreter_decode.sh to turn weight bytes into a tokens/s bound.
//
//===----------------------------------------------------------------------===//
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {
using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Best of `reps` runs of `body`, in seconds.
template <typename F> double best(int reps, F body) {
  double t = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto start = Clock::now();
    body();
    t = std::min(t, seconds(start, Clock::now()));
  }
  return t;
}
} // namespace

int main() {
  const size_t bytes = size_t(1) << 30; // 1 GiB, far beyond any cache
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  unsigned threads = llvm::hardware_concurrency().compute_thread_count();
  const size_t chunk = bytes / 64;

  double copy1 = best(5, [&] { std::memcpy(dst.data(), src.data(), bytes); });
  double copyN = best(5, [&] {
    llvm::parallelFor(0, bytes / chunk, [&](size_t i) {
      std::memcpy(dst.data() + i * chunk, src.data() + i * chunk, chunk);
    });
  });
  volatile uint64_t sink = 0;
  double readN = best(5, [&] {
    std::vector<uint64_t> partial(bytes / chunk, 0);
    llvm::parallelFor(0, bytes / chunk, [&](size_t i) {
      const uint64_t *p =
          reinterpret_cast<const uint64_t *>(src.data() + i * chunk);
      uint64_t a = 0, b = 0, c = 0, d = 0;
      for (size_t j = 0; j < chunk / 8; j += 4) {
        a += p[j];
        b += p[j + 1];
        c += p[j + 2];
        d += p[j + 3];
      }
      partial[i] = a + b + c + d;
    });
    for (uint64_t v : partial)
      sink = sink + v;
  });
  llvm::json::Object out;
  out["threads"] = static_cast<int64_t>(threads);
  out["copy_gbps_1thread"] = bytes / copy1 / 1e9;
  out["copy_gbps"] = bytes / copyN / 1e9;
  out["read_gbps"] = bytes / readN / 1e9;
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(out)))
               << "\n";
  return 0;
}
