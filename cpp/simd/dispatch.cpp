#include <cstdlib>
#include <stdexcept>
#include <string>

#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

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

// AMX's tile data is too large for every process's signal frames, so Linux (5.16 on) saves it only
// for a process that asks (arch_prctl ARCH_REQ_XCOMP_PERM); until then a tile instruction faults.
// Asked once, on the first check: the permission is the whole process's, and refused by an older
// kernel or a hypervisor that hides AMX, which then leaves the level out.
bool amx_permitted() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  static const bool permitted = [] {
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    const bool tile = edx & (1u << 24), bf16 = edx & (1u << 22);
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    // XCR0 bits 17 (tile configuration) and 18 (tile data): the OS manages the tile state.
    return tile && bf16 && os_saves(0x60000) && syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return permitted;
#else
  return false;
#endif
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
    case SimdLevel::kAvx512Bf16:
      __builtin_cpu_init();
      // VNNI too (its int8 scores): every CPU with BF16 has it, and the check keeps one that might not out.
      return supported(SimdLevel::kAvx512) && __builtin_cpu_supports("avx512bf16") &&
             __builtin_cpu_supports("avx512vnni");
    case SimdLevel::kAmxBf16:
      return supported(SimdLevel::kAvx512Bf16) && amx_permitted();
#endif
    default:
      return false;
  }
}

const Kernels& table(SimdLevel level) {
#ifdef SLIDE_HAVE_X86
  if (level == SimdLevel::kAmxBf16) return amx_bf16_kernels();
  if (level == SimdLevel::kAvx512Bf16) return avx512_bf16_kernels();
  if (level == SimdLevel::kAvx512) return avx512_kernels();
  if (level == SimdLevel::kAvx2) return avx2_kernels();
#endif
  return scalar_kernels();
}

constexpr SimdLevel kBest = SimdLevel::kAmxBf16;

const Kernels& best_at_most(SimdLevel wanted) {
  for (int l = static_cast<int>(wanted); l >= 0; --l)
    if (supported(static_cast<SimdLevel>(l))) return table(static_cast<SimdLevel>(l));
  return scalar_kernels();
}

const Kernels& choose() {
  const char* env = std::getenv("SLIDE_SIMD");
  SimdLevel wanted = kBest;
  if (env && *env) {
    try {
      wanted = parse_simd_level(env);
    } catch (const std::invalid_argument&) {
      wanted = kBest;  // the Python layer warns that the name is unknown and the best level is used
    }
  }
  // Asking for a level the CPU lacks falls back to the best one it has, never to a crash.
  return best_at_most(wanted);
}

}  // namespace

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512";
    case SimdLevel::kAvx512Bf16: return "avx512_bf16";
    case SimdLevel::kAmxBf16: return "amx_bf16";
    default: return "scalar";
  }
}

std::vector<SimdLevel> built_simd_levels() {
#ifdef SLIDE_HAVE_X86
  return {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512, SimdLevel::kAvx512Bf16, SimdLevel::kAmxBf16};
#else
  return {SimdLevel::kScalar};
#endif
}

SimdLevel parse_simd_level(const std::string& name) {
  std::string expected;
  for (SimdLevel l : built_simd_levels()) {
    if (name == simd_level_name(l)) return l;
    expected += (expected.empty() ? "" : ", ") + std::string(simd_level_name(l));
  }
  throw std::invalid_argument("unknown SIMD level '" + name + "'; expected one of " + expected);
}

const Kernels& kernels() {
  static const Kernels& chosen = choose();
  return chosen;
}

const Kernels* kernels_for(SimdLevel level) { return supported(level) ? &table(level) : nullptr; }

std::vector<SimdLevel> available_simd_levels() {
  std::vector<SimdLevel> out;
  for (SimdLevel l : built_simd_levels())
    if (supported(l)) out.push_back(l);
  return out;
}

}  // namespace slide
