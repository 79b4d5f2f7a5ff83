#include <cstdlib>
#include <stdexcept>
#include <string>

#include "simd/kernels.h"

namespace slide {
namespace {

#ifdef SLIDE_HAVE_X86
// The OS must save the wide registers on context switch (XCR0), not just the CPU support them.
bool os_saves(unsigned mask) {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (eax & mask) == mask;
}
#endif

bool supported(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar:
      return true;
#ifdef SLIDE_HAVE_X86
    case SimdLevel::kAvx2:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && os_saves(0x6);
    case SimdLevel::kAvx512:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             os_saves(0xE6);
#endif
    default:
      return false;
  }
}

const Kernels& table(SimdLevel level) {
#ifdef SLIDE_HAVE_X86
  if (level == SimdLevel::kAvx512) return avx512_kernels();
  if (level == SimdLevel::kAvx2) return avx2_kernels();
#endif
  return scalar_kernels();
}

const Kernels& choose() {
  const char* env = std::getenv("SLIDE_SIMD");
  if (env && *env) {
    SimdLevel wanted;
    try {
      wanted = parse_simd_level(env);
    } catch (const std::invalid_argument&) {
      wanted = SimdLevel::kScalar;  // reported to the user by the Python layer
    }
    // Asking for a level the CPU lacks falls back to the best one it has, never to a crash.
    for (int l = static_cast<int>(wanted); l >= 0; --l)
      if (supported(static_cast<SimdLevel>(l))) return table(static_cast<SimdLevel>(l));
  }
  for (int l = static_cast<int>(SimdLevel::kAvx512); l >= 0; --l)
    if (supported(static_cast<SimdLevel>(l))) return table(static_cast<SimdLevel>(l));
  return scalar_kernels();
}

}  // namespace

SimdLevel parse_simd_level(const std::string& name) {
  if (name == "scalar") return SimdLevel::kScalar;
  if (name == "avx2") return SimdLevel::kAvx2;
  if (name == "avx512") return SimdLevel::kAvx512;
  throw std::invalid_argument("unknown SIMD level '" + name + "'; expected scalar, avx2 or avx512");
}

const Kernels& kernels() {
  static const Kernels& chosen = choose();
  return chosen;
}

const Kernels* kernels_for(SimdLevel level) { return supported(level) ? &table(level) : nullptr; }

std::vector<SimdLevel> available_simd_levels() {
  std::vector<SimdLevel> out;
  for (SimdLevel l : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512})
    if (supported(l)) out.push_back(l);
  return out;
}

}  // namespace slide
