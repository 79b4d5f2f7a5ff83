// A zero-initialised, 64-byte aligned, move-only array: weight rows start on cache lines so the
// SIMD kernels never split a load across two lines. Large arrays are 2 MB aligned and asked for
// transparent huge pages (madvise; never required): random row access into a weight matrix of
// hundreds of MB otherwise misses the TLB on almost every row.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace slide {

inline constexpr std::size_t kAlignment = 64;
inline constexpr std::size_t kHugePage = std::size_t{2} << 20;
inline constexpr std::size_t kHugePageThreshold = std::size_t{8} << 20;  // smaller arrays gain little

// Row stride (in floats) that keeps every row 64-byte aligned.
inline std::size_t padded_stride(std::size_t n) { return (n + 15) / 16 * 16; }

template <class T>
class AlignedArray {
 public:
  AlignedArray() = default;
  explicit AlignedArray(std::size_t n) { resize(n); }
  AlignedArray(const AlignedArray&) = delete;
  AlignedArray& operator=(const AlignedArray&) = delete;
  AlignedArray(AlignedArray&& o) noexcept { swap(o); }
  AlignedArray& operator=(AlignedArray&& o) noexcept {
    swap(o);
    return *this;
  }
  ~AlignedArray() { std::free(data_); }

  void resize(std::size_t n) {
    std::free(data_);
    data_ = nullptr;
    size_ = 0;
    if (n == 0) return;
    const std::size_t align = n * sizeof(T) >= kHugePageThreshold ? kHugePage : kAlignment;
    const std::size_t bytes = (n * sizeof(T) + align - 1) / align * align;
    data_ = static_cast<T*>(std::aligned_alloc(align, bytes));
    if (!data_) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align == kHugePage) madvise(data_, bytes, MADV_HUGEPAGE);  // advice only: failure changes nothing
#endif
    std::memset(static_cast<void*>(data_), 0, bytes);
    size_ = n;
  }
  void fill_zero() {
    if (data_) std::memset(static_cast<void*>(data_), 0, size_ * sizeof(T));
  }
  void swap(AlignedArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace slide
